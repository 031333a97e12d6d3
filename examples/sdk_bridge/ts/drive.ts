// The TypeScript side of examples/sdk_bridge/: spawns the Rust CLI with the generated spawn
// runtime, drives it through the generated `SessionClient`, and serves `Tools` for its calls
// back. Nothing but the generated files and vscode-jsonrpc.
//
//   npm ci && npx tsc -p . && node out/drive.js CLI [--transport stdio|tcp] [--mode check|hang|bench]
//
// `check` prints one JSON line, {"ok":true,"checks":[..]}, and exits 0 (or {"ok":false,..} and
// exits 1). `hang` prints {"cli_pid":N}, then {"in_call":true} once a long call is under way, and
// waits (for a test to SIGKILL it). `frames` feeds the spawn runtime's reader bad frames from a
// raw peer and prints {"ok":true,"checks":[..]}; `connection` does the same with its connection's
// requests, notifications, cancels, progress, typed calls and dispose. `bench` prints p50 latencies (the generated client's and a hand-written one's, on `--transport`). Every wait is bounded.

import * as assert from "node:assert/strict";
import { spawn } from "node:child_process";
import * as net from "node:net";
import {
  type CancellationToken,
  CancellationTokenSource,
  ParameterStructures,
  ProgressType,
  RequestType,
  RequestType2,
  ResponseError,
  Trace,
} from "vscode-jsonrpc/node";
import { SessionClient, serveTools, Step, ToolFailedError, Tools, TurnEvent } from "./bridge";
import { ADDRESS_LINE_PREFIX, connectCli, spawnCli, type Cli } from "./jsonrpc_duplex_spawn";

const STEP_MS = 10_000;

