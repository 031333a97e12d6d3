//! A minimal LSP client: it starts a real language server, asks it for the hover at a position
//! of a file, prints it, and shuts the server down.
//!
//! It answers the server's requests through a typed callback trait (`LanguageClient`):
//! `workspace/configuration` (no settings: `null` per item), `workspace/workspaceFolders`,
//! `client/registerCapability`, `window/workDoneProgress/create`, and `-32601` for anything
//! else; it shows `$/progress`, `window/logMessage`, `window/showMessage` and diagnostics as
//! they arrive. Then `textDocument/didOpen`, `textDocument/hover`, `shutdown`, `exit`, and it
//! waits for the server process to exit.
//!
//! ```text
//! cargo run --example lsp_client -- [--timeout SECS] <server command…> -- <file> <line> <col>
//! cargo run --example lsp_client -- pyright-langserver --stdio -- fixture.py 5 12
//! cargo run --example lsp_client -- pylsp -- tests/interop/lsp/fixture/greet.py 9 24
//! ```
//!
//! The server command starts at the first argument that is not an option of this client, or
//! after a `--` (`cargo run --example lsp_client -- --timeout 9 -- pylsp -- …` works too); the
//! last `--` ends it.
//!
//! `<line>` and `<col>` are 1-based, as editors show them; `<col>` counts characters. The exit
//! code is 0 when the server answered the hover (even with nothing) and exited cleanly.

#[path = "lsp/protocol.rs"]
mod protocol;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::str::FromStr;
use std::time::{Duration, Instant};

use jsonrpc_duplex::{CallOptions, ChildExit, ErrorObject, Profile, Request, Responder, Router, RpcError};
use lsp_types::{
    ClientCapabilities, ClientInfo, ConfigurationParams, DidChangeWatchedFilesClientCapabilities,
    DidCloseTextDocumentParams, DidOpenTextDocumentParams, GeneralClientCapabilities, HoverClientCapabilities,
    HoverContents, HoverParams, InitializeParams, InitializedParams, LogMessageParams, MarkedString, MarkupKind,
    MessageType, NumberOrString, Position, PositionEncodingKind, ProgressParams, ProgressParamsValue,
    PublishDiagnosticsParams, RegistrationParams, ShowMessageParams, TextDocumentClientCapabilities,
    TextDocumentIdentifier, TextDocumentItem, TextDocumentPositionParams, TextDocumentSyncClientCapabilities,
    UnregistrationParams, Uri, WindowClientCapabilities, WorkDoneProgress, WorkDoneProgressCreateParams,
    WorkDoneProgressParams, WorkspaceClientCapabilities, WorkspaceFolder,
};
use protocol::*;
use serde_json::Value;
use tokio::process::Command;

const USAGE: &str = "usage: lsp_client [--timeout SECS] [--] <server command…> -- <file> <line> <col>";

struct Options {
    server: Vec<String>,
    file: PathBuf,
    line: u32,
    col: u32,
    timeout: Duration,
}

fn parse_args() -> Result<Options, String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut timeout = Duration::from_secs(60);
    let mut i = 0;
    // Our options, up to the server command: its first word, or a `--` before it.
    while let Some(arg) = args.get(i).filter(|a| a.starts_with('-')) {
        match arg.as_str() {
            "--" => {
                i += 1;
                break;
            }
            "--timeout" => {
                let v = args.get(i + 1).ok_or("--timeout needs a number of seconds")?;
                timeout = Duration::from_secs(v.parse().map_err(|_| format!("--timeout: not a number: {v}"))?);
                i += 2;
            }
            other => return Err(format!("unknown option {other:?}")),
        }
    }
    let rest = &args[i..];
    let split = rest.iter().rposition(|a| a == "--").ok_or("no `--` between the server command and the file")?;
    let (server, place) = (rest[..split].to_vec(), &rest[split + 1..]);
    let [file, line, col] = place else {
        return Err("expected <file> <line> <col> after the second `--`".into());
    };
    if server.is_empty() {
        return Err("no server command".into());
    }
    let number = |v: &str, what: &str| match v.parse::<u32>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(format!("{what} must be a number from 1: {v:?}")),
    };
    Ok(Options { server, file: file.into(), line: number(line, "<line>")?, col: number(col, "<col>")?, timeout })
}

// ---------------------------------------------------------------------------------------------
// The client's side: what the server may call
// ---------------------------------------------------------------------------------------------

