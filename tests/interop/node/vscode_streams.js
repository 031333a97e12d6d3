#!/usr/bin/env node
// A vscode-jsonrpc client that spawns jsonrpc-duplex's `conformance_peer` example and exercises
// its streams (StreamJsonRpc's enumerator protocol, spoken here by hand with plain requests) and
// its `$/progress` reports, with cancellation (`$/cancelRequest`) in between.
//
//   node vscode_streams.js <command> [args...]
//
// Prints one JSON summary line on stdout: {"ok":true,"checks":[...]} and exits 0, or
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
  ProgressType,
  Trace,
} = require('vscode-jsonrpc/node');

const STEP_TIMEOUT_MS = 10000;
const NO_MARSHALED_OBJECT = -32001;
const REQUEST_CANCELLED = -32800;

function log(...args) {
  process.stderr.write(`[vscode_streams] ${args.join(' ')}\n`);
}

function delay(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

let finished = false;
function fail(check, error, stderrTail) {
  if (finished) return;
  finished = true;
  const summary = { ok: false, failed: check, error: error && error.stack ? error.stack : String(error), stderr: stderrTail() };
  process.stdout.write(`${JSON.stringify(summary)}\n`, () => process.exit(1));
}

function withTimeout(what, promise, ms = STEP_TIMEOUT_MS) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

async function expectError(what, promise) {
  try {
    const result = await withTimeout(what, promise);
    throw new assert.AssertionError({ message: `${what}: expected an error, got result ${JSON.stringify(result)}` });
  } catch (e) {
    if (e instanceof ResponseError) return e;
    throw e;
  }
}

async function main() {
  const argv = process.argv.slice(2);
  if (argv.length === 0) {
    process.stderr.write('usage: node vscode_streams.js <command> [args...]\n');
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

  const connection = createMessageConnection(
    new StreamMessageReader(child.stdout),
    new StreamMessageWriter(child.stdin),
    { error: log, warn: log, info: log, log },
  );
  if (process.env.VSCODE_CLIENT_TRACE === '1') {
    connection.trace(Trace.Verbose, { log: (message, data) => log(message, data ?? '') });
  }
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
  // `$/enumerator/next` as StreamJsonRpc sends it: positional, `[token]`.
  const next = (token, cancel) =>
    cancel
      ? connection.sendRequest('$/enumerator/next', ParameterStructures.byPosition, token, cancel)
      : connection.sendRequest('$/enumerator/next', ParameterStructures.byPosition, token);
  const abort = (token) => connection.sendNotification('$/enumerator/abort', ParameterStructures.byPosition, token);

  try {
    await check('withProgress reports reach onProgress, all before the answer', async () => {
      for (const token of ['tok-1', 42]) {
        const reports = [];
        const registration = connection.onProgress(new ProgressType(), token, (value) => reports.push(value));
        const answer = await request('withProgress', 'withProgress', { steps: 5, progressToken: token });
        // vscode-jsonrpc hands notifications and responses over in arrival order.
        const seenAtAnswer = reports.length;
        registration.dispose();
        assert.equal(answer, 5);
        assert.equal(seenAtAnswer, 5);
        assert.deepEqual(reports, [1, 2, 3, 4, 5].map((step) => ({ step })));
      }
    });

    await check('countTo pulled with $/enumerator/next to finished, then -32001', async () => {
      const result = await request('countTo', 'countTo', { n: 3 });
      assert.equal(typeof result.token, 'number');
      assert.equal(result.values, undefined);
      const values = [];
      for (;;) {
        const batch = await withTimeout('next', next(result.token));
        assert.ok(batch.values.length > 0 || batch.finished, `never an empty batch that is not the last: ${JSON.stringify(batch)}`);
        values.push(...batch.values);
        if (batch.finished) break;
      }
      assert.deepEqual(values, [1, 2, 3]);
      const e = await expectError('next after finished', next(result.token));
      assert.equal(e.code, NO_MARSHALED_OBJECT);
      assert.equal(e.message, 'This remote object no longer exists.');
      // By name works too.
      const named = await request('countTo', 'countTo', { n: 1 });
      assert.deepEqual(await request('next', '$/enumerator/next', { token: named.token }), { values: [1], finished: false });
    });

    await check('failAfter: the items, then the error, then -32001', async () => {
      const { token } = await request('failAfter', 'failAfter', { n: 2 });
      assert.deepEqual(await withTimeout('next', next(token)), { values: [1], finished: false });
      assert.deepEqual(await withTimeout('next', next(token)), { values: [2], finished: false });
      const e = await expectError('next', next(token));
      assert.equal(e.code, -32010);
      assert.equal(e.message, 'failed after 2 items');
      assert.equal((await expectError('next', next(token))).code, NO_MARSHALED_OBJECT);
    });

    await check('abort stops countToSlowly mid-item', async () => {
      const before = await request('producedCount', 'producedCount');
      const { token } = await request('countToSlowly', 'countToSlowly', { n: 1000, ms: 300 });
      assert.deepEqual(await withTimeout('next', next(token)), { values: [1], finished: false });
      assert.equal(await request('producedCount', 'producedCount'), before + 1);
      // The second item is being made (a 300 ms wait) when the abort arrives.
      const pending = next(token);
      await delay(50);
      await abort(token);
      const e = await expectError('next during abort', pending);
      assert.equal(e.code, NO_MARSHALED_OBJECT);
      await delay(500);
      assert.equal(await request('producedCount', 'producedCount'), before + 1, 'nothing made after the abort');
      assert.equal((await expectError('next', next(token))).code, NO_MARSHALED_OBJECT);
    });

    await check('$/cancelRequest on a next ends the sequence with -32800', async () => {
      const before = await request('producedCount', 'producedCount');
      const { token } = await request('countToSlowly', 'countToSlowly', { n: 10, ms: 5000 });
      const source = new CancellationTokenSource();
      const started = Date.now();
      const pending = next(token, source.token);
      await delay(100);
      source.cancel();
      const e = await expectError('cancelled next', pending);
      assert.equal(e.code, REQUEST_CANCELLED);
      assert.ok(Date.now() - started < 4000, 'the cancelled next ended early');
      assert.equal((await expectError('next', next(token))).code, NO_MARSHALED_OBJECT);
      assert.equal(await request('producedCount', 'producedCount'), before);
    });

    await check('$/cancelRequest on withProgress still answers', async () => {
      const reports = [];
      const registration = connection.onProgress(new ProgressType(), 'tok-c', (value) => reports.push(value));
      const source = new CancellationTokenSource();
      source.cancel();
      // Cancelled before it is sent: vscode-jsonrpc sends it anyway, then the cancellation; the
      // peer answers one way or the other, and never reports after it.
      const outcome = await withTimeout(
        'withProgress',
        connection.sendRequest('withProgress', { steps: 3, progressToken: 'tok-c' }, source.token).then(
          (result) => ({ result }),
          (error) => ({ error }),
        ),
      );
      const seenAtAnswer = reports.length;
      await request('producedCount', 'producedCount');
      registration.dispose();
      assert.equal(reports.length, seenAtAnswer, 'no report after the answer');
      if (outcome.error) {
        assert.equal(outcome.error.code, REQUEST_CANCELLED);
      } else {
        assert.equal(outcome.result, 3);
        assert.equal(seenAtAnswer, 3);
      }
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
  process.stdout.write(`${JSON.stringify({ ok: true, checks })}\n`, () => process.exit(0));
}

main().catch((e) => {
  process.stdout.write(`${JSON.stringify({ ok: false, failed: 'main', error: String(e && e.stack) })}\n`, () =>
    process.exit(1),
  );
});
