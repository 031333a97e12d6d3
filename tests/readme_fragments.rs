//! The README's `rust,ignore` blocks, fragments of a larger program, each compiled here as the
//! README writes it, inside the program around it (what a user would have written before and
//! after). `the_readme_fragments_are_these` checks that the blocks between the markers below are
//! the README's, in order, so that neither can change without the other.
#![cfg(all(feature = "http", feature = "mcp-http", feature = "openrpc"))]
#![allow(dead_code, unused_variables, unreachable_pub)]

mod support;

use std::time::Duration;

use jsonrpc_duplex::server::Server;
use jsonrpc_duplex::{CancellationToken, Connection, Profile, Progress, RpcError, RpcStream, rpc};

/// Streams and progress.
#[rustfmt::skip] // the README's block, as it is there
mod streams {
    use super::*;
    use futures::Stream;

    #[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
    pub struct Indexed {
        pub done: u32,
    }

    // README: begin
    #[rpc]
    pub trait Search {
        /// A streamed result: the client gets an `RpcStream<String>`; the server's stream is pulled
        /// with `$/enumerator/next` and dropped on `$/enumerator/abort` when the client lets go.
        fn grep(&self, pattern: String) -> impl Stream<Item = String> + Send;
        /// A stream argument: the client passes any `impl Stream`, the handler consumes it.
        async fn sum(&self, numbers: RpcStream<i64>) -> Result<i64, RpcError>;
        /// Progress: the client passes a callback; every report arrives before the result does.
        async fn index(&self, files: u32, progress: Progress<Indexed>) -> u32;
    }
    // README: end
}

/// MCP's tools, with progress and cancellation; served over Streamable HTTP below.
#[rustfmt::skip] // the README's block, as it is there
mod mcp {
    use super::*;

    #[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
    pub struct CallToolParams {
        pub name: String,
    }
    #[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
    pub struct ProgressUpdate {
        pub progress: f64,
    }
    #[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
    pub struct CallToolResult {
        pub text: String,
    }

    // README: begin
    #[rpc(params = "object")]
    pub trait Mcp {
        #[method(name = "tools/call")]
        async fn call_tool(&self, params: CallToolParams, progress: Progress<ProgressUpdate>, cancel: CancellationToken)
            -> Result<CallToolResult, RpcError>;
    }
    // README: end

    #[derive(Default)]
    pub struct MyServer {
        calls: u64,
    }

    impl Mcp for MyServer {
        async fn call_tool(
            &self,
            params: CallToolParams,
            progress: Progress<ProgressUpdate>,
            cancel: CancellationToken,
        ) -> Result<CallToolResult, RpcError> {
            Ok(CallToolResult { text: params.name })
        }
    }
}

#[rustfmt::skip] // the README's block, as it is there
async fn mcp_over_http() -> Result<(), Box<dyn std::error::Error>> {
    use mcp::{McpServer, MyServer};
    // README: begin
    use jsonrpc_duplex::transport::mcp_http::McpHttpServer;
    let server = McpHttpServer::new(|session| {
        // session.id, session.principal (from the auth hook)
        Connection::builder().profile(Profile::mcp()).serve(McpServer::new(MyServer::default()))
    });
    let bound = server.bind("127.0.0.1:3000").await?; // serves http://127.0.0.1:3000/mcp
    // README: end
    drop(bound);
    Ok(())
}

/// A key-value store whose server calls each peer back.
mod kv {
    use super::*;

    #[rpc]
    pub trait Kv {
        async fn get(&self, key: String) -> Option<String>;
    }

    pub struct Store(jsonrpc_duplex::Handle);

    impl Store {
        pub fn for_peer(handle: &jsonrpc_duplex::Handle) -> Self {
            Store(handle.clone())
        }
    }

    impl Kv for Store {
        async fn get(&self, key: String) -> Option<String> {
            None
        }
    }
}

#[rustfmt::skip] // the README's block, as it is there
async fn serving_many_peers() -> Result<(), Box<dyn std::error::Error>> {
    use kv::{KvServer, Store};
    let change = serde_json::json!({"key": "color", "value": "blue"});
    // README: begin
    let server = Server::builder()
        .serve_with(|peer| KvServer::new(Store::for_peer(peer.handle())))   // per-connection state
        .max_connections(1000)
        .bind_tcp("127.0.0.1:7878").await?;
    server.broadcast("kv/changed", &change)?;                               // to every live peer
    server.shutdown(Duration::from_secs(5)).await;                          // stop, drain, close
    // README: end
    Ok(())
}

/// A counter served over plain HTTP.
mod counter {
    use super::*;

    #[rpc]
    pub trait Counter {
        async fn add(&self, by: u64) -> u64;
    }