#[derive(Clone)]
struct Console {
    started: Instant,
}

impl Console {
    fn print(&self, line: &str) {
        println!("{:>6.2}s  {line}", self.started.elapsed().as_secs_f64());
    }

    /// A server's text, one printed line per line (long lines shortened).
    fn print_text(&self, prefix: &str, text: &str) {
        for (i, line) in text.lines().filter(|l| !l.trim().is_empty()).enumerate() {
            let line = shorten(line.trim_end(), 140);
            self.print(&if i == 0 { format!("{prefix}{line}") } else { format!("{:w$}{line}", "", w = prefix.len()) });
        }
    }
}

struct ConsoleClient {
    console: Console,
    folder: WorkspaceFolder,
}

impl LanguageClient for ConsoleClient {
    async fn configuration(&self, params: ConfigurationParams) -> Result<Vec<Value>, RpcError> {
        let sections: Vec<_> =
            params.items.iter().map(|i| i.section.clone().unwrap_or_else(|| "(all)".into())).collect();
        self.console
            .print(&format!("server ▸ workspace/configuration [{}] → null each (defaults)", sections.join(", ")));
        Ok(vec![Value::Null; params.items.len()])
    }

    async fn workspace_folders(&self) -> Result<Option<Vec<WorkspaceFolder>>, RpcError> {
        self.console.print(&format!("server ▸ workspace/workspaceFolders → {}", self.folder.uri.as_str()));
        Ok(Some(vec![self.folder.clone()]))
    }

    async fn register_capability(&self, params: RegistrationParams) -> Result<(), RpcError> {
        let methods: Vec<_> = params.registrations.iter().map(|r| r.method.as_str()).collect();
        self.console.print(&format!("server ▸ client/registerCapability [{}] → ok", methods.join(", ")));
        Ok(())
    }

    async fn unregister_capability(&self, params: UnregistrationParams) -> Result<(), RpcError> {
        let methods: Vec<_> = params.unregisterations.iter().map(|r| r.method.as_str()).collect();
        self.console.print(&format!("server ▸ client/unregisterCapability [{}] → ok", methods.join(", ")));
        Ok(())
    }

    async fn work_done_progress_create(&self, params: WorkDoneProgressCreateParams) -> Result<(), RpcError> {
        self.console.print(&format!("server ▸ window/workDoneProgress/create {} → ok", token(&params.token)));
        Ok(())
    }

    async fn log_message(&self, params: LogMessageParams) {
        self.console.print_text(&format!("log    │ {:<7} ", level(params.typ)), &params.message);
    }

    async fn progress(&self, p: ProgressParams) {
        let ProgressParamsValue::WorkDone(value) = p.value;
        let (kind, text) = match value {
            WorkDoneProgress::Begin(b) => ("begin ", join([Some(b.title), b.message, percent(b.percentage)])),
            WorkDoneProgress::Report(r) => ("report", join([r.message, percent(r.percentage)])),
            WorkDoneProgress::End(e) => ("end   ", join([e.message])),
        };
        self.console.print(&format!("progress {} {kind} {text}", token(&p.token)));
    }

    async fn show_message(&self, params: ShowMessageParams) {
        self.console.print_text(&format!("show   │ {:<7} ", level(params.typ)), &params.message);
    }

    async fn publish_diagnostics(&self, params: PublishDiagnosticsParams) {
        let name = params.uri.as_str().rsplit('/').next().unwrap_or_default().to_owned();
        self.console.print(&format!("diag   │ {name}: {} diagnostic(s)", params.diagnostics.len()));
        for d in params.diagnostics.iter().take(5) {
            let at = d.range.start;
            self.console.print_text(&format!("       │   {}:{} ", at.line + 1, at.character + 1), &d.message);
        }
    }
}

/// A fallback that shows which requests this client does not know before answering them `-32601`.
fn fallback(console: Console) -> Router {
    Router::new().fallback(move |request: Request, reply: Responder| {
        let console = console.clone();
        async move {
            console.print(&format!("server ▸ {} → -32601 (not supported by this client)", request.method()));
            reply.err(ErrorObject::method_not_found(request.method()));
        }
    })
}

fn token(t: &NumberOrString) -> String {
    match t {
        NumberOrString::Number(n) => n.to_string(),
        NumberOrString::String(s) => format!("{s:?}"),
    }
}

