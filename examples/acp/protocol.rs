//! The Agent Client Protocol (ACP, protocol version 1), as far as the `acp_agent` and
//! `acp_client` examples use it: the DTOs and the two `#[rpc]` traits.
//!
//! Field names and shapes follow the official schema (`schema/v1/schema.json` of the TypeScript
//! SDK `@agentclientprotocol/sdk` 2.4.0): camelCase members, `sessionUpdate`-tagged updates,
//! `type`-tagged content blocks, `outcome`-tagged permission outcomes, snake_case enum values.
//! Members this code does not use are left out; serde ignores them when they come in, so a
//! newer peer that sends more still decodes. Unknown variants of the open unions (session
//! updates, content blocks) decode as `Unknown` instead of failing the whole message.
//!
//! The wire: newline-delimited JSON-RPC 2.0 on the agent's stdin/stdout, protocol-level
//! cancellation `$/cancel_request {"requestId"}`: `Profile::acp()` sets both.

// Shared by two example binaries through `#[path]`: each uses only one side of it, and its `pub`
// items are `pub` so that they read like a library's.
#![allow(dead_code, unreachable_pub)]

use jsonrpc_duplex::{CancellationToken, ClientError, Error, ErrorObject, RpcErrorType, rpc};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

/// The protocol version these examples speak.
pub const PROTOCOL_VERSION: u16 = 1;

// ---------------------------------------------------------------------------------------------
// The two sides
// ---------------------------------------------------------------------------------------------

/// What the editor (the ACP *client*) may ask of the agent.
#[rpc(params = "object")]
pub trait Agent {
    /// Negotiate the protocol version and exchange capabilities; the first request.
    #[method(name = "initialize")]
    async fn initialize(&self, request: InitializeRequest) -> Result<InitializeResponse, AcpError>;

    /// Start a conversation in a working directory.
    #[method(name = "session/new")]
    async fn new_session(&self, request: NewSessionRequest) -> Result<NewSessionResponse, AcpError>;

    /// Run one prompt turn. While it runs the agent streams `session/update`s and calls the
    /// editor back (`editor`, a client of the peer); it answers with why it stopped. The
    /// application-level `session/cancel` ends the turn with `stopReason: "cancelled"`; the
    /// protocol-level `$/cancel_request` drops the handler and the framework answers `-32800`.
    #[method(name = "session/prompt")]
    async fn prompt(&self, request: PromptRequest, #[context] editor: EditorClient)
    -> Result<PromptResponse, AcpError>;

    /// Stop the session's running prompt turn (it then answers `stopReason: "cancelled"`).
    #[notification(name = "session/cancel")]
    async fn cancel(&self, notification: CancelNotification);
}

/// What the agent may ask of the editor (the ACP *client*): its callbacks.
#[rpc(params = "object")]
pub trait Editor {
    /// Progress of a prompt turn: message chunks, tool calls and their updates, plans.
    #[notification(name = "session/update")]
    async fn session_update(&self, notification: SessionNotification);

    /// Ask the user to allow a tool call; the answer may take as long as the user does.
    /// `cancel` fires if the agent withdraws the question (`$/cancel_request`).
    #[method(name = "session/request_permission")]
    async fn request_permission(
        &self,
        request: RequestPermissionRequest,
        cancel: CancellationToken,
    ) -> Result<RequestPermissionResponse, AcpError>;

    /// Read a text file as the editor sees it (unsaved changes included). Only if the editor
    /// advertised `fs.readTextFile`.
    #[method(name = "fs/read_text_file")]
    async fn read_text_file(&self, request: ReadTextFileRequest) -> Result<ReadTextFileResponse, AcpError>;

