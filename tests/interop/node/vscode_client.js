#!/usr/bin/env node
// A vscode-jsonrpc client that spawns a JSON-RPC peer (jsonrpc-duplex's `conformance_peer`
// example) and exercises it over the peer's stdin/stdout with Content-Length framing.
//
//   node vscode_client.js <command> [args...]
//
// Prints one JSON summary line on stdout: {"ok":true,"checks":[...],...} and exits 0, or
// {"ok":false,"failed":<check>,"error":...,"stderr":<tail of the peer's stderr>} and exits 1.
// Every wait is bounded. VSCODE_CLIENT_TRACE=1 traces the traffic to stderr.
'use strict';

const { spawn } = require('child_process');
const assert = require('assert/strict');
const {
  createMessageConnection,
  StreamMessageReader,
  StreamMessageWriter,
  ResponseError,
  CancellationTokenSource,
  ParameterStructures,
  Trace,
} = require('vscode-jsonrpc/node');

const STEP_TIMEOUT_MS = 10000;

function log(...args) {
  process.stderr.write(`[vscode_client] ${args.join(' ')}\n`);
}

let finished = false;
function fail(check, error, stderrTail) {
  if (finished) return;
  finished = true;
  const summary = {
    ok: false,
    failed: check,
    error: error && error.stack ? error.stack : String(error),
    stderr: stderrTail(),
  };
  process.stdout.write(`${JSON.stringify(summary)}\n`, () => process.exit(1));
}

function withTimeout(what, promise, ms = STEP_TIMEOUT_MS) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

// Expect `promise` to reject with a ResponseError; returns it.
async function expectError(what, promise) {
  try {
    const result = await withTimeout(what, promise);
    throw new assert.AssertionError({ message: `${what}: expected an error, got result ${JSON.stringify(result)}` });
  } catch (e) {
    if (e instanceof ResponseError) return e;
    throw e;
  }
}

// A reader that lets this script see responses to the raw requests it writes itself (with string
// ids, which the library never generates) before the connection does.
class TapReader extends StreamMessageReader {
  constructor(readable) {
    super(readable);
    this.waiting = new Map();
  }
  listen(callback) {
    return super.listen((msg) => {
      const isResponse = msg && !('method' in msg) && ('result' in msg || 'error' in msg);
      if (isResponse && typeof msg.id === 'string' && this.waiting.has(msg.id)) {
        const resolve = this.waiting.get(msg.id);
        this.waiting.delete(msg.id);
        resolve(msg);
        return;
      }
      callback(msg);
    });
  }
  expect(id) {
    return new Promise((resolve) => this.waiting.set(id, resolve));
  }
}