fn percent(p: Option<u32>) -> Option<String> {
    p.map(|p| format!("{p}%"))
}

fn join<const N: usize>(parts: [Option<String>; N]) -> String {
    parts.into_iter().flatten().filter(|s| !s.is_empty()).collect::<Vec<_>>().join(" — ")
}

fn level(t: MessageType) -> &'static str {
    match t {
        MessageType::ERROR => "error",
        MessageType::WARNING => "warning",
        MessageType::INFO => "info",
        MessageType::LOG => "log",
        _ => "debug",
    }
}

fn shorten(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        text.to_owned()
    } else {
        format!("{}…", text.chars().take(max).collect::<String>())
    }
}

// ---------------------------------------------------------------------------------------------
// Files, URIs and positions
// ---------------------------------------------------------------------------------------------

/// `file:///abs/path` with everything but unreserved characters and `/` percent-encoded.
fn file_uri(path: &Path) -> Result<Uri, String> {
    let mut uri = String::from("file://");
    for b in path.to_string_lossy().bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' | b'/' => uri.push(b as char),
            _ => uri.push_str(&format!("%{b:02X}")),
        }
    }
    Uri::from_str(&uri).map_err(|e| format!("{uri}: not a URI: {e}"))
}

fn language_id(path: &Path) -> &'static str {
    match path.extension().and_then(|e| e.to_str()).unwrap_or_default() {
        "py" | "pyi" => "python",
        "ts" | "mts" | "cts" => "typescript",
        "tsx" => "typescriptreact",
        "js" | "mjs" | "cjs" => "javascript",
        "jsx" => "javascriptreact",
        "rs" => "rust",
        "go" => "go",
        "c" | "h" => "c",
        "cpp" | "cc" | "hpp" => "cpp",
        "json" => "json",
        "sh" => "shellscript",
        _ => "plaintext",
    }
}

/// A 1-based line and character column → an LSP position (0-based, UTF-16 code units).
fn position(text: &str, line: u32, col: u32) -> Result<Position, String> {
    let line_text = text.lines().nth(line as usize - 1).ok_or(format!("the file has no line {line}"))?;
    let chars = line_text.chars().count();
    if col as usize > chars + 1 {
        return Err(format!("line {line} has {chars} characters: no column {col}"));
    }
    let utf16: usize = line_text.chars().take(col as usize - 1).map(char::len_utf16).sum();
    Ok(Position { line: line - 1, character: utf16 as u32 })
}

fn hover_text(contents: &HoverContents) -> String {
    let marked = |m: &MarkedString| match m {
        MarkedString::String(s) => s.clone(),
        MarkedString::LanguageString(l) => format!("```{}\n{}\n```", l.language, l.value),
    };
    match contents {
        HoverContents::Scalar(m) => marked(m),
        HoverContents::Array(items) => items.iter().map(marked).collect::<Vec<_>>().join("\n\n"),
        HoverContents::Markup(m) => m.value.clone(),
    }
}

// ---------------------------------------------------------------------------------------------
// The session
// ---------------------------------------------------------------------------------------------

