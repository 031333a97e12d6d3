//! An ACP (Agent Client Protocol) editor in a terminal: it spawns an agent, runs one prompt turn
//! and prints the session as it happens.
//!
//! It serves the agent's callbacks (the `Editor` trait): `session/update` notifications are
//! printed; `fs/read_text_file` and `fs/write_text_file` work on the real file system;
//! `session/request_permission` is answered later by a separate "dialog" task, as a person
//! would answer a dialog (allow, or reject with `--deny`, after `--think` milliseconds).
//! `--cancel-after MS` sends `session/cancel` while the turn runs; with `--stop-at-question` the
//! user stops the turn (`session/cancel`) instead of answering the first permission question.
//!
//! ```text
//! cargo run --example acp_client -- [--cwd DIR] [--prompt TEXT] [--deny] [--think MS]
//!     [--cancel-after MS] [--stop-at-question] [--read-only] [--timeout SECS] <agent command…>
//! cargo run --example acp_client -- cargo run --example acp_agent
//! cargo run --example acp_client -- --prompt "summarize Cargo.toml" target/debug/examples/acp_agent
//! ```
//!
//! The agent command starts at the first argument that is not an option of this client, or
//! after a `--` (`… -- --deny -- target/debug/examples/acp_agent` works too); every argument from
//! there on is the agent's.
//!
//! The exit code is 0 when the turn ended with a stop reason, 1 otherwise.

#[path = "acp/protocol.rs"]
mod protocol;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use jsonrpc_duplex::{CallOptions, CancellationToken, Connection, Profile};
use protocol::*;
use tokio::process::Command;
use tokio::sync::{mpsc, oneshot};

/// The bound of `initialize` and `session/new`.
const STEP: Duration = Duration::from_secs(30);

struct Options {
    cwd: PathBuf,
    prompt: String,
    deny: bool,
    think: Duration,
    cancel_after: Option<Duration>,
    stop_at_question: bool,
    read_only: bool,
    timeout: Duration,
    agent: Vec<String>,
}

const USAGE: &str = "usage: acp_client [--cwd DIR] [--prompt TEXT] [--deny] [--think MS] [--cancel-after MS] \
                     [--stop-at-question] [--read-only] [--timeout SECS] [--] <agent command…>";

fn parse_args() -> Result<Options, String> {
    let mut args = std::env::args().skip(1);
    let cwd = std::env::current_dir().map_err(|e| format!("no current directory: {e}"))?;
    let mut o = Options {
        cwd,
        prompt: "Summarize README.md".into(),
        deny: false,
        think: Duration::from_millis(300),
        cancel_after: None,
        stop_at_question: false,
        read_only: false,
        timeout: Duration::from_secs(120),
        agent: Vec::new(),
    };
    let millis = |v: Option<String>, name: &str| -> Result<Duration, String> {
        let v = v.ok_or(format!("{name} needs a value"))?;
        v.parse::<u64>().map(Duration::from_millis).map_err(|_| format!("{name}: not a number of milliseconds: {v}"))
    };
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--" => {
                o.agent = args.by_ref().collect();
                break;
            }
            // The agent command's first word: it and everything after it are the agent's.
            command if !command.starts_with('-') => {
                o.agent = std::iter::once(arg).chain(args.by_ref()).collect();
                break;
            }
            "--cwd" => o.cwd = PathBuf::from(args.next().ok_or("--cwd needs a directory")?),
            "--prompt" => o.prompt = args.next().ok_or("--prompt needs a text")?,
            "--deny" => o.deny = true,
            "--read-only" => o.read_only = true,
            "--think" => o.think = millis(args.next(), "--think")?,
            "--cancel-after" => o.cancel_after = Some(millis(args.next(), "--cancel-after")?),
            "--stop-at-question" => o.stop_at_question = true,
            "--timeout" => {
                let v = args.next().ok_or("--timeout needs a number of seconds")?;
                o.timeout = Duration::from_secs(v.parse().map_err(|_| format!("--timeout: not a number: {v}"))?);
            }
            other => return Err(format!("unknown option {other:?}")),
        }
    }
    if o.agent.is_empty() {
        return Err("no agent command".into());
    }
    o.cwd = std::path::absolute(&o.cwd).map_err(|e| format!("--cwd {}: {e}", o.cwd.display()))?;
    Ok(o)
}

