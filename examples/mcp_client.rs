//! An MCP (Model Context Protocol) client: it starts an MCP server, lists what it offers, runs
//! the tools, reads the resources and gets the prompts you name, and shuts the server down.
//!
//! It answers the server's `roots/list` (with `--root URI`s, or the current directory) and
//! shows its `notifications/message` logs; a tool's progress is printed as it arrives, before
//! the result. `--cancel-after N` cancels the next `--call` after N progress reports
//! (`notifications/cancelled`).
//!
//! ```text
//! cargo run --example mcp_client -- [--call TOOL JSON] [--cancel-after N] [--read URI] [--prompt NAME JSON]
//!     [--root URI] [--timeout SECS] -- <server command…>
//! cargo run --example mcp_client -- --call add '{"a":2,"b":40}' -- target/debug/examples/mcp_server
//! ```
//!
//! Over Streamable HTTP (feature `mcp-http`) the server is a URL instead of a command:
//!
//! ```text
//! cargo run --features mcp-http --example mcp_client -- --call test_simple_text '{}' -- http://127.0.0.1:3000/mcp
//! ```
//!
//! The server may ask for input (`elicitation/create`); `--elicit accept` accepts its form with
//! each field's default, `--elicit decline` (the default) declines.
//!
//! The exit code is 0 when every request was answered (a tool that reports an error, MCP's
//! `isError`, still counts as answered; so does a cancelled call).

#[path = "mcp/protocol.rs"]
mod protocol;

use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use jsonrpc_duplex::{CallOptions, CancellationToken, ChildExit, ClientError, Connection, Profile, RpcError};
use protocol::*;
use serde_json::Value;
use tokio::process::Command;

const USAGE: &str = "usage: mcp_client [--call TOOL JSON] [--cancel-after N] [--read URI] [--prompt NAME JSON] \
                     [--root URI] [--timeout SECS] [--elicit accept|decline] [--auto-revision] \
                     -- <server command…|http://URL>";

/// One thing to do, in the order given.
enum Action {
    Call { tool: String, arguments: Value, cancel_after: Option<usize> },
    Read { uri: String },
    Prompt { name: String, arguments: std::collections::BTreeMap<String, String> },
}

struct Options {
    actions: Vec<Action>,
    roots: Vec<String>,
    timeout: Duration,
    server: Vec<String>,
    elicit_accept: bool,
    /// Over HTTP: find out whether the server speaks 2026-07-28 or 2025-11-25, and speak it.
    auto_revision: bool,
}

fn parse_args() -> Result<Options, String> {
    let mut args = std::env::args().skip(1);
    let mut options = Options {
        actions: Vec::new(),
        roots: Vec::new(),
        timeout: Duration::from_secs(60),
        server: Vec::new(),
        elicit_accept: false,
        auto_revision: false,
    };
    let mut cancel_after = None;
    let json = |text: Option<String>, what: &str| -> Result<Value, String> {
        let text = text.ok_or(format!("{what} needs a JSON object"))?;
        serde_json::from_str(&text).map_err(|e| format!("{what}: not JSON ({e}): {text}"))
    };
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--" => {
                options.server = args.collect();
                break;
            }
            "--call" => {
                let tool = args.next().ok_or("--call needs a tool name")?;
                let arguments = json(args.next(), "--call")?;
                options.actions.push(Action::Call { tool, arguments, cancel_after: cancel_after.take() });
            }
            "--cancel-after" => {
                let n = args.next().ok_or("--cancel-after needs a number")?;
                cancel_after = Some(n.parse().map_err(|_| format!("--cancel-after: not a number: {n}"))?);
            }
            "--read" => options.actions.push(Action::Read { uri: args.next().ok_or("--read needs a URI")? }),
            "--prompt" => {
                let name = args.next().ok_or("--prompt needs a prompt name")?;
                let arguments = serde_json::from_value(json(args.next(), "--prompt")?)
                    .map_err(|e| format!("--prompt: the arguments are an object of strings ({e})"))?;
                options.actions.push(Action::Prompt { name, arguments });
            }
            "--auto-revision" => options.auto_revision = true,
            "--root" => options.roots.push(args.next().ok_or("--root needs a URI")?),
            "--elicit" => {
                options.elicit_accept = match args.next().as_deref() {
                    Some("accept") => true,
                    Some("decline") => false,
                    _ => return Err("--elicit needs accept or decline".into()),
                }
            }
            "--timeout" => {
                let v = args.next().ok_or("--timeout needs a number of seconds")?;
                options.timeout = Duration::from_secs(v.parse().map_err(|_| format!("--timeout: not a number: {v}"))?);
            }
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    if cancel_after.is_some() {
        return Err("--cancel-after applies to the --call after it".into());
    }
    if options.server.is_empty() {
        return Err("no server command after `--`".into());
    }
    Ok(options)
}

