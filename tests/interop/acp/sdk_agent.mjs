// An ACP agent written with the official TypeScript SDK, on stdio, for testing a Rust client.
//
//   node sdk_agent.mjs
//
// initialize → {protocolVersion: 1, agentInfo: {name: "sdk-test-agent"}}; session/new → "sdk-sess-N".
// session/prompt: the path is the first absolute path in the prompt's text, else the first word
// that looks like a file name (relative to the session's cwd). The agent streams session/update
// (a message chunk, a `read` tool call and its updates), reads the file through the client
// (fs/read_text_file, if advertised), says how many characters it read, then asks permission
// (session/request_permission) to write `<file>.sdk-summary.txt` and writes it through the client
// (fs/write_text_file, if advertised and allowed); answers {stopReason: "end_turn"}.
// A prompt containing the word "wait" waits for session/cancel (→ "cancelled"), or for
// `$/cancel_request` (the SDK answers -32800), at most 30 s.
// Exits 0 on stdin EOF.

import { isAbsolute, join, basename } from "node:path";
import { Readable, Writable } from "node:stream";
import { agent, methods, ndJsonStream, RequestError } from "@agentclientprotocol/sdk";

const sessions = new Map();
let clientCapabilities = null;
let nextSession = 0;
let nextToolCall = 0;

function findPath(text, cwd) {
  const words = text.split(/\s+/).map((w) => w.replace(/^["'`(<]+|["'`)>,;:!?.]+$/g, "")).filter(Boolean);
  const absolute = words.find((w) => w.startsWith("/"));
  if (absolute) return absolute;
  const relative = words.find((w) => /^[\w./-]+\.\w+$/.test(w));
  return relative ? join(cwd, relative) : null;
}

const app = agent({ name: "sdk-test-agent" })
  .onRequest(methods.agent.initialize, ({ params }) => {
    clientCapabilities = params.clientCapabilities ?? {};
    return {
      protocolVersion: 1,
      agentCapabilities: { loadSession: false, promptCapabilities: { image: false, audio: false, embeddedContext: false } },
      authMethods: [],
      agentInfo: { name: "sdk-test-agent", version: "2.4.0" },
    };
  })
  .onRequest(methods.agent.session.new, ({ params }) => {
    const sessionId = `sdk-sess-${++nextSession}`;
    sessions.set(sessionId, { cwd: params.cwd, cancel: null });
    return { sessionId };
  })
  .onNotification(methods.agent.session.cancel, ({ params }) => {
    sessions.get(params.sessionId)?.cancel?.();
  })
  .onRequest(methods.agent.session.prompt, async ({ params, client, signal }) => {
    const { sessionId } = params;
    const session = sessions.get(sessionId);
    if (!session) throw RequestError.sessionNotFound(sessionId);
    let cancelled = false;
    const cancelledPromise = new Promise((resolve) => {
      session.cancel = () => { cancelled = true; resolve("cancelled"); };
    });
    const update = (u) => client.notify(methods.client.session.update, { sessionId, update: u });
    const say = (text) => update({ sessionUpdate: "agent_message_chunk", content: { type: "text", text } });
    try {
      const text = params.prompt.filter((b) => b.type === "text").map((b) => b.text).join(" ");
      if (/\bwait\b/.test(text)) {
        await say("Waiting until you cancel…");
        const limit = new Promise((resolve) => setTimeout(() => resolve("timeout"), 30000).unref());
        const aborted = new Promise((_, reject) => signal.addEventListener("abort", () => reject(RequestError.requestCancelled())));
        const why = await Promise.race([cancelledPromise, limit, aborted]);
        return { stopReason: why === "cancelled" ? "cancelled" : "end_turn" };
      }
      const path = findPath(text, session.cwd);
      if (!path) {
        await say("Name a file, please.");
        return { stopReason: "end_turn" };
      }
      const name = basename(path);
      if (!clientCapabilities?.fs?.readTextFile) {
        await say("This client cannot read files.");
        return { stopReason: "end_turn" };
      }
      await say(`Reading ${path}`);
      const readId = `sdk-call-${++nextToolCall}`;
      await update({ sessionUpdate: "tool_call", toolCallId: readId, title: `Read ${name}`, kind: "read", status: "pending", locations: [{ path }] });
      await update({ sessionUpdate: "tool_call_update", toolCallId: readId, status: "in_progress" });
      let content;
      try {
        ({ content } = await client.request(methods.client.fs.readTextFile, { sessionId, path }));
      } catch (e) {
        await update({ sessionUpdate: "tool_call_update", toolCallId: readId, status: "failed", content: [{ type: "content", content: { type: "text", text: `error ${e.code}: ${e.message}` } }] });
        await say(`Could not read ${name}: error ${e.code}`);
        return { stopReason: "end_turn" };
      }
      await update({ sessionUpdate: "tool_call_update", toolCallId: readId, status: "completed", content: [{ type: "content", content: { type: "text", text: `${content.length} characters` } }] });
      await say(`Read ${content.length} characters from ${name}.`);
      if (cancelled) return { stopReason: "cancelled" };
      if (!clientCapabilities?.fs?.writeTextFile) {
        await say("This client cannot write files.");
        return { stopReason: "end_turn" };
      }
      const target = `${path}.sdk-summary.txt`;
      const writeId = `sdk-call-${++nextToolCall}`;
      const summary = `${basename(path)}: ${content.split("\n").filter(Boolean).length} lines, ${content.length} characters\n`;
      await update({ sessionUpdate: "tool_call", toolCallId: writeId, title: `Write ${basename(target)}`, kind: "edit", status: "pending", content: [{ type: "diff", path: target, oldText: null, newText: summary }], locations: [{ path: target }] });
      const permission = await client.request(methods.client.session.requestPermission, {
        sessionId,
        toolCall: { toolCallId: writeId, title: `Write ${basename(target)}`, kind: "edit", status: "pending" },
        options: [
          { optionId: "yes", name: "Allow once", kind: "allow_once" },
          { optionId: "no", name: "Reject", kind: "reject_once" },
        ],
      });
      if (permission.outcome.outcome === "cancelled" || cancelled) return { stopReason: "cancelled" };
      if (permission.outcome.optionId !== "yes") {
        await update({ sessionUpdate: "tool_call_update", toolCallId: writeId, status: "failed", content: [{ type: "content", content: { type: "text", text: "rejected" } }] });
        await say(`Not writing ${basename(target)}.`);
        return { stopReason: "end_turn" };
      }
      await update({ sessionUpdate: "tool_call_update", toolCallId: writeId, status: "in_progress" });
      await client.request(methods.client.fs.writeTextFile, { sessionId, path: target, content: summary });
      await update({ sessionUpdate: "tool_call_update", toolCallId: writeId, status: "completed" });
      await say(`Wrote ${basename(target)}.`);
      return { stopReason: "end_turn" };
    } finally {
      session.cancel = null;
    }
  });

const connection = app.connect(ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin)));
await connection.closed;
process.exit(0);