// ---------------------------------------------------------------------------------------------
// The editor's side: the callbacks the agent calls
// ---------------------------------------------------------------------------------------------

/// A question for the user, handed from the `session/request_permission` handler to the dialog.
struct Question {
    request: RequestPermissionRequest,
    answer: oneshot::Sender<RequestPermissionOutcome>,
    /// Fires if the agent withdraws the question (`$/cancel_request`).
    withdrawn: CancellationToken,
}

struct ConsoleEditor {
    dialog: mpsc::UnboundedSender<Question>,
    /// Fires when this editor cancels the turn: open questions are then answered `cancelled`.
    turn_cancelled: CancellationToken,
    read_only: bool,
    started: Instant,
}

impl ConsoleEditor {
    fn print(&self, line: &str) {
        println!("{:>6.2}s  {line}", self.started.elapsed().as_secs_f64());
    }
}

impl Editor for ConsoleEditor {
    async fn session_update(&self, notification: SessionNotification) {
        match notification.update {
            SessionUpdate::AgentMessageChunk(chunk) => self.print(&format!("agent │ {}", text_of(&chunk.content))),
            SessionUpdate::AgentThoughtChunk(chunk) => self.print(&format!("think │ {}", text_of(&chunk.content))),
            SessionUpdate::UserMessageChunk(chunk) => self.print(&format!("user  │ {}", text_of(&chunk.content))),
            SessionUpdate::ToolCall(call) => {
                let places: Vec<_> = call.locations.iter().map(|l| l.path.as_str()).collect();
                self.print(&format!(
                    "tool  │ {} [{}] {} ({}){}",
                    call.tool_call_id.0,
                    wire_name(&call.kind),
                    call.title,
                    wire_name(&call.status),
                    if places.is_empty() { String::new() } else { format!(" at {}", places.join(", ")) }
                ));
                for content in &call.content {
                    if let ToolCallContent::Diff { path, new_text, .. } = content {
                        self.print(&format!("      │   proposes {} ({} bytes)", path, new_text.len()));
                    }
                }
            }
            SessionUpdate::ToolCallUpdate(update) => {
                let status = update.status.as_ref().map(wire_name).unwrap_or_else(|| "updated".into());
                let text: Vec<_> = update
                    .content
                    .iter()
                    .flatten()
                    .filter_map(|c| match c {
                        ToolCallContent::Content { content } => Some(text_of(content)),
                        _ => None,
                    })
                    .collect();
                let text = if text.is_empty() { String::new() } else { format!(": {}", text.join(" ")) };
                self.print(&format!("tool  │ {} → {status}{text}", update.tool_call_id.0));
            }
            SessionUpdate::Plan(plan) => {
                let steps: Vec<_> = plan.entries.iter().map(|e| format!("{} [{}]", e.content, e.status)).collect();
                self.print(&format!("plan  │ {}", steps.join("; ")));
            }
            SessionUpdate::Unknown => self.print("(an update kind this editor does not know)"),
        }
    }

    async fn request_permission(
        &self,
        request: RequestPermissionRequest,
        cancel: CancellationToken,
    ) -> Result<RequestPermissionResponse, AcpError> {
        let title = request.tool_call.title.clone().unwrap_or_else(|| request.tool_call.tool_call_id.0.clone());
        let options: Vec<_> = request.options.iter().map(|o| format!("[{}: {}]", o.name, wire_name(&o.kind))).collect();
        self.print(&format!("ask   │ may the agent \"{title}\"? {}", options.join(" ")));
        let (answer, chosen) = oneshot::channel();
        let question = Question { request, answer, withdrawn: cancel };
        if self.dialog.send(question).is_err() {
            return Err(AcpError::Internal("the permission dialog is gone".into()));
        }
        // The answer comes from the dialog task, whenever the user decides; if this editor
        // cancels the turn first, the question is answered `cancelled` (as ACP asks).
        let outcome = tokio::select! {
            outcome = chosen => outcome.unwrap_or(RequestPermissionOutcome::Cancelled),
            () = self.turn_cancelled.cancelled() => {
                self.print("ask   │ (the turn was cancelled: answering `cancelled`)");
                RequestPermissionOutcome::Cancelled
            }
        };
        Ok(RequestPermissionResponse { outcome })
    }

