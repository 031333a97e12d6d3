//! An ACP (Agent Client Protocol) agent on stdio, built on `#[rpc]` traits: it summarizes a file.
//!
//! Give it a prompt that names a file, absolute or relative to the session's `cwd` (or attach
//! the file as a `resource_link`): it reads the file through the editor (`fs/read_text_file`),
//! streams what it does as `session/update` notifications (a tool call, its updates, message
//! chunks), asks permission (`session/request_permission`) to write a summary next to the file,
//! writes it through the editor if allowed and the editor advertised `fs.writeTextFile`
//! (`fs/write_text_file`), and answers `{"stopReason": "end_turn"}`. `session/cancel` ends a
//! running turn with `"cancelled"`; the protocol-level `$/cancel_request` aborts the request
//! (`-32800`).
//!
//! An editor launches it; to try it, use the `acp_client` example:
//!
//! ```text
//! cargo run --example acp_client -- --prompt "summarize Cargo.toml" -- target/debug/examples/acp_agent
//! ```
//!
//! Logs go to stderr (`RUST_LOG`); stdout carries the protocol only.

#[path = "acp/protocol.rs"]
mod protocol;

use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use jsonrpc_duplex::{CancellationToken, Connection, Profile};
use protocol::*;

/// This agent's name in `agentInfo`.
const AGENT_NAME: &str = "jsonrpc-duplex-acp-agent";

/// The option ids this agent offers in its permission requests.
const ALLOW: &str = "allow";
const REJECT: &str = "reject";

#[derive(Default)]
struct State {
    /// The editor's capabilities, once `initialize` has been answered.
    editor: Option<ClientCapabilities>,
    sessions: HashMap<SessionId, Session>,
}

struct Session {
    cwd: PathBuf,
    /// The running turn, if any: its number and the token that `session/cancel` fires.
    turn: Option<(u64, CancellationToken)>,
}

/// The agent: its state is behind a `std` mutex that is never held across an `.await`.
#[derive(Default)]
struct SummaryAgent {
    state: Mutex<State>,
    next_session: AtomicU64,
    next_tool_call: AtomicU64,
    next_turn: AtomicU64,
}

impl SummaryAgent {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn tool_call_id(&self) -> ToolCallId {
        ToolCallId(format!("call-{}", self.next_tool_call.fetch_add(1, Ordering::Relaxed) + 1))
    }
}

impl Agent for SummaryAgent {
    async fn initialize(&self, request: InitializeRequest) -> Result<InitializeResponse, AcpError> {
        tracing::info!(version = request.protocol_version, editor = ?request.client_info, "initialize");
        self.state().editor = Some(request.client_capabilities);
        Ok(InitializeResponse {
            // We speak version 1; an editor that asked for a later one decides whether it can too.
            protocol_version: PROTOCOL_VERSION,
            agent_capabilities: AgentCapabilities::default(),
            auth_methods: Vec::new(),
            agent_info: Some(Implementation {
                name: AGENT_NAME.into(),
                title: Some("File summarizer (jsonrpc-duplex example)".into()),
                version: env!("CARGO_PKG_VERSION").into(),
            }),
        })
    }

    async fn new_session(&self, request: NewSessionRequest) -> Result<NewSessionResponse, AcpError> {
        let cwd = PathBuf::from(&request.cwd);
        if !cwd.is_absolute() {
            return Err(AcpError::InvalidParams(format!("cwd must be an absolute path, not {:?}", request.cwd)));
        }
        let mut state = self.state();
        if state.editor.is_none() {
            return Err(AcpError::InvalidRequest("the connection must be initialized before 'session/new'".into()));
        }
        let id = SessionId(format!("sess-{}", self.next_session.fetch_add(1, Ordering::Relaxed) + 1));
        state.sessions.insert(id.clone(), Session { cwd, turn: None });
        Ok(NewSessionResponse { session_id: id })
    }

