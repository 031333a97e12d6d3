//! An MCP (Model Context Protocol) server on stdio, built on an `#[rpc]` trait.
//!
//! - tools with typed inputs: `add` (`{a, b}`: numbers), `greet` (`{name, excited?}`);
//! - a long tool, `count`, that reports progress on the caller's `_meta.progressToken` after each
//!   step and stops when the caller sends `notifications/cancelled`;
//! - `list_roots`, which calls the client back (`roots/list`) in the middle of the call;
//! - two resources (`demo://readme`, `demo://stats`) and a prompt (`review`, with a `code`
//!   argument).
//!
//! An MCP client launches it, e.g. the `mcp_client` example:
//!
//! ```text
//! cargo run --example mcp_client -- -- target/debug/examples/mcp_server
//! ```
//!
//! The whole wire setup is one line: `Connection::builder().profile(Profile::mcp())` (newline
//! framing, `notifications/cancelled`, `notifications/progress` with the token in `_meta`).
//! Logs go to stderr (`RUST_LOG`); stdout carries the protocol only. It exits when the client
//! closes its stdin.

#[path = "mcp/protocol.rs"]
mod protocol;

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use jsonrpc_duplex::{CancellationToken, Connection, ErrorObject, Profile, Progress, RpcError};
use protocol::*;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

/// The input of `add`.
#[derive(Deserialize)]
struct AddInput {
    a: f64,
    b: f64,
}

/// The input of `greet`.
#[derive(Deserialize)]
struct GreetInput {
    name: String,
    #[serde(default)]
    excited: bool,
}

/// The input of `count`.
#[derive(Deserialize)]
struct CountInput {
    to: u32,
    /// Between steps; 100 ms by default.
    #[serde(default = "default_step_ms")]
    step_ms: u64,
}

fn default_step_ms() -> u64 {
    100
}

#[derive(Default)]
struct DemoServer {
    tool_calls: AtomicU64,
}

impl Mcp for DemoServer {
    async fn initialize(&self, params: InitializeParams) -> Result<InitializeResult, RpcError> {
        tracing::info!(client = %params.client_info.name, version = %params.protocol_version, "initialize");
        // The client's revision if we speak it, else our newest (the client then decides).
        let version =
            PROTOCOL_VERSIONS.iter().find(|v| **v == params.protocol_version).unwrap_or(&PROTOCOL_VERSIONS[0]);
        Ok(InitializeResult {
            protocol_version: (*version).to_owned(),
            capabilities: ServerCapabilities {
                tools: Some(ListChanged::default()),
                resources: Some(ListChanged::default()),
                prompts: Some(ListChanged::default()),
                logging: None,
            },
            server_info: Implementation {
                name: "jsonrpc-duplex-mcp-server".into(),
                version: env!("CARGO_PKG_VERSION").into(),
                title: Some("jsonrpc-duplex demo".into()),
            },
            instructions: Some("Tools: add, greet, count (slow, with progress), list_roots.".into()),
        })
    }

    async fn initialized(&self) {
        tracing::info!("the client is ready");
    }

    async fn ping(&self, _params: Option<Value>) -> Result<Empty, RpcError> {
        Ok(Empty {})
    }