function within<T>(what: string, promise: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: nothing within ${STEP_MS} ms`)), STEP_MS);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** What this side serves: the `echo` tool, and a log of the turn's events. */
class EchoTools implements Tools {
  readonly log: string[] = [];
  readonly events: TurnEvent[] = [];

  callTool(params: { name: string; input: string }): string {
    this.log.push(`tool ${params.name}`);
    return params.input.toUpperCase();
  }

  event(params: { event: TurnEvent }): void {
    this.log.push(`event ${params.event.kind}`);
    this.events.push(params.event);
  }
}

async function start(cli: string, transport: "stdio" | "tcp", tools: EchoTools): Promise<[Cli, SessionClient]> {
  const child = await within("spawn", spawnCli(cli, [], { transport, stderr: "capture" }));
  serveTools(child.connection, tools);
  child.connection.listen();
  return [child, new SessionClient(child.connection)];
}

async function check(cli: string, transport: "stdio" | "tcp"): Promise<string[]> {
  const checks: string[] = [];
  const tools = new EchoTools();
  const [child, session] = await start(cli, transport, tools);
  try {
    assert.equal(await within("ping", session.ping()), "pong");
    checks.push("ping");

    const summary = await within("turn", session.turn({ prompt: "hello big world" }));
    tools.log.push("answer");
    assert.deepEqual(tools.log, [
      "event started", "event text", "event text", "event text",
      "tool echo", "event toolOutput", "event finished", "answer",
    ]);
    assert.deepEqual(summary, { turn: 1, events: 6, tool_output: "HELLO BIG WORLD" });
    checks.push("turn: every event before the answer, the tool call answered");

    const pulled: TurnEvent[] = [];
    for await (const event of session.history()) {
      pulled.push(event);
    }
    assert.deepEqual(pulled, tools.events);
    checks.push("history: a stream pulled to its end");

    const source = new CancellationTokenSource();
    let first: (step: Step) => void = () => undefined;
    const reported = new Promise<Step>((resolve) => {
      first = resolve;
    });
    const call = session.longTask({ steps: 100_000, progress: (step) => first(step) }, source.token);
    assert.deepEqual(await within("the first progress report", reported), { done: 1, total: 100_000 });
    const started = performance.now();
    source.cancel();
    const error = await within("the cancelled call's answer", call.then(() => undefined, (e: unknown) => e));
    const elapsed = performance.now() - started;
    assert.ok(error instanceof ResponseError && error.code === -32800, `the cancel was answered ${String(error)}`);
    assert.ok(elapsed < 1000, `the cancel was answered after ${elapsed} ms`);
    checks.push(`cancel: answered -32800 after ${elapsed.toFixed(1)} ms`);
    checks.push("task cancel");

    const failed = await within("fail", session.fail({ tool: "grep" }).then(() => undefined, (e: unknown) => e));
    assert.ok(failed instanceof ToolFailedError, `fail: ${String(failed)}`);
    assert.equal(failed.code, -32050);
    assert.deepEqual(failed.data, { tool: "grep", reason: "it was asked to fail" });
    checks.push("typed error with its data");

    // 2^53 - 1 travels whole; an answer beyond it is refused rather than rounded.
    assert.equal(await within("add", session.add(Number.MAX_SAFE_INTEGER - 1, 1)), Number.MAX_SAFE_INTEGER);
    const beyond = await within("add beyond 2^53", session.add(Number.MAX_SAFE_INTEGER, 2).then((n) => n, (e: unknown) => e));
    assert.ok(beyond instanceof ResponseError && beyond.code === -32603, `add beyond 2^53: ${String(beyond)}`);
    assert.match(beyond.message, /9007199254740993/);
    checks.push("64-bit integers: exact to 2^53 - 1, refused beyond");
  } finally {
    const status = await within("stop", child.stop());
    assert.equal(status, 0, `the CLI exited with ${status}: ${child.stderr()}`);
  }
  checks.push("stop: exit status 0");
  return checks;
}

async function hang(cli: string, transport: "stdio" | "tcp"): Promise<void> {
  const [child, session] = await start(cli, transport, new EchoTools());
  console.log(JSON.stringify({ cli_pid: child.child.pid }));
  let first: () => void = () => undefined;
  const reported = new Promise<void>((resolve) => {
    first = resolve;
  });
  void session.longTask({ steps: 1_000_000, progress: () => first() }).catch(() => undefined);
  await within("the first progress report", reported);
  console.log(JSON.stringify({ in_call: true }));
  await new Promise((resolve) => setTimeout(resolve, 60_000));
}

function p50(samples: number[]): number {
  samples.sort((a, b) => a - b);
  return samples[Math.floor(samples.length / 2)] * 1000;
}

/** The same client written by hand on the child's pipes: Content-Length frames, no library. */
class RawClient {
  private buffer = Buffer.alloc(0);
  private waiting: ((message: Record<string, unknown>) => void) | undefined;
  private readonly queue: Array<Record<string, unknown>> = [];
  private nextId = 0;

  constructor(private readonly write: (bytes: Buffer) => void, readable: NodeJS.ReadableStream) {
    readable.on("data", (chunk: Buffer) => {
      this.buffer = Buffer.concat([this.buffer, chunk]);
      for (;;) {
        const end = this.buffer.indexOf("\r\n\r\n");
        if (end < 0) {
          return;
        }
        const length = Number(/content-length:\s*(\d+)/i.exec(this.buffer.subarray(0, end).toString())?.[1]);
        if (this.buffer.length < end + 4 + length) {
          return;
        }
        const message = JSON.parse(this.buffer.subarray(end + 4, end + 4 + length).toString()) as Record<string, unknown>;
        this.buffer = this.buffer.subarray(end + 4 + length);
        const waiting = this.waiting;
        this.waiting = undefined;
        if (waiting === undefined) {
          this.queue.push(message);
        } else {
          waiting(message);
        }
      }
    });
  }

  private send(message: unknown): void {
    const body = Buffer.from(JSON.stringify(message));
    this.write(Buffer.concat([Buffer.from(`Content-Length: ${body.length}\r\n\r\n`), body]));
  }

  private next(): Promise<Record<string, unknown>> {
    const queued = this.queue.shift();
    return queued !== undefined ? Promise.resolve(queued) : new Promise((resolve) => (this.waiting = resolve));
  }

  async call(method: string, params: unknown): Promise<unknown> {
    this.nextId += 1;
    const id = this.nextId;
    this.send({ jsonrpc: "2.0", id, method, params });
    for (;;) {
      const message = await this.next();
      if (typeof message.method === "string") {
        if (message.id !== undefined) {
          const input = (message.params as { input: string }).input;
          this.send({ jsonrpc: "2.0", id: message.id, result: input.toUpperCase() });
        }
      } else if (message.id === id) {
        return message.result;
      }
    }
  }
}

/** Both clients at once, each on a CLI of its own, on the same transport, timed in alternating calls. */
async function bench(cli: string, pings: number, turns: number, transport: "stdio" | "tcp"): Promise<Record<string, number>> {
  const tools = new EchoTools();
  const [child, session] = await start(cli, transport, tools);
  const process_ = spawn(cli, transport === "tcp" ? ["--listen", "127.0.0.1:0"] : [], { stdio: ["pipe", "pipe", "inherit"] });
  let raw: RawClient;
  let socket: net.Socket | undefined;
  if (transport === "tcp") {
    // The address line, then a plain socket with Nagle off (as the spawn runtime's).
    const line = await within(
      "the address line",
      new Promise<string>((resolve) => {
        let text = "";
        const onData = (chunk: Buffer): void => {
          text += chunk.toString();
          if (text.includes("\n")) {
            process_.stdout.off("data", onData);
            resolve(text.slice(0, text.indexOf("\n")).trim());
          }
        };
        process_.stdout.on("data", onData);
      }),
    );
    const address = line.slice(ADDRESS_LINE_PREFIX.length);
    const colon = address.lastIndexOf(":");
    const connected = net.connect({ host: address.slice(0, colon), port: Number(address.slice(colon + 1)), noDelay: true });
    await within("connect", new Promise((resolve) => connected.once("connect", resolve)));
    socket = connected;
    raw = new RawClient((bytes) => connected.write(bytes), connected);
  } else {
    raw = new RawClient((bytes) => process_.stdin.write(bytes), process_.stdout);
  }
  const samples: Record<string, number[]> = { ping: [], raw_ping: [], turn: [], raw_turn: [] };
  const time = async (name: string, call: () => Promise<unknown>): Promise<void> => {
    const t = performance.now();
    await call();
    samples[name].push(performance.now() - t);
  };
  // One call of each in turn, so that the machine's load falls on both alike.
  for (let i = 0; i < pings; i++) {
    await time("ping", () => session.ping());
    await time("raw_ping", () => raw.call("session/ping", null));
  }
  for (let i = 0; i < turns; i++) {
    tools.log.length = 0;
    tools.events.length = 0;
    await time("turn", () => session.turn({ prompt: "hello big world" }));
    await time("raw_turn", () => raw.call("session/turn", { prompt: "hello big world" }));
  }
  await child.stop();
  socket?.destroy();
  const exited = new Promise((resolve) => process_.once("exit", resolve));
  process_.stdin.end();
  await within("the raw client's CLI exit", exited);
  return Object.fromEntries(Object.entries(samples).map(([name, values]) => [`${name}_p50_us`, p50(values)]));
}

/** What a connection of the spawn runtime does with `bytes` from a raw peer: what it saw, in order. */
async function framesFrom(bytes: string): Promise<string[]> {
  const server = net.createServer((socket) => socket.end(bytes));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address() as net.AddressInfo;
  const connection = await connectCli("127.0.0.1", address.port);
  const seen: string[] = [];
  connection.onError(([error]) => seen.push(`error: ${error.message}`));
  connection.onNotification("n", (params: unknown) => {
    seen.push(`notification ${JSON.stringify(params)}`);
  });
  connection.listen();
  try {
    const answer = await within("the call's end", connection.sendRequest<unknown>("x"));
    seen.push(`answer ${JSON.stringify(answer)}`);
  } catch (error) {
    seen.push(`failed: ${error instanceof Error ? error.message : String(error)}`);
  }
  connection.dispose();
  server.close();
  return seen;
}

/** The spawn runtime's reader against a raw peer: every bad frame a clear error, no call left hanging. */
async function frames(): Promise<string[]> {
  const frame = (body: string): string => `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
  const answer = frame('{"jsonrpc":"2.0","id":0,"result":"r"}');
  const checks: string[] = [];
  assert.deepEqual(await framesFrom(frame('{"jsonrpc":"2.0","method":"n","params":[1]}') + answer), ["notification 1", 'answer "r"']);
  checks.push("a notification and an answer in one chunk, in order");
  assert.deepEqual(await framesFrom(frame('{"jsonrpc":"2.0","id":0,"result":"h\u00e9llo \u2713"}')), ['answer "héllo ✓"']);
  checks.push("UTF-8 bodies");
  const notJson = await framesFrom(frame("{nope") + answer);
  assert.match(notJson[0], /^error: a message that is not JSON/);
  assert.equal(notJson[1], 'answer "r"');
  checks.push("a body that is not JSON is reported and skipped");
  for (const [what, bytes, reason] of [
    ["no Content-Length", "Foo: 1\r\n\r\n{}", /without Content-Length/],
    ["a negative Content-Length", "Content-Length: -3\r\n\r\n{}", /a bad Content-Length: "-3"/],
    ["a Content-Length over the limit", "Content-Length: 999999999999\r\n\r\n{}", /at most 67108864 bytes/],
    ["a header block over 8 KiB", "X".repeat(9000), /longer than 8192 bytes/],
  ] as const) {
    const seen = await framesFrom(bytes);
    assert.match(seen[0] ?? "", reason, `${what}: ${JSON.stringify(seen)}`);
    assert.match(seen[seen.length - 1] ?? "", /^failed: /, `${what}: the pending call did not fail: ${JSON.stringify(seen)}`);
    checks.push(`${what}: a clear error, the connection ended, the pending call failed`);
  }
  return checks;
}