#[derive(Clone)]
struct Console {
    started: Instant,
}

impl Console {
    fn print(&self, line: &str) {
        println!("{:>6.2}s  {line}", self.started.elapsed().as_secs_f64());
    }
}

/// What the server may ask of this client.
struct Host {
    console: Console,
    roots: Vec<Root>,
    elicit_accept: bool,
}

impl McpHost for Host {
    async fn list_roots(&self, _params: Option<Value>) -> Result<ListRootsResult, RpcError> {
        let uris: Vec<&str> = self.roots.iter().map(|r| r.uri.as_str()).collect();
        self.console.print(&format!("server ▸ roots/list → {}", uris.join(" ")));
        Ok(ListRootsResult { roots: self.roots.clone() })
    }

    async fn ping(&self, _params: Option<Value>) -> Result<Empty, RpcError> {
        Ok(Empty {})
    }

    async fn log_message(&self, params: LoggingMessage) {
        let data = match params.data {
            Value::String(s) => s,
            other => other.to_string(),
        };
        self.console.print(&format!("log    │ {:<7} {data}", params.level));
    }

    async fn elicit(&self, params: ElicitParams) -> Result<ElicitResult, RpcError> {
        self.console.print(&format!("server ▸ elicitation/create {:?}", params.message));
        if !self.elicit_accept {
            self.console.print("client ◂ decline (no user here; --elicit accept takes the defaults)");
            return Ok(ElicitResult { action: "decline".into(), content: None });
        }
        // No user to ask: accept the form with each field's default.
        let mut content = serde_json::Map::new();
        if let Some(fields) = params.requested_schema.get("properties").and_then(Value::as_object) {
            for (name, field) in fields {
                if let Some(default) = field.get("default") {
                    content.insert(name.clone(), default.clone());
                }
            }
        }
        self.console.print(&format!("client ◂ accept {}", Value::Object(content.clone())));
        Ok(ElicitResult { action: "accept".into(), content: Some(content) })
    }
}

/// `file:///abs/path`, percent-encoding all but unreserved characters and `/`.
fn file_uri(path: &Path) -> String {
    let mut uri = String::from("file://");
    for b in path.to_string_lossy().bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' | b'/' => uri.push(b as char),
            _ => uri.push_str(&format!("%{b:02X}")),
        }
    }
    uri
}

async fn run(options: Options) -> Result<(), String> {
    let console = Console { started: Instant::now() };
    let roots = if options.roots.is_empty() {
        let cwd = std::env::current_dir().map_err(|e| format!("no current directory: {e}"))?;
        vec![Root { uri: file_uri(&cwd), name: Some("cwd".into()) }]
    } else {
        options.roots.iter().map(|uri| Root { uri: uri.clone(), name: None }).collect()
    };

    // The whole wire setup: newline framing, MCP's cancellation and progress.
    let builder = Connection::builder().profile(Profile::mcp()).serve(McpHostServer::new(Host {
        console: console.clone(),
        roots,
        elicit_accept: options.elicit_accept,
    }));
    let target = &options.server[0];
    let over_http = target.starts_with("http://") || target.starts_with("https://");
    let conn = if over_http {
        connect_url(builder, target, options.auto_revision)?
    } else {
        let mut command = Command::new(target);
        command.args(&options.server[1..]);
        builder.spawn_child(command).map_err(|e| format!("cannot start {target:?}: {e}"))?
    };
    let server = McpClient::new(conn.handle()).with_options(CallOptions::new().timeout(options.timeout));
    let failed = |what: String| move |e: ClientError| format!("{what}: {e}");

    console.print("client ▸ initialize");
    let init = server
        .initialize(InitializeParams {
            protocol_version: PROTOCOL_VERSIONS[0].into(),
            capabilities: ClientCapabilities {
                roots: Some(ListChanged { list_changed: Some(false) }),
                sampling: None,
                elicitation: Some(serde_json::json!({})),
            },
            client_info: Implementation {
                name: "jsonrpc-duplex-mcp-client".into(),
                version: env!("CARGO_PKG_VERSION").into(),
                title: None,
            },
        })
        .await
        .map_err(failed("initialize".into()))?;
    console.print(&format!(
        "client ◂ server {} {} (protocol {})",
        init.server_info.name, init.server_info.version, init.protocol_version
    ));
    server.initialized().await.map_err(failed("initialized".into()))?;

    let caps = &init.capabilities;
    if caps.tools.is_some() {
        let tools = server.list_tools(None).await.map_err(failed("tools/list".into()))?;
        let names: Vec<&str> = tools.tools.iter().map(|t| t.name.as_str()).collect();
        console.print(&format!("tools: {}", names.join(", ")));
    }
    if caps.resources.is_some() {
        let resources = server.list_resources(None).await.map_err(failed("resources/list".into()))?;
        let uris: Vec<&str> = resources.resources.iter().map(|r| r.uri.as_str()).collect();
        console.print(&format!("resources: {}", uris.join(", ")));
    }
    if caps.prompts.is_some() {
        let prompts = server.list_prompts(None).await.map_err(failed("prompts/list".into()))?;
        let names: Vec<&str> = prompts.prompts.iter().map(|p| p.name.as_str()).collect();
        console.print(&format!("prompts: {}", names.join(", ")));
    }

    for action in options.actions {
        match action {
            Action::Call { tool, arguments, cancel_after } => {
                call_tool(&server, &console, tool, arguments, cancel_after).await?;
            }
            Action::Read { uri } => {
                console.print(&format!("client ▸ resources/read {uri}"));
                let read = server.read_resource(ReadResourceParams { uri: uri.clone() }).await.map_err(failed(uri))?;
                for c in read.contents {
                    let mime = c.mime_type.unwrap_or_default();
                    console.print(&format!("client ◂ {} ({mime}): {}", c.uri, c.text.unwrap_or_default().trim_end()));
                }
            }
            Action::Prompt { name, arguments } => {
                console.print(&format!("client ▸ prompts/get {name}"));
                let params = GetPromptParams { name: name.clone(), arguments };
                let prompt = server.get_prompt(params).await.map_err(failed(name))?;
                for m in prompt.messages {
                    console.print(&format!("client ◂ {}: {}", m.role, m.content.describe()));
                }
            }
        }
    }

    // Over HTTP, closing sends DELETE for the session.
    if over_http {
        let reason = conn.close().await;
        console.print(&format!("session closed: {}", reason.message));
        return Ok(());
    }
    // Closing our side (the server's stdin) is how an MCP client ends a stdio session; this
    // waits until the server has exited (or kills it after a grace period).
    let reason = conn.close().await;
    console.print(&format!("session closed: {}", reason.message));
    match reason.child() {
        Some(ChildExit::Exited(status)) if status.success() => Ok(()),
        _ => Err(format!("the server did not exit cleanly: {reason}")),
    }
}