async fn run(options: Options) -> Result<(), String> {
    let console = Console { started: Instant::now() };
    let path = std::path::absolute(&options.file).map_err(|e| format!("{}: {e}", options.file.display()))?;
    let text = std::fs::read_to_string(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let at = position(&text, options.line, options.col)?;
    let uri = file_uri(&path)?;
    let dir = path.parent().ok_or("the file has no directory")?;
    let name = dir.file_name().map_or("workspace".into(), |n| n.to_string_lossy().into_owned());
    let folder = WorkspaceFolder { uri: file_uri(dir)?, name };

    let mut command = Command::new(&options.server[0]);
    command.args(&options.server[1..]);
    let client = ConsoleClient { console: console.clone(), folder: folder.clone() };
    let conn = jsonrpc_duplex::Connection::builder()
        .profile(Profile::lsp())
        .serve(LanguageClientServer::new(client))
        .serve(fallback(console.clone()))
        .spawn_child(command)
        .map_err(|e| format!("cannot start {:?}: {e}", options.server[0]))?;
    let server = LanguageServerClient::new(conn.handle()).with_options(CallOptions::new().timeout(options.timeout));
    let failed = |what: &str| {
        let what = what.to_owned();
        move |e: jsonrpc_duplex::ClientError| format!("{what}: {e}")
    };

    #[allow(deprecated)] // `root_uri`: superseded by `workspace_folders`, still read by many servers.
    let init = InitializeParams {
        process_id: Some(std::process::id()),
        root_uri: Some(folder.uri.clone()),
        workspace_folders: Some(vec![folder.clone()]),
        client_info: Some(ClientInfo {
            name: "jsonrpc-duplex lsp_client".into(),
            version: Some(env!("CARGO_PKG_VERSION").into()),
        }),
        capabilities: ClientCapabilities {
            workspace: Some(WorkspaceClientCapabilities {
                configuration: Some(true),
                workspace_folders: Some(true),
                did_change_watched_files: Some(DidChangeWatchedFilesClientCapabilities {
                    dynamic_registration: Some(true),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            window: Some(WindowClientCapabilities { work_done_progress: Some(true), ..Default::default() }),
            text_document: Some(TextDocumentClientCapabilities {
                synchronization: Some(TextDocumentSyncClientCapabilities::default()),
                hover: Some(HoverClientCapabilities {
                    dynamic_registration: Some(false),
                    content_format: Some(vec![MarkupKind::Markdown, MarkupKind::PlainText]),
                }),
                ..Default::default()
            }),
            general: Some(GeneralClientCapabilities {
                position_encodings: Some(vec![PositionEncodingKind::UTF16]),
                ..Default::default()
            }),
            ..Default::default()
        },
        work_done_progress_params: WorkDoneProgressParams {
            work_done_token: Some(NumberOrString::String("initialize".into())),
        },
        ..Default::default()
    };
    console.print(&format!("client ▸ initialize (root {})", folder.uri.as_str()));
    let init = server.initialize(init).await.map_err(failed("initialize"))?;
    let who = init.server_info.as_ref().map_or("(no serverInfo)".into(), |i| {
        format!("{} {}", i.name, i.version.as_deref().unwrap_or("")).trim_end().to_owned()
    });
    let hover = init.capabilities.hover_provider.is_some();
    console.print(&format!("client ◂ initialize result: {who}, hover provider: {hover}"));
    server.initialized(InitializedParams {}).await.map_err(failed("initialized"))?;

    console.print(&format!("client ▸ textDocument/didOpen {} ({} bytes)", path.display(), text.len()));
    let document = TextDocumentItem { uri: uri.clone(), language_id: language_id(&path).into(), version: 1, text };
    server.did_open(DidOpenTextDocumentParams { text_document: document }).await.map_err(failed("didOpen"))?;

    console.print(&format!(
        "client ▸ textDocument/hover {}:{}:{} (LSP line {}, character {})",
        file_name(&path),
        options.line,
        options.col,
        at.line,
        at.character
    ));
    let params = HoverParams {
        text_document_position_params: TextDocumentPositionParams {
            text_document: TextDocumentIdentifier { uri: uri.clone() },
            position: at,
        },
        work_done_progress_params: WorkDoneProgressParams::default(),
    };
    match server.hover(params).await.map_err(failed("hover"))? {
        Some(hover) => {
            console.print("client ◂ hover:");
            for line in hover_text(&hover.contents).lines() {
                println!("          │ {line}");
            }
        }
        None => console.print("client ◂ hover: nothing at this position"),
    }

    let close = DidCloseTextDocumentParams { text_document: TextDocumentIdentifier { uri } };
    server.did_close(close).await.map_err(failed("didClose"))?;
    console.print("client ▸ shutdown");
    server.shutdown().await.map_err(failed("shutdown"))?;
    console.print("client ▸ exit");
    server.exit().await.map_err(failed("exit"))?;
    // The server exits by itself; the connection ends when its stdout closes, and the reason
    // carries the exit status once the process has been reaped.
    let reason = tokio::time::timeout(Duration::from_secs(10), conn.closed())
        .await
        .map_err(|_| "the server did not exit within 10 s of `exit`".to_owned())?;
    console.print(&format!("server exited: {}", reason.message));
    match reason.child() {
        Some(ChildExit::Exited(status)) if status.success() => Ok(()),
        _ => Err(format!("the server did not exit cleanly: {reason}")),
    }
}

fn file_name(path: &Path) -> String {
    path.file_name().map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into_owned())
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
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("lsp_client: {e}");
            ExitCode::FAILURE
        }
    }
}
