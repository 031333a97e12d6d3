//! The part of the Model Context Protocol (MCP, revision 2025-06-18) that the `mcp_server` and
//! `mcp_client` examples use: the DTOs and two `#[rpc]` traits, one per side.
//!
//! Field names follow the official schema (camelCase members, `type`-tagged content). Members
//! this code does not use are left out; serde ignores them when they come in, so a peer that
//! sends more still decodes.
//!
//! The wire: newline-delimited JSON-RPC 2.0 on the server's stdin/stdout; cancellation is the
//! notification `notifications/cancelled {"requestId", "reason"}` and a cancelled request gets
//! no answer; progress is `notifications/progress {"progressToken", "progress", "total"?,
//! "message"?}` on the token the caller put in its request's `_meta.progressToken`.
//! `Profile::mcp()` sets all of it; a `Progress<T>` argument of an object method is that token.

// Shared by two example binaries through `#[path]`: each uses one side of each trait, and the
// `pub` items read like a library's.
#![allow(dead_code, unreachable_pub)]

use std::collections::BTreeMap;

use jsonrpc_duplex::{CancellationToken, Progress, RpcError, rpc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The revisions this code speaks, newest first; a server answers the client's if it is one of
/// these, else the first.
pub const PROTOCOL_VERSIONS: &[&str] = &["2025-06-18", "2025-03-26", "2024-11-05"];

/// MCP's "resource not found" error code.
pub const RESOURCE_NOT_FOUND: i64 = -32002;

// ---------------------------------------------------------------------------------------------
// The two sides
// ---------------------------------------------------------------------------------------------

/// What an MCP client asks of a server. `McpClient` calls it; `McpServer` serves it.
#[rpc(params = "object")]
pub trait Mcp {
    /// The first request: versions and capabilities both ways.
    #[method(name = "initialize")]
    async fn initialize(&self, params: InitializeParams) -> Result<InitializeResult, RpcError>;

    /// The client has the `initialize` result; normal operation starts.
    #[notification(name = "notifications/initialized", params = "positional")]
    async fn initialized(&self);

    /// Is the other side alive? Answers `{}`.
    #[method(name = "ping")]
    async fn ping(&self, params: Option<Value>) -> Result<Empty, RpcError>;

    /// The tools this server offers, with the JSON Schema of each one's input.
    #[method(name = "tools/list")]
    async fn list_tools(&self, params: Option<Paginated>) -> Result<ListToolsResult, RpcError>;

    /// Run a tool. Progress goes to the token the caller put in `_meta.progressToken` (the
    /// client passes a callback; the server gets a `Progress` to report on); the caller cancels
    /// with `notifications/cancelled`, which fires `cancel` and drops the call.
    #[method(name = "tools/call")]
    async fn call_tool(
        &self,
        params: CallToolParams,
        progress: Progress<ProgressUpdate>,
        cancel: CancellationToken,
        #[context] host: McpHostClient,
    ) -> Result<CallToolResult, RpcError>;

    /// The resources this server offers.
    #[method(name = "resources/list")]
    async fn list_resources(&self, params: Option<Paginated>) -> Result<ListResourcesResult, RpcError>;

    /// One resource's contents (`-32002` when there is no such resource).
    #[method(name = "resources/read")]
    async fn read_resource(&self, params: ReadResourceParams) -> Result<ReadResourceResult, RpcError>;

    /// The prompt templates this server offers.
    #[method(name = "prompts/list")]
    async fn list_prompts(&self, params: Option<Paginated>) -> Result<ListPromptsResult, RpcError>;

    /// A prompt filled in with its arguments.
    #[method(name = "prompts/get")]
    async fn get_prompt(&self, params: GetPromptParams) -> Result<GetPromptResult, RpcError>;
}

/// What an MCP server may ask of its client (the host application). `McpHostClient` calls it;
/// `McpHostServer` serves it.
#[rpc(params = "object")]
pub trait McpHost {
    /// The roots (directories, URIs) the client lets the server work in.
    #[method(name = "roots/list")]
    async fn list_roots(&self, params: Option<Value>) -> Result<ListRootsResult, RpcError>;

    /// Is the other side alive? Answers `{}`.
    #[method(name = "ping")]
    async fn ping(&self, params: Option<Value>) -> Result<Empty, RpcError>;

    /// A log line from the server (when the client set a level, or the server just sends).
    #[notification(name = "notifications/message")]
    async fn log_message(&self, params: LoggingMessage);

    /// Ask the user to fill in a form (`message`, `requestedSchema`): the answer is
    /// `{"action": "accept" | "decline" | "cancel", "content"?: {…}}`.
    #[method(name = "elicitation/create")]
    async fn elicit(&self, params: ElicitParams) -> Result<ElicitResult, RpcError>;
}

/// What `elicitation/create` asks.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ElicitParams {
    pub message: String,
    /// A flat JSON Schema object: `properties`, each with a `type` and maybe a `default`.
    pub requested_schema: Value,
}

