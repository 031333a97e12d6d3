//! Both directions on one connection: an agent serves `Agent` and calls `Editor`, the editor
//! serves `Editor` and calls `Agent`; handlers call the peer back through a typed client, see
//! their request's cancellation, and notifications arrive in order.

use crate::support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use jsonrpc_duplex::{
    CallOptions, CancellationToken, ClientError, Connection, Error, Handle, Id, RequestContext, Router, RpcError, rpc,
    transport::memory,
};
use serde::{Deserialize, Serialize};
use support::time::{eventually, within};
use tokio::sync::oneshot;

/// `fs/read_text_file` params.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ReadTextFileRequest {
    /// The file.
    pub path: String,
}

/// `fs/read_text_file` result.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ReadTextFileResponse {
    /// Its text.
    pub content: String,
}

/// `session/request_permission` params.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PermissionRequest {
    /// The tool that wants to run.
    pub tool: String,
}

/// `session/request_permission` result.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PermissionOutcome {
    /// Whether the user allowed it.
    pub granted: bool,
}

/// `session/update` params.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SessionUpdate {
    /// Its place in the sequence.
    pub seq: u32,
}

/// `session/prompt` params.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PromptRequest {
    /// The tool to ask permission for.
    pub tool: String,
    /// The file to read.
    pub path: String,
    /// How many updates to send before answering.
    pub updates: u32,
}

/// `session/prompt` result.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PromptResponse {
    /// What the agent says.
    pub text: String,
}

/// What an agent may ask of the editor.
#[rpc(params = "object")]
pub trait Editor {
    /// Read a text file on the agent's behalf.
    #[method(name = "fs/read_text_file")]
    async fn read_text_file(&self, request: ReadTextFileRequest) -> Result<ReadTextFileResponse, RpcError>;

    /// Ask the user whether a tool may run.
    #[method(name = "session/request_permission")]
    async fn request_permission(
        &self,
        request: PermissionRequest,
        cancel: CancellationToken,
    ) -> Result<PermissionOutcome, RpcError>;

    /// Progress of a prompt.
    #[notification(name = "session/update")]
    async fn session_update(&self, update: SessionUpdate);