    #[derive(Clone, Default)]
    pub struct State(std::sync::Arc<std::sync::atomic::AtomicU64>);

    impl Counter for State {
        async fn add(&self, by: u64) -> u64 {
            self.0.fetch_add(by, std::sync::atomic::Ordering::Relaxed) + by
        }
    }
}

#[rustfmt::skip] // the README's block, as it is there
async fn over_http() -> Result<(), Box<dyn std::error::Error>> {
    use axum::routing::get;
    use counter::{CounterClient, CounterServer, State};
    let state = State::default();
    // README: begin
    // A server of its own: hyper's loop, HTTP/1.1 keep-alive and HTTP/2, graceful shutdown.
    let server = Server::builder().serve(CounterServer::new(state.clone())).bind_http("127.0.0.1:8080").await?;
    server.shutdown(Duration::from_secs(5)).await;

    // Or mounted in axum (any tower or hyper stack), next to your own routes.
    let rpc = Connection::builder().serve(CounterServer::new(state)).into_http_service();
    let app = axum::Router::new().route("/health", get(|| async { "ok" })).route_service("/rpc", rpc);

    // The client: the same generated client; its calls are POSTs on pooled keep-alive connections,
    // several in flight at once; a notification is a fence (posted once the notifications before it
    // are answered; what follows waits for its answer), so order holds where it matters; timeouts
    // and cancellation as on any connection (a cancelled call's POST is abandoned).
    let connection = Connection::builder().connect_http("http://127.0.0.1:8080/rpc")?;
    let counter = CounterClient::new(connection.handle());
    // README: end
    let _served: axum::Router = app;
    let _ = counter.add(1).await?;
    Ok(())
}

/// The traits an SDK is generated from: `Files` served by Rust and `Editor` by TypeScript;
/// `Session` served by the CLI and `Tools` by the SDK's language.
mod apis {
    use super::*;

    #[rpc]
    pub trait Files {
        async fn read(&self, path: String) -> Result<String, RpcError>;
    }
    #[rpc]
    pub trait Editor {
        async fn show(&self, text: String);
    }
    #[rpc]
    pub trait Session {
        async fn prompt(&self, text: String) -> String;
    }
    #[rpc]
    pub trait Tools {
        async fn call_tool(&self, name: String, input: String) -> String;
    }

    pub struct Agent;

    impl Session for Agent {
        async fn prompt(&self, text: String) -> String {
            text
        }
    }
}

#[rustfmt::skip] // the README's block, as it is there
fn openrpc_and_typescript(check: bool) -> std::io::Result<()> {
    use apis::{EditorApi, FilesApi};
    use jsonrpc_duplex::openrpc::{Document, write_or_check};
    use jsonrpc_duplex::typescript::Module;
    // README: begin
    let doc = Document::new("files", "1.0.0").service::<FilesApi>();
    write_or_check("openrpc.json", &doc.to_json_string(), check)?;
    let ts = Module::new().client::<FilesApi>().server::<EditorApi>().render();
    write_or_check("web/src/files.ts", &ts, check)?;
    // README: end
    Ok(())
}

#[rustfmt::skip] // the README's block, as it is there
async fn a_cli_for_sdks() -> Result<(), Box<dyn std::error::Error>> {
    use apis::{Agent, SessionServer};
    use jsonrpc_duplex::CliTransport;
    let agent = Agent;
    // README: begin
    let (transport, _rest) = CliTransport::from_args(std::env::args().skip(1))?;
    transport.serve(Connection::builder().serve(SessionServer::new(agent).into_router())).await?;
    // README: end
    Ok(())
}

#[rustfmt::skip] // the README's block, as it is there
fn python_sdk(check: bool) -> std::io::Result<()> {
    use apis::{SessionApi, ToolsApi};
    use jsonrpc_duplex::openrpc::write_or_check;
    use jsonrpc_duplex::python;
    // README: begin
    let py = python::Module::new().client::<SessionApi>().server::<ToolsApi>().render();
    write_or_check("sdk/bridge.py", &py, check)?;
    write_or_check("sdk/jsonrpc_duplex_runtime.py", python::RUNTIME, check)?;
    // README: end
    Ok(())
}

#[test]
fn the_readme_fragments_are_these() {
    let readme = support::readme::text();
    let readme = support::readme::blocks(&readme, "```rust,ignore");
    let here = support::readme::marked(include_str!("readme_fragments.rs"), "//", "    ");
    assert_eq!(
        readme.len(),
        here.len(),
        "README.md has {} `rust,ignore` blocks, this file {}",
        readme.len(),
        here.len()
    );
    for (i, (readme, here)) in readme.iter().zip(&here).enumerate() {
        assert_eq!(readme, here, "the README's `rust,ignore` block {} differs from this file's", i + 1);
    }
}
