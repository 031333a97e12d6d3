//! A reference JSON-RPC peer on stdio, built with `#[rpc]`, for conformance and interop tests.
//!
//! ```text
//! conformance_peer [--framing content-length|newline]
//! ```
//!
//! Requests:
//! - `echo` returns its params unchanged (`null` when absent);
//! - `add` takes `{"a":i64,"b":i64}` or `[a, b]` and returns the sum;
//! - `fail` answers `{"code":-32001,"message":"requested failure","data":<its params>}`;
//! - `slow` `{"ms":N}` waits N ms and returns `"done"`, or is answered `-32800` when cancelled;
//! - `callBack` `{"method":M,"params":P}` calls M with P on the other side and returns its answer
//!   (an error answer becomes this request's error);
//! - `notifyMe` `{"count":N}` sends the notifications `tick` `{"n":1}` … `{"n":N}`, then answers N;
//! - `recorded` returns every value the notification `record` `{"value":V}` appended, in order;
//! - `panic` panics in its handler (answered `-32603`; the connection survives);
//! - `countTo` `{"n":N}` streams 1..=N (StreamJsonRpc's enumerator protocol: the result is
//!   `{"token":T}`, pulled with `$/enumerator/next` `[T]`, ended early with `$/enumerator/abort`);
//! - `countToSlowly` `{"n":N,"ms":M}` streams 1..=N, waiting M ms before each item, and counts the
//!   items it made: `producedCount` returns that count (so an abort is seen to stop it);
//! - `withProgress` `{"steps":N,"progressToken":T}` sends `$/progress` `{"token":T,"value":{"step":i}}`
//!   for i = 1..=N, then answers N;
//! - `failAfter` `{"n":N}` streams 1..=N, then fails the stream with `-32010 "failed after N items"`.
//!
//! The notification `exit` ends the peer as LSP's `exit` ends a language server: it closes the
//! connection and returns from `main` (exit code 0), even while the other side keeps its pipes
//! open. Unknown methods are answered `-32601`, wrong params `-32602`.
//!
//! When its input reaches EOF the peer answers what it has read, cancels what is still running
//! after the connection's EOF grace (1 s: a `slow` is answered `-32800`), and exits 0 once its
//! answers are written (or after the flush timeout, 2 s, if nobody reads them). Stdout is the
//! wire: logs go to stderr, filtered by `RUST_LOG` (default `warn`).
//!
//! Every method is an `#[rpc]` trait method ([`Conformance`], served by the generated
//! [`ConformanceServer`]); what the peer sends to the other side is the trait [`Caller`], called
//! through the generated [`CallerClient`]. The methods whose params are "whatever JSON came"
//! (`echo`, `fail`, `panic`, `record`'s value, `callBack`'s params and result) take and return
//! `serde_json::value::RawValue`: raw JSON is a typed argument like any other, so no hand-written
//! route is needed.

// Not `eprintln!`: it panics once our parent, which holds stderr, is gone.
#[path = "common/stderr.rs"]
mod stderr;

use std::process::ExitCode;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use futures::{Stream, StreamExt};
use jsonrpc_duplex::{
    CallOptions, CancellationToken, CloseKind, CloseReason, Connection, Error, ErrorObject, Framing, Handle, Progress,
    RpcError, rpc,
};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use stderr::log_line;

/// Raw JSON, kept byte for byte as it came.
pub type Json = Box<RawValue>;

/// The methods this peer answers.
#[rpc]
pub trait Conformance {
    /// Returns its params unchanged; `null` when there are none. `"object"`: the params, an
    /// array or an object, are the one argument.
    #[method(params = "object")]
    async fn echo(&self, params: Option<Json>) -> Option<Json>;

    /// `a + b`, from `{"a":..,"b":..}` or `[a, b]` (a named method accepts both); an overflow is
    /// a `-32602`.
    #[method(params = "named")]
    async fn add(&self, a: i64, b: i64) -> Result<i64, RpcError>;

    /// Always fails: `-32001 "requested failure"`, with the params as `data` (none when absent).
    #[method(params = "object")]
    async fn fail(&self, params: Option<Json>) -> Result<(), ErrorObject>;

    /// Waits `ms` milliseconds and returns `"done"`; `-32800` when the caller cancels it.
    #[method(params = "named")]
    async fn slow(&self, ms: u64, cancel: CancellationToken) -> Result<String, RpcError>;

