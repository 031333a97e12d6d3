//! A tour of jsonrpc-duplex in a few seconds: this program spawns itself as a JSON-RPC server
//! over stdio (`demo --server`) and talks to it.
//!
//! It shows typed calls, a notification, a server→client call that the client answers later from
//! another task, a cancelled slow call, calls that fail (unknown method, invalid params), and the
//! child exiting, which ends the connection.
//!
//! ```text
//! cargo run --example demo
//! ```

use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use jsonrpc_duplex::{CallOptions, CancellationToken, Connection, Error, ErrorObject, Router};
use serde::{Deserialize, Serialize};
use tokio::process::Command;

/// How long any single step may take before the demo gives up.
const STEP_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Serialize, Deserialize)]
struct AddParams {
    a: i64,
    b: i64,
}

#[derive(Serialize, Deserialize, Debug)]
struct Stats {
    notes: u64,
    last_note: Option<String>,
    pid: u32,
}

#[derive(Serialize, Deserialize)]
struct Note {
    text: String,
}

#[derive(Serialize, Deserialize, Debug)]
struct Question {
    question: String,
}

#[derive(Serialize, Deserialize, Debug)]
struct Answer {
    approved: bool,
    by: String,
}

// ---------------------------------------------------------------------------------------------
// The server (the child process)
// ---------------------------------------------------------------------------------------------

fn server_router() -> Router {
    let notes = Arc::new(AtomicU64::new(0));
    let last_note = Arc::new(std::sync::Mutex::new(None::<String>));
    let (notes_w, last_w) = (notes.clone(), last_note.clone());
    Router::new()
        .method("add", |p: AddParams, _ctx| async move { Ok::<_, ErrorObject>(p.a + p.b) })
        .notification("note", move |p: Note, _ctx| {
            let (notes, last) = (notes_w.clone(), last_w.clone());
            async move {
                notes.fetch_add(1, Ordering::SeqCst);
                *last.lock().expect("not poisoned") = Some(p.text);
            }
        })
        .method("stats", move |(): (), _ctx| {
            let stats = Stats {
                notes: notes.load(Ordering::SeqCst),
                last_note: last_note.lock().expect("not poisoned").clone(),
                pid: std::process::id(),
            };
            async move { Ok::<_, ErrorObject>(stats) }
        })
        // While handling `deploy`, the server asks the client for permission and waits.
        .method("deploy", |(target,): (String,), ctx| async move {
            let question = Question { question: format!("may I deploy to {target}?") };
            let answer: Answer = ctx
                .peer()
                .request("client/confirm", &question)
                .await
                .map_err(|e| ErrorObject::internal_error(format!("asking the client failed: {e}")))?;
            Ok::<_, ErrorObject>(if answer.approved {
                format!("deployed to {target} (approved by {})", answer.by)
            } else {
                format!("not deployed to {target}")
            })
        })
        // Waits, unless cancelled (the core then answers -32800).
        .method("sleep", |(ms,): (u64,), ctx| async move {
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_millis(ms)) => Ok(format!("slept {ms} ms")),
                _ = ctx.cancellation().cancelled() => Err(ErrorObject::request_cancelled()),
            }
        })
        // Ends the server: it closes its side; the process then exits.
        .notification("exit", |(): (), ctx| async move { ctx.peer().close() })
}

async fn run_server() -> ExitCode {
    let conn = Connection::builder().serve(server_router()).stdio();
    let reason = conn.closed().await;
    conn.close().await; // flush what is queued
    eprintln!("[server] connection ended: {reason}");
    // Tokio's stdin read runs on a blocking thread that cannot be cancelled: exit rather than
    // wait for it in the runtime's shutdown.
    std::process::exit(0);
}

// ---------------------------------------------------------------------------------------------
// The client (this process)
// ---------------------------------------------------------------------------------------------

fn client_router() -> Router {
    // A raw handler: the reply handle moves to another task, which answers after a moment.
    Router::new().request_raw("client/confirm", |req, reply| async move {
        let question: Result<Question, _> = req.decode_params();
        tokio::spawn(async move {
            match question {
                Ok(q) => {
                    println!(
                        "   client: got {:?} (request id {}); answering in 200 ms from another task",
                        q.question,
                        reply.id()
                    );
                    tokio::time::sleep(Duration::from_millis(200)).await;
                    reply.ok(Answer { approved: true, by: "the demo client".into() });
                }
                Err(e) => {
                    reply.err(e);
                }
            }
        });
    })
}

async fn step<T>(what: &str, fut: impl std::future::Future<Output = T>) -> Result<T, String> {
    tokio::time::timeout(STEP_TIMEOUT, fut).await.map_err(|_| format!("{what}: no answer within {STEP_TIMEOUT:?}"))
}