    /// Write a text file through the editor. Only if the editor advertised `fs.writeTextFile`.
    #[method(name = "fs/write_text_file")]
    async fn write_text_file(&self, request: WriteTextFileRequest) -> Result<WriteTextFileResponse, AcpError>;
}

// ---------------------------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------------------------

/// ACP's error codes that these examples tell apart; any other error object stays a
/// `ClientError::Call(Error::Remote(object))` on the calling side.
#[derive(Clone, Debug, PartialEq)]
pub enum AcpError {
    /// `-32002` "Resource not found": a file or a session that does not exist. The SDK sends
    /// `data: {"uri": ..}` for files and `data: {"sessionId": ..}` for sessions.
    ResourceNotFound {
        /// The error message.
        message: String,
        /// The missing file's path or URI, when it is one.
        uri: Option<String>,
        /// The unknown session, when it is one.
        session_id: Option<String>,
    },
    /// `-32600` "Invalid request", e.g. a request before `initialize`.
    InvalidRequest(String),
    /// `-32602` "Invalid params", e.g. a relative path where ACP wants an absolute one.
    InvalidParams(String),
    /// `-32603` "Internal error": something failed on the answering side (an I/O error).
    Internal(String),
}

impl AcpError {
    /// A file that does not exist.
    pub fn file_not_found(path: &str) -> Self {
        AcpError::ResourceNotFound {
            message: format!("Resource not found: {path}"),
            uri: Some(path.into()),
            session_id: None,
        }
    }

    /// A session that does not exist.
    pub fn session_not_found(session_id: &SessionId) -> Self {
        AcpError::ResourceNotFound {
            message: "Resource not found".into(),
            uri: None,
            session_id: Some(session_id.0.clone()),
        }
    }

    /// An I/O error of the editor's file system, mapped to ACP's codes.
    pub fn from_io(path: &str, error: &std::io::Error) -> Self {
        match error.kind() {
            std::io::ErrorKind::NotFound => AcpError::file_not_found(path),
            _ => AcpError::Internal(format!("{path}: {error}")),
        }
    }
}

impl std::fmt::Display for AcpError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AcpError::ResourceNotFound { message, .. } => write!(f, "{message} (-32002)"),
            AcpError::InvalidRequest(m) => write!(f, "invalid request: {m} (-32600)"),
            AcpError::InvalidParams(m) => write!(f, "invalid params: {m} (-32602)"),
            AcpError::Internal(m) => write!(f, "internal error: {m} (-32603)"),
        }
    }
}

#[derive(Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct NotFoundData {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    uri: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    session_id: Option<String>,
}

impl RpcErrorType for AcpError {
    fn into_error_object(self) -> ErrorObject {
        match self {
            AcpError::ResourceNotFound { message, uri, session_id } => {
                ErrorObject::new(-32002, message).with_data(NotFoundData { uri, session_id })
            }
            AcpError::InvalidRequest(m) => ErrorObject::invalid_request(m),
            AcpError::InvalidParams(m) => ErrorObject::invalid_params(m),
            AcpError::Internal(m) => ErrorObject::internal_error(m),
        }
    }

    fn from_error_object(error: ErrorObject) -> Result<Self, ErrorObject> {
        match error.code {
            -32002 => {
                let data = error.data_as::<NotFoundData>().and_then(Result::ok).unwrap_or_default();
                Ok(AcpError::ResourceNotFound { message: error.message, uri: data.uri, session_id: data.session_id })
            }
            -32600 => Ok(AcpError::InvalidRequest(error.message)),
            -32602 => Ok(AcpError::InvalidParams(error.message)),
            -32603 => Ok(AcpError::Internal(error.message)),
            _ => Err(error),
        }
    }
}

/// A failed call to the peer, as this side reports it to its own caller: the peer's own ACP
/// error passes through, anything else (connection lost, cancelled, an unknown error object)
/// becomes an internal error that says what happened.
impl From<ClientError<AcpError>> for AcpError {
    fn from(error: ClientError<AcpError>) -> Self {
        match error {
            ClientError::Method(e) => e,
            other => AcpError::Internal(describe(&other)),
        }
    }
}

/// One line saying why a call failed.
pub fn describe<E: std::fmt::Display + std::fmt::Debug>(error: &ClientError<E>) -> String {
    match error {
        ClientError::Method(e) => e.to_string(),
        ClientError::Call(Error::Remote(object)) => format!("{} ({})", object.message, object.code),
        ClientError::Call(Error::ConnectionLost(reason)) => format!("connection lost: {}", reason.message),
        ClientError::Call(Error::Cancelled) => "cancelled".into(),
        ClientError::Call(Error::Timeout(t)) => format!("no answer within {t:?}"),
        ClientError::Call(Error::Serialize(e)) => format!("cannot encode the params: {e}"),
        ClientError::Call(Error::Deserialize(e)) => format!("unexpected answer: {e}"),
        ClientError::Call(Error::MessageTooLarge { size, limit }) => {
            format!("message of {size} bytes over the {limit}-byte limit")
        }
        ClientError::Call(other) => other.to_string(),
    }
}