    /// Calls `method` with `params` on the other side and returns its answer; its error answer
    /// becomes this request's error, unchanged. The method is any name the caller picks, so the
    /// call goes through the connection's `Handle` rather than a typed client.
    #[method(name = "callBack", params = "named")]
    async fn call_back(
        &self,
        method: String,
        params: Option<Json>,
        #[context] peer: Handle,
    ) -> Result<Json, ErrorObject>;

    /// Sends the notifications `tick` `{"n":1}` … `{"n":count}` (all queued before the answer),
    /// then answers `count`.
    #[method(name = "notifyMe", params = "named")]
    async fn notify_me(&self, count: u64, #[context] caller: CallerClient) -> Result<u64, RpcError>;

    /// Appends `value` to what `recorded` returns. `"object"` with a struct, so that a `record`
    /// without a `value` member is dropped (a by-name `Json` argument would read it as `null`).
    #[notification(params = "object")]
    async fn record(&self, params: RecordParams);

    /// Every value `record` appended, in order. Takes no params (none, `null`, `[]` or `{}`).
    async fn recorded(&self) -> Vec<Json>;

    /// Panics in its handler: the core answers `-32603` and the connection goes on. Any params.
    #[method(name = "panic", params = "object")]
    async fn explode(&self, params: Option<Json>);

    /// Streams `1..=n`: the result is an enumerable object the caller pulls.
    #[method(name = "countTo", params = "named")]
    fn count_to(&self, n: u64) -> impl Stream<Item = u64> + Send;

    /// Streams `1..=n`, waiting `ms` milliseconds before each item; each item made is counted.
    #[method(name = "countToSlowly", params = "named")]
    fn count_to_slowly(&self, n: u64, ms: u64) -> impl Stream<Item = u64> + Send;

    /// How many items `countToSlowly` has made so far, all calls together.
    #[method(name = "producedCount")]
    async fn produced_count(&self) -> u64;

    /// Reports `{"step":i}` for i = 1..=steps on the caller's token, then answers `steps`.
    #[method(name = "withProgress", params = "named")]
    async fn with_progress(&self, steps: u64, #[param(rename = "progressToken")] progress: Progress<StepReport>)
    -> u64;

    /// Streams `1..=n`, then fails the stream with `-32010`.
    #[method(name = "failAfter", params = "named")]
    fn fail_after(&self, n: u64) -> impl Stream<Item = Result<u64, RpcError>> + Send;

    /// Closes the connection and returns from `main` (LSP's `exit`). Any params.
    #[notification(params = "object")]
    async fn exit(&self, params: Option<Json>);
}

/// One `withProgress` report.
#[derive(Serialize, Deserialize)]
pub struct StepReport {
    /// 1, 2, … up to the steps asked for.
    pub step: u64,
}

/// What this peer sends to the other side.
#[rpc(params = "object")]
pub trait Caller {
    /// One of the notifications `notifyMe` sends.
    #[notification]
    async fn tick(&self, tick: Tick);
}

/// The params of `record`.
#[derive(Serialize, Deserialize)]
pub struct RecordParams {
    /// The value to append.
    pub value: Json,
}

/// The params of `tick`.
#[derive(Serialize, Deserialize)]
pub struct Tick {
    /// 1, 2, … up to the count asked for.
    pub n: u64,
}

/// The conformance methods, and what `record` appended.
#[derive(Default)]
struct Peer {
    recorded: Mutex<Vec<Json>>,
    /// Items `countToSlowly` made.
    produced: AtomicU64,
    /// Fired by `exit`.
    exit: CancellationToken,
}

impl Conformance for Peer {
    async fn echo(&self, params: Option<Json>) -> Option<Json> {
        params
    }

    async fn add(&self, a: i64, b: i64) -> Result<i64, RpcError> {
        a.checked_add(b).ok_or_else(|| RpcError::invalid_params(format!("{a} + {b} overflows an i64")))
    }

    async fn fail(&self, params: Option<Json>) -> Result<(), ErrorObject> {
        let error = ErrorObject::new(-32001, "requested failure");
        Err(match params {
            Some(params) => error.with_raw_data(params),
            None => error,
        })
    }

    async fn slow(&self, ms: u64, cancel: CancellationToken) -> Result<String, RpcError> {
        // The core also answers -32800 and drops this future when the token fires; waiting on the
        // token here makes the handler correct on its own.
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_millis(ms)) => Ok("done".to_owned()),
            _ = cancel.cancelled() => Err(ErrorObject::request_cancelled().into()),
        }
    }

