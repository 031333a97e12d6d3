//! A reference JSON-RPC peer on stdio, built on the core API, for conformance and interop tests.
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
//! - `panic` panics in its handler (answered `-32603`; the connection survives).
//!
//! Unknown methods are answered `-32601`, wrong params `-32602`. The peer exits 0 when its input
//! reaches EOF. Stdout is the wire: logs go to stderr, filtered by `RUST_LOG` (default `warn`).

use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use jsonrpc_duplex::{CallOptions, CloseKind, Connection, Error, ErrorObject, Framing, Router};
use serde::Deserialize;
use serde_json::value::RawValue;

/// The params of `add`: by name or by position.
#[derive(Deserialize)]
#[serde(untagged)]
enum AddParams {
    Named { a: i64, b: i64 },
    Positional(i64, i64),
}

#[derive(Deserialize)]
struct SlowParams {
    ms: u64,
}

#[derive(Deserialize)]
struct CallBackParams {
    method: String,
    #[serde(default)]
    params: Option<Box<RawValue>>,
}

#[derive(Deserialize)]
struct NotifyMeParams {
    count: u64,
}

#[derive(Deserialize)]
struct RecordParams {
    value: Box<RawValue>,
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

/// The handler of `panic`: the core answers `-32603` and the connection goes on.
async fn explode() -> Result<(), ErrorObject> {
    panic!("the `panic` method panics on purpose");
}

/// The conformance methods.
fn router() -> Router {
    let recorded: Arc<Mutex<Vec<Box<RawValue>>>> = Arc::default();
    let recorder = recorded.clone();
    Router::new()
        .request_raw("echo", |req, reply| async move {
            reply.ok(req.params());
        })
        .method("add", |p: AddParams, _ctx| async move {
            let (a, b) = match p {
                AddParams::Named { a, b } | AddParams::Positional(a, b) => (a, b),
            };
            a.checked_add(b).ok_or_else(|| ErrorObject::invalid_params(format!("{a} + {b} overflows an i64")))
        })
        .request_raw("fail", |req, reply| async move {
            let mut error = ErrorObject::new(-32001, "requested failure");
            if let Some(params) = req.params() {
                error = error.with_raw_data(params.to_owned());
            }
            reply.err(error);
        })
        .method("slow", |p: SlowParams, ctx| async move {
            // The core also answers -32800 and drops this future when the token fires; waiting on
            // the token here makes the handler correct on its own.
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_millis(p.ms)) => Ok("done"),
                _ = ctx.cancellation().cancelled() => Err(ErrorObject::request_cancelled()),
            }
        })
        .method("callBack", |p: CallBackParams, ctx| async move {
            // Dropping this future (when our request is cancelled) cancels the inner call too.
            match ctx.peer().request_raw(&p.method, &p.params, CallOptions::default()).await {
                Ok(result) => Ok(result),
                Err(Error::Remote(error)) => Err(error),
                Err(Error::Cancelled) => Err(ErrorObject::request_cancelled()),
                Err(other) => Err(ErrorObject::internal_error(format!("calling {} back failed: {other}", p.method))),
            }
        })
        .method("notifyMe", |p: NotifyMeParams, ctx| async move {
            for n in 1..=p.count {
                ctx.peer()
                    .notify("tick", serde_json::json!({ "n": n }))
                    .await
                    .map_err(|e| ErrorObject::internal_error(format!("sending tick {n} failed: {e}")))?;
            }
            Ok(p.count)
        })
        .notification("record", move |p: RecordParams, _ctx| {
            let recorder = recorder.clone();
            async move {
                recorder.lock().expect("the record lock is never poisoned").push(p.value);
            }
        })
        .method("recorded", move |(): (), _ctx| {
            let values = recorded.lock().expect("the record lock is never poisoned").clone();
            async move { Ok::<_, ErrorObject>(values) }
        })
        .method("panic", |_: Option<Box<RawValue>>, _ctx| explode())
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
            eprintln!("{message}");
            return ExitCode::from(2);
        }
    };
    tracing::info!(?framing, pid = std::process::id(), "conformance peer serving on stdio");

    let conn = Connection::builder().framing(framing).serve(router()).stdio();
    let reason = conn.closed().await;
    // Flush what is still queued (answers to the last requests) before leaving.
    conn.close().await;
    tracing::info!(%reason, "connection ended");
    if reason.kind == CloseKind::RemoteClosed {
        ExitCode::SUCCESS
    } else {
        eprintln!("conformance_peer: the connection ended abnormally: {reason}");
        // Stdin may still be open, and tokio's blocking stdin read cannot be cancelled: leave now
        // rather than wait for it in the runtime's shutdown.
        std::process::exit(1);
    }
}
