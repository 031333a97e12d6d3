#!/usr/bin/env node
// A JSON-RPC peer on vscode-jsonrpc (the library VS Code and most LSP servers use), serving on its
// stdin/stdout with Content-Length framing. jsonrpc-duplex's interop tests spawn it as a child.
//
// Requests (one star handler, raw params, so positional arrays are not spread):
//   echo                       -> the params (null if absent)
//   add {a,b}                  -> a+b; bad params -> -32602
//   slow {ms?=30000}           -> {slept:ms}; $/cancelRequest -> -32800 "Request cancelled"
//   callBack P                 -> sends request `client/ask` P back, returns its result / its error
//   callBackAndCancel {afterMs?=50, cancelOn?, params?}
//                              -> sends `client/ask`, cancels it after afterMs (or, given
//                                 cancelOn, once the notification of that method arrives);
//                                 {cancelled:true,error} or {cancelled:false,result}
//   progress {token, steps?=3, delayMs?=5}
//                              -> $/progress begin, report x steps, end; then {done:steps}
//   emitLog P                  -> notification `log` P, then null
//   notifyBack {method,params} -> that notification, then null
//   fail {code?,message?,data?}-> that error
//   getNotifications           -> the notifications received so far ({method, params})
//   pendingSlow                -> how many `slow` calls are still waiting (not in peers.md)
//   shutdown                   -> null
// Notifications: pleaseLog {message} -> notification `log` {message, via:"notification"};
// exit -> exit 0; others are recorded. Unknown request -> -32601 "Unhandled method X".
// EOF on stdin -> pending `slow` calls answered -32800, stdout flushed, exit 0.
// VSCODE_PEER_TRACE=1 traces the traffic to stderr.
'use strict';

const {
  createMessageConnection,
  StreamMessageReader,
  StreamMessageWriter,
  ResponseError,
  ErrorCodes,
  CancellationTokenSource,
  ParameterStructures,
  Trace,
} = require('vscode-jsonrpc/node');

const REQUEST_CANCELLED = -32800;

function log(...args) {
  process.stderr.write(`[vscode_peer] ${args.join(' ')}\n`);
}

// Track writes in flight so that the exit paths can wait for them.
const inflightWrites = new Set();
class TrackingWriter extends StreamMessageWriter {
  write(msg) {
    const p = super.write(msg);
    inflightWrites.add(p);
    const done = () => inflightWrites.delete(p);
    p.then(done, done);
    return p;
  }
}

const connection = createMessageConnection(
  new StreamMessageReader(process.stdin),
  new TrackingWriter(process.stdout),
  { error: log, warn: log, info: log, log },
);

if (process.env.VSCODE_PEER_TRACE === '1') {
  connection.trace(Trace.Verbose, { log: (message, data) => log(message, data ?? '') });
}

const notifications = [];
// Resolvers of pending `slow` calls, so EOF can answer them.
const pendingSlow = new Set();