    async fn read_text_file(&self, request: ReadTextFileRequest) -> Result<ReadTextFileResponse, AcpError> {
        let path = absolute(&request.path)?;
        let text = tokio::fs::read_to_string(path).await.map_err(|e| AcpError::from_io(&request.path, &e));
        let text = match text {
            Ok(text) => text,
            Err(e) => {
                self.print(&format!("fs    │ read {} failed: {e}", request.path));
                return Err(e);
            }
        };
        let content = match (request.line, request.limit) {
            (None, None) => text,
            (line, limit) => {
                let skip = line.unwrap_or(1).saturating_sub(1) as usize;
                let take = limit.map_or(usize::MAX, |l| l as usize);
                text.split_inclusive('\n').skip(skip).take(take).collect()
            }
        };
        self.print(&format!("fs    │ read {} ({} bytes)", request.path, content.len()));
        Ok(ReadTextFileResponse { content })
    }

    async fn write_text_file(&self, request: WriteTextFileRequest) -> Result<WriteTextFileResponse, AcpError> {
        if self.read_only {
            return Err(AcpError::InvalidRequest("this editor did not advertise fs.writeTextFile".into()));
        }
        let path = absolute(&request.path)?;
        if let Err(e) = tokio::fs::write(path, request.content.as_bytes()).await {
            self.print(&format!("fs    │ write {} failed: {e}", request.path));
            return Err(AcpError::from_io(&request.path, &e));
        }
        self.print(&format!("fs    │ wrote {} ({} bytes)", request.path, request.content.len()));
        Ok(WriteTextFileResponse {})
    }
}

/// ACP wants absolute paths.
fn absolute(path: &str) -> Result<&Path, AcpError> {
    let p = Path::new(path);
    if p.is_absolute() { Ok(p) } else { Err(AcpError::InvalidParams(format!("not an absolute path: {path:?}"))) }
}

fn text_of(block: &ContentBlock) -> String {
    match block {
        ContentBlock::Text(t) => t.text.trim_end().to_owned(),
        ContentBlock::ResourceLink(link) => format!("<{}>", link.uri),
        ContentBlock::Image(_) => "(an image)".into(),
        ContentBlock::Audio(_) => "(audio)".into(),
        ContentBlock::Resource(_) => "(an embedded resource)".into(),
        ContentBlock::Unknown => "(content of an unknown kind)".into(),
    }
}

/// How an enum value is spelled on the wire (`"allow_once"`).
fn wire_name<T: serde::Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(s)) => s,
        _ => "?".into(),
    }
}

/// How the "user" answers the agent's questions.
struct User {
    deny: bool,
    think: Duration,
    /// Instead of answering, stop the whole turn (fires `stop`).
    stop_at_question: bool,
    stop: CancellationToken,
}

/// The "user": answers questions one at a time, after thinking for a moment.
async fn dialog(mut questions: mpsc::UnboundedReceiver<Question>, user: User, started: Instant) {
    let User { deny, think, stop_at_question, stop } = user;
    let print = |line: String| println!("{:>6.2}s  {line}", started.elapsed().as_secs_f64());
    while let Some(mut q) = questions.recv().await {
        tokio::select! {
            () = tokio::time::sleep(think) => {}
            () = q.withdrawn.cancelled() => {
                print("ask   │ (the agent withdrew its question)".into());
                continue;
            }
            () = q.answer.closed() => continue,
        }
        if stop_at_question {
            // The question stays open: stopping the turn answers it `cancelled`.
            print(format!("you   │ Stop (after {} ms)", think.as_millis()));
            stop.cancel();
            // Keep the question until its handler has answered it.
            q.answer.closed().await;
            continue;
        }
        let wanted: &[PermissionOptionKind] = if deny {
            &[PermissionOptionKind::RejectOnce, PermissionOptionKind::RejectAlways]
        } else {
            &[PermissionOptionKind::AllowOnce, PermissionOptionKind::AllowAlways]
        };
        let outcome = match q.request.options.iter().find(|o| wanted.contains(&o.kind)) {
            Some(option) => {
                print(format!("you   │ {} (after {} ms)", option.name, think.as_millis()));
                RequestPermissionOutcome::Selected { option_id: option.option_id.clone() }
            }
            None => {
                print("you   │ (no fitting option: dismissing the dialog)".into());
                RequestPermissionOutcome::Cancelled
            }
        };
        let _ = q.answer.send(outcome);
    }
}

