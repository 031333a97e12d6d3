// An MCP server on the official MCP TypeScript SDK (`McpServer`, stdio), for testing an MCP
// client: node sdk_server.mjs
//   tools: echo {text}; slow {steps} (progress on the caller's token, stops on cancellation);
//   ask_roots (calls the client's roots/list); stats (how many calls were cancelled so far);
//   resource note://hello; prompt greet {name}. A log message goes to the client on each call.
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { z } from "zod";

const server = new McpServer({ name: "sdk-server", version: "1.0.0" }, { capabilities: { logging: {} } });
let cancelled = 0;
const text = (t) => ({ content: [{ type: "text", text: t }] });
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

server.registerTool("echo", { description: "Echo the text.", inputSchema: { text: z.string() } }, async ({ text: t }) => {
  await server.server.sendLoggingMessage({ level: "info", logger: "sdk-server", data: `echo ${t}` });
  return text(t);
});

server.registerTool(
  "slow",
  { description: "Count steps slowly, with progress.", inputSchema: { steps: z.number().int().min(1) } },
  async ({ steps }, extra) => {
    const token = extra._meta?.progressToken;
    // Counted as the cancellation is read, before any later request is.
    extra.signal.addEventListener("abort", () => (cancelled += 1));
    for (let i = 1; i <= steps; i++) {
      await sleep(20);
      if (extra.signal.aborted) throw new Error("cancelled");
      if (token !== undefined) {
        await extra.sendNotification({
          method: "notifications/progress",
          params: { progressToken: token, progress: i, total: steps, message: `step ${i}` },
        });
      }
    }
    return text(`did ${steps} steps`);
  },
);

server.registerTool("ask_roots", { description: "The client's roots." }, async () => {
  const { roots } = await server.server.listRoots();
  return text(roots.map((r) => r.uri).join(" "));
});

server.registerTool("stats", { description: "Calls cancelled so far." }, async () => text(JSON.stringify({ cancelled })));

server.registerResource("note", "note://hello", { mimeType: "text/plain", description: "A note." }, async (uri) => ({
  contents: [{ uri: uri.href, mimeType: "text/plain", text: "hello from the SDK" }],
}));

server.registerPrompt("greet", { description: "Greet someone.", argsSchema: { name: z.string() } }, ({ name }) => ({
  messages: [{ role: "user", content: { type: "text", text: `Say hello to ${name}` } }],
}));

await server.connect(new StdioServerTransport());
