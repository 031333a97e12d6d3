// An ACP client (an "editor") written with the official TypeScript SDK, for testing a Rust agent.
//
//   node sdk_client.mjs --cwd DIR --prompt TEXT [--deny] [--think MS] [--cancel-after MS]
//                       [--abort-after MS] [--cancel-when-asked] [--abort-when-asked]
//                       [--no-write] [--probe] -- AGENT_CMD...
//
// Spawns the agent, then: initialize (fs read and write, unless --no-write) → session/new →
// session/prompt. Serves the agent's callbacks: session/update is recorded;
// session/request_permission is answered after --think ms (allow_once, or reject_once with
// --deny), or `cancelled` once the turn is cancelled; fs/read_text_file and fs/write_text_file
// work on the real file system (a missing file is the SDK's resourceNotFound, -32002).
// --cancel-after sends session/cancel; --abort-after aborts the prompt request itself (the SDK
// sends `$/cancel_request`); the *-when-asked variants do the same as soon as the agent asks for
// permission (while that question is open). --probe first checks some errors (before initialize, unknown
// session, unknown method). Prints one JSON line:
//   {"ok":true,"initialize":…,"sessionId":…,"updates":[…],"agentRequests":[…],
//    "stopReason":…,"promptError":…,"probes":{…},"agentExit":…}
// and exits 0 (1 on an unexpected failure, with {"ok":false,"error":…}).

import { spawn } from "node:child_process";
import { readFile, writeFile } from "node:fs/promises";
import { Readable, Writable } from "node:stream";
import { client, methods, ndJsonStream, RequestError } from "@agentclientprotocol/sdk";

function parseArgs(argv) {
  const o = { cwd: process.cwd(), prompt: "", deny: false, think: 50, cancelAfter: null, abortAfter: null, cancelWhenAsked: false, abortWhenAsked: false, write: true, probe: false, agent: [] };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === "--") { o.agent = argv.slice(i + 1); break; }
    else if (a === "--cwd") o.cwd = argv[++i];
    else if (a === "--prompt") o.prompt = argv[++i];
    else if (a === "--deny") o.deny = true;
    else if (a === "--think") o.think = Number(argv[++i]);
    else if (a === "--cancel-after") o.cancelAfter = Number(argv[++i]);
    else if (a === "--abort-after") o.abortAfter = Number(argv[++i]);
    else if (a === "--cancel-when-asked") o.cancelWhenAsked = true;
    else if (a === "--abort-when-asked") o.abortWhenAsked = true;
    else if (a === "--no-write") o.write = false;
    else if (a === "--probe") o.probe = true;
    else throw new Error(`unknown argument ${a}`);
  }
  if (o.agent.length === 0) throw new Error("no agent command after --");
  return o;
}

