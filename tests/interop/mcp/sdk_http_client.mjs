// The official MCP TypeScript SDK's StreamableHTTPClientTransport, driving an MCP server over
// Streamable HTTP:
//   node sdk_http_client.mjs <url>
// It uses the `mcp_server` example's tools (progress, a cancellation, a call back to the client
// in the middle of a call), resources and prompts, then ends the session (DELETE) and checks
// that its id is refused afterwards. Prints one JSON summary line, {"ok": true, ...}; exits 1
// with {"ok": false, "error": ...} on the first failure.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { CallToolResultSchema, ListRootsRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const url = new URL(process.argv[2]);
const summary = { ok: false };
const text = (result) => result.content.map((c) => (c.type === "text" ? c.text : `(${c.type})`)).join("\n");

async function main() {
  const transport = new StreamableHTTPClientTransport(url);
  const client = new Client({ name: "sdk-http-client", version: "1.0.0" }, { capabilities: { roots: {} } });
  let rootsAsked = 0;
  client.setRequestHandler(ListRootsRequestSchema, async () => {
    rootsAsked += 1;
    return { roots: [{ uri: "file:///work/project", name: "project" }] };
  });
  await client.connect(transport);
  summary.sessionId = transport.sessionId;
  summary.protocolVersion = transport.protocolVersion;
  summary.server = client.getServerVersion().name;
  summary.tools = (await client.listTools()).tools.map((t) => t.name);
  summary.add = text(await client.callTool({ name: "add", arguments: { a: 40, b: 2 } }));

  const reports = [];
  const counted = await client.callTool({ name: "count", arguments: { to: 3, step_ms: 1 } }, CallToolResultSchema, {
    onprogress: (p) => reports.push(p.progress),
  });
  summary.count = { result: text(counted), reports };

  // Cancelled after its first report: the SDK sends notifications/cancelled and rejects.
  const abort = new AbortController();
  let cancelReports = 0;
  try {
    await client.callTool({ name: "count", arguments: { to: 50, step_ms: 20 } }, CallToolResultSchema, {
      signal: abort.signal,
      onprogress: () => {
        cancelReports += 1;
        abort.abort("enough");
      },
    });
    summary.cancel = { rejected: false };
  } catch (e) {
    summary.cancel = { rejected: true, reports: cancelReports };
  }

  summary.roots = { text: text(await client.callTool({ name: "list_roots", arguments: {} })), asked: rootsAsked };
  summary.resources = (await client.listResources()).resources.map((r) => r.uri);
  summary.prompt = (await client.getPrompt({ name: "review", arguments: { code: "fn main() {}" } })).messages.length;

  // End the session; its id is then unknown to the server.
  const sessionId = transport.sessionId;
  await transport.terminateSession();
  const after = await fetch(url, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      "mcp-session-id": sessionId,
      "mcp-protocol-version": summary.protocolVersion,
    },
    body: JSON.stringify({ jsonrpc: "2.0", id: 99, method: "ping" }),
  });
  summary.afterDelete = after.status;
  await client.close();
  summary.ok = true;
}

main()
  .catch((e) => {
    summary.error = String(e && e.stack ? e.stack : e);
  })
  .finally(() => {
    console.log(JSON.stringify(summary));
    process.exit(summary.ok ? 0 : 1);
  });