    async fn prompt(&self, request: PromptRequest, editor: EditorClient) -> Result<PromptResponse, AcpError> {
        let session_id = request.session_id.clone();
        let turn = CancellationToken::new();
        let turn_number = self.next_turn.fetch_add(1, Ordering::Relaxed);
        let (cwd, capabilities) = {
            let mut state = self.state();
            let capabilities = state.editor.clone().unwrap_or_default();
            let Some(session) = state.sessions.get_mut(&session_id) else {
                return Err(AcpError::session_not_found(&session_id));
            };
            // One turn at a time: a new prompt supersedes a running one.
            if let Some((_, previous)) = session.turn.replace((turn_number, turn.clone())) {
                previous.cancel();
            }
            (session.cwd.clone(), capabilities)
        };
        let run = Turn { agent: self, editor, session_id: session_id.clone(), cwd, capabilities };
        // `session/cancel` fires `turn`: the turn's future is dropped where it stands, which
        // withdraws a call to the editor that is still open (`$/cancel_request`).
        let stop_reason = tokio::select! {
            stop = run.run(&request.prompt) => stop,
            () = turn.cancelled() => StopReason::Cancelled,
        };
        if let Some(session) = self.state().sessions.get_mut(&session_id)
            && session.turn.as_ref().is_some_and(|(n, _)| *n == turn_number)
        {
            session.turn = None;
        }
        Ok(PromptResponse { stop_reason })
    }

    async fn cancel(&self, notification: CancelNotification) {
        let turn = self.state().sessions.get_mut(&notification.session_id).and_then(|s| s.turn.take());
        match turn {
            Some((_, turn)) => {
                tracing::info!(session = %notification.session_id, "session/cancel: stopping the turn");
                turn.cancel();
            }
            None => tracing::info!(session = %notification.session_id, "session/cancel: no turn is running"),
        }
    }
}

/// One prompt turn.
struct Turn<'a> {
    agent: &'a SummaryAgent,
    editor: EditorClient,
    session_id: SessionId,
    cwd: PathBuf,
    capabilities: ClientCapabilities,
}