#[cfg(feature = "mcp-http")]
fn connect_url(builder: jsonrpc_duplex::Builder, url: &str, auto_revision: bool) -> Result<Connection, String> {
    let mut client = jsonrpc_duplex::transport::mcp_http::McpHttpClient::new(url).map_err(|e| e.to_string())?;
    if auto_revision {
        // The same handshake either way: over 2026-07-28 the transport answers `initialize`
        // from `server/discover`.
        client = client.auto_revision();
    }
    Ok(client.connect(builder))
}

#[cfg(not(feature = "mcp-http"))]
fn connect_url(_builder: jsonrpc_duplex::Builder, url: &str, _auto_revision: bool) -> Result<Connection, String> {
    Err(format!("{url}: this build has no HTTP transport (build with --features mcp-http)"))
}

/// Run a tool, printing its progress as it comes; with `cancel_after`, cancel it after that many
/// reports.
async fn call_tool(
    server: &McpClient,
    console: &Console,
    tool: String,
    arguments: Value,
    cancel_after: Option<usize>,
) -> Result<(), String> {
    console.print(&format!("client ▸ tools/call {tool} {arguments}"));
    let cancel = CancellationToken::new();
    let reports = Arc::new(AtomicUsize::new(0));
    let on_progress = {
        let (cancel, reports, console) = (cancel.clone(), reports.clone(), console.clone());
        move |p: ProgressUpdate| {
            let total = p.total.map(|t| format!("/{t}")).unwrap_or_default();
            let message = p.message.map(|m| format!(" {m}")).unwrap_or_default();
            console.print(&format!("progress {}{total}{message}", p.progress));
            let seen = reports.fetch_add(1, Ordering::Relaxed) + 1;
            if cancel_after == Some(seen) {
                console.print(&format!("client ▸ cancel after {seen} report(s)"));
                cancel.cancel();
            }
        }
    };
    let params = CallToolParams { name: tool.clone(), arguments: Some(arguments) };
    let outcome = server.with_options(server.options().clone().cancel(cancel)).call_tool(params, on_progress).await;
    match outcome {
        Ok(result) => {
            let flag = if result.is_error { " (the tool reports an error)" } else { "" };
            let text: Vec<String> = result.content.iter().map(Content::describe).collect();
            console.print(&format!("client ◂ {tool}{flag}: {}", text.join(" ")));
            Ok(())
        }
        Err(e) if e.is_cancelled() => {
            console.print(&format!("client ◂ {tool}: cancelled"));
            Ok(())
        }
        Err(e) => Err(format!("tools/call {tool}: {e}")),
    }
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
            eprintln!("mcp_client: {e}");
            ExitCode::FAILURE
        }
    }
}