    async fn list_tools(&self, _params: Option<Paginated>) -> Result<ListToolsResult, RpcError> {
        let tool = |name: &str, description: &str, schema: Value| Tool {
            name: name.into(),
            description: Some(description.into()),
            input_schema: schema,
        };
        Ok(ListToolsResult {
            tools: vec![
                tool(
                    "add",
                    "Add two numbers.",
                    json!({"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}, "required": ["a", "b"]}),
                ),
                tool(
                    "greet",
                    "Greet someone.",
                    json!({"type": "object", "properties": {"name": {"type": "string"}, "excited": {"type": "boolean"}}, "required": ["name"]}),
                ),
                tool(
                    "count",
                    "Count slowly to `to`, reporting progress after each step.",
                    json!({"type": "object", "properties": {"to": {"type": "integer", "minimum": 1}, "step_ms": {"type": "integer", "minimum": 0}}, "required": ["to"]}),
                ),
                tool(
                    "list_roots",
                    "The roots the client shares with this server (asks the client).",
                    json!({"type": "object", "properties": {}}),
                ),
            ],
            next_cursor: None,
        })
    }

    async fn call_tool(
        &self,
        params: CallToolParams,
        progress: Progress<ProgressUpdate>,
        cancel: CancellationToken,
        host: McpHostClient,
    ) -> Result<CallToolResult, RpcError> {
        self.tool_calls.fetch_add(1, Ordering::Relaxed);
        let arguments = params.arguments.unwrap_or_else(|| json!({}));
        match params.name.as_str() {
            "add" => Ok(match input::<AddInput>(arguments) {
                Ok(AddInput { a, b }) => CallToolResult::text(format!("{}", a + b)),
                Err(bad) => bad,
            }),
            "greet" => Ok(match input::<GreetInput>(arguments) {
                Ok(GreetInput { name, excited }) => {
                    CallToolResult::text(format!("Hello, {name}{}", if excited { "!" } else { "." }))
                }
                Err(bad) => bad,
            }),
            "count" => {
                let CountInput { to, step_ms } = match input(arguments) {
                    Ok(input) => input,
                    Err(bad) => return Ok(bad),
                };
                for step in 1..=to {
                    // The caller's cancellation fires this (and then drops the call: MCP
                    // answers nothing to a cancelled request).
                    tokio::select! {
                        _ = cancel.cancelled() => {
                            tracing::info!(step, to, "count cancelled by the client");
                            return Err(ErrorObject::request_cancelled().into());
                        }
                        _ = tokio::time::sleep(Duration::from_millis(step_ms)) => {}
                    }
                    let update = ProgressUpdate {
                        progress: f64::from(step),
                        total: Some(f64::from(to)),
                        message: Some(format!("counted to {step}")),
                    };
                    progress.report(update).await?;
                }
                Ok(CallToolResult::text(format!("counted to {to}")))
            }
            "list_roots" => {
                // A call back to the client while its own request is open; a failure passes
                // through with `?` as the client's own error object.
                let roots = host.list_roots(None).await?;
                let lines: Vec<String> = roots
                    .roots
                    .iter()
                    .map(|r| match &r.name {
                        Some(name) => format!("{name}: {}", r.uri),
                        None => r.uri.clone(),
                    })
                    .collect();
                Ok(CallToolResult::text(if lines.is_empty() { "(no roots)".to_owned() } else { lines.join("\n") }))
            }
            other => Err(RpcError::invalid_params(format!("unknown tool {other:?}"))),
        }
    }

    async fn list_resources(&self, _params: Option<Paginated>) -> Result<ListResourcesResult, RpcError> {
        Ok(ListResourcesResult {
            resources: vec![
                Resource {
                    uri: "demo://readme".into(),
                    name: "readme".into(),
                    description: Some("What this server is.".into()),
                    mime_type: Some("text/markdown".into()),
                },
                Resource {
                    uri: "demo://stats".into(),
                    name: "stats".into(),
                    description: Some("How many tool calls this server has run.".into()),
                    mime_type: Some("application/json".into()),
                },
            ],
            next_cursor: None,
        })
    }

    async fn read_resource(&self, params: ReadResourceParams) -> Result<ReadResourceResult, RpcError> {
        let (mime, text) = match params.uri.as_str() {
            "demo://readme" => {
                ("text/markdown", "# jsonrpc-duplex MCP demo\n\nAn MCP server in a few lines of Rust.\n".into())
            }
            "demo://stats" => {
                ("application/json", json!({"toolCalls": self.tool_calls.load(Ordering::Relaxed)}).to_string())
            }
            other => {
                return Err(RpcError::new(RESOURCE_NOT_FOUND, "Resource not found").with_data(json!({ "uri": other })));
            }
        };
        Ok(ReadResourceResult {
            contents: vec![ResourceContents { uri: params.uri, mime_type: Some(mime.into()), text: Some(text) }],
        })
    }

    async fn list_prompts(&self, _params: Option<Paginated>) -> Result<ListPromptsResult, RpcError> {
        Ok(ListPromptsResult {
            prompts: vec![Prompt {
                name: "review".into(),
                description: Some("Ask for a code review.".into()),
                arguments: vec![PromptArgument {
                    name: "code".into(),
                    description: Some("The code to review.".into()),
                    required: true,
                }],
            }],
            next_cursor: None,
        })
    }

    async fn get_prompt(&self, params: GetPromptParams) -> Result<GetPromptResult, RpcError> {
        if params.name != "review" {
            return Err(RpcError::invalid_params(format!("unknown prompt {:?}", params.name)));
        }
        let Some(code) = params.arguments.get("code") else {
            return Err(RpcError::invalid_params("the prompt `review` needs the argument `code`"));
        };
        Ok(GetPromptResult {
            description: Some("A code review request".into()),
            messages: vec![PromptMessage {
                role: "user".into(),
                content: Content::text(format!("Please review this code:\n\n{code}")),
            }],
        })
    }
}

/// A tool's typed input; input that does not fit is a tool error the model can read (MCP's
/// `isError`), not a protocol error.
fn input<T: DeserializeOwned>(arguments: Value) -> Result<T, CallToolResult> {
    serde_json::from_value(arguments).map_err(|e| CallToolResult::error(format!("invalid arguments: {e}")))
}

#[tokio::main]
async fn main() {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        // The client usually logs our stderr as text: colours only on a terminal.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .init();
    // `--http ADDR`: the same server over Streamable HTTP (feature `mcp-http`), one session
    // per client; the profile is the same, only the transport differs.
    let mut args = std::env::args().skip(1);
    if let (Some("--http"), Some(addr)) = (args.next().as_deref(), args.next()) {
        return serve_http(&addr).await;
    }
    let conn = Connection::builder().profile(Profile::mcp()).serve(McpServer::new(DemoServer::default())).stdio();
    // The client ends the session by closing our stdin.
    let reason = conn.closed().await;
    tracing::info!("connection closed: {reason}");
}

#[cfg(feature = "mcp-http")]
async fn serve_http(addr: &str) {
    use jsonrpc_duplex::transport::mcp_http::McpHttpServer;
    let server = std::sync::Arc::new(DemoServer::default());
    let http = McpHttpServer::new(move |_session| {
        Connection::builder().profile(Profile::mcp()).serve(McpServer::from_arc(server.clone()))
    });
    let bound = match http.bind(addr).await {
        Ok(bound) => bound,
        Err(e) => {
            tracing::error!("cannot listen on {addr}: {e}");
            std::process::exit(1);
        }
    };
    println!("listening on http://{}/mcp", bound.local_addr());
    let _ = tokio::signal::ctrl_c().await;
    bound.shutdown().await;
}

#[cfg(not(feature = "mcp-http"))]
async fn serve_http(_addr: &str) {
    tracing::error!("this build has no HTTP transport (build with --features mcp-http)");
    std::process::exit(2);
}