// ---------------------------------------------------------------------------------------------
// initialize
// ---------------------------------------------------------------------------------------------

/// `initialize` params.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeRequest {
    /// The latest protocol version the editor supports.
    pub protocol_version: u16,
    /// What the editor can do for the agent.
    #[serde(default)]
    pub client_capabilities: ClientCapabilities,
    /// Who the editor is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_info: Option<Implementation>,
}

/// `initialize` result.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeResponse {
    /// The version the agent chose (the editor's, if it supports it).
    pub protocol_version: u16,
    /// What the agent supports.
    #[serde(default)]
    pub agent_capabilities: AgentCapabilities,
    /// How to authenticate (none here).
    #[serde(default)]
    pub auth_methods: Vec<Value>,
    /// Who the agent is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_info: Option<Implementation>,
}

/// A program's name and version (`clientInfo`, `agentInfo`).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Implementation {
    /// Programmatic name.
    pub name: String,
    /// Display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Version.
    pub version: String,
}

/// The editor's capabilities.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClientCapabilities {
    /// File-system methods the agent may call.
    #[serde(default)]
    pub fs: FileSystemCapabilities,
    /// Whether the `terminal/*` methods are available.
    #[serde(default)]
    pub terminal: bool,
}

/// `clientCapabilities.fs`.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FileSystemCapabilities {
    /// `fs/read_text_file` is available.
    #[serde(default)]
    pub read_text_file: bool,
    /// `fs/write_text_file` is available.
    #[serde(default)]
    pub write_text_file: bool,
}

/// The agent's capabilities.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentCapabilities {
    /// Whether `session/load` is supported.
    #[serde(default)]
    pub load_session: bool,
    /// Content the prompt may carry besides text and resource links.
    #[serde(default)]
    pub prompt_capabilities: PromptCapabilities,
}

/// `agentCapabilities.promptCapabilities`.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptCapabilities {
    /// Image blocks.
    #[serde(default)]
    pub image: bool,
    /// Audio blocks.
    #[serde(default)]
    pub audio: bool,
    /// Embedded `resource` blocks.
    #[serde(default)]
    pub embedded_context: bool,
}

// ---------------------------------------------------------------------------------------------
// Sessions and prompts
// ---------------------------------------------------------------------------------------------

/// A session's id, chosen by the agent.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct SessionId(pub String);

impl std::fmt::Display for SessionId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// `session/new` params.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NewSessionRequest {
    /// The session's working directory (absolute).
    pub cwd: String,
    /// MCP servers the agent should connect to (always sent; empty here).
    #[serde(default, deserialize_with = "null_as_default")]
    pub mcp_servers: Vec<Value>,
}

/// `session/new` result.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NewSessionResponse {
    /// The new session.
    pub session_id: SessionId,
}

/// `session/prompt` params.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptRequest {
    /// The session.
    pub session_id: SessionId,
    /// The user's message.
    pub prompt: Vec<ContentBlock>,
}

/// `session/prompt` result.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptResponse {
    /// Why the turn ended.
    pub stop_reason: StopReason,
}

/// Why a prompt turn ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The agent finished.
    EndTurn,
    /// The token limit was reached.
    MaxTokens,
    /// The limit of model requests in one turn was reached.
    MaxTurnRequests,
    /// The agent refused.
    Refusal,
    /// The editor cancelled the turn (`session/cancel`).
    Cancelled,
}

/// `session/cancel` params.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CancelNotification {
    /// The session whose turn to stop.
    pub session_id: SessionId,
}

// ---------------------------------------------------------------------------------------------
// Content
// ---------------------------------------------------------------------------------------------

/// A piece of a message: `{"type": "text", "text": ..}` and so on.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentBlock {
    /// Text (Markdown).
    Text(TextContent),
    /// An image, base64.
    Image(MediaContent),
    /// Audio, base64.
    Audio(MediaContent),
    /// A reference to a resource the agent may read (`file:///..`).
    ResourceLink(ResourceLink),
    /// A resource whose contents come embedded.
    Resource(EmbeddedResource),
    /// A kind of block this code does not know.
    #[serde(other)]
    Unknown,
}