async function main() {
  const argv = process.argv.slice(2);
  if (argv.length === 0) {
    process.stderr.write('usage: node vscode_client.js <command> [args...]\n');
    process.exit(2);
  }

  const child = spawn(argv[0], argv.slice(1), { stdio: ['pipe', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (chunk) => {
    stderr += chunk.toString();
    if (stderr.length > 64 * 1024) stderr = stderr.slice(-32 * 1024);
    if (process.env.VSCODE_CLIENT_TRACE === '1') process.stderr.write(chunk);
  });
  const stderrTail = () => stderr.slice(-4000);
  const exited = new Promise((resolve) => {
    child.on('exit', (code, signal) => resolve({ code, signal }));
    child.on('error', (error) => resolve({ code: null, signal: null, error: String(error) }));
  });

  const reader = new TapReader(child.stdout);
  const writer = new StreamMessageWriter(child.stdin);
  const connection = createMessageConnection(reader, writer, { error: log, warn: log, info: log, log });
  if (process.env.VSCODE_CLIENT_TRACE === '1') {
    connection.trace(Trace.Verbose, { log: (message, data) => log(message, data ?? '') });
  }

  // What the peer sends us.
  const ticks = [];
  connection.onNotification('tick', (params) => ticks.push(params.n));
  const asked = [];
  connection.onRequest('client/ask', (params) => {
    asked.push(params);
    return { answer: 42, got: params === undefined ? null : params };
  });
  connection.onRequest('client/refuse', () => {
    throw new ResponseError(-32042, 'the client refuses', { reason: 'testing error pass-through' });
  });
  connection.listen();

  const checks = [];
  let current = 'start';
  let expectingExit = false;
  exited.then((status) => {
    if (!expectingExit) fail(current, new Error(`the peer exited early: ${JSON.stringify(status)}`), stderrTail);
  });
  const check = async (name, body) => {
    current = name;
    await body();
    checks.push(name);
  };
  const request = (what, ...args) => withTimeout(what, connection.sendRequest(...args));

  try {
    await check('echo (first request, id 0)', async () => {
      const params = { nested: { list: [1, 2, 3], flag: true, none: null }, text: 'ünïcödé ✓' };
      assert.deepEqual(await request('echo', 'echo', params), params);
      assert.equal(await request('echo', 'echo'), null);
    });

    await check('echo with string ids', async () => {
      for (const id of ['str-id-1', '7']) {
        const answer = reader.expect(id);
        await writer.write({ jsonrpc: '2.0', id, method: 'echo', params: { id } });
        const msg = await withTimeout(`echo id ${id}`, answer);
        assert.equal(typeof msg.id, 'string');
        assert.deepEqual(msg, { jsonrpc: '2.0', id, result: { id } });
      }
    });

    await check('add by name', async () => {
      assert.equal(await request('add', 'add', { a: 2, b: 40 }), 42);
    });

    await check('add by position', async () => {
      assert.equal(await request('add', 'add', 40, 2), 42);
    });

    await check('add with wrong params -> -32602', async () => {
      const e = await expectError('add', connection.sendRequest('add', { a: 'two', b: 40 }));
      assert.equal(e.code, -32602);
    });

    await check('fail error shape', async () => {
      const data = { why: 'testing', n: [1, 2] };
      const e = await expectError('fail', connection.sendRequest('fail', data));
      assert.equal(e.code, -32001);
      assert.equal(e.message, 'requested failure');
      assert.deepEqual(e.data, data);
    });

    await check('unknown method -> -32601', async () => {
      const e = await expectError('no/such/method', connection.sendRequest('no/such/method', { x: 1 }));
      assert.equal(e.code, -32601);
    });

    await check('notifyMe ticks in order before the answer', async () => {
      ticks.length = 0;
      assert.equal(await request('notifyMe', 'notifyMe', { count: 25 }), 25);
      assert.deepEqual(ticks, Array.from({ length: 25 }, (_, i) => i + 1));
    });

    await check('record/recorded', async () => {
      const values = ['first', { second: 2 }, [3], null, 5];
      for (const value of values) {
        await connection.sendNotification('record', { value });
      }
      assert.deepEqual(await request('recorded', 'recorded'), values);
    });

    await check('callBack answered by this side', async () => {
      const params = { question: 'what is six times seven?' };
      const result = await request('callBack', 'callBack', { method: 'client/ask', params });
      assert.deepEqual(result, { answer: 42, got: params });
      assert.deepEqual(asked.at(-1), params);
    });

    await check('callBack error passes through', async () => {
      const e = await expectError('callBack', connection.sendRequest('callBack', { method: 'client/refuse' }));
      assert.equal(e.code, -32042);
      assert.equal(e.message, 'the client refuses');
      assert.deepEqual(e.data, { reason: 'testing error pass-through' });
    });

    await check('slow completes', async () => {
      assert.equal(await request('slow', 'slow', { ms: 10 }), 'done');
    });

    await check('slow cancelled -> -32800, others served meanwhile', async () => {
      const source = new CancellationTokenSource();
      const started = Date.now();
      const slow = connection.sendRequest('slow', { ms: 30000 }, source.token);
      // The peer serves other requests while `slow` is pending.
      assert.deepEqual(await request('echo', 'echo', { during: 'slow' }), { during: 'slow' });
      source.cancel();
      const e = await expectError('slow', slow);
      assert.equal(e.code, -32800);
      assert.ok(Date.now() - started < STEP_TIMEOUT_MS, 'the cancelled call ended early');
    });

    await check('panic -> -32603, connection survives', async () => {
      const e = await expectError('panic', connection.sendRequest('panic'));
      assert.equal(e.code, -32603);
      const positional = await request('echo', 'echo', ParameterStructures.byPosition, 'still', 'alive');
      assert.deepEqual(positional, ['still', 'alive']);
    });

    await check('exit 0 on EOF', async () => {
      expectingExit = true;
      child.stdin.end();
      const status = await withTimeout('the peer exiting', exited);
      assert.deepEqual(status, { code: 0, signal: null });
    });
  } catch (e) {
    expectingExit = true;
    child.kill();
    fail(current, e, stderrTail);
    return;
  }

  if (finished) return;
  finished = true;
  connection.dispose();
  const summary = { ok: true, checks, ticks: ticks.length, asked: asked.length };
  process.stdout.write(`${JSON.stringify(summary)}\n`, () => process.exit(0));
}

main().catch((e) => {
  process.stdout.write(`${JSON.stringify({ ok: false, failed: 'main', error: String(e && e.stack) })}\n`, () =>
    process.exit(1),
  );
});
