// An LSP client on vscode-languageserver-protocol (the protocol layer of VS Code's language
// client), driving a language server over stdio:
//   node lsp_client.js [--no-shutdown] <server command…>
// It exercises the `lsp_server` example (sync, diagnostics, hover with a configuration call back,
// completion, a command with work-done progress, its cancellation, shutdown and exit) and prints
// one JSON summary line, {"ok": true, ...}; exit 1 with {"ok": false, "error": ...} on failure.
// With --no-shutdown it sends `exit` without `shutdown` (the server must exit 1).
"use strict";
const { spawn } = require("node:child_process");
const {
  createProtocolConnection,
  StreamMessageReader,
  StreamMessageWriter,
  CancellationTokenSource,
  InitializeRequest,
  InitializedNotification,
  DidOpenTextDocumentNotification,
  DidChangeTextDocumentNotification,
  PublishDiagnosticsNotification,
  HoverRequest,
  CompletionRequest,
  ConfigurationRequest,
  ExecuteCommandRequest,
  ShutdownRequest,
  ExitNotification,
  WorkDoneProgress,
  ResponseError,
} = require("vscode-languageserver-protocol/node");

let argv = process.argv.slice(2);
const noShutdown = argv[0] === "--no-shutdown";
if (noShutdown) argv = argv.slice(1);
const [command, ...args] = argv;
const summary = { ok: false, steps: [] };
const step = (name, value) => {
  summary.steps.push(name);
  summary[name] = value;
};
const uri = "file:///notes/today.txt";

async function main() {
  const child = spawn(command, args, { stdio: ["pipe", "pipe", "inherit"] });
  const exited = new Promise((resolve) => child.once("exit", (code, signal) => resolve({ code, signal, at: Date.now() })));
  const conn = createProtocolConnection(new StreamMessageReader(child.stdout), new StreamMessageWriter(child.stdin));

  const configAsked = [];
  conn.onRequest(ConfigurationRequest.type, (params) => {
    configAsked.push(params.items.map((i) => i.section));
    return params.items.map(() => ({ greeting: "Howdy! " }));
  });
  const diagnostics = [];
  let diagnosticsSeen = () => {};
  conn.onNotification(PublishDiagnosticsNotification.type, (p) => {
    diagnostics.push({ version: p.version, messages: p.diagnostics.map((d) => `${d.range.start.line}:${d.range.start.character} ${d.message}`) });
    diagnosticsSeen();
  });
  const nextDiagnostics = () => new Promise((resolve) => (diagnosticsSeen = resolve));
  conn.listen();

  const init = await conn.sendRequest(InitializeRequest.type, {
    processId: process.pid,
    rootUri: null,
    capabilities: { workspace: { configuration: true }, window: { workDoneProgress: true } },
    clientInfo: { name: "vscode-languageserver-protocol client" },
  });
  step("initialize", { serverInfo: init.serverInfo, capabilities: init.capabilities });
  await conn.sendNotification(InitializedNotification.type, {});

  let seen = nextDiagnostics();
  await conn.sendNotification(DidOpenTextDocumentNotification.type, {
    textDocument: { uri, languageId: "plaintext", version: 1, text: "buy milk\nTODO call Ada\n" },
  });
  await seen;
  seen = nextDiagnostics();
  await conn.sendNotification(DidChangeTextDocumentNotification.type, {
    textDocument: { uri, version: 2 },
    contentChanges: [{ text: "buy milk and more milk\nTODO call Ada\nTODO water the plants\n" }],
  });
  await seen;
  step("diagnostics", diagnostics.slice());

  const hover = await conn.sendRequest(HoverRequest.type, { textDocument: { uri }, position: { line: 0, character: 5 } });
  step("hover", { value: hover.contents.value, range: hover.range, configAsked });

  const completion = await conn.sendRequest(CompletionRequest.type, { textDocument: { uri }, position: { line: 0, character: 14 } });
  step("completion", completion.map((i) => i.label));

  // Work-done progress on the token this client puts in the request.
  const reports = [];
  const token = "count-1";
  const progress = conn.onProgress(WorkDoneProgress.type, token, (v) => reports.push(v.kind));
  const count = await conn.sendRequest(ExecuteCommandRequest.type, {
    command: "notes.countWords",
    arguments: [10],
    workDoneToken: token,
  });
  progress.dispose();
  step("command", { result: count, reports });

  // Cancellation: a second document makes the command take two pauses; cancel after the begin.
  await conn.sendNotification(DidOpenTextDocumentNotification.type, {
    textDocument: { uri: "file:///notes/other.txt", languageId: "plaintext", version: 1, text: "one two\n" },
  });
  const source = new CancellationTokenSource();
  const cancelToken = "count-2";
  const cancelledReports = [];
  const sub = conn.onProgress(WorkDoneProgress.type, cancelToken, (v) => {
    cancelledReports.push(v.kind);
    if (v.kind === "begin") source.cancel();
  });
  try {
    const r = await conn.sendRequest(
      ExecuteCommandRequest.type,
      { command: "notes.countWords", arguments: [2000], workDoneToken: cancelToken },
      source.token,
    );
    step("cancel", { rejected: false, result: r });
  } catch (e) {
    step("cancel", { rejected: true, code: e instanceof ResponseError ? e.code : String(e), reports: cancelledReports });
  }
  sub.dispose();

  if (!noShutdown) {
    step("shutdown", await conn.sendRequest(ShutdownRequest.type));
    // After shutdown, requests are refused.
    try {
      await conn.sendRequest(HoverRequest.type, { textDocument: { uri }, position: { line: 0, character: 1 } });
      step("afterShutdown", { code: null });
    } catch (e) {
      step("afterShutdown", { code: e.code });
    }
  }
  const sentExit = Date.now();
  await conn.sendNotification(ExitNotification.type);
  // The server must exit by itself: stdin stays open, nothing is killed.
  const exit = await Promise.race([exited, new Promise((resolve) => setTimeout(() => resolve(null), 5000))]);
  if (exit === null) {
    child.kill("SIGKILL");
    step("exit", { code: null, signal: null, ms: null, lingered: true });
  } else {
    step("exit", { code: exit.code, signal: exit.signal, ms: exit.at - sentExit, lingered: false });
  }
  conn.dispose();
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
