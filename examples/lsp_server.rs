//! A small but real language server on stdio, for plain-text notes, built on an `#[rpc]` trait.
//!
//! - full text sync (`textDocument/didOpen`, `didChange`, `didClose`);
//! - diagnostics pushed after each change: a warning on every `TODO`
//!   (`textDocument/publishDiagnostics`, with the document's version);
//! - hover: the word under the cursor and how often it occurs; to answer, the server asks the
//!   client for its settings mid-request (`workspace/configuration`, section `notes`: a
//!   `greeting` put before the hover text);
//! - completion: the words of the document that start like the one being typed;
//! - a command, `notes.countWords`, that counts slowly with work-done progress on the request's
//!   `workDoneToken` and stops when the client cancels it (`$/cancelRequest` → `-32800`);
//! - `shutdown` then `exit`: the process exits 0 (1 for an `exit` without `shutdown`), by
//!   returning from `main`.
//!
//! An editor (an LSP client) launches it, e.g. the `lsp_client` example:
//!
//! ```text
//! cargo run --example lsp_client -- -- target/debug/examples/lsp_server -- notes.txt 1 1
//! ```
//!
//! The whole wire setup is one line: `Connection::builder().profile(Profile::lsp())`. Logs go to
//! stderr (`RUST_LOG`); stdout carries the protocol only.

#[path = "lsp/protocol.rs"]
mod protocol;

use std::collections::HashMap;
use std::process::ExitCode;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use jsonrpc_duplex::{CancellationToken, Connection, ErrorObject, Profile, Progress, RpcError};
use lsp_types::{
    CompletionItem, CompletionItemKind, CompletionOptions, CompletionParams, CompletionResponse, ConfigurationItem,
    ConfigurationParams, Diagnostic, DiagnosticSeverity, DidChangeTextDocumentParams, DidCloseTextDocumentParams,
    DidOpenTextDocumentParams, ExecuteCommandOptions, ExecuteCommandParams, Hover, HoverContents, HoverParams,
    HoverProviderCapability, InitializeParams, InitializeResult, InitializedParams, MarkupContent, MarkupKind,
    Position, PublishDiagnosticsParams, Range, ServerCapabilities, ServerInfo, SetTraceParams,
    TextDocumentSyncCapability, TextDocumentSyncKind, Uri, WorkDoneProgress, WorkDoneProgressBegin,
    WorkDoneProgressEnd, WorkDoneProgressOptions, WorkDoneProgressReport,
};
use protocol::*;
use serde_json::Value;
use tokio::sync::mpsc;

/// The one command this server runs.
const COUNT_WORDS: &str = "notes.countWords";

struct Document {
    version: i32,
    text: String,
}

struct NotesServer {
    documents: Mutex<HashMap<Uri, Document>>,
    shutdown: AtomicBool,
    /// `exit` tells `main` the exit code.
    exit: mpsc::UnboundedSender<ExitCode>,
}

impl NotesServer {
    /// After `shutdown`, LSP answers every request but `exit` with an error.
    fn running(&self) -> Result<(), RpcError> {
        if self.shutdown.load(Ordering::Acquire) {
            return Err(ErrorObject::invalid_request("the server is shutting down").into());
        }
        Ok(())
    }

    fn text(&self, uri: &Uri) -> Option<String> {
        self.documents.lock().ok()?.get(uri).map(|d| d.text.clone())
    }

    /// Store a document's new text and push its diagnostics.
    async fn update(&self, uri: Uri, version: i32, text: String, client: &LanguageClientClient) {
        let diagnostics = todos(&text);
        if let Ok(mut docs) = self.documents.lock() {
            // Notifications are handled in order; a version that goes back is a client's bug.
            if docs.get(&uri).is_some_and(|d| d.version > version) {
                tracing::warn!("ignored version {version} of {}: older than the one known", uri.as_str());
                return;
            }
            docs.insert(uri.clone(), Document { version, text });
        }
        let params = PublishDiagnosticsParams { uri, diagnostics, version: Some(version) };
        if let Err(e) = client.publish_diagnostics(params).await {
            tracing::warn!("publishing diagnostics failed: {e}");
        }
    }
}