/** A peer written by hand on a socket: Content-Length frames each way, read one at a time. */
class RawPeer {
  private buffer = Buffer.alloc(0);
  private readonly queue: Array<Record<string, unknown>> = [];
  private waiting: ((message: Record<string, unknown>) => void) | undefined;

  constructor(private readonly socket: net.Socket) {
    socket.on("data", (chunk: Buffer) => {
      this.buffer = Buffer.concat([this.buffer, chunk]);
      for (;;) {
        const end = this.buffer.indexOf("\r\n\r\n");
        const length = end < 0 ? Number.NaN : Number(/content-length:\s*(\d+)/i.exec(this.buffer.subarray(0, end).toString())?.[1]);
        if (end < 0 || this.buffer.length < end + 4 + length) {
          return;
        }
        const message = JSON.parse(this.buffer.subarray(end + 4, end + 4 + length).toString()) as Record<string, unknown>;
        this.buffer = this.buffer.subarray(end + 4 + length);
        const waiting = this.waiting;
        this.waiting = undefined;
        if (waiting === undefined) {
          this.queue.push(message);
        } else {
          waiting(message);
        }
      }
    });
  }

  send(message: Record<string, unknown>): void {
    this.sendText(JSON.stringify({ jsonrpc: "2.0", ...message }));
  }