impl ContentBlock {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        ContentBlock::Text(TextContent { text: text.into() })
    }
}

/// `{"type": "text"}`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct TextContent {
    /// The text.
    pub text: String,
}

/// `{"type": "image"}` and `{"type": "audio"}`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MediaContent {
    /// Base64 data.
    pub data: String,
    /// Its MIME type.
    pub mime_type: String,
}

/// `{"type": "resource_link"}`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceLink {
    /// Its name.
    pub name: String,
    /// Where it is (`file:///abs/path`).
    pub uri: String,
    /// Its MIME type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
}

/// `{"type": "resource"}`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct EmbeddedResource {
    /// The contents (text or blob), kept as they came.
    pub resource: Value,
}

// ---------------------------------------------------------------------------------------------
// session/update
// ---------------------------------------------------------------------------------------------

/// `session/update` params.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionNotification {
    /// The session.
    pub session_id: SessionId,
    /// What happened.
    pub update: SessionUpdate,
}

/// What happened during a prompt turn, tagged by `sessionUpdate`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "sessionUpdate", rename_all = "snake_case")]
pub enum SessionUpdate {
    /// Part of the user's message (when replaying a session).
    UserMessageChunk(ContentChunk),
    /// Part of the agent's answer.
    AgentMessageChunk(ContentChunk),
    /// Part of the agent's reasoning.
    AgentThoughtChunk(ContentChunk),
    /// A new tool call.
    ToolCall(ToolCall),
    /// A change to a tool call.
    ToolCallUpdate(ToolCallUpdate),
    /// The agent's plan.
    Plan(Plan),
    /// An update this code does not know (commands, modes, usage, …).
    #[serde(other)]
    Unknown,
}

/// A streamed piece of a message.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ContentChunk {
    /// The piece.
    pub content: ContentBlock,
}

/// A tool call's id, unique within its session.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ToolCallId(pub String);

/// `{"sessionUpdate": "tool_call"}`: a tool call starts.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCall {
    /// Its id.
    pub tool_call_id: ToolCallId,
    /// What it does, for people.
    pub title: String,
    /// What kind of tool it is (`"other"` if left out).
    #[serde(default)]
    pub kind: ToolKind,
    /// Its status (`"pending"` if left out).
    #[serde(default)]
    pub status: ToolCallStatus,
    /// What it produced.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub content: Vec<ToolCallContent>,
    /// The files it touches ("follow along" in the editor).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub locations: Vec<ToolCallLocation>,
    /// Its input, raw.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw_input: Option<Value>,
}

/// `{"sessionUpdate": "tool_call_update"}` (and the `toolCall` of a permission request): only
/// the members that changed.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCallUpdate {
    /// The tool call.
    pub tool_call_id: ToolCallId,
    /// A new title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// A new kind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<ToolKind>,
    /// A new status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<ToolCallStatus>,
    /// New content (replaces the old).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<Vec<ToolCallContent>>,
    /// New locations (replace the old).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub locations: Option<Vec<ToolCallLocation>>,
}

/// The kind of a tool.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolKind {
    /// Reads files or data.
    Read,
    /// Changes files.
    Edit,
    /// Deletes files.
    Delete,
    /// Moves files.
    Move,
    /// Searches.
    Search,
    /// Runs commands.
    Execute,
    /// Thinks.
    Think,
    /// Fetches from the network.
    Fetch,
    /// Switches the session's mode.
    SwitchMode,
    /// Anything else.
    #[default]
    Other,
}

/// A tool call's status.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolCallStatus {
    /// Not started (waiting for input or permission).
    #[default]
    Pending,
    /// Running.
    InProgress,
    /// Done.
    Completed,
    /// Failed (or was not allowed).
    Failed,
}