impl LanguageServer for NotesServer {
    async fn initialize(&self, params: InitializeParams) -> Result<InitializeResult, RpcError> {
        let who = params.client_info.map_or_else(|| "an unnamed client".into(), |c| c.name);
        tracing::info!("initialize from {who}");
        Ok(InitializeResult {
            capabilities: ServerCapabilities {
                text_document_sync: Some(TextDocumentSyncCapability::Kind(TextDocumentSyncKind::FULL)),
                hover_provider: Some(HoverProviderCapability::Simple(true)),
                completion_provider: Some(CompletionOptions::default()),
                execute_command_provider: Some(ExecuteCommandOptions {
                    commands: vec![COUNT_WORDS.into()],
                    work_done_progress_options: WorkDoneProgressOptions { work_done_progress: Some(true) },
                }),
                ..Default::default()
            },
            server_info: Some(ServerInfo {
                name: "jsonrpc-duplex-lsp-server".into(),
                version: Some(env!("CARGO_PKG_VERSION").into()),
            }),
        })
    }

    async fn initialized(&self, _params: InitializedParams) {
        tracing::info!("the client is ready");
    }

    async fn did_open(&self, params: DidOpenTextDocumentParams, client: LanguageClientClient) {
        let doc = params.text_document;
        self.update(doc.uri, doc.version, doc.text, &client).await;
    }

    async fn did_change(&self, params: DidChangeTextDocumentParams, client: LanguageClientClient) {
        // Full sync: the last change is the whole new text.
        let Some(change) = params.content_changes.into_iter().last() else { return };
        let doc = params.text_document;
        self.update(doc.uri, doc.version, change.text, &client).await;
    }

    async fn did_close(&self, params: DidCloseTextDocumentParams, client: LanguageClientClient) {
        let uri = params.text_document.uri;
        if let Ok(mut docs) = self.documents.lock() {
            docs.remove(&uri);
        }
        // A closed document has no diagnostics any more.
        let params = PublishDiagnosticsParams { uri, diagnostics: Vec::new(), version: None };
        let _ = client.publish_diagnostics(params).await;
    }

    async fn hover(&self, params: HoverParams, client: LanguageClientClient) -> Result<Option<Hover>, RpcError> {
        self.running()?;
        let at = params.text_document_position_params;
        let Some(text) = self.text(&at.text_document.uri) else { return Ok(None) };
        let Some((word, range)) = word_at(&text, at.position) else { return Ok(None) };
        // Mid-request, ask the client for its settings; its error passes through `?` as it came.
        let item = ConfigurationItem { scope_uri: Some(at.text_document.uri.clone()), section: Some("notes".into()) };
        let settings = client.configuration(ConfigurationParams { items: vec![item] }).await?;
        let greeting = settings.first().and_then(|s| s.get("greeting")).and_then(Value::as_str).unwrap_or("");
        let count = words(&text).filter(|(w, _)| *w == word).count();
        let value = format!("{greeting}**{word}**: {count} time(s) in this note").trim_start().to_owned();
        Ok(Some(Hover {
            contents: HoverContents::Markup(MarkupContent { kind: MarkupKind::Markdown, value }),
            range: Some(range),
        }))
    }

    async fn completion(&self, params: CompletionParams) -> Result<Option<CompletionResponse>, RpcError> {
        self.running()?;
        let at = params.text_document_position;
        let Some(text) = self.text(&at.text_document.uri) else { return Ok(None) };
        // The part of the word before the cursor.
        let prefix = match word_at(&text, at.position) {
            Some((word, range)) => {
                word.chars().take(at.position.character.saturating_sub(range.start.character) as usize).collect()
            }
            None => String::new(),
        };
        let mut found: Vec<&str> =
            words(&text).map(|(w, _)| w).filter(|w| w.starts_with(&prefix) && *w != prefix).collect();
        found.sort_unstable();
        found.dedup();
        let items = found
            .into_iter()
            .map(|w| CompletionItem { label: w.to_owned(), kind: Some(CompletionItemKind::TEXT), ..Default::default() })
            .collect();
        Ok(Some(CompletionResponse::Array(items)))
    }

