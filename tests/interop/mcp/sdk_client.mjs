// The official MCP TypeScript SDK's client, driving an MCP server over stdio:
//   node sdk_client.mjs <server command…>
// It exercises everything the `mcp_server` example offers and prints one JSON summary line,
// {"ok": true, ...}; it exits 1 with {"ok": false, "error": ...} on the first failure.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ListRootsRequestSchema, McpError } from "@modelcontextprotocol/sdk/types.js";

const [command, ...args] = process.argv.slice(2);
const summary = { ok: false, steps: [] };
const step = (name, value) => {
  summary.steps.push(name);
  summary[name] = value;
};
const text = (result) => result.content.map((c) => (c.type === "text" ? c.text : `(${c.type})`)).join("\n");

async function main() {
  const transport = new StdioClientTransport({ command, args, stderr: "inherit" });
  const client = new Client({ name: "sdk-client", version: "1.0.0" }, { capabilities: { roots: { listChanged: true } } });
  const errors = [];
  client.onerror = (e) => errors.push(String(e));
  let rootsAsked = 0;
  client.setRequestHandler(ListRootsRequestSchema, async () => {
    rootsAsked += 1;
    return { roots: [{ uri: "file:///work/project", name: "project" }] };
  });

  await client.connect(transport);
  // Every message as the transport hands it to the SDK, in wire order: the SDK runs
  // notification handlers a microtask later than it settles responses, so a progress report
  // read in the same chunk as its answer never reaches `onprogress` ("unknown token"). What the
  // server sent, and in which order, is checked here instead.
  const wire = [];
  const deliver = transport.onmessage;
  transport.onmessage = (message, extra) => {
    wire.push(message);
    deliver(message, extra);
  };
  // The child process, to see how it exits.
  const child = transport._process;
  const exited = new Promise((resolve) => child.once("exit", (code, signal) => resolve({ code, signal })));

  step("serverVersion", client.getServerVersion());
  step("capabilities", client.getServerCapabilities());
  step("instructions", client.getInstructions());
  await client.ping();
  step("ping", true);

  const tools = await client.listTools();
  step("tools", tools.tools.map((t) => t.name));

  step("add", text(await client.callTool({ name: "add", arguments: { a: 2, b: 40 } })));
  step("greet", text(await client.callTool({ name: "greet", arguments: { name: "Ada", excited: true } })));
  const bad = await client.callTool({ name: "add", arguments: { a: "two" } });
  step("badInput", { isError: bad.isError === true, text: text(bad) });
  try {
    await client.callTool({ name: "nope", arguments: {} });
    step("unknownTool", { code: null });
  } catch (e) {
    step("unknownTool", { code: e instanceof McpError ? e.code : String(e) });
  }

  // Progress: every report is on the wire before the result; the SDK hands them to `onprogress`
  // in order (all but one that shares a read with the answer, see `wire` above).
  const reports = [];
  wire.length = 0;
  const counted = await client.callTool({ name: "count", arguments: { to: 3, step_ms: 10 } }, undefined, {
    onprogress: (p) => reports.push({ progress: p.progress, total: p.total, message: p.message }),
  });
  const answered = wire.findIndex((m) => "id" in m && ("result" in m || "error" in m));
  const report = (m) => {
    const { progressToken, ...rest } = m.params;
    return rest;
  };
  const isProgress = (m) => m.method === "notifications/progress";
  const wireReports = wire.slice(0, answered < 0 ? wire.length : answered).filter(isProgress).map(report);
  const afterAnswer = answered < 0 ? [] : wire.slice(answered + 1).filter(isProgress).map(report);
  step("progress", { result: text(counted), reports, wireReports, afterAnswer });

  // Cancellation: abort after the first report; the SDK sends notifications/cancelled.
  const controller = new AbortController();
  const cancelledReports = [];
  // Where the wire was when the call was aborted: reports the server sent before our cancel
  // reached it arrive after that, for a token the SDK no longer knows ("unknown token").
  let abortedAt = -1;
  const started = Date.now();
  try {
    await client.callTool({ name: "count", arguments: { to: 1000, step_ms: 20 } }, undefined, {
      signal: controller.signal,
      onprogress: (p) => {
        cancelledReports.push(p.progress);
        if (abortedAt < 0) abortedAt = wire.length;
        controller.abort("enough");
      },
    });
    step("cancel", { rejected: false });
  } catch (e) {
    step("cancel", { rejected: true, reports: cancelledReports.length, ms: Date.now() - started, error: String(e) });
  }
  // The server goes on serving (and sends nothing more for the cancelled call once it has
  // read the cancel).
  step("afterCancel", text(await client.callTool({ name: "add", arguments: { a: 1, b: 1 } })));

  step("roots", { text: text(await client.callTool({ name: "list_roots", arguments: {} })), asked: rootsAsked });

  const resources = await client.listResources();
  step("resources", resources.resources.map((r) => r.uri));
  const readme = await client.readResource({ uri: "demo://readme" });
  step("readme", readme.contents[0].text);
  const stats = await client.readResource({ uri: "demo://stats" });
  step("stats", JSON.parse(stats.contents[0].text));
  try {
    await client.readResource({ uri: "demo://missing" });
    step("missingResource", { code: null });
  } catch (e) {
    step("missingResource", { code: e.code, data: e.data });
  }

  const prompts = await client.listPrompts();
  step("prompts", prompts.prompts.map((p) => ({ name: p.name, arguments: (p.arguments ?? []).map((a) => a.name) })));
  const prompt = await client.getPrompt({ name: "review", arguments: { code: "fn main() {}" } });
  step("prompt", prompt.messages.map((m) => `${m.role}: ${m.content.text}`));

  await client.close();
  step("exit", await exited);
  // The cancelled call's reports that came after the abort (no later call asks for progress).
  step("lateCancelledReports", abortedAt < 0 ? 0 : wire.slice(abortedAt).filter(isProgress).length);
  step("errors", errors);
  summary.ok = true;
}

main()
  .catch((e) => {
    summary.error = String(e?.stack ?? e);
  })
  .finally(() => {
    console.log(JSON.stringify(summary));
    process.exit(summary.ok ? 0 : 1);
  });