impl Turn<'_> {
    async fn run(&self, prompt: &[ContentBlock]) -> StopReason {
        match self.summarize(prompt).await {
            Ok(stop) => stop,
            Err(e) => {
                // The editor went away or broke the protocol: nothing more to say to it.
                tracing::warn!("the turn failed: {e}");
                StopReason::EndTurn
            }
        }
    }

    /// The turn's steps; `Err` only when talking to the editor fails.
    async fn summarize(&self, prompt: &[ContentBlock]) -> Result<StopReason, AcpError> {
        let Some(path) = file_in_prompt(prompt, &self.cwd) else {
            self.say("Name a file to summarize, e.g. \"summarize notes.txt\" (absolute, or relative to the session's directory).")
                .await?;
            return Ok(StopReason::EndTurn);
        };
        let path_text = path.display().to_string();
        let name = file_name(&path);
        if !self.capabilities.fs.read_text_file {
            self.say(
                "This editor does not let agents read files (`fs.readTextFile` is false), so I cannot summarize it.",
            )
            .await?;
            return Ok(StopReason::EndTurn);
        }

        // 1. Read the file through the editor.
        self.say(&format!("Reading {path_text}\n")).await?;
        let read_id = self.agent.tool_call_id();
        self.update(SessionUpdate::ToolCall(ToolCall {
            tool_call_id: read_id.clone(),
            title: format!("Read {name}"),
            kind: ToolKind::Read,
            status: ToolCallStatus::InProgress,
            content: Vec::new(),
            locations: vec![ToolCallLocation { path: path_text.clone(), line: None }],
            raw_input: Some(serde_json::json!({ "path": path_text })),
        }))
        .await?;
        let read = ReadTextFileRequest {
            session_id: self.session_id.clone(),
            path: path_text.clone(),
            line: None,
            limit: None,
        };
        let text = match self.editor.read_text_file(read).await {
            Ok(response) => response.content,
            Err(e) => {
                let why = describe(&e);
                self.finish(&read_id, ToolCallStatus::Failed, &why).await?;
                self.say(&format!("I could not read {path_text}: {why}\n")).await?;
                return Ok(StopReason::EndTurn);
            }
        };
        let summary = Summary::of(&text);
        self.finish(&read_id, ToolCallStatus::Completed, &summary.counts()).await?;

        // 2. Stream the summary, a line at a time.
        for line in summary.lines(&name) {
            self.say(&line).await?;
        }

        // 3. Offer to write it next to the file.
        if !self.capabilities.fs.write_text_file {
            self.say("(The editor does not let agents write files, so I leave it at that.)\n").await?;
            return Ok(StopReason::EndTurn);
        }
        let target = path.with_file_name(format!("{name}.summary.md"));
        let target_text = target.display().to_string();
        let target_name = file_name(&target);
        let markdown = summary.markdown(&name);
        let write_id = self.agent.tool_call_id();
        self.update(SessionUpdate::ToolCall(ToolCall {
            tool_call_id: write_id.clone(),
            title: format!("Write {target_name}"),
            kind: ToolKind::Edit,
            status: ToolCallStatus::Pending,
            content: vec![ToolCallContent::Diff {
                path: target_text.clone(),
                old_text: None,
                new_text: markdown.clone(),
            }],
            locations: vec![ToolCallLocation { path: target_text.clone(), line: None }],
            raw_input: None,
        }))
        .await?;
        let question = RequestPermissionRequest {
            session_id: self.session_id.clone(),
            tool_call: ToolCallUpdate {
                tool_call_id: write_id.clone(),
                title: Some(format!("Write {target_name}")),
                kind: Some(ToolKind::Edit),
                status: Some(ToolCallStatus::Pending),
                locations: Some(vec![ToolCallLocation { path: target_text.clone(), line: None }]),
                ..ToolCallUpdate::default()
            },
            options: vec![
                PermissionOption {
                    option_id: ALLOW.into(),
                    name: "Allow".into(),
                    kind: PermissionOptionKind::AllowOnce,
                },
                PermissionOption {
                    option_id: REJECT.into(),
                    name: "Reject".into(),
                    kind: PermissionOptionKind::RejectOnce,
                },
            ],
        };
        let outcome = match self.editor.request_permission(question).await {
            Ok(answer) => answer.outcome,
            Err(e) => {
                let why = describe(&e);
                self.finish(&write_id, ToolCallStatus::Failed, &format!("no permission: {why}")).await?;
                self.say(&format!("Asking for permission failed ({why}); not writing {target_name}.\n")).await?;
                return Ok(StopReason::EndTurn);
            }
        };
        match outcome {
            RequestPermissionOutcome::Cancelled => return Ok(StopReason::Cancelled),
            RequestPermissionOutcome::Selected { option_id } if option_id == ALLOW => {}
            RequestPermissionOutcome::Selected { .. } => {
                self.finish(&write_id, ToolCallStatus::Failed, "rejected by the user").await?;
                self.say(&format!("Understood: I did not write {target_name}.\n")).await?;
                return Ok(StopReason::EndTurn);
            }
        }

        // 4. Write it through the editor.
        self.update(SessionUpdate::ToolCallUpdate(ToolCallUpdate {
            tool_call_id: write_id.clone(),
            status: Some(ToolCallStatus::InProgress),
            ..ToolCallUpdate::default()
        }))
        .await?;
        let write =
            WriteTextFileRequest { session_id: self.session_id.clone(), path: target_text.clone(), content: markdown };
        match self.editor.write_text_file(write).await {
            Ok(_) => {
                self.finish(&write_id, ToolCallStatus::Completed, &format!("wrote {target_text}")).await?;
                self.say(&format!("Wrote the summary to {target_text}.\n")).await?;
            }
            Err(e) => {
                let why = describe(&e);
                self.finish(&write_id, ToolCallStatus::Failed, &why).await?;
                self.say(&format!("Writing {target_text} failed: {why}\n")).await?;
            }
        }
        Ok(StopReason::EndTurn)
    }

    async fn update(&self, update: SessionUpdate) -> Result<(), AcpError> {
        let notification = SessionNotification { session_id: self.session_id.clone(), update };
        self.editor.session_update(notification).await.map_err(|e| AcpError::Internal(describe(&e)))
    }

    /// An `agent_message_chunk` of text.
    async fn say(&self, text: &str) -> Result<(), AcpError> {
        self.update(SessionUpdate::AgentMessageChunk(ContentChunk { content: ContentBlock::text(text) })).await
    }

    /// A tool call's last update: its status and a line of text.
    async fn finish(&self, id: &ToolCallId, status: ToolCallStatus, text: &str) -> Result<(), AcpError> {
        self.update(SessionUpdate::ToolCallUpdate(ToolCallUpdate {
            tool_call_id: id.clone(),
            status: Some(status),
            content: Some(vec![ToolCallContent::Content { content: ContentBlock::text(text) }]),
            ..ToolCallUpdate::default()
        }))
        .await
    }
}