async fn run(options: Options) -> Result<StopReason, String> {
    let started = Instant::now();
    let (dialog_tx, dialog_rx) = mpsc::unbounded_channel();
    let turn_cancelled = CancellationToken::new();
    // Fired by the user (`--cancel-after`, `--stop-at-question`) to stop the turn.
    let stop = CancellationToken::new();
    let user = User {
        deny: options.deny,
        think: options.think,
        stop_at_question: options.stop_at_question,
        stop: stop.clone(),
    };
    tokio::spawn(dialog(dialog_rx, user, started));
    let editor = ConsoleEditor {
        dialog: dialog_tx,
        turn_cancelled: turn_cancelled.clone(),
        read_only: options.read_only,
        started,
    };

    let mut command = Command::new(&options.agent[0]);
    command.args(&options.agent[1..]);
    let conn = Connection::builder()
        .profile(Profile::acp())
        .serve(EditorServer::new(editor))
        .spawn_child(command)
        .map_err(|e| format!("cannot start {:?}: {e}", options.agent[0]))?;
    let agent = AgentClient::new(conn.handle());
    let print = |line: String| println!("{:>6.2}s  {line}", started.elapsed().as_secs_f64());

    let init = InitializeRequest {
        protocol_version: PROTOCOL_VERSION,
        client_capabilities: ClientCapabilities {
            fs: FileSystemCapabilities { read_text_file: true, write_text_file: !options.read_only },
            terminal: false,
        },
        client_info: Some(Implementation {
            name: "jsonrpc-duplex-acp-client".into(),
            title: None,
            version: env!("CARGO_PKG_VERSION").into(),
        }),
    };
    let step = agent.with_options(CallOptions::new().timeout(STEP));
    let init = step.initialize(init).await.map_err(|e| format!("initialize: {}", describe(&e)))?;
    let who = init.agent_info.as_ref().map_or("an agent".into(), |i| format!("{} {}", i.name, i.version));
    print(format!("connected to {who} (protocol {})", init.protocol_version));

    let session = NewSessionRequest { cwd: options.cwd.display().to_string(), mcp_servers: Vec::new() };
    let session = step.new_session(session).await.map_err(|e| format!("session/new: {}", describe(&e)))?;
    let session_id = session.session_id;
    print(format!("session {session_id} in {}", options.cwd.display()));
    print(format!("you   │ {}", options.prompt));

    if let Some(after) = options.cancel_after {
        let stop = stop.clone();
        tokio::spawn(async move {
            tokio::time::sleep(after).await;
            stop.cancel();
        });
    }
    // Stopping the turn: tell the agent, then answer the questions still open `cancelled`.
    let canceller = {
        let (agent, session_id, turn_cancelled) = (agent.clone(), session_id.clone(), turn_cancelled.clone());
        tokio::spawn(async move {
            stop.cancelled().await;
            println!("{:>6.2}s  you   │ (cancel: sending session/cancel)", started.elapsed().as_secs_f64());
            let _ = agent.cancel(CancelNotification { session_id }).await;
            turn_cancelled.cancel();
        })
    };
    let prompt = PromptRequest { session_id, prompt: vec![ContentBlock::text(&options.prompt)] };
    // The agent sends all of a turn's `session/update`s before its answer: `after_notifications`
    // makes the call return only once they have all been handled (printed) here.
    let turn = agent.with_options(CallOptions::new().timeout(options.timeout).after_notifications());
    let response = turn.prompt(prompt).await.map_err(|e| format!("session/prompt: {}", describe(&e)))?;
    canceller.abort();
    print(format!("stop reason: {}", wire_name(&response.stop_reason)));

    // ACP has no shutdown request: closing the agent's stdin ends it.
    let reason = conn.close().await;
    tracing::debug!("connection closed: {reason}");
    Ok(response.stop_reason)
}

#[tokio::main]
async fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn,jsonrpc_duplex::child=info")),
        )
        .init();
    let options = match parse_args() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("{e}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    match run(options).await {
        Ok(_) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("acp_client: {e}");
            ExitCode::FAILURE
        }
    }
}