async fn run_client() -> Result<(), String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this program: {e}"))?;
    let mut cmd = Command::new(exe);
    cmd.arg("--server");
    let conn = Connection::builder()
        .serve(client_router())
        .spawn_child(cmd)
        .map_err(|e| format!("spawning the server failed: {e}"))?;
    let server = conn.handle();
    println!("jsonrpc-duplex demo: this process (pid {}) spawned itself with --server;", std::process::id());
    println!("the two talk JSON-RPC 2.0 over the child's stdin/stdout (Content-Length framing).\n");

    println!("1. Typed calls: params and results are Rust types, serialized once.");
    let sum: i64 =
        step("add", server.request("add", AddParams { a: 2, b: 40 })).await?.map_err(|e| format!("add failed: {e}"))?;
    println!("   add {{a: 2, b: 40}} -> {sum}");
    let stats: Stats = step("stats", server.request("stats", ())).await?.map_err(|e| format!("stats failed: {e}"))?;
    println!("   stats -> {stats:?}  (the server's pid)\n");

    println!("2. A notification: no id, no answer; the server applies it before later messages.");
    server.notify("note", Note { text: "hello from the client".into() }).await.map_err(|e| e.to_string())?;
    let stats: Stats = step("stats", server.request("stats", ())).await?.map_err(|e| format!("stats failed: {e}"))?;
    println!(
        "   sent note \"hello from the client\"; stats now -> notes: {}, last: {:?}\n",
        stats.notes, stats.last_note
    );

    println!("3. A server->client call: while handling `deploy`, the server calls `client/confirm` back.");
    let started = Instant::now();
    let outcome: String =
        step("deploy", server.request("deploy", ["staging"])).await?.map_err(|e| format!("deploy failed: {e}"))?;
    println!("   deploy [\"staging\"] -> {outcome:?} after {} ms\n", started.elapsed().as_millis());

    println!("4. Cancellation: a slow call, cancelled by its token after 100 ms ($/cancelRequest on the wire).");
    let token = CancellationToken::new();
    let canceller = token.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        canceller.cancel();
    });
    let started = Instant::now();
    let outcome: Result<String, Error> =
        step("sleep", server.request_with("sleep", [10_000], CallOptions::new().cancel(token))).await?;
    match &outcome {
        Err(Error::Cancelled) => println!(
            "   sleep [10000] -> Err(Cancelled): the server answered -32800 after {} ms",
            started.elapsed().as_millis()
        ),
        other => return Err(format!("sleep: expected Err(Cancelled), got {other:?}")),
    }
    let started = Instant::now();
    let outcome: Result<String, Error> =
        step("sleep", server.request_with("sleep", [10_000], CallOptions::new().timeout(Duration::from_millis(100))))
            .await?;
    match &outcome {
        Err(e @ Error::Timeout(_)) => println!(
            "   sleep [10000] with a 100 ms timeout -> Err(Timeout): \"{e}\" after {} ms (the server was told to stop)",
            started.elapsed().as_millis()
        ),
        other => return Err(format!("sleep: expected Err(Timeout), got {other:?}")),
    }
    println!();

    println!("5. Bad calls come back as JSON-RPC error objects.");
    let outcome: Result<i64, Error> = step("nope", server.request("no/such/method", ())).await?;
    match outcome.as_ref().map_err(Error::as_remote) {
        Err(Some(e)) if e.code == -32601 => println!("   no/such/method -> error {}: {:?}", e.code, e.message),
        _ => return Err(format!("no/such/method: expected -32601, got {outcome:?}")),
    }
    let outcome: Result<i64, Error> = step("add", server.request("add", ["two", "forty"])).await?;
    match outcome.as_ref().map_err(Error::as_remote) {
        Err(Some(e)) if e.code == -32602 => {
            println!("   add [\"two\", \"forty\"] -> error {}: {:?}", e.code, e.message)
        }
        _ => return Err(format!("add: expected -32602, got {outcome:?}")),
    }
    println!();

    println!("6. Shutting down: the `exit` notification makes the server close; its exit ends the connection.");
    server.notify("exit", ()).await.map_err(|e| e.to_string())?;
    let reason = step("exit", conn.closed()).await?;
    println!("   connection closed: {reason}");
    conn.close().await;
    println!("\ndone.");
    Ok(())
}

#[tokio::main]
async fn main() -> ExitCode {
    if std::env::args().nth(1).as_deref() == Some("--server") {
        return run_server().await;
    }
    match run_client().await {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("demo failed: {message}");
            ExitCode::FAILURE
        }
    }
}