/// What the summary says.
struct Summary {
    lines: usize,
    words: usize,
    chars: usize,
    first_line: Option<String>,
    top_words: Vec<(String, usize)>,
}

impl Summary {
    fn of(text: &str) -> Self {
        let mut counts: HashMap<String, usize> = HashMap::new();
        for word in text.split(|c: char| !c.is_alphanumeric()).filter(|w| w.chars().count() > 3) {
            *counts.entry(word.to_lowercase()).or_default() += 1;
        }
        let mut top_words: Vec<_> = counts.into_iter().filter(|(_, n)| *n > 1).collect();
        top_words.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        top_words.truncate(3);
        Summary {
            lines: text.lines().count(),
            words: text.split_whitespace().count(),
            chars: text.chars().count(),
            first_line: text.lines().map(str::trim).find(|l| !l.is_empty()).map(|l| shorten(l, 80)),
            top_words,
        }
    }

    fn counts(&self) -> String {
        format!("{} lines, {} words, {} characters", self.lines, self.words, self.chars)
    }

    /// The summary as message chunks, one line each.
    fn lines(&self, name: &str) -> Vec<String> {
        let mut out = vec![format!("{name}: {}.\n", self.counts())];
        if let Some(first) = &self.first_line {
            out.push(format!("It begins: \"{first}\"\n"));
        }
        if !self.top_words.is_empty() {
            let words: Vec<_> = self.top_words.iter().map(|(w, n)| format!("{w} ({n}×)")).collect();
            out.push(format!("Frequent words: {}.\n", words.join(", ")));
        }
        out
    }

    fn markdown(&self, name: &str) -> String {
        let mut md = format!("# Summary of {name}\n\n- {}\n", self.counts());
        if let Some(first) = &self.first_line {
            md.push_str(&format!("- begins: \"{first}\"\n"));
        }
        if !self.top_words.is_empty() {
            let words: Vec<_> = self.top_words.iter().map(|(w, n)| format!("{w} ({n})")).collect();
            md.push_str(&format!("- frequent words: {}\n", words.join(", ")));
        }
        md
    }
}

fn shorten(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        text.to_owned()
    } else {
        format!("{}…", text.chars().take(max).collect::<String>())
    }
}

fn file_name(path: &Path) -> String {
    path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| path.display().to_string())
}

/// The file a prompt names: a `resource_link` to a `file://` URI, else the first word of its
/// text that looks like a path (`/abs/path`, `dir/file`, `./x`, `name.ext`), made absolute
/// against the session's directory.
fn file_in_prompt(prompt: &[ContentBlock], cwd: &Path) -> Option<PathBuf> {
    for block in prompt {
        if let ContentBlock::ResourceLink(link) = block
            && let Some(path) = file_uri_to_path(&link.uri)
        {
            return Some(normalize(Path::new(&path)));
        }
    }
    let text: Vec<&str> = prompt
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text(t) => Some(t.text.as_str()),
            _ => None,
        })
        .collect();
    for word in text.iter().flat_map(|t| t.split_whitespace()) {
        let word = word
            .trim_start_matches(['"', '\'', '`', '(', '[', '<'])
            .trim_end_matches(['"', '\'', '`', ')', ']', '>', ',', ';', ':', '!', '?', '.']);
        if word.is_empty() || word.contains("://") {
            continue;
        }
        let looks_like_path = word.starts_with('/')
            || word.contains('/')
            || word.rsplit_once('.').is_some_and(|(stem, ext)| {
                !stem.is_empty() && !ext.is_empty() && ext.chars().all(|c| c.is_ascii_alphanumeric())
            });
        if looks_like_path {
            return Some(normalize(&cwd.join(word)));
        }
    }
    None
}

/// `a/./b/../c` → `a/c`, without touching the file system (the file is the editor's).
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

#[tokio::main]
async fn main() {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .init();
    let conn = Connection::builder().profile(Profile::acp()).serve(AgentServer::new(SummaryAgent::default())).stdio();
    // The editor ends the session by closing our stdin.
    let reason = conn.closed().await;
    tracing::info!("connection closed: {reason}");
}