const errorJson = (e) => (e instanceof RequestError || (e && typeof e.code === "number"))
  ? { code: e.code, message: e.message, data: e.data ?? null }
  : { message: String(e?.stack ?? e) };

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  const updates = [];
  const agentRequests = [];
  // Open permission dialogs: cancelling the turn answers them `cancelled`.
  const openDialogs = new Set();
  // Set once the prompt is sent: what --cancel-when-asked / --abort-when-asked do.
  const onAsked = [];

  const app = client({ name: "sdk-test-client" })
    .onNotification(methods.client.session.update, ({ params }) => {
      updates.push(params.update);
    })
    .onRequest(methods.client.session.requestPermission, async ({ params, signal }) => {
      agentRequests.push({ method: "session/request_permission", params });
      const wanted = opts.deny ? ["reject_once", "reject_always"] : ["allow_once", "allow_always"];
      const option = params.options.find((o) => wanted.includes(o.kind));
      const outcome = await new Promise((resolve) => {
        const finish = (value) => { clearTimeout(timer); openDialogs.delete(cancel); resolve(value); };
        const cancel = () => finish({ outcome: "cancelled" });
        const timer = setTimeout(
          () => finish(option ? { outcome: "selected", optionId: option.optionId } : { outcome: "cancelled" }),
          opts.think,
        );
        openDialogs.add(cancel);
        signal.addEventListener("abort", cancel);
        onAsked.forEach((f) => setImmediate(f));
      });
      return { outcome };
    })
    .onRequest(methods.client.fs.readTextFile, async ({ params }) => {
      agentRequests.push({ method: "fs/read_text_file", params });
      try {
        return { content: await readFile(params.path, "utf8") };
      } catch (e) {
        if (e.code === "ENOENT") throw RequestError.resourceNotFound(params.path);
        throw e;
      }
    })
    .onRequest(methods.client.fs.writeTextFile, async ({ params }) => {
      agentRequests.push({ method: "fs/write_text_file", params });
      await writeFile(params.path, params.content, "utf8");
      return {};
    });

  const child = spawn(opts.agent[0], opts.agent.slice(1), { stdio: ["pipe", "pipe", "inherit"] });
  const exited = new Promise((resolve) => child.on("exit", (code, signal) => resolve({ code, signal })));
  child.on("error", (e) => { console.log(JSON.stringify({ ok: false, error: `cannot start the agent: ${e.message}` })); process.exit(1); });
  const stream = ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));

  const summary = await app.connectWith(stream, async (ctx) => {
    const probes = {};
    if (opts.probe) {
      const probe = async (name, method, params) => {
        try { probes[name] = { result: await ctx.request(method, params) }; }
        catch (e) { probes[name] = { error: errorJson(e) }; }
      };
      await probe("newBeforeInitialize", methods.agent.session.new, { cwd: opts.cwd, mcpServers: [] });
    }
    const initialize = await ctx.request(methods.agent.initialize, {
      protocolVersion: 1,
      clientCapabilities: { fs: { readTextFile: true, writeTextFile: opts.write }, terminal: false },
      clientInfo: { name: "sdk-test-client", version: "2.4.0" },
    });
    if (opts.probe) {
      const probe = async (name, method, params) => {
        try { probes[name] = { result: await ctx.request(method, params) }; }
        catch (e) { probes[name] = { error: errorJson(e) }; }
      };
      await probe("promptUnknownSession", methods.agent.session.prompt, { sessionId: "no-such-session", prompt: [{ type: "text", text: "hi" }] });
      await probe("unknownMethod", "nope/nothing", { x: 1 });
    }
    const { sessionId } = await ctx.request(methods.agent.session.new, { cwd: opts.cwd, mcpServers: [] });

    const abort = new AbortController();
    const timers = [];
    const cancelTurn = () => {
      ctx.notify(methods.agent.session.cancel, { sessionId });
      for (const cancel of [...openDialogs]) cancel();
    };
    const abortPrompt = () => abort.abort("aborted by the test client");
    if (opts.cancelAfter !== null) timers.push(setTimeout(cancelTurn, opts.cancelAfter));
    if (opts.abortAfter !== null) timers.push(setTimeout(abortPrompt, opts.abortAfter));
    if (opts.cancelWhenAsked) onAsked.push(cancelTurn);
    if (opts.abortWhenAsked) onAsked.push(abortPrompt);
    let stopReason = null;
    let promptError = null;
    try {
      const response = await ctx.request(
        methods.agent.session.prompt,
        { sessionId, prompt: [{ type: "text", text: opts.prompt }] },
        { cancellationSignal: abort.signal },
      );
      stopReason = response.stopReason;
    } catch (e) {
      promptError = errorJson(e);
    }
    timers.forEach(clearTimeout);
    return { ok: true, initialize, sessionId, updates, agentRequests, stopReason, promptError, probes };
  });

  // ACP has no shutdown request: end the agent's stdin and wait (bounded) for it to exit.
  child.stdin.end();
  const timeout = new Promise((resolve) => setTimeout(() => resolve(null), 5000).unref());
  const exit = await Promise.race([exited, timeout]);
  if (exit === null) child.kill("SIGKILL");
  summary.agentExit = exit ?? "killed: did not exit within 5 s of stdin EOF";
  console.log(JSON.stringify(summary));
}

main().then(
  () => process.exit(0),
  (e) => { console.log(JSON.stringify({ ok: false, error: errorJson(e) })); process.exit(1); },
);
