//! A tour of jsonrpc-duplex in a few seconds: this program spawns itself as a JSON-RPC server
//! over stdio (`demo --server`) and talks to it, each side through the client and server that
//! `#[rpc]` generates from a trait.
//!
//! It shows typed calls, a notification, a server→client call that the client answers later from
//! another task, a cancelled slow call, a timed-out call, a typed error, calls that fail (unknown
//! method, invalid params), and the child exiting, which ends the connection.
//!
//! ```text
//! cargo run --example demo
//! ```

use std::process::ExitCode;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use jsonrpc_duplex::{
    CallOptions, CancellationToken, ClientError, Connection, ErrorObject, Handle, Id, RpcError, RpcErrorType, rpc,
};
use serde::{Deserialize, Serialize};
use tokio::process::Command;
use tokio::sync::{mpsc, oneshot};

/// How long any single step may take before the demo gives up.
const STEP_TIMEOUT: Duration = Duration::from_secs(10);

// ---------------------------------------------------------------------------------------------
// The protocol: one trait per side
// ---------------------------------------------------------------------------------------------

/// What the server (the child process) offers.
#[rpc]
pub trait Backend {
    /// `a + b`. Sent by name: `"params":{"a":2,"b":40}`.
    #[method(params = "named")]
    async fn add(&self, a: i64, b: i64) -> Result<i64, RpcError>;

    /// How many notes arrived, the last one, and the server's pid.
    async fn stats(&self) -> Stats;

    /// Leave a note; a notification, so it has no answer.
    #[notification(params = "object")]
    async fn note(&self, note: Note);

    /// Deploy to `target` once the operator (the other side) approves. `operator` is not a param:
    /// it is a client of the peer's [`Operator`] trait, to call it back mid-request.
    async fn deploy(&self, target: String, #[context] operator: OperatorClient) -> Result<String, DeployError>;

    /// Wait `ms` milliseconds, unless the caller cancels (the core then answers `-32800`).
    async fn sleep(&self, ms: u64, cancel: CancellationToken) -> Result<String, RpcError>;

    /// Close the connection from the server's side; the process then exits.
    #[notification]
    async fn exit(&self, #[context] peer: Handle);
}

/// What the client (this process) answers while the server handles a request.
#[rpc(params = "object")]
pub trait Operator {
    /// May the server go ahead? `id` is the server's id for this request.
    #[method(name = "client/confirm")]
    async fn confirm(&self, question: Question, #[context] id: Id) -> Result<Answer, RpcError>;
}

/// A trait the server does not serve: its client shows how a call to a missing method comes back.
#[rpc]
pub trait Admin {
    /// Restart the server (it has no such method: `-32601`).
    #[method(name = "admin/restart")]
    async fn restart(&self);
}

/// The result of `stats`.
#[derive(Serialize, Deserialize, Debug)]
pub struct Stats {
    /// Notes received.
    pub notes: u64,
    /// The last note's text.
    pub last_note: Option<String>,
    /// The server's process id.
    pub pid: u32,
}

/// The params of `note`.
#[derive(Serialize, Deserialize)]
pub struct Note {
    /// What it says.
    pub text: String,
}

/// The params of `client/confirm`.
#[derive(Serialize, Deserialize, Debug)]
pub struct Question {
    /// For a human.
    pub question: String,
    /// Where the server wants to deploy.
    pub target: String,
}

/// The result of `client/confirm`.
#[derive(Serialize, Deserialize, Debug)]
pub struct Answer {
    /// Go ahead?
    pub approved: bool,
    /// Who decided.
    pub by: String,
}

/// Why `deploy` failed: a typed error, one code per variant, its fields as the error's `data`.
#[derive(Serialize, Deserialize, Debug, Clone)]
#[serde(tag = "reason", rename_all = "camelCase")]
pub enum DeployError {
    /// The operator said no.
    Declined {
        /// Where to.
        target: String,
        /// Who said no.
        by: String,
    },
    /// The operator could not be asked.
    NoOperator {
        /// What went wrong.
        detail: String,
    },
}

impl DeployError {
    const DECLINED: i64 = -32010;
    const NO_OPERATOR: i64 = -32011;
}

impl std::fmt::Display for DeployError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DeployError::Declined { target, by } => write!(f, "deploying to {target} was declined by {by}"),
            DeployError::NoOperator { detail } => write!(f, "no operator to ask: {detail}"),
        }
    }
}

impl RpcErrorType for DeployError {
    fn into_error_object(self) -> ErrorObject {
        let code = match self {
            DeployError::Declined { .. } => Self::DECLINED,
            DeployError::NoOperator { .. } => Self::NO_OPERATOR,
        };
        ErrorObject::new(code, self.to_string()).with_data(&self)
    }

