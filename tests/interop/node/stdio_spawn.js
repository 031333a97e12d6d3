// Spawns a stdio program the way every Node host does (`child_process.spawn` with
// `stdio: 'pipe'`: libuv hands the child one Unix socketpair per stream, not a pipe), talks
// Content-Length-framed JSON-RPC to it by hand, then closes its stdin and waits for it to exit.
//
//   node stdio_spawn.js <program> [--calls N]
//
// Prints one JSON line: {"ok", "answers", "exit", "p50Us", "p99Us", "calls"}. With --calls N it
// also times N echo calls one after the other (a round trip each), after 200 warm-up calls.
'use strict';

const { spawn } = require('node:child_process');

const program = process.argv[2];
const callsAt = process.argv.indexOf('--calls');
const calls = callsAt > 0 ? Number(process.argv[callsAt + 1]) : 0;
if (!program || !Number.isInteger(calls) || calls < 0) {
  console.error('usage: node stdio_spawn.js <program> [--calls N]');
  process.exit(2);
}

const child = spawn(program, ['--framing', 'content-length'], { stdio: ['pipe', 'pipe', 'inherit'] });
const deadline = setTimeout(() => {
  console.log(JSON.stringify({ ok: false, error: 'timed out after 60 s' }));
  child.kill('SIGKILL');
  process.exit(1);
}, 60_000);

let buffered = Buffer.alloc(0);
const waiting = new Map();
child.stdout.on('data', (chunk) => {
  buffered = Buffer.concat([buffered, chunk]);
  for (;;) {
    const end = buffered.indexOf('\r\n\r\n');
    if (end < 0) return;
    const header = buffered.subarray(0, end).toString('ascii');
    const match = /Content-Length: (\d+)/i.exec(header);
    if (!match) throw new Error(`a frame without Content-Length: ${header}`);
    const length = Number(match[1]);
    if (buffered.length < end + 4 + length) return;
    const message = JSON.parse(buffered.subarray(end + 4, end + 4 + length).toString('utf8'));
    buffered = buffered.subarray(end + 4 + length);
    const resolve = waiting.get(message.id);
    if (resolve) {
      waiting.delete(message.id);
      resolve(message);
    }
  }
});

let nextId = 1;
function call(method, params) {
  const id = nextId++;
  const body = Buffer.from(JSON.stringify({ jsonrpc: '2.0', id, method, params }), 'utf8');
  child.stdin.write(Buffer.concat([Buffer.from(`Content-Length: ${body.length}\r\n\r\n`, 'ascii'), body]));
  return new Promise((resolve) => waiting.set(id, resolve));
}

async function main() {
  const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
  const answers = [];
  answers.push(await call('echo', { hello: 'node' }));
  answers.push(await call('add', { a: 40, b: 2 }));
  answers.push(await call('no/such/method', {}));
  const summary = { answers };
  if (calls > 0) {
    for (let i = 0; i < 200; i++) await call('echo', [i]);
    const took = [];
    for (let i = 0; i < calls; i++) {
      const start = process.hrtime.bigint();
      await call('echo', [i]);
      took.push(Number(process.hrtime.bigint() - start) / 1000);
    }
    took.sort((a, b) => a - b);
    summary.calls = calls;
    summary.p50Us = Math.round(took[Math.floor(calls / 2)] * 10) / 10;
    summary.p99Us = Math.round(took[Math.floor(calls * 0.99)] * 10) / 10;
  }
  // How a host ends its child: close its stdin, and wait.
  const closedAt = process.hrtime.bigint();
  child.stdin.end();
  summary.exit = await exited;
  summary.exitMs = Math.round(Number(process.hrtime.bigint() - closedAt) / 1e5) / 10;
  summary.ok = summary.exit.code === 0;
  clearTimeout(deadline);
  console.log(JSON.stringify(summary));
}

main().catch((e) => {
  console.log(JSON.stringify({ ok: false, error: String(e && e.stack) }));
  child.kill('SIGKILL');
  process.exit(1);
});
