//! The part of the Language Server Protocol that the `lsp_client` and `lsp_server` examples use,
//! as two `#[rpc]` traits over the DTOs of the `lsp-types` crate.
//!
//! The wire: JSON-RPC 2.0 with `Content-Length` framing on the server's stdin/stdout;
//! cancellation is `$/cancelRequest {"id"}`; progress is `$/progress {"token", "value"}`, on a
//! token the client passes in a request's `workDoneToken` or one the server creates with
//! `window/workDoneProgress/create`. `Profile::lsp()` sets all of it. LSP params are one object,
//! hence `params = "object"`; a `Progress<WorkDoneProgress>` argument of such a method is the
//! request's `workDoneToken`.

// Each side of a protocol module is used by some program, not necessarily this one; its `pub`
// items are `pub` so that it reads like a library's.
#![allow(dead_code, unreachable_pub)]

use jsonrpc_duplex::{CancellationToken, Progress, RpcError, rpc};
use lsp_types::{
    CompletionParams, CompletionResponse, ConfigurationParams, DidChangeTextDocumentParams, DidCloseTextDocumentParams,
    DidOpenTextDocumentParams, ExecuteCommandParams, Hover, HoverParams, InitializeParams, InitializeResult,
    InitializedParams, LogMessageParams, ProgressParams, PublishDiagnosticsParams, RegistrationParams, SetTraceParams,
    ShowMessageParams, UnregistrationParams, WorkDoneProgress, WorkDoneProgressCreateParams, WorkspaceFolder,
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
    async fn did_open(&self, params: DidOpenTextDocumentParams, #[context] client: LanguageClientClient);

    /// The document changed (with full sync: its whole new text).
    #[notification(name = "textDocument/didChange")]
    async fn did_change(&self, params: DidChangeTextDocumentParams, #[context] client: LanguageClientClient);

    /// The document was closed.
    #[notification(name = "textDocument/didClose")]
    async fn did_close(&self, params: DidCloseTextDocumentParams, #[context] client: LanguageClientClient);

    /// What is at a position (a type, a signature, docs); `null` if nothing. The server may
    /// call the client back (`workspace/configuration`) while it answers.
    #[method(name = "textDocument/hover")]
    async fn hover(
        &self,
        params: HoverParams,
        #[context] client: LanguageClientClient,
    ) -> Result<Option<Hover>, RpcError>;

    /// Completions at a position.
    #[method(name = "textDocument/completion")]
    async fn completion(&self, params: CompletionParams) -> Result<Option<CompletionResponse>, RpcError>;

    /// Run a command the server advertised. Work-done progress goes to the request's
    /// `workDoneToken`; `$/cancelRequest` fires `cancel` and drops the call.
    #[method(name = "workspace/executeCommand")]
    async fn execute_command(
        &self,
        params: ExecuteCommandParams,
        progress: Progress<WorkDoneProgress>,
        cancel: CancellationToken,
    ) -> Result<Option<Value>, RpcError>;

    /// How much the server should trace (`$/` names that are not the connection's own are the
    /// protocol's to declare).
    #[notification(name = "$/setTrace")]
    async fn set_trace(&self, params: SetTraceParams);

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

    /// Progress on a token the server created (`window/workDoneProgress/create`).
    #[notification(name = "$/progress")]
    async fn progress(&self, params: ProgressParams);

    /// A message to show to the user.
    #[notification(name = "window/showMessage")]
    async fn show_message(&self, params: ShowMessageParams);

    /// The diagnostics of a document, the whole set each time.
    #[notification(name = "textDocument/publishDiagnostics")]
    async fn publish_diagnostics(&self, params: PublishDiagnosticsParams);
}