    fn from_error_object(error: ErrorObject) -> Result<Self, ErrorObject> {
        match (error.code, error.data_as::<DeployError>()) {
            (Self::DECLINED | Self::NO_OPERATOR, Some(Ok(e))) => Ok(e),
            _ => Err(error),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The server (the child process)
// ---------------------------------------------------------------------------------------------

#[derive(Default)]
struct BackendImpl {
    notes: AtomicU64,
    last_note: Mutex<Option<String>>,
}

impl Backend for BackendImpl {
    async fn add(&self, a: i64, b: i64) -> Result<i64, RpcError> {
        a.checked_add(b).ok_or_else(|| RpcError::invalid_params(format!("{a} + {b} overflows an i64")))
    }

    async fn stats(&self) -> Stats {
        Stats {
            notes: self.notes.load(Ordering::SeqCst),
            last_note: self.last_note.lock().expect("not poisoned").clone(),
            pid: std::process::id(),
        }
    }

    async fn note(&self, note: Note) {
        self.notes.fetch_add(1, Ordering::SeqCst);
        *self.last_note.lock().expect("not poisoned") = Some(note.text);
    }

    async fn deploy(&self, target: String, operator: OperatorClient) -> Result<String, DeployError> {
        let question = Question { question: format!("may I deploy to {target}?"), target: target.clone() };
        // A typed call back to the client, while the client's own `deploy` call waits.
        let answer = operator.confirm(question).await.map_err(|e| DeployError::NoOperator { detail: e.to_string() })?;
        if answer.approved {
            Ok(format!("deployed to {target} (approved by {})", answer.by))
        } else {
            Err(DeployError::Declined { target, by: answer.by })
        }
    }

    async fn sleep(&self, ms: u64, cancel: CancellationToken) -> Result<String, RpcError> {
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_millis(ms)) => Ok(format!("slept {ms} ms")),
            _ = cancel.cancelled() => Err(ErrorObject::request_cancelled().into()),
        }
    }

    async fn exit(&self, peer: Handle) {
        peer.close();
    }
}

async fn run_server() -> ExitCode {
    let conn = Connection::builder().serve(BackendServer::new(BackendImpl::default())).stdio();
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

/// A question waiting for the operator's desk.
struct Pending {
    question: Question,
    id: Id,
    answer: oneshot::Sender<Answer>,
}

/// Serves `client/confirm` by handing each question to the desk, another task, and waiting for
/// its answer.
struct OperatorImpl {
    desk: mpsc::Sender<Pending>,
}

impl Operator for OperatorImpl {
    async fn confirm(&self, question: Question, id: Id) -> Result<Answer, RpcError> {
        let (answer, answered) = oneshot::channel();
        self.desk.send(Pending { question, id, answer }).await.map_err(|_| RpcError::internal("the desk is closed"))?;
        answered.await.map_err(|_| RpcError::internal("the desk dropped the question"))
    }
}

/// The operator's desk: answers each question after a moment, from its own task. Staging is
/// approved, anything else declined.
async fn desk(mut questions: mpsc::Receiver<Pending>) {
    while let Some(Pending { question, id, answer }) = questions.recv().await {
        println!("   client: got {:?} (request id {id}); answering in 200 ms from another task", question.question);
        tokio::time::sleep(Duration::from_millis(200)).await;
        let _ = answer.send(Answer { approved: question.target == "staging", by: "the demo client".into() });
    }
}

async fn step<T>(what: &str, fut: impl std::future::Future<Output = T>) -> Result<T, String> {
    tokio::time::timeout(STEP_TIMEOUT, fut).await.map_err(|_| format!("{what}: no answer within {STEP_TIMEOUT:?}"))
}

async fn run_client() -> Result<(), String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this program: {e}"))?;
    let mut cmd = Command::new(exe);
    cmd.arg("--server");
    let (questions, inbox) = mpsc::channel(8);
    tokio::spawn(desk(inbox));
    let conn = Connection::builder()
        .serve(OperatorServer::new(OperatorImpl { desk: questions }))
        .spawn_child(cmd)
        .map_err(|e| format!("spawning the server failed: {e}"))?;
    let backend = BackendClient::new(conn.handle());
    println!("jsonrpc-duplex demo: this process (pid {}) spawned itself with --server;", std::process::id());
    println!("the two talk JSON-RPC 2.0 over the child's stdin/stdout (Content-Length framing),");
    println!("each through the client and server #[rpc] generates from its trait.\n");

    println!("1. Typed calls: params and results are Rust types, serialized once.");
    let sum = step("add", backend.add(2, 40)).await?.map_err(|e| format!("add failed: {e}"))?;
    println!("   add(2, 40) -> {sum}   (on the wire: \"params\":{{\"a\":2,\"b\":40}})");
    let stats = step("stats", backend.stats()).await?.map_err(|e| format!("stats failed: {e}"))?;
    println!("   stats() -> {stats:?}  (the server's pid)\n");

    println!("2. A notification: no id, no answer; the server applies it before later messages.");
    backend.note(Note { text: "hello from the client".into() }).await.map_err(|e| e.to_string())?;
    let stats = step("stats", backend.stats()).await?.map_err(|e| format!("stats failed: {e}"))?;
    println!(
        "   sent note \"hello from the client\"; stats now -> notes: {}, last: {:?}\n",
        stats.notes, stats.last_note
    );

    println!("3. A server->client call: while handling `deploy`, the server calls `client/confirm` back.");
    let started = Instant::now();
    let outcome = step("deploy", backend.deploy("staging".into())).await?.map_err(|e| format!("deploy failed: {e}"))?;
    println!("   deploy(\"staging\") -> {outcome:?} after {} ms\n", started.elapsed().as_millis());

    println!("4. Cancellation: a slow call, cancelled by its token after 100 ms ($/cancelRequest on the wire).");
    let token = CancellationToken::new();
    let canceller = token.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        canceller.cancel();
    });
    let started = Instant::now();
    let outcome = step("sleep", backend.with_options(CallOptions::new().cancel(token)).sleep(10_000)).await?;
    match &outcome {
        Err(ClientError::Cancelled) => println!(
            "   sleep(10000) -> Err(Cancelled): the server answered -32800 after {} ms",
            started.elapsed().as_millis()
        ),
        other => return Err(format!("sleep: expected Err(Cancelled), got {other:?}")),
    }
    let started = Instant::now();
    let hasty = backend.with_options(CallOptions::new().timeout(Duration::from_millis(100)));
    let outcome = step("sleep", hasty.sleep(10_000)).await?;
    match &outcome {
        Err(e @ ClientError::Timeout(_)) => println!(
            "   sleep(10000) with a 100 ms timeout -> Err(Timeout): \"{e}\" after {} ms (the server was told to stop)",
            started.elapsed().as_millis()
        ),
        other => return Err(format!("sleep: expected Err(Timeout), got {other:?}")),
    }
    println!();

    println!("5. A typed error: `deploy` returns Result<String, DeployError>; the client gets the DeployError back.");
    let outcome = step("deploy", backend.deploy("production".into())).await?;
    match &outcome {
        Err(ClientError::Method(e @ DeployError::Declined { .. })) => {
            let wire = serde_json::to_string(&e.clone().into_error_object()).map_err(|e| e.to_string())?;
            println!("   deploy(\"production\") -> Err(Method({e:?}))");
            println!("   on the wire: \"error\":{wire}");
        }
        other => return Err(format!("deploy: expected Err(Method(Declined)), got {other:?}")),
    }
    println!();

    println!("6. Bad calls come back as JSON-RPC error objects.");
    // A client of a trait the server does not serve. `restart` declares no error type, so its
    // errors are `RpcError`, which takes any error object: the -32601 is `Method(RpcError)`.
    // (A method with a typed error such as `DeployError` would get `Remote(ErrorObject)` instead.)
    let admin = AdminClient::new(conn.handle());
    let outcome = step("admin/restart", admin.restart()).await?;
    match &outcome {
        Err(ClientError::Method(e)) if e.code == jsonrpc_duplex::codes::METHOD_NOT_FOUND => {
            println!("   admin/restart (not served) -> error {}: {:?}", e.code, e.message)
        }
        other => return Err(format!("admin/restart: expected -32601, got {other:?}")),
    }
    // A typed client cannot send strings to `add(i64, i64)`; the connection's handle, under every
    // generated client, can.
    let outcome: Result<i64, _> = step("add", backend.handle().request("add", ["two", "forty"])).await?;
    match outcome.as_ref().map_err(jsonrpc_duplex::Error::as_remote) {
        Err(Some(e)) if e.code == -32602 => {
            println!("   add [\"two\", \"forty\"] (untyped) -> error {}: {:?}", e.code, e.message)
        }
        _ => return Err(format!("add: expected -32602, got {outcome:?}")),
    }
    println!();

    println!("7. Shutting down: the `exit` notification makes the server close; its exit ends the connection.");
    backend.exit().await.map_err(|e| e.to_string())?;
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