    /// A notification whose handler notifies the agent back.
    #[notification(name = "editor/echo", params = "positional")]
    async fn echo(&self, seq: u32, #[context] agent: AgentClient);
}

/// What an editor may ask of the agent.
#[rpc(params = "object")]
pub trait Agent {
    /// Run a prompt: asks permission, reads a file and reports progress, all through the editor.
    #[method(name = "session/prompt")]
    async fn prompt(&self, request: PromptRequest, #[context] editor: EditorClient)
    -> Result<PromptResponse, RpcError>;

    /// Runs until cancelled.
    #[method(name = "session/long_task", params = "positional")]
    async fn long_task(&self, cancel: CancellationToken) -> Result<(), RpcError>;

    /// Reports what a handler can see besides its params.
    #[method(name = "agent/whoami", params = "positional")]
    async fn whoami(&self, #[context] id: Id, #[context] peer: Handle, context: RequestContext) -> String;

    /// Answered by the trait's default body.
    #[method(name = "agent/version", params = "positional")]
    async fn version(&self) -> String {
        "1.0".to_owned()
    }

    /// The editor's echo comes back here.
    #[notification(name = "agent/echoed", params = "positional")]
    async fn echoed(&self, seq: u32);
}

#[derive(Default)]
struct EditorState {
    updates: Mutex<Vec<u32>>,
    permission_asks: AtomicUsize,
}

struct TestEditor(Arc<EditorState>);

impl Editor for TestEditor {
    async fn read_text_file(&self, request: ReadTextFileRequest) -> Result<ReadTextFileResponse, RpcError> {
        Ok(ReadTextFileResponse { content: format!("contents of {}", request.path) })
    }

    async fn request_permission(
        &self,
        request: PermissionRequest,
        _cancel: CancellationToken,
    ) -> Result<PermissionOutcome, RpcError> {
        self.0.permission_asks.fetch_add(1, Ordering::SeqCst);
        Ok(PermissionOutcome { granted: request.tool != "rm" })
    }

    async fn session_update(&self, update: SessionUpdate) {
        self.0.updates.lock().unwrap().push(update.seq);
    }

    async fn echo(&self, seq: u32, agent: AgentClient) {
        agent.echoed(seq).await.unwrap();
    }
}

#[derive(Default)]
struct TestAgent {
    /// Where `long_task` sends its cancellation token when it starts.
    started: Mutex<Option<oneshot::Sender<CancellationToken>>>,
    echoed: Mutex<Vec<u32>>,
}

impl Agent for TestAgent {
    async fn prompt(&self, request: PromptRequest, editor: EditorClient) -> Result<PromptResponse, RpcError> {
        let permission = editor.request_permission(PermissionRequest { tool: request.tool }).await?;
        if !permission.granted {
            return Ok(PromptResponse { text: "denied".into() });
        }
        let file = editor.read_text_file(ReadTextFileRequest { path: request.path }).await?;
        for seq in 0..request.updates {
            editor.session_update(SessionUpdate { seq }).await?;
        }
        Ok(PromptResponse { text: file.content })
    }

    async fn long_task(&self, cancel: CancellationToken) -> Result<(), RpcError> {
        if let Some(started) = self.started.lock().unwrap().take() {
            let _ = started.send(cancel.clone());
        }
        cancel.cancelled().await;
        Err(RpcError::new(-32800, "stopped"))
    }

    async fn whoami(&self, id: Id, peer: Handle, context: RequestContext) -> String {
        assert_eq!(&id, context.id());
        assert!(!peer.is_closed());
        format!("request {id}")
    }

    async fn echoed(&self, seq: u32) {
        self.echoed.lock().unwrap().push(seq);
    }
}

struct Setup {
    editor_state: Arc<EditorState>,
    agent: Arc<TestAgent>,
    editor_conn: Connection,
    agent_conn: Connection,
}

fn setup() -> Setup {
    let editor_state = Arc::new(EditorState::default());
    let agent = Arc::new(TestAgent::default());
    let (editor_conn, agent_conn) = memory::pair(
        Connection::builder().serve(EditorServer::new(TestEditor(editor_state.clone()))),
        Connection::builder().serve(AgentServer::from_arc(agent.clone())),
    );
    Setup { editor_state, agent, editor_conn, agent_conn }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handler_calls_the_peer_back_through_its_typed_client() {
    let s = setup();
    let agent = AgentClient::new(s.editor_conn.handle());
    let answer =
        within(agent.prompt(PromptRequest { tool: "cat".into(), path: "a.txt".into(), updates: 0 })).await.unwrap();
    assert_eq!(answer.text, "contents of a.txt");
    assert_eq!(s.editor_state.permission_asks.load(Ordering::SeqCst), 1);

    let denied =
        within(agent.prompt(PromptRequest { tool: "rm".into(), path: "a.txt".into(), updates: 0 })).await.unwrap();
    assert_eq!(denied.text, "denied");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_sides_call_each_other_on_one_connection_at_the_same_time() {
    let s = setup();
    let agent = AgentClient::new(s.editor_conn.handle());
    let editor = EditorClient::new(s.agent_conn.handle());
    let calls = (0..20).map(|i| {
        let (agent, editor) = (agent.clone(), editor.clone());
        async move {
            let path = format!("{i}.txt");
            let (a, b) = tokio::join!(
                agent.prompt(PromptRequest { tool: "cat".into(), path: path.clone(), updates: 1 }),
                editor.read_text_file(ReadTextFileRequest { path: path.clone() }),
            );
            assert_eq!(a.unwrap().text, format!("contents of {path}"));
            assert_eq!(b.unwrap().content, format!("contents of {path}"));
        }
    });
    within(futures::future::join_all(calls)).await;
}

#[tokio::test]
async fn notifications_are_handled_in_the_order_they_were_sent() {
    let s = setup();
    let agent = AgentClient::new(s.editor_conn.handle());
    within(agent.prompt(PromptRequest { tool: "cat".into(), path: "a.txt".into(), updates: 200 })).await.unwrap();
    let state = s.editor_state.clone();
    eventually("200 updates", || state.updates.lock().unwrap().len() == 200).await;
    assert_eq!(*s.editor_state.updates.lock().unwrap(), (0..200).collect::<Vec<_>>());
}

#[tokio::test]
async fn the_peers_cancellation_reaches_the_handlers_token() {
    let s = setup();
    let (started_tx, started_rx) = oneshot::channel();
    *s.agent.started.lock().unwrap() = Some(started_tx);
    let agent = AgentClient::new(s.editor_conn.handle());
    let token = CancellationToken::new();
    let call = {
        let agent = agent.with_options(CallOptions::new().cancel(token.clone()));
        tokio::spawn(async move { agent.long_task().await })
    };
    let handler_token = within(started_rx).await.unwrap();
    assert!(!handler_token.is_cancelled());
    token.cancel();
    within(handler_token.cancelled()).await;
    assert!(matches!(within(call).await.unwrap(), Err(ClientError::Call(Error::Cancelled))));
}

#[tokio::test]
async fn a_notification_handler_notifies_the_peer_back() {
    let s = setup();
    let editor = EditorClient::new(s.agent_conn.handle());
    for seq in 0..3 {
        within(editor.echo(seq)).await.unwrap();
    }
    let agent = s.agent.clone();
    eventually("3 echoes", || agent.echoed.lock().unwrap().len() == 3).await;
    assert_eq!(*s.agent.echoed.lock().unwrap(), [0, 1, 2]);
}

#[tokio::test]
async fn context_arguments_and_default_bodies_work() {
    let s = setup();
    let agent = AgentClient::new(s.editor_conn.handle());
    assert_eq!(within(agent.whoami()).await.unwrap(), "request 0");
    assert_eq!(within(agent.version()).await.unwrap(), "1.0");
}

/// A second service on the agent's side of the connection.
#[rpc(namespace = "terminal")]
pub trait Terminal {
    /// `terminal/run`.
    async fn run(&self, command: String) -> i32;
}

/// A service that still answers the old name of the agent's prompt.
#[rpc]
pub trait Legacy {
    /// Clashes with `Agent::prompt`.
    #[method(name = "session/legacy_prompt", aliases = ["session/prompt"])]
    async fn prompt(&self, text: String) -> String;
}

struct Shell;

impl Terminal for Shell {
    async fn run(&self, command: String) -> i32 {
        command.len() as i32
    }
}

impl Legacy for Shell {
    async fn prompt(&self, text: String) -> String {
        text
    }
}

#[tokio::test]
async fn several_dispatchers_serve_one_connection() {
    let (editor_conn, _agent_conn) = memory::pair(
        Connection::builder(),
        Connection::builder().serve(AgentServer::new(TestAgent::default())).serve(TerminalServer::new(Shell)),
    );
    let terminal = TerminalClient::new(editor_conn.handle());
    let agent = AgentClient::new(editor_conn.handle());
    assert_eq!(within(terminal.run("ls -l".into())).await.unwrap(), 5);
    assert_eq!(within(agent.version()).await.unwrap(), "1.0");
}

#[test]
fn a_method_name_clash_between_dispatchers_is_reported_by_name() {
    let clash = Connection::builder()
        .serve(AgentServer::new(TestAgent::default()))
        .try_serve(LegacyServer::new(Shell))
        .unwrap_err();
    assert_eq!(clash.method, "session/prompt");

    let clash = Router::from(AgentServer::new(TestAgent::default())).try_merge(LegacyServer::new(Shell)).unwrap_err();
    assert_eq!(clash.method, "session/prompt");
}