  sendText(body: string): void {
    this.socket.write(`Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
  }

  next(what: string): Promise<Record<string, unknown>> {
    const queued = this.queue.shift();
    return within(what, queued !== undefined ? Promise.resolve(queued) : new Promise((resolve) => (this.waiting = resolve)));
  }

  /** Send a request, its answer. */
  async call(id: number, method: string, params?: unknown): Promise<Record<string, unknown>> {
    this.send(params === undefined ? { id, method } : { id, method, params });
    const answer = await this.next(`the answer to ${method}`);
    assert.equal(answer.id, id, `the answer to ${method}: ${JSON.stringify(answer)}`);
    return answer;
  }
}

/** The spawn runtime's connection against a raw peer: what it answers, sends, and reports. */
async function connection(): Promise<string[]> {
  const checks: string[] = [];
  let accepted: (socket: net.Socket) => void = () => undefined;
  const socketAccepted = new Promise<net.Socket>((resolve) => (accepted = resolve));
  const server = net.createServer((socket) => accepted(socket));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const connection = await connectCli("127.0.0.1", (server.address() as net.AddressInfo).port);
  const peer = new RawPeer(await within("the connection", socketAccepted));
  const errors: string[] = [];
  const notes: unknown[] = [];
  const unhandled: string[] = [];
  const progress: unknown[] = [];
  const traced: string[] = [];
  connection.onError(([error]) => errors.push(error.message));
  connection.onRequest("add", (a: number, b: number) => a + b);
  connection.onRequest("named", (params: { who: string }) => `hello ${params.who}`);
  connection.onRequest("nothing", () => undefined);
  connection.onRequest("typed", () => {
    throw new ResponseError(-32050, "a typed failure", { tool: "grep" });
  });
  connection.onRequest("boom", async () => {
    throw new Error("boom");
  });
  connection.onRequest("wait", (token: CancellationToken) => new Promise((_, reject) => {
    token.onCancellationRequested(() => reject(new ResponseError(-32800, "cancelled")));
  }));
  connection.onNotification("note", (params: unknown) => {
    notes.push(params);
  });
  connection.onUnhandledNotification((message) => unhandled.push(message.method));
  connection.onProgress(new ProgressType<unknown>(), "p1", (value) => {
    progress.push(value);
  });
  connection.onUnhandledProgress((params) => unhandled.push(`progress ${String(params.token)}`));
  connection.listen();
  await connection.trace(Trace.Messages, { log: (message: string) => traced.push(message) });

  assert.deepEqual(await peer.call(1, "add", [2, 3]), { jsonrpc: "2.0", id: 1, result: 5 });
  assert.deepEqual((await peer.call(2, "named", { who: "you" })).result, "hello you");
  assert.deepEqual((await peer.call(3, "nothing")).result, null);
  checks.push("requests: params by position spread, by name whole, undefined answered null");
  assert.deepEqual((await peer.call(4, "typed")).error, { code: -32050, message: "a typed failure", data: { tool: "grep" } });
  assert.deepEqual((await peer.call(5, "boom")).error, { code: -32603, message: "Request boom failed with message: boom" });
  assert.equal(((await peer.call(6, "missing")).error as { code: number }).code, -32601);
  checks.push("errors: a ResponseError as it is, another failure -32603, no handler -32601");
  peer.send({ id: 7, method: "wait" });
  peer.send({ method: "$/cancelRequest", params: { id: 7 } });
  assert.deepEqual(await peer.next("the cancelled call's answer"), { jsonrpc: "2.0", id: 7, error: { code: -32800, message: "cancelled" } });
  checks.push("$/cancelRequest cancels the handler's token");
  // As text: this side's own JSON would round it.
  peer.sendText('{"jsonrpc":"2.0","id":8,"method":"add","params":[9007199254740993,1]}');
  const big = await peer.next("the answer to a request beyond 2^53");
  assert.equal((big.error as { code: number }).code, -32601);
  assert.match((big.error as { message: string }).message, /9007199254740993/);
  checks.push("a request beyond 2^53 refused, not rounded");

  peer.send({ method: "note", params: { a: 1 } });
  peer.send({ method: "$/progress", params: { token: "p1", value: { done: 1 } } });
  peer.send({ method: "$/progress", params: { token: "p2", value: 2 } });
  peer.send({ method: "other" });
  peer.send({ id: 999, result: "nobody asked" });
  peer.sendText("null");
  peer.sendText("[]");
  // A request after them: its answer means they were all dispatched, in order.
  await peer.call(9, "nothing");
  assert.deepEqual(notes, [{ a: 1 }]);
  assert.deepEqual(progress, [{ done: 1 }]);
  assert.deepEqual(unhandled, ["progress p2", "other"]);
  assert.ok(errors.some((e) => /an answer for no call waiting \(id 999\)/.test(e)), JSON.stringify(errors));
  assert.ok(errors.includes("a message that is not a JSON-RPC object: null"), JSON.stringify(errors));
  assert.ok(errors.includes("a message that is not a JSON-RPC object: []"), JSON.stringify(errors));
  checks.push("notifications, progress, unhandled ones, a stray answer and a message that is no object reported");

  const source = new CancellationTokenSource();
  const slow = connection.sendRequest<string>("slow", ParameterStructures.byName, { x: 1 }, source.token);
  const request = await peer.next("the request");
  assert.equal(request.method, "slow");
  assert.deepEqual(request.params, { x: 1 });
  source.cancel();
  const cancel = await peer.next("the $/cancelRequest");
  assert.deepEqual(cancel, { jsonrpc: "2.0", method: "$/cancelRequest", params: { id: request.id } });
  peer.send({ id: request.id, error: { code: -32800, message: "cancelled", data: { why: "asked" } } });
  const cancelled = await within("the cancelled call", slow.then(() => undefined, (e: unknown) => e));
  assert.ok(cancelled instanceof ResponseError && cancelled.code === -32800, String(cancelled));
  assert.deepEqual(cancelled.data, { why: "asked" });
  checks.push("a cancelled token sends $/cancelRequest; an error answer rejects with its code and data");

  const sum = connection.sendRequest(new RequestType2<number, number, number, void>("sum"), 1, 2);
  const sent = await peer.next("the typed request");
  assert.deepEqual([sent.method, sent.params], ["sum", [1, 2]]);
  peer.send({ id: sent.id, result: 3 });
  assert.equal(await within("sum", sum), 3);
  const byName = connection.sendRequest(new RequestType<{ a: number }, number, void>("obj", ParameterStructures.byName), { a: 1 });
  const named = await peer.next("the request by name");
  assert.deepEqual([named.method, named.params], ["obj", { a: 1 }]);
  peer.send({ id: named.id, result: 1 });
  await within("obj", byName);
  await connection.sendNotification("told", [1, 2]);
  assert.deepEqual(await peer.next("the notification"), { jsonrpc: "2.0", method: "told", params: [[1, 2]] });
  checks.push("typed RequestTypes and ParameterStructures as vscode-jsonrpc sends them");
  assert.ok(traced.includes("Received request 'add - (1)'."), JSON.stringify(traced.slice(0, 4)));
  assert.ok(traced.includes("Sending request 'sum - (1)'."), JSON.stringify(traced.filter((t) => t.includes("sum"))));
  checks.push("trace");

  const hanging = connection.sendRequest("never");
  await peer.next("the request left unanswered");
  connection.dispose();
  const rejected = await within("the call left waiting", hanging.then(() => undefined, (e: unknown) => e));
  assert.ok(rejected instanceof ResponseError && rejected.code === -32097, String(rejected));
  const after = await connection.sendRequest("late").then(() => undefined, (e: unknown) => e);
  assert.ok(after instanceof Error && /disposed/.test(after.message), String(after));
  checks.push("dispose rejects the calls waiting, and the calls after it");
  server.close();
  checks.push(await writeFailure());
  return checks;
}

/**
 * A write to the CLI fails (it closed its stdin but runs on, its stdout open): every call still
 * waiting is rejected with that write's error (`MessageWriteError`, EPIPE), the one written
 * before the failure as well as the one whose write failed; not left to the stream's close.
 */
async function writeFailure(): Promise<string> {
  // Reads the first byte of the first request, closes its stdin, says so, and waits.
  const script = "head -c 1 >/dev/null; exec 0<&-; echo closed >&2; exec sleep 60";
  const cli = await within("spawn sh", spawnCli("sh", ["-c", script], { stderr: "capture" }));
  const stdinClosed = new Promise<void>((resolve) => {
    // After the runtime's own listener: what it captured includes this chunk.
    cli.child.stderr?.on("data", () => {
      if (cli.stderr().includes("closed")) {
        resolve();
      }
    });
  });
  const errors: string[] = [];
  cli.connection.onError(([error]) => errors.push(error.message));
  cli.connection.listen();
  const settled = (call: Promise<unknown>): Promise<unknown> => call.then(() => "answered", (e: unknown) => e);
  const first = settled(cli.connection.sendRequest("waits"));
  await within("the CLI closing its stdin", stdinClosed);
  const second = settled(cli.connection.sendRequest("written after"));
  for (const [what, call] of [["the call waiting", first], ["the call whose write failed", second]] as const) {
    const rejected = await within(what, call);
    assert.ok(rejected instanceof ResponseError && rejected.code === -32099, `${what}: ${String(rejected)}`);
    assert.match(rejected.message, /EPIPE/, what);
  }
  assert.ok(errors.some((e) => /EPIPE/.test(e)), JSON.stringify(errors));
  cli.child.kill("SIGKILL");
  return "a failed write rejects every waiting call with MessageWriteError";
}

async function main(): Promise<number> {
  const [cli, ...rest] = process.argv.slice(2);
  const option = (name: string, fallback: string): string => {
    const at = rest.indexOf(name);
    return at >= 0 && rest[at + 1] !== undefined ? rest[at + 1] : fallback;
  };
  if (cli === undefined) {
    process.stderr.write("usage: node out/drive.js CLI [--transport stdio|tcp] [--mode check|hang|bench]\n");
    return 2;
  }
  const transport = option("--transport", "stdio") === "tcp" ? "tcp" : "stdio";
  const mode = option("--mode", "check");
  if (mode === "hang") {
    await hang(cli, transport);
    return 0;
  }
  if (mode === "frames" || mode === "connection") {
    try {
      console.log(JSON.stringify({ ok: true, checks: await (mode === "frames" ? frames() : connection()) }));
      return 0;
    } catch (error) {
      console.log(JSON.stringify({ ok: false, failed: String(error instanceof Error ? error.stack : error) }));
      return 1;
    }
  }
  if (mode === "bench") {
    console.log(JSON.stringify(await bench(cli, Number(option("--pings", "1000")), Number(option("--turns", "200")), transport)));
    return 0;
  }
  try {
    console.log(JSON.stringify({ ok: true, checks: await check(cli, transport) }));
    return 0;
  } catch (error) {
    console.log(JSON.stringify({ ok: false, failed: String(error instanceof Error ? error.stack : error) }));
    return 1;
  }
}

void main().then((code) => process.exit(code));
