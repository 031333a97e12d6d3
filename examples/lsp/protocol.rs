//! The part of the Language Server Protocol that the `lsp_client` example uses, as two `#[rpc]`
//! traits over the DTOs of the `lsp-types` crate.
//!
//! The wire: JSON-RPC 2.0 with `Content-Length` framing (the framework's default) on the
//! server's stdin/stdout; cancellation is `$/cancelRequest {"id"}` (the default
//! `CancelProtocol::lsp()`). LSP params are one object, hence `params = "object"`.
//!
//! `$/progress` is not in these traits: `#[rpc]` reserves names that start with `$/`, so the
//! example serves it with a plain `Router` route next to the generated dispatcher.

// Each side of a protocol module is used by some program, not necessarily this one; its `pub`
// items are `pub` so that it reads like a library's.
#![allow(dead_code, unreachable_pub)]

use jsonrpc_duplex::{RpcError, rpc};
use lsp_types::{
    ConfigurationParams, DidCloseTextDocumentParams, DidOpenTextDocumentParams, Hover, HoverParams, InitializeParams,
    InitializeResult, InitializedParams, LogMessageParams, PublishDiagnosticsParams, RegistrationParams,
    ShowMessageParams, UnregistrationParams, WorkDoneProgressCreateParams, WorkspaceFolder,
};
use serde_json::Value;

/// What the client (the editor) asks of a language server.
#[rpc(params = "object")]
pub trait LanguageServer {
    /// The first request: capabilities both ways.
    #[method(name = "initialize")]
    async fn initialize(&self, params: InitializeParams) -> Result<InitializeResult, RpcError>;

    /// The client has seen the `initialize` result; the server may now call it.
    #[notification(name = "initialized")]
    async fn initialized(&self, params: InitializedParams);

    /// A document is open in the editor; its text is the editor's from now on.
    #[notification(name = "textDocument/didOpen")]
    async fn did_open(&self, params: DidOpenTextDocumentParams);

    /// The document was closed.
    #[notification(name = "textDocument/didClose")]
    async fn did_close(&self, params: DidCloseTextDocumentParams);

    /// What is at a position (a type, a signature, docs); `null` if nothing.
    #[method(name = "textDocument/hover")]
    async fn hover(&self, params: HoverParams) -> Result<Option<Hover>, RpcError>;

    /// Get ready to exit (no params; answers `null`).
    #[method(name = "shutdown", params = "positional")]
    async fn shutdown(&self) -> Result<(), RpcError>;

    /// Exit now (no params).
    #[notification(name = "exit", params = "positional")]
    async fn exit(&self);
}

/// What a language server asks of the client: its callbacks.
#[rpc(params = "object")]
pub trait LanguageClient {
    /// Settings for the sections asked for, one result per item (`null`: no settings).
    #[method(name = "workspace/configuration")]
    async fn configuration(&self, params: ConfigurationParams) -> Result<Vec<Value>, RpcError>;

    /// The workspace folders open in the client.
    #[method(name = "workspace/workspaceFolders", params = "positional")]
    async fn workspace_folders(&self) -> Result<Option<Vec<WorkspaceFolder>>, RpcError>;

    /// The server registers a capability dynamically (e.g. file watching).
    #[method(name = "client/registerCapability")]
    async fn register_capability(&self, params: RegistrationParams) -> Result<(), RpcError>;

    /// The server drops a dynamically registered capability.
    #[method(name = "client/unregisterCapability")]
    async fn unregister_capability(&self, params: UnregistrationParams) -> Result<(), RpcError>;

    /// The server wants a progress token for `$/progress` reports.
    #[method(name = "window/workDoneProgress/create")]
    async fn work_done_progress_create(&self, params: WorkDoneProgressCreateParams) -> Result<(), RpcError>;

    /// A line for the client's log.
    #[notification(name = "window/logMessage")]
    async fn log_message(&self, params: LogMessageParams);

    /// A message to show to the user.
    #[notification(name = "window/showMessage")]
    async fn show_message(&self, params: ShowMessageParams);

    /// The diagnostics of a document, the whole set each time.
    #[notification(name = "textDocument/publishDiagnostics")]
    async fn publish_diagnostics(&self, params: PublishDiagnosticsParams);
}
