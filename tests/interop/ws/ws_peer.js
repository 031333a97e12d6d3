// A third-party WebSocket peer on node's `ws` package, speaking JSON-RPC by hand (raw frames,
// no JSON-RPC library), for tests/net/ws_interop.rs.
//
//   node ws_peer.js client ws://127.0.0.1:PORT/   drive a jsonrpc-duplex server (the kv service
//                                                 of tests/net_common) and check every frame
//   node ws_peer.js server                        serve the same kv methods on 127.0.0.1:<free
//                                                 port> (printed as `LISTENING <port>`) for one
//                                                 jsonrpc-duplex client, then exit
//
// Every check failure exits with status 1 and a message on stderr; each step prints `ok <step>`.
// Everything is bounded by a 20 s watchdog.
'use strict';

const { WebSocket, WebSocketServer } = require('ws');

const watchdog = setTimeout(() => fail('watchdog: the peer did not finish within 20 s'), 20000);

function fail(message) {
  process.stderr.write(`FAIL: ${message}\n`);
  process.exit(1);
}

function check(cond, message) {
  if (!cond) fail(message);
}

function same(actual, expected, what) {
  const a = JSON.stringify(actual);
  const e = JSON.stringify(expected);
  check(a === e, `${what}: expected ${e}, got ${a}`);
}

/// Frames in arrival order, as { json, isBinary }; `next()` waits for the next one.
function inbox(ws) {
  const queue = [];
  const waiters = [];
  ws.on('message', (data, isBinary) => {
    let json;
    try {
      json = JSON.parse(data.toString('utf8'));
    } catch (e) {
      fail(`a frame that is not JSON: ${data}`);
    }
    const item = { json, isBinary };
    const waiter = waiters.shift();
    if (waiter) waiter(item);
    else queue.push(item);
  });
  return {
    next() {
      if (queue.length > 0) return Promise.resolve(queue.shift());
      return new Promise((resolve) => waiters.push(resolve));
    },
  };
}

async function runClient(url) {
  const ws = new WebSocket(url);
  const frames = inbox(ws);
  await new Promise((resolve, reject) => {
    ws.once('open', resolve);
    ws.once('error', reject);
  });
  const text = async () => {
    const f = await frames.next();
    check(!f.isBinary, `answers must be text frames: ${JSON.stringify(f.json)}`);
    return f.json;
  };

  // 1. A call by position, one message per text frame.
  ws.send(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'kv/add', params: [2, 40] }));
  same(await text(), { jsonrpc: '2.0', id: 1, result: 42 }, 'kv/add');
  console.log('ok add');

  // 2. The server calls us back mid-request (watcher/name), then answers.
  ws.send(JSON.stringify({ jsonrpc: '2.0', id: 'two', method: 'kv/hello' }));
  const callback = await text();
  check(callback.method === 'watcher/name' && callback.id !== undefined, `a call back: ${JSON.stringify(callback)}`);
  ws.send(JSON.stringify({ jsonrpc: '2.0', id: callback.id, result: 'node-ws' }));
  const hello = await text();
  check(hello.id === 'two' && /^hello, node-ws \(connection \d+\)$/.test(hello.result), `kv/hello: ${JSON.stringify(hello)}`);
  console.log('ok callback');

  // 3. A push: the change notification arrives before the answer of the call that caused it.
  ws.send(JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'kv/set', params: { key: 'lang', value: 'js' } }));
  same(await text(), { jsonrpc: '2.0', method: 'watcher/changed', params: ['lang', 'js'] }, 'the push');
  same(await text(), { jsonrpc: '2.0', id: 3, result: null }, 'kv/set');
  console.log('ok push');

  // 4. A batch in one frame is answered in one frame.
  ws.send(JSON.stringify([
    { jsonrpc: '2.0', id: 4, method: 'kv/get', params: ['lang'] },
    { jsonrpc: '2.0', method: 'kv/add', params: [1, 1] },
    { jsonrpc: '2.0', id: 5, method: 'nope' },
  ]));
  const batch = await text();
  check(Array.isArray(batch) && batch.length === 2, `a batch answer: ${JSON.stringify(batch)}`);
  batch.sort((a, b) => a.id - b.id);
  same(batch[0], { jsonrpc: '2.0', id: 4, result: 'js' }, 'batch[0]');
  check(batch[1].id === 5 && batch[1].error.code === -32601, `batch[1]: ${JSON.stringify(batch[1])}`);
  console.log('ok batch');

  // 5. Garbage is answered -32700 and the connection goes on.
  ws.send('{"jsonrpc": "2.0", "id": ');
  const parseError = await text();
  check(parseError.id === null && parseError.error.code === -32700, `-32700: ${JSON.stringify(parseError)}`);
  console.log('ok garbage');

  // 6. A binary frame carrying JSON is accepted; the answer is a text frame.
  ws.send(Buffer.from(JSON.stringify({ jsonrpc: '2.0', id: 6, method: 'kv/add', params: [20, 3] })), { binary: true });
  same(await text(), { jsonrpc: '2.0', id: 6, result: 23 }, 'binary request');
  console.log('ok binary');

  // 7. Ping: answered with a pong carrying the same payload.
  const pong = new Promise((resolve) => ws.once('pong', resolve));
  ws.ping(Buffer.from('node-ping'));
  const payload = await pong;
  check(payload.toString() === 'node-ping', `pong payload: ${payload}`);
  console.log('ok ping');

  // 8. Close with a code and a reason; the server completes the handshake.
  const closed = new Promise((resolve) => ws.once('close', (code, reason) => resolve({ code, reason: reason.toString() })));
  ws.close(1000, 'node is done');
  const close = await closed;
  check(close.code === 1000, `the server's close code: ${JSON.stringify(close)}`);
  console.log('ok close');
}