/// The user's answer to `elicitation/create`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ElicitResult {
    pub action: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<serde_json::Map<String, Value>>,
}

// ---------------------------------------------------------------------------------------------
// Lifecycle
// ---------------------------------------------------------------------------------------------

/// An empty object, `{}`.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
pub struct Empty {}

/// Who is on the other side.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Implementation {
    pub name: String,
    pub version: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeParams {
    pub protocol_version: String,
    #[serde(default)]
    pub capabilities: ClientCapabilities,
    pub client_info: Implementation,
}

#[derive(Debug, Default, Clone, Serialize, Deserialize)]
pub struct ClientCapabilities {
    /// Present when the client answers `roots/list`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub roots: Option<ListChanged>,
    /// Present when the client answers `sampling/createMessage`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sampling: Option<Value>,
    /// Present when the client answers `elicitation/create`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elicitation: Option<Value>,
}

#[derive(Debug, Default, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListChanged {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub list_changed: Option<bool>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeResult {
    pub protocol_version: String,
    pub capabilities: ServerCapabilities,
    pub server_info: Implementation,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
}

#[derive(Debug, Default, Clone, Serialize, Deserialize)]
pub struct ServerCapabilities {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<ListChanged>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<ListChanged>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompts: Option<ListChanged>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logging: Option<Value>,
}

/// The params of the `*/list` requests.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
pub struct Paginated {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
}

// ---------------------------------------------------------------------------------------------
// Tools
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Tool {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// A JSON Schema of the tool's `arguments` (an object schema).
    pub input_schema: Value,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListToolsResult {
    pub tools: Vec<Tool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// `tools/call`: the tool's name and its input, which the server decodes into that tool's type.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CallToolParams {
    pub name: String,
    #[serde(default)]
    pub arguments: Option<Value>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CallToolResult {
    pub content: Vec<Content>,
    /// The tool failed (bad input, its own error): the model sees why, the call itself succeeded.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub is_error: bool,
}

impl CallToolResult {
    pub fn text(text: impl Into<String>) -> Self {
        CallToolResult { content: vec![Content::text(text)], is_error: false }
    }

    pub fn error(text: impl Into<String>) -> Self {
        CallToolResult { content: vec![Content::text(text)], is_error: true }
    }
}

/// A piece of content; kinds this code does not know are kept as `Other`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Content {
    Text {
        text: String,
    },
    Image {
        #[serde(rename = "mimeType")]
        mime_type: String,
    },
    #[serde(other)]
    Other,
}

impl Content {
    pub fn text(text: impl Into<String>) -> Self {
        Content::Text { text: text.into() }
    }

    /// A line to show for it.
    pub fn describe(&self) -> String {
        match self {
            Content::Text { text } => text.clone(),
            Content::Image { mime_type } => format!("(an image, {mime_type})"),
            Content::Other => "(content of a kind this client does not show)".into(),
        }
    }
}

/// One progress report (`notifications/progress`, beside the token).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ProgressUpdate {
    pub progress: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

// ---------------------------------------------------------------------------------------------
// Resources, prompts, roots, logging
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Resource {
    pub uri: String,
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListResourcesResult {
    pub resources: Vec<Resource>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ReadResourceParams {
    pub uri: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ReadResourceResult {
    pub contents: Vec<ResourceContents>,
}

/// A text resource's contents (binary ones carry `blob` instead, which this code leaves out).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceContents {
    pub uri: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Prompt {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub arguments: Vec<PromptArgument>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PromptArgument {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default)]
    pub required: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListPromptsResult {
    pub prompts: Vec<Prompt>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct GetPromptParams {
    pub name: String,
    #[serde(default)]
    pub arguments: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct GetPromptResult {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    pub messages: Vec<PromptMessage>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PromptMessage {
    /// `"user"` or `"assistant"`.
    pub role: String,
    pub content: Content,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Root {
    pub uri: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ListRootsResult {
    pub roots: Vec<Root>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LoggingMessage {
    /// `"debug"`, `"info"`, `"notice"`, `"warning"`, `"error"`, …
    pub level: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logger: Option<String>,
    pub data: Value,
}
