//! A file service on stdio whose client is TypeScript: the Rust side of `examples/files/`.
//!
//! It serves the `Files` trait of `examples/files/protocol.rs` over an in-memory workspace and
//! calls the editor back (`Editor`, served by the TypeScript side): it asks before overwriting
//! a file, shows logged lines, and pulls the open documents to save them. With the `openrpc`
//! feature it also answers `rpc.discover` with the OpenRPC document of `Files`.
//!
//! ```text
//! node examples/files/ts/out/client.js target/debug/examples/files_server
//! ```
//!
//! `examples/files/ts/client.ts` is its TypeScript client, on the generated
//! `examples/files/ts/files.ts` (written by the `files_codegen` example).

#[path = "files/protocol.rs"]
mod protocol;
// Not `eprintln!`: it panics once our parent, which holds stderr, is gone.
#[path = "common/stderr.rs"]
mod stderr;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

use futures::{Stream, StreamExt};
use jsonrpc_duplex::{Connection, Progress, Router, RpcError, RpcStream};
use protocol::{
    EditorClient, Entry, Files, FilesError, FilesServer, Indexed, LogLine, MessageLevel, ReadTextFile, WriteTextFile,
};
use stderr::log_line;

/// The workspace: paths and texts, in memory.
#[derive(Clone, Default)]
struct Workspace {
    files: Arc<Mutex<BTreeMap<String, String>>>,
}

impl Workspace {
    fn with(files: &[(&str, &str)]) -> Self {
        let files = files.iter().map(|(p, t)| ((*p).to_owned(), (*t).to_owned())).collect();
        Workspace { files: Arc::new(Mutex::new(files)) }
    }

    fn files(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, String>> {
        self.files.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn matching(&self, prefix: &str) -> Vec<(String, String)> {
        self.files().iter().filter(|(p, _)| p.starts_with(prefix)).map(|(p, t)| (p.clone(), t.clone())).collect()
    }
}

impl Files for Workspace {
    async fn read_text_file(&self, request: ReadTextFile) -> Result<String, FilesError> {
        self.files().get(&request.path).cloned().ok_or(FilesError::NotFound { path: request.path })
    }

    async fn write_text_file(&self, request: WriteTextFile, editor: EditorClient) -> Result<(), FilesError> {
        let exists = self.files().contains_key(&request.path);
        if exists {
            // A call back into the editor, in the middle of this request.
            let allowed = editor.confirm(format!("Overwrite {}?", request.path)).await.unwrap_or(false);
            if !allowed {
                return Err(FilesError::Denied { path: request.path });
            }
        }
        self.files().insert(request.path, request.text);
        Ok(())
    }

    fn list(&self, prefix: String) -> impl Stream<Item = Entry> + Send {
        let entries = self.matching(&prefix).into_iter().map(|(path, text)| Entry { path, size: text.len() as u64 });
        futures::stream::iter(entries)
    }

    async fn index(&self, prefix: String, progress: Progress<Indexed>) -> u32 {
        let files = self.matching(&prefix);
        let total = files.len() as u32;
        for (done, (path, _)) in (1..).zip(files) {
            let _ = progress.report(Indexed { path, done, total }).await;
        }
        total
    }

    async fn append(&self, path: String, mut lines: RpcStream<String>) -> Result<u32, FilesError> {
        if !self.files().contains_key(&path) {
            return Err(FilesError::NotFound { path });
        }
        let mut appended = 0;
        while let Some(line) = lines.next().await {
            let Ok(line) = line else { break };
            if let Some(text) = self.files().get_mut(&path) {
                text.push_str(&line);
                text.push('\n');
            }
            appended += 1;
        }
        Ok(appended)
    }

    async fn save_all(&self, editor: EditorClient) -> Result<u32, RpcError> {
        let mut documents = editor.open_documents();
        let mut saved = 0;
        while let Some(document) = documents.next().await {
            let document = document?;
            self.files().insert(document.path, document.text);
            saved += 1;
        }
        Ok(saved)
    }

    async fn log(&self, line: LogLine, editor: EditorClient) {
        let _ = editor.show_message(MessageLevel::Info, format!("logged: {}", line.message)).await;
    }
}

/// The service's routes: `Files`, and with the `openrpc` feature `rpc.discover`.
fn routes(workspace: Workspace) -> Router {
    let router = FilesServer::new(workspace).into_router();
    #[cfg(feature = "openrpc")]
    let router = router.merge(
        jsonrpc_duplex::openrpc::Document::new("files", env!("CARGO_PKG_VERSION"))
            .service::<protocol::FilesApi>()
            .discover(),
    );
    router
}

#[tokio::main]
async fn main() {
    let workspace = Workspace::with(&[
        ("README.md", "# A workspace\n"),
        ("src/lib.rs", "pub fn answer() -> u32 {\n    42\n}\n"),
        ("src/main.rs", "fn main() {}\n"),
    ]);
    let conn = Connection::builder().serve(routes(workspace)).stdio();
    let reason = conn.closed().await;
    conn.close().await;
    log_line!("files_server: {reason}");
}