async function runServer() {
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0 });
  await new Promise((resolve) => wss.once('listening', resolve));
  console.log(`LISTENING ${wss.address().port}`);
  const store = new Map();
  wss.once('connection', (ws) => {
    wss.close();
    let nextId = 0;
    const pending = new Map();
    const send = (msg) => ws.send(JSON.stringify(msg));
    ws.on('message', (data, isBinary) => {
      check(!isBinary, 'jsonrpc-duplex sends text frames');
      const msg = JSON.parse(data.toString('utf8'));
      check(msg.jsonrpc === '2.0', `jsonrpc member: ${data}`);
      if (msg.method === undefined) {
        const resolve = pending.get(msg.id);
        check(resolve !== undefined, `an answer to an id we never sent: ${data}`);
        pending.delete(msg.id);
        resolve(msg);
        return;
      }
      const params = msg.params;
      const answer = (result) => send({ jsonrpc: '2.0', id: msg.id, result });
      switch (msg.method) {
        case 'kv/add': {
          const [a, b] = Array.isArray(params) ? params : [params.a, params.b];
          answer(a + b);
          break;
        }
        case 'kv/set': {
          const [key, value] = Array.isArray(params) ? params : [params.key, params.value];
          const old = store.has(key) ? store.get(key) : null;
          store.set(key, value);
          send({ jsonrpc: '2.0', method: 'watcher/changed', params: [key, value] });
          answer(old);
          break;
        }
        case 'kv/get': {
          const [key] = Array.isArray(params) ? params : [params.key];
          answer(store.has(key) ? store.get(key) : null);
          break;
        }
        case 'kv/hello': {
          const id = `node-${nextId++}`;
          pending.set(id, (reply) => answer(`hello, ${reply.result} (connection 0)`));
          send({ jsonrpc: '2.0', id, method: 'watcher/name' });
          break;
        }
        default:
          if (msg.id !== undefined) {
            send({ jsonrpc: '2.0', id: msg.id, error: { code: -32601, message: `Method not found: ${msg.method}` } });
          }
      }
    });
    ws.on('pong', (payload) => console.log(`PONG ${payload.toString()}`));
    ws.ping(Buffer.from('from-node'));
    ws.on('close', (code, reason) => {
      console.log(`CLOSED ${code} ${reason.toString()}`);
      clearTimeout(watchdog);
      process.exit(0);
    });
  });
}

const [mode, url] = process.argv.slice(2);
const run = mode === 'client' ? runClient(url) : mode === 'server' ? runServer() : Promise.reject(new Error(`unknown mode ${mode}`));
run.then(
  () => {
    if (mode === 'client') {
      clearTimeout(watchdog);
      process.exit(0);
    }
  },
  (e) => fail(e && e.stack ? e.stack : String(e)),
);
