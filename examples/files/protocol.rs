//! The protocol of the `files_server` example and its TypeScript client (`examples/files/ts/`):
//! a file service the Rust side serves, and an editor the TypeScript side serves, which the file
//! service calls back. The `files_codegen` example writes `examples/files/openrpc.json` and
//! `examples/files/ts/files.ts` from these traits.
//!
//! The types derive `schemars::JsonSchema` only with the `openrpc` feature, so that a build
//! without it needs no schemars at all.

// Each example uses part of this module.
#![allow(dead_code, unreachable_pub)]

use futures::Stream;
use jsonrpc_duplex::{Progress, RpcError, RpcErrorType, RpcStream, rpc};
use serde::{Deserialize, Serialize};

/// Files in a workspace, served by the Rust side.
#[rpc(namespace = "files", rename_all = "camelCase", params = "object")]
pub trait Files {
    /// The text of a file.
    async fn read_text_file(&self, request: ReadTextFile) -> Result<String, FilesError>;

    /// Write a file. Overwriting one asks the editor first (`editor/confirm`); a refusal is
    /// answered with `Denied`.
    async fn write_text_file(&self, request: WriteTextFile, #[context] editor: EditorClient) -> Result<(), FilesError>;

    /// Every file whose path starts with `prefix`, pulled as the caller consumes them.
    #[method(params = "named")]
    fn list(&self, prefix: String) -> impl Stream<Item = Entry> + Send;

    /// Index the files whose path starts with `prefix`, reporting each one; answers how many.
    #[method(params = "named")]
    async fn index(&self, prefix: String, progress: Progress<Indexed>) -> u32;

    /// Append lines to a file as the caller streams them; answers how many were appended.
    #[method(params = "named", aliases = ["files/append_lines"])]
    async fn append(&self, path: String, lines: RpcStream<String>) -> Result<u32, FilesError>;

    /// Save every document open in the editor (pulled from `editor/openDocuments`); answers how
    /// many.
    #[method(params = "positional")]
    async fn save_all(&self, #[context] editor: EditorClient) -> Result<u32, RpcError>;

    /// Log a line; the service shows it in the editor (`editor/showMessage`).
    #[notification]
    async fn log(&self, line: LogLine, #[context] editor: EditorClient);
}

/// The editor, served by the TypeScript side; the file service calls it back.
#[rpc(namespace = "editor", rename_all = "camelCase")]
pub trait Editor {
    /// Ask the user a yes/no question.
    async fn confirm(&self, question: String) -> bool;

    /// Show a message to the user.
    #[notification]
    async fn show_message(&self, level: MessageLevel, text: String);

    /// The documents open in the editor, pulled one by one.
    fn open_documents(&self) -> impl Stream<Item = OpenDocument> + Send;
}

/// Which file to read.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openrpc", derive(schemars::JsonSchema))]
pub struct ReadTextFile {
    /// Relative to the workspace root, `/`-separated.
    pub path: String,
}

/// A file and its new text.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openrpc", derive(schemars::JsonSchema))]
pub struct WriteTextFile {
    /// Relative to the workspace root, `/`-separated.
    pub path: String,
    /// The whole new text.
    pub text: String,
}

/// A file in a listing.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openrpc", derive(schemars::JsonSchema))]
pub struct Entry {
    /// Relative to the workspace root.
    pub path: String,
    /// Its length in bytes.
    pub size: u64,
}

/// One file indexed.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openrpc", derive(schemars::JsonSchema))]
pub struct Indexed {
    /// The file.
    pub path: String,
    /// How many files are indexed so far, this one included.
    pub done: u32,
    /// How many there are.
    pub total: u32,
}

/// A line for the log.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openrpc", derive(schemars::JsonSchema))]
pub struct LogLine {
    /// What happened.
    pub message: String,
}

/// How loud a message is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openrpc", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum MessageLevel {
    /// For information.
    Info,
    /// Something may be wrong.
    Warning,
    /// Something is wrong.
    Error,
}

/// A document open in the editor.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openrpc", derive(schemars::JsonSchema))]
pub struct OpenDocument {
    /// Relative to the workspace root.
    pub path: String,
    /// Its text in the editor (saved or not).
    pub text: String,
}

// Written once: each variant's code and message make the error object, its doc comment the
// OpenRPC description (`#[derive(RpcErrorType)]`).
/// Why a file operation failed; the error's `data`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, RpcErrorType)]
#[cfg_attr(feature = "openrpc", derive(schemars::JsonSchema))]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum FilesError {
    /// There is no such file.
    #[rpc_error(code = FilesError::NOT_FOUND, message = "file not found", name = "FileNotFound")]
    NotFound {
        /// The file asked for.
        path: String,
    },
    /// The user said no.
    #[rpc_error(code = FilesError::DENIED, message = "the user declined")]
    Denied {
        /// The file that was not written.
        path: String,
    },
}

impl FilesError {
    /// `-32010`: there is no such file.
    pub const NOT_FOUND: i64 = -32010;
    /// `-32011`: the user said no.
    pub const DENIED: i64 = -32011;
}