function isObject(v) {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

// Send a request with exactly these params (objects by name, arrays by position, none if absent).
function sendRaw(method, params, token) {
  const tail = token ? [token] : [];
  if (params === undefined || params === null) {
    return connection.sendRequest(method, ...tail);
  }
  if (Array.isArray(params)) {
    if (params.length === 0) {
      return connection.sendRequest(method, ...tail);
    }
    return connection.sendRequest(method, ParameterStructures.byPosition, ...params, ...tail);
  }
  return connection.sendRequest(method, params, ...tail);
}

function errorJson(e) {
  if (e instanceof ResponseError) {
    return e.toJson();
  }
  return { code: ErrorCodes.InternalError, message: String(e && e.message ? e.message : e) };
}

function delay(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

const handlers = {
  echo(params) {
    return params === undefined ? null : params;
  },

  add(params) {
    if (!isObject(params) || typeof params.a !== 'number' || typeof params.b !== 'number') {
      throw new ResponseError(ErrorCodes.InvalidParams, 'add expects {a: number, b: number}');
    }
    return params.a + params.b;
  },

  slow(params, token) {
    const ms = isObject(params) && typeof params.ms === 'number' ? params.ms : 30000;
    return new Promise((resolve, reject) => {
      let sub;
      const entry = {};
      const finish = (fn, value) => {
        clearTimeout(timer);
        if (sub) sub.dispose();
        pendingSlow.delete(entry);
        fn(value);
      };
      const cancelled = () => finish(reject, new ResponseError(REQUEST_CANCELLED, 'Request cancelled'));
      const timer = setTimeout(() => finish(resolve, { slept: ms }), ms);
      entry.cancel = cancelled;
      pendingSlow.add(entry);
      if (token.isCancellationRequested) {
        cancelled();
      } else {
        sub = token.onCancellationRequested(cancelled);
      }
    });
  },

  async callBack(params) {
    try {
      return await sendRaw('client/ask', params);
    } catch (e) {
      if (e instanceof ResponseError) {
        throw new ResponseError(e.code, e.message, e.data);
      }
      throw e;
    }
  },

  async callBackAndCancel(params) {
    const afterMs = isObject(params) && typeof params.afterMs === 'number' ? params.afterMs : 50;
    const inner = isObject(params) ? params.params : undefined;
    const source = new CancellationTokenSource();
    const cancelOn = isObject(params) && typeof params.cancelOn === 'string' ? params.cancelOn : undefined;
    const timer = cancelOn === undefined ? setTimeout(() => source.cancel(), afterMs) : undefined;
    if (cancelOn !== undefined) {
      cancelWaiters.push({ method: cancelOn, cancel: () => source.cancel() });
    }
    try {
      const result = await sendRaw('client/ask', inner, source.token);
      return { cancelled: false, result: result === undefined ? null : result };
    } catch (e) {
      return { cancelled: true, error: errorJson(e) };
    } finally {
      clearTimeout(timer);
      source.dispose();
    }
  },

  async progress(params) {
    if (!isObject(params) || (typeof params.token !== 'string' && typeof params.token !== 'number')) {
      throw new ResponseError(ErrorCodes.InvalidParams, 'progress expects {token, steps?, delayMs?}');
    }
    const steps = typeof params.steps === 'number' ? params.steps : 3;
    const delayMs = typeof params.delayMs === 'number' ? params.delayMs : 5;
    const send = (value) => connection.sendNotification('$/progress', { token: params.token, value });
    await send({ kind: 'begin', title: 'progress', percentage: 0 });
    for (let i = 1; i <= steps; i++) {
      await delay(delayMs);
      await send({ kind: 'report', message: `step ${i}/${steps}`, percentage: Math.floor((i * 100) / steps) });
    }
    await send({ kind: 'end', message: 'done' });
    return { done: steps };
  },

  async emitLog(params) {
    await connection.sendNotification('log', params === undefined ? null : params);
    return null;
  },

  async notifyBack(params) {
    if (!isObject(params) || typeof params.method !== 'string') {
      throw new ResponseError(ErrorCodes.InvalidParams, 'notifyBack expects {method, params?}');
    }
    await connection.sendNotification(params.method, params.params);
    return null;
  },

  fail(params) {
    const p = isObject(params) ? params : {};
    const code = typeof p.code === 'number' ? p.code : -32000;
    const message = typeof p.message === 'string' ? p.message : 'requested failure';
    throw new ResponseError(code, message, p.data);
  },

  getNotifications() {
    return notifications;
  },

  pendingSlow() {
    return pendingSlow.size;
  },

  shutdown() {
    return null;
  },
};

connection.onRequest((method, params, token) => {
  const handler = Object.prototype.hasOwnProperty.call(handlers, method) ? handlers[method] : undefined;
  if (!handler) {
    throw new ResponseError(ErrorCodes.MethodNotFound, `Unhandled method ${method}`);
  }
  return handler(params, token);
});

let exiting = false;
async function flushAndExit(code) {
  if (exiting) return;
  exiting = true;
  // Let the handlers that were just settled write their answers, then drain stdout.
  await new Promise((resolve) => setImmediate(resolve));
  await Promise.allSettled([...inflightWrites]);
  process.stdout.write('', () => process.exit(code));
}

// callBackAndCancel's waits for a notification: {method, cancel}.
const cancelWaiters = [];

connection.onNotification((method, params) => {
  for (let i = cancelWaiters.length - 1; i >= 0; i--) {
    if (cancelWaiters[i].method === method) {
      cancelWaiters.splice(i, 1)[0].cancel();
    }
  }
  if (method === 'pleaseLog') {
    const message = isObject(params) ? params.message : undefined;
    return connection.sendNotification('log', { message, via: 'notification' });
  }
  if (method === 'exit') {
    return flushAndExit(0);
  }
  notifications.push({ method, params: params === undefined ? null : params });
  return undefined;
});

connection.onError(([error]) => log('connection error:', error && error.message ? error.message : error));

connection.onClose(() => {
  // EOF on stdin: answer what is still pending, flush, leave.
  for (const entry of [...pendingSlow]) entry.cancel();
  flushAndExit(0);
});

connection.listen();