    async fn call_back(&self, method: String, params: Option<Json>, peer: Handle) -> Result<Json, ErrorObject> {
        // Dropping this future (when our request is cancelled) cancels the inner call too.
        match peer.request_raw(&method, &params, CallOptions::default()).await {
            Ok(result) => Ok(result),
            Err(Error::Remote(error)) => Err(error),
            Err(Error::Cancelled) => Err(ErrorObject::request_cancelled()),
            Err(other) => Err(ErrorObject::internal_error(format!("calling {method} back failed: {other}"))),
        }
    }

    async fn notify_me(&self, count: u64, caller: CallerClient) -> Result<u64, RpcError> {
        for n in 1..=count {
            caller.tick(Tick { n }).await.map_err(|e| RpcError::internal(format!("sending tick {n} failed: {e}")))?;
        }
        Ok(count)
    }

    async fn record(&self, params: RecordParams) {
        self.recorded.lock().expect("the record lock is never poisoned").push(params.value);
    }

    async fn recorded(&self) -> Vec<Json> {
        self.recorded.lock().expect("the record lock is never poisoned").clone()
    }

    async fn explode(&self, _params: Option<Json>) {
        panic!("the `panic` method panics on purpose");
    }

    fn count_to(&self, n: u64) -> impl Stream<Item = u64> + Send {
        futures::stream::iter(1..=n)
    }

    fn count_to_slowly(&self, n: u64, ms: u64) -> impl Stream<Item = u64> + Send {
        // Each item is made only when the caller pulls it; an abort drops the stream mid-wait.
        futures::stream::iter(1..=n).then(move |i| async move {
            tokio::time::sleep(Duration::from_millis(ms)).await;
            self.produced.fetch_add(1, Ordering::SeqCst);
            i
        })
    }

    async fn produced_count(&self) -> u64 {
        self.produced.load(Ordering::SeqCst)
    }

    async fn with_progress(&self, steps: u64, progress: Progress<StepReport>) -> u64 {
        for step in 1..=steps {
            if let Err(e) = progress.report(StepReport { step }).await {
                tracing::warn!("progress report {step} not sent: {e}");
            }
        }
        steps
    }

    fn fail_after(&self, n: u64) -> impl Stream<Item = Result<u64, RpcError>> + Send {
        let failure = RpcError::new(-32010, format!("failed after {n} items"));
        futures::stream::iter(1..=n).map(Ok).chain(futures::stream::iter([Err(failure)]))
    }

    async fn exit(&self, _params: Option<Json>) {
        self.exit.cancel();
    }
}

fn usage() -> String {
    "usage: conformance_peer [--framing content-length|newline]".to_owned()
}

fn parse_args() -> Result<Framing, String> {
    let mut framing = Framing::ContentLength;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--framing" => {
                let value = args.next().ok_or_else(|| format!("--framing needs a value\n{}", usage()))?;
                framing = value.parse()?;
            }
            other => match other.strip_prefix("--framing=") {
                Some(value) => framing = value.parse()?,
                None if other == "-h" || other == "--help" => return Err(usage()),
                None => return Err(format!("unexpected argument {other:?}\n{}", usage())),
            },
        }
    }
    Ok(framing)
}

#[tokio::main]
async fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .init();
    // One line per panic (the `panic` method panics on purpose), through the log.
    std::panic::set_hook(Box::new(|info| tracing::error!("{info}")));
    let framing = match parse_args() {
        Ok(f) => f,
        Err(message) => {
            log_line!("{message}");
            return ExitCode::from(2);
        }
    };
    tracing::info!(?framing, pid = std::process::id(), "conformance peer serving on stdio");

    let peer = Peer::default();
    let exit = peer.exit.clone();
    let conn = Connection::builder().framing(framing).serve(ConformanceServer::new(peer)).stdio();
    let ended = tokio::select! {
        reason = conn.closed() => reason,
        _ = exit.cancelled() => CloseReason::new(CloseKind::LocallyClosed, "the `exit` notification"),
    };
    // Flush what is still queued (answers to the last requests) before leaving.
    let reason = conn.close().await;
    tracing::info!(%reason, "connection ended");
    if matches!(ended.kind, CloseKind::RemoteClosed | CloseKind::LocallyClosed) {
        ExitCode::SUCCESS
    } else {
        log_line!("conformance_peer: the connection ended abnormally: {reason}");
        ExitCode::FAILURE
    }
}
