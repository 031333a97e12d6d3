//! A tour of jsonrpc-duplex in a few seconds: this program spawns itself as a JSON-RPC server
//! over stdio (`demo --server`) and talks to it, each side through the client and server that
//! `#[rpc]` generates from a trait.
//!
//! It shows typed calls, notifications both ways, a server→client call that the client answers
//! later from another task, a streamed result (read to its end, and dropped early), progress
//! reports arriving before their call's answer, a cancelled slow call, a timed-out call, a typed
//! error, calls that fail (unknown method, invalid params), and the child exiting, which ends the
//! connection. Where it helps, it prints the raw messages (`-->` sent, `<--` received), which the
//! connection logs at TRACE on [`WIRE_TARGET`].
//!
//! ```text
//! cargo run --example demo
//! ```

// Not `eprintln!`: it panics once our parent, which holds stderr, is gone.
#[path = "common/stderr.rs"]
mod stderr;

use std::process::ExitCode;
use std::sync::Mutex;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};
use stderr::log_line;

use futures::{Stream, StreamExt};
use jsonrpc_duplex::{
    CallOptions, CancellationToken, ClientError, Connection, ErrorObject, Handle, Id, Progress, RpcError, RpcErrorType,
    WIRE_TARGET, rpc,
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

    /// How many notes arrived, the last one, the server's pid and its open streams.
    async fn stats(&self) -> Stats;

    /// Leave a note; a notification, so it has no answer. The server acknowledges it with a
    /// notification of its own, through `operator`, a client of the peer's [`Operator`] trait.
    #[notification(params = "object")]
    async fn note(&self, note: Note, #[context] operator: OperatorClient);

    /// Deploy to `target` once the operator (the other side) approves. `operator` is not a param:
    /// it is a client of the peer's [`Operator`] trait, to call it back mid-request.
    async fn deploy(&self, target: String, #[context] operator: OperatorClient) -> Result<String, DeployError>;

    /// `from`, `from - 1`, …, `1`, one every 50 ms, pulled by the caller item by item.
    fn countdown(&self, from: u32) -> impl Stream<Item = u32> + Send;

    /// 1, 2, 3, … without end: the caller takes what it wants and drops the rest.
    fn naturals(&self) -> impl Stream<Item = u64> + Send;

    /// Build `target` in three stages, reporting each as it starts, then answer with the artifact.
    async fn build(&self, target: String, progress: Progress<Stage>) -> String;

    /// Wait `ms` milliseconds, unless the caller cancels (the core then answers `-32800`).
    async fn sleep(&self, ms: u64, cancel: CancellationToken) -> Result<String, RpcError>;

    /// Close the connection from the server's side; the process then exits.
    #[notification]
    async fn exit(&self, #[context] peer: Handle);
}

/// What the client (this process) offers the server.
#[rpc(params = "object")]
pub trait Operator {
    /// May the server go ahead? `id` is the server's id for this request.
    #[method(name = "client/confirm")]
    async fn confirm(&self, question: Question, #[context] id: Id) -> Result<Answer, RpcError>;

    /// Something the server wants the operator to know; a notification.
    #[notification(name = "client/notice")]
    async fn notice(&self, notice: Note);
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
    /// Streams the server is still generating.
    pub open_streams: u64,
}

/// The params of `note` and `client/notice`.
#[derive(Serialize, Deserialize)]
pub struct Note {
    /// What it says.
    pub text: String,
}

/// A progress report of `build`.
#[derive(Serialize, Deserialize, Debug)]
pub struct Stage {
    /// This stage's number, from 1.
    pub step: u32,
    /// How many stages there are.
    pub of: u32,
    /// What it does.
    pub name: String,
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
    open_streams: AtomicU64,
}

/// Counts a stream as open, in the server's `open_streams`, until the stream is dropped.
struct OpenStream<'a>(&'a AtomicU64);

impl<'a> OpenStream<'a> {
    fn new(open_streams: &'a AtomicU64) -> Self {
        open_streams.fetch_add(1, Ordering::SeqCst);
        OpenStream(open_streams)
    }
}

impl Drop for OpenStream<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
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
            open_streams: self.open_streams.load(Ordering::SeqCst),
        }
    }

    async fn note(&self, note: Note, operator: OperatorClient) {
        let count = self.notes.fetch_add(1, Ordering::SeqCst) + 1;
        let text = format!("note #{count} received: {:?}", note.text);
        *self.last_note.lock().expect("not poisoned") = Some(note.text);
        // A notification back; the connection is the only thing that could fail, and then there
        // is no one to tell.
        let _ = operator.notice(Note { text }).await;
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

    fn countdown(&self, from: u32) -> impl Stream<Item = u32> + Send {
        futures::stream::iter((1..=from).rev()).then(|n| async move {
            tokio::time::sleep(Duration::from_millis(50)).await;
            n
        })
    }

    fn naturals(&self) -> impl Stream<Item = u64> + Send {
        let open = OpenStream::new(&self.open_streams);
        futures::stream::unfold((1, open), |(n, open)| async move { Some((n, (n + 1, open))) })
    }

    async fn build(&self, target: String, progress: Progress<Stage>) -> String {
        let stages = ["compile", "test", "package"];
        for (name, step) in stages.into_iter().zip(1..) {
            let _ = progress.report(Stage { step, of: stages.len() as u32, name: name.into() }).await;
            tokio::time::sleep(Duration::from_millis(100)).await; // the stage's work
        }
        format!("{target}.tar.gz")
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
    log_line!("[server] connection ended: {reason}");
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
/// its answer; prints the server's notices.
struct OperatorImpl {
    desk: mpsc::Sender<Pending>,
}

impl Operator for OperatorImpl {
    async fn confirm(&self, question: Question, id: Id) -> Result<Answer, RpcError> {
        let (answer, answered) = oneshot::channel();
        self.desk.send(Pending { question, id, answer }).await.map_err(|_| RpcError::internal("the desk is closed"))?;
        answered.await.map_err(|_| RpcError::internal("the desk dropped the question"))
    }

    async fn notice(&self, notice: Note) {
        println!("   client: notice from the server: {}", notice.text);
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

/// Whether the raw messages are printed (see [`install_wire_printer`]).
static SHOW_WIRE: AtomicBool = AtomicBool::new(false);

/// Print the connection's raw traffic, which it logs at TRACE on [`WIRE_TARGET`] as
/// `--> {..}` (sent) and `<-- {..}` (received), while [`SHOW_WIRE`] is set.
fn install_wire_printer() {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::new(format!("{WIRE_TARGET}=trace")))
        .without_time()
        .with_level(false)
        .with_target(false)
        .with_ansi(false)
        .with_writer(|| WireLine)
        .init();
}

/// Writes one formatted wire message, indented, to stdout while [`SHOW_WIRE`] is set.
struct WireLine;

impl std::io::Write for WireLine {
    fn write(&mut self, line: &[u8]) -> std::io::Result<usize> {
        if SHOW_WIRE.load(Ordering::SeqCst) {
            let mut out = std::io::stdout().lock();
            out.write_all(b"      ")?;
            out.write_all(line)?;
        }
        Ok(line.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        std::io::stdout().flush()
    }
}

/// Run `fut` with the raw messages printed.
async fn on_the_wire<T>(fut: impl Future<Output = T>) -> T {
    SHOW_WIRE.store(true, Ordering::SeqCst);
    let out = fut.await;
    SHOW_WIRE.store(false, Ordering::SeqCst);
    out
}

async fn step<T>(what: &str, fut: impl Future<Output = T>) -> Result<T, String> {
    tokio::time::timeout(STEP_TIMEOUT, fut).await.map_err(|_| format!("{what}: no answer within {STEP_TIMEOUT:?}"))
}

async fn stats(backend: &BackendClient) -> Result<Stats, String> {
    step("stats", backend.stats()).await?.map_err(|e| format!("stats failed: {e}"))
}

fn section(title: &str) {
    println!("\n{title}");
}

/// Spawn this program as the server, serving [`Operator`] on the connection.
fn connect() -> Result<Connection, String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this program: {e}"))?;
    let mut cmd = Command::new(exe);
    cmd.arg("--server");
    let (questions, inbox) = mpsc::channel(8);
    tokio::spawn(desk(inbox));
    Connection::builder()
        .serve(OperatorServer::new(OperatorImpl { desk: questions }))
        .spawn_child(cmd)
        .map_err(|e| format!("spawning the server failed: {e}"))
}

async fn run_client() -> Result<(), String> {
    install_wire_printer();
    let conn = connect()?;
    let backend = BackendClient::new(conn.handle());
    println!("jsonrpc-duplex demo: this process (pid {}) spawned itself with --server;", std::process::id());
    println!("the two talk JSON-RPC 2.0 over the child's stdin/stdout (Content-Length framing),");
    println!("each through the client and server #[rpc] generates from its trait.");
    println!("Lines marked --> / <-- are raw messages this process sent / received.");

    section("1. Typed calls: params and results are Rust types, serialized once.");
    typed_calls(&backend).await?;
    section("2. Notifications both ways: no id, no answer; each side applies them in order.");
    notifications(&backend).await?;
    section("3. A server->client call: while handling `deploy`, the server calls `client/confirm` back.");
    callback(&backend).await?;
    section("4. A streamed result: `countdown` returns a Stream; the client pulls it as an RpcStream.");
    streamed_result(&backend).await?;
    dropped_stream(&backend).await?;
    section("5. Progress: `build` takes a Progress<Stage>; the client's callback sees each report.");
    progress(&backend).await?;
    section("6. Cancellation: a slow call, cancelled by its token after 100 ms ($/cancelRequest on the wire).");
    cancelled_call(&backend).await?;
    timed_out_call(&backend).await?;
    section("7. A typed error: `deploy` returns Result<String, DeployError>; the client gets the DeployError back.");
    typed_error(&backend).await?;
    section("8. Bad calls come back as JSON-RPC error objects.");
    unknown_method(&conn).await?;
    invalid_params(&backend).await?;
    section("9. Shutting down: the `exit` notification makes the server close; its exit ends the connection.");
    shutdown(conn, &backend).await?;
    println!("\ndone.");
    Ok(())
}

async fn typed_calls(backend: &BackendClient) -> Result<(), String> {
    let sum = step("add", backend.add(2, 40)).await?.map_err(|e| format!("add failed: {e}"))?;
    println!("   add(2, 40) -> {sum}   (on the wire: \"params\":{{\"a\":2,\"b\":40}})");
    println!("   stats() -> {:?}", stats(backend).await?);
    Ok(())
}

/// The client's `note` goes out; the server's `client/notice` comes back to [`OperatorImpl`].
async fn notifications(backend: &BackendClient) -> Result<(), String> {
    // `note` returns once the message is queued; the `stats` call after it shows that the server
    // applied it. The server sends its notice while handling the note, so before that answer;
    // `after_notifications` makes the call return only once the notice has been handled here.
    let settled = backend.with_options(CallOptions::new().after_notifications());
    let stats = on_the_wire(async {
        backend.note(Note { text: "hello from the client".into() }).await.map_err(|e| e.to_string())?;
        stats(&settled).await
    })
    .await?;
    println!(
        "   stats() with after_notifications -> notes: {}, last: {:?} (returned once the notice was handled)",
        stats.notes, stats.last_note
    );
    Ok(())
}

async fn callback(backend: &BackendClient) -> Result<(), String> {
    let started = Instant::now();
    let outcome = step("deploy", backend.deploy("staging".into())).await?.map_err(|e| format!("deploy failed: {e}"))?;
    println!("   deploy(\"staging\") -> {outcome:?} after {} ms", started.elapsed().as_millis());
    Ok(())
}

/// Each item is one `$/enumerator/next` request, answered when the server has produced it.
async fn streamed_result(backend: &BackendClient) -> Result<(), String> {
    let items = on_the_wire(async {
        let mut countdown = backend.countdown(3);
        let mut items = Vec::new();
        while let Some(item) = step("countdown", countdown.next()).await? {
            let n = item.map_err(|e| format!("countdown failed: {e}"))?;
            println!("   client: got {n}");
            items.push(n);
        }
        Ok::<_, String>(items)
    })
    .await?;
    println!("   countdown(3) -> {items:?}: one $/enumerator/next per item, the last answered \"finished\":true");
    Ok(())
}

/// Dropping an [`RpcStream`](jsonrpc_duplex::RpcStream) early sends `$/enumerator/abort`: the
/// server drops its (here endless) stream.
async fn dropped_stream(backend: &BackendClient) -> Result<(), String> {
    let mut naturals = backend.naturals();
    let mut taken = Vec::new();
    while taken.len() < 3 {
        match step("naturals", naturals.next()).await? {
            Some(item) => taken.push(item.map_err(|e| format!("naturals failed: {e}"))?),
            None => return Err("naturals: the endless stream ended".into()),
        }
    }
    let open = stats(backend).await?.open_streams;
    println!("   naturals() is endless: took {taken:?}; the server has {open} stream open. Dropping it:");
    // The abort goes out before the `stats` request, and the server handles it on arrival.
    let open = on_the_wire(async {
        drop(naturals);
        stats(backend).await
    })
    .await?
    .open_streams;
    println!("   the server dropped its stream: {open} open");
    Ok(())
}

/// Every report reaches the callback before the call returns.
async fn progress(backend: &BackendClient) -> Result<(), String> {
    let started = Instant::now();
    let report = move |stage: Stage| {
        let ms = started.elapsed().as_millis();
        println!("   client: progress {}/{} {} ({ms} ms)", stage.step, stage.of, stage.name);
    };
    let artifact = on_the_wire(step("build", backend.build("staging".into(), report))).await?;
    let artifact = artifact.map_err(|e| format!("build failed: {e}"))?;
    println!("   build(\"staging\") -> {artifact:?} after {} ms", started.elapsed().as_millis());
    Ok(())
}

async fn cancelled_call(backend: &BackendClient) -> Result<(), String> {
    let token = CancellationToken::new();
    let canceller = token.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        canceller.cancel();
    });
    let started = Instant::now();
    let outcome = step("sleep", backend.with_options(CallOptions::new().cancel(token)).sleep(10_000)).await?;
    match &outcome {
        Err(e) if e.is_cancelled() => println!(
            "   sleep(10000) -> Err(Cancelled): the server answered -32800 after {} ms",
            started.elapsed().as_millis()
        ),
        other => return Err(format!("sleep: expected Err(Cancelled), got {other:?}")),
    }
    Ok(())
}

async fn timed_out_call(backend: &BackendClient) -> Result<(), String> {
    let started = Instant::now();
    let hasty = backend.with_options(CallOptions::new().timeout(Duration::from_millis(100)));
    let outcome = step("sleep", hasty.sleep(10_000)).await?;
    match &outcome {
        Err(e) if e.is_timeout() => println!(
            "   sleep(10000) with a 100 ms timeout -> Err(Timeout): \"{e}\" after {} ms (the server was told to stop)",
            started.elapsed().as_millis()
        ),
        other => return Err(format!("sleep: expected Err(Timeout), got {other:?}")),
    }
    Ok(())
}

async fn typed_error(backend: &BackendClient) -> Result<(), String> {
    let outcome = step("deploy", backend.deploy("production".into())).await?;
    match &outcome {
        Err(ClientError::Method(e @ DeployError::Declined { .. })) => {
            let wire = serde_json::to_string(&e.clone().into_error_object()).map_err(|e| e.to_string())?;
            println!("   deploy(\"production\") -> Err(Method({e:?}))");
            println!("   on the wire: \"error\":{wire}");
        }
        other => return Err(format!("deploy: expected Err(Method(Declined)), got {other:?}")),
    }
    Ok(())
}

/// A client of a trait the server does not serve. `restart` declares no error type, so its
/// errors are `RpcError`, which takes any error object: the -32601 is `Method(RpcError)`.
/// (A method with a typed error such as `DeployError` would get `Call(Error::Remote(object))` instead.)
async fn unknown_method(conn: &Connection) -> Result<(), String> {
    let admin = AdminClient::new(conn.handle());
    let outcome = step("admin/restart", admin.restart()).await?;
    match &outcome {
        Err(ClientError::Method(e)) if e.code == jsonrpc_duplex::codes::METHOD_NOT_FOUND => {
            println!("   admin/restart (not served) -> error {}: {:?}", e.code, e.message)
        }
        other => return Err(format!("admin/restart: expected -32601, got {other:?}")),
    }
    Ok(())
}

/// A typed client cannot send strings to `add(i64, i64)`; the connection's handle, under every
/// generated client, can.
async fn invalid_params(backend: &BackendClient) -> Result<(), String> {
    let outcome: Result<i64, _> = step("add", backend.handle().request("add", ["two", "forty"])).await?;
    match outcome.as_ref().map_err(jsonrpc_duplex::Error::as_remote) {
        Err(Some(e)) if e.code == -32602 => {
            println!("   add [\"two\", \"forty\"] (untyped) -> error {}: {:?}", e.code, e.message)
        }
        _ => return Err(format!("add: expected -32602, got {outcome:?}")),
    }
    Ok(())
}

async fn shutdown(conn: Connection, backend: &BackendClient) -> Result<(), String> {
    backend.exit().await.map_err(|e| e.to_string())?;
    let reason = step("exit", conn.closed()).await?;
    println!("   connection closed: {reason}");
    conn.close().await;
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
            log_line!("demo failed: {message}");
            ExitCode::FAILURE
        }
    }
}