/// What a tool call produced, tagged by `type`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ToolCallContent {
    /// Ordinary content.
    Content {
        /// The content.
        content: ContentBlock,
    },
    /// A change to a file.
    Diff {
        /// The file (absolute).
        path: String,
        /// Its text before (`null` for a new file).
        #[serde(rename = "oldText", default)]
        old_text: Option<String>,
        /// Its text after.
        #[serde(rename = "newText")]
        new_text: String,
    },
    /// A terminal's output.
    Terminal {
        /// The terminal.
        #[serde(rename = "terminalId")]
        terminal_id: String,
    },
}

/// A file a tool call touches.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ToolCallLocation {
    /// The file (absolute).
    pub path: String,
    /// A line in it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
}

/// `{"sessionUpdate": "plan"}`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Plan {
    /// The plan's steps, the whole list each time.
    pub entries: Vec<PlanEntry>,
}

/// One step of a plan.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PlanEntry {
    /// What the step is.
    pub content: String,
    /// `"high"`, `"medium"` or `"low"`.
    pub priority: String,
    /// `"pending"`, `"in_progress"` or `"completed"`.
    pub status: String,
}

// ---------------------------------------------------------------------------------------------
// session/request_permission
// ---------------------------------------------------------------------------------------------

/// `session/request_permission` params.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RequestPermissionRequest {
    /// The session.
    pub session_id: SessionId,
    /// The tool call that wants permission (as announced by a `tool_call` update).
    pub tool_call: ToolCallUpdate,
    /// The choices offered to the user.
    pub options: Vec<PermissionOption>,
}

/// One choice of a permission request.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PermissionOption {
    /// Its id, sent back when chosen.
    pub option_id: String,
    /// Its label.
    pub name: String,
    /// What choosing it means.
    pub kind: PermissionOptionKind,
}

/// What choosing a permission option means.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PermissionOptionKind {
    /// Allow this once.
    AllowOnce,
    /// Allow from now on.
    AllowAlways,
    /// Reject this once.
    RejectOnce,
    /// Reject from now on.
    RejectAlways,
}

/// `session/request_permission` result.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RequestPermissionResponse {
    /// What the user decided.
    pub outcome: RequestPermissionOutcome,
}

/// `{"outcome": "selected", "optionId": ..}` or `{"outcome": "cancelled"}` (the turn was
/// cancelled while the question was open).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum RequestPermissionOutcome {
    /// The prompt turn was cancelled before the user answered.
    Cancelled,
    /// The user chose an option.
    Selected {
        /// Which one.
        #[serde(rename = "optionId")]
        option_id: String,
    },
}

// ---------------------------------------------------------------------------------------------
// fs/*
// ---------------------------------------------------------------------------------------------

/// `fs/read_text_file` params.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReadTextFileRequest {
    /// The session.
    pub session_id: SessionId,
    /// The file (absolute).
    pub path: String,
    /// The first line to read, 1-based.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    /// How many lines to read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
}

/// `fs/read_text_file` result.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ReadTextFileResponse {
    /// The text.
    pub content: String,
}

/// `fs/write_text_file` params.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WriteTextFileRequest {
    /// The session.
    pub session_id: SessionId,
    /// The file (absolute); created if missing.
    pub path: String,
    /// The new text.
    pub content: String,
}

/// `fs/write_text_file` result: `{}`. Decodes from `null` too, which is what an editor whose
/// handler returns nothing (the TypeScript SDK's `void`) sends.
#[derive(Clone, Debug, Default, Serialize)]
pub struct WriteTextFileResponse {}

impl<'de> Deserialize<'de> for WriteTextFileResponse {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Option::<serde::de::IgnoredAny>::deserialize(deserializer).map(|_| WriteTextFileResponse {})
    }
}

/// `null` as the type's default (ACP's `x-deserialize-default-on-null`).
fn null_as_default<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

/// A `file://` URI's path (percent-decoded), or `None` for other URIs.
pub fn file_uri_to_path(uri: &str) -> Option<String> {
    let rest = uri.strip_prefix("file://")?;
    // `file:///abs` (empty host) or `file://localhost/abs`.
    let path = rest.strip_prefix("localhost").unwrap_or(rest);
    if !path.starts_with('/') {
        return None;
    }
    let bytes = path.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let (Some(hi), Some(lo)) = (hex(bytes[i + 1]), hex(bytes[i + 2]))
        {
            out.push((hi * 16 + lo) as u8);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8(out).ok()
}