    async fn execute_command(
        &self,
        params: ExecuteCommandParams,
        progress: Progress<WorkDoneProgress>,
        cancel: CancellationToken,
    ) -> Result<Option<Value>, RpcError> {
        self.running()?;
        if params.command != COUNT_WORDS {
            return Err(RpcError::invalid_params(format!("unknown command {:?}", params.command)));
        }
        let texts: Vec<String> = match self.documents.lock() {
            Ok(docs) => docs.values().map(|d| d.text.clone()).collect(),
            Err(_) => Vec::new(),
        };
        // A pause per document, so that there is progress to see and time to cancel.
        let pause =
            params.arguments.first().and_then(Value::as_u64).map_or(Duration::from_millis(50), Duration::from_millis);
        let begin = WorkDoneProgressBegin {
            title: "Counting words".into(),
            cancellable: Some(true),
            percentage: Some(0),
            ..Default::default()
        };
        progress.report(WorkDoneProgress::Begin(begin)).await?;
        let mut total = 0;
        for (i, text) in texts.iter().enumerate() {
            tokio::select! {
                // The client cancelled: the connection answers -32800 and drops this call.
                _ = cancel.cancelled() => {
                    tracing::info!("{COUNT_WORDS} cancelled after {i} document(s)");
                    return Err(ErrorObject::request_cancelled().into());
                }
                _ = tokio::time::sleep(pause) => {}
            }
            total += words(text).count();
            let report = WorkDoneProgressReport {
                message: Some(format!("{} of {} document(s)", i + 1, texts.len())),
                percentage: Some(((i + 1) * 100 / texts.len()) as u32),
                ..Default::default()
            };
            progress.report(WorkDoneProgress::Report(report)).await?;
        }
        progress.report(WorkDoneProgress::End(WorkDoneProgressEnd { message: Some(format!("{total} words")) })).await?;
        Ok(Some(Value::from(total)))
    }

    async fn set_trace(&self, params: SetTraceParams) {
        tracing::info!("trace set to {:?}", params.value);
    }

    async fn shutdown(&self) -> Result<(), RpcError> {
        self.shutdown.store(true, Ordering::Release);
        Ok(())
    }

    async fn exit(&self) {
        let code = if self.shutdown.load(Ordering::Acquire) { ExitCode::SUCCESS } else { ExitCode::FAILURE };
        let _ = self.exit.send(code);
    }
}

/// The words of a text with their positions (LSP's: line, UTF-16 column).
fn words(text: &str) -> impl Iterator<Item = (&str, Range)> {
    text.lines().enumerate().flat_map(|(line, line_text)| {
        let mut out = Vec::new();
        let mut start: Option<(usize, u32)> = None;
        let mut col = 0u32;
        for (i, c) in line_text.char_indices().chain(std::iter::once((line_text.len(), ' '))) {
            let is_word = c.is_alphanumeric() || c == '_';
            match (is_word, start) {
                (true, None) => start = Some((i, col)),
                (false, Some((s, s_col))) => {
                    let range =
                        Range { start: Position::new(line as u32, s_col), end: Position::new(line as u32, col) };
                    out.push((&line_text[s..i], range));
                    start = None;
                }
                _ => {}
            }
            col += c.len_utf16() as u32;
        }
        out
    })
}

/// The word at (or just before) a position.
fn word_at(text: &str, at: Position) -> Option<(String, Range)> {
    words(text)
        .find(|(_, r)| r.start.line == at.line && r.start.character <= at.character && at.character <= r.end.character)
        .map(|(w, r)| (w.to_owned(), r))
}

/// A warning on every `TODO`.
fn todos(text: &str) -> Vec<Diagnostic> {
    words(text)
        .filter(|(w, _)| *w == "TODO")
        .map(|(_, range)| Diagnostic {
            range,
            severity: Some(DiagnosticSeverity::WARNING),
            source: Some("notes".into()),
            message: "a TODO is left in this note".into(),
            ..Default::default()
        })
        .collect()
}

#[tokio::main]
async fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        // The client usually logs our stderr as text: colours only on a terminal.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .init();
    let (exit_tx, mut exit_rx) = mpsc::unbounded_channel();
    let server = NotesServer { documents: Mutex::default(), shutdown: AtomicBool::new(false), exit: exit_tx };
    let conn = Connection::builder().profile(Profile::lsp()).serve(LanguageServerServer::new(server)).stdio();
    // `exit` ends the process; a client that goes away without it is an error (LSP: exit 1).
    let code = tokio::select! {
        code = exit_rx.recv() => code.unwrap_or(ExitCode::FAILURE),
        reason = conn.closed() => {
            tracing::warn!("the client went away without `exit`: {reason}");
            ExitCode::FAILURE
        }
    };
    let reason = conn.close().await;
    tracing::info!("connection closed: {reason}");
    code
}
