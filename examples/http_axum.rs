//! Plain JSON-RPC over HTTP, mounted in an axum application: an `#[rpc]` service (unchanged)
//! at `POST /rpc` next to an ordinary axum route, then called over HTTP by our client.
//!
//! `cargo run --features http --example http_axum` starts the app on a loopback port, makes a
//! few calls (one is a typed error) and exits. The common case without axum is one line:
//! `Server::builder().serve(CounterServer::new(counter)).bind_http("127.0.0.1:8080").await?`.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use jsonrpc_duplex::transport::http::guard::AllowList;
use jsonrpc_duplex::{Connection, RpcError, rpc};

/// A counter shared by every caller.
#[rpc(namespace = "counter")]
pub trait Counter {
    /// Add `by` (at most 1000 at a time) and return the new value.
    async fn add(&self, by: i64) -> Result<i64, RpcError>;
    /// The value.
    async fn get(&self) -> i64;
}

/// The service's state.
#[derive(Clone, Default)]
pub struct Shared(Arc<AtomicI64>);

impl Counter for Shared {
    async fn add(&self, by: i64) -> Result<i64, RpcError> {
        if by.abs() > 1000 {
            return Err(RpcError::invalid_params(format!("{by} is more than 1000 at a time")));
        }
        Ok(self.0.fetch_add(by, Ordering::SeqCst) + by)
    }
    async fn get(&self) -> i64 {
        self.0.load(Ordering::SeqCst)
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // The JSON-RPC service as a tower service: what `Builder::serve` takes, unchanged.
    let rpc = Connection::builder()
        .serve(CounterServer::new(Shared::default()))
        .into_http_service()
        // Loopback Host/Origin by default; a public app lists its names (or, behind a proxy
        // that checks Host, `.any_host()`).
        .allow(AllowList::loopback().allow_host("counter.example"));
    let app = axum::Router::new().route("/health", axum::routing::get(|| async { "ok" })).route_service("/rpc", rpc);

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let server = tokio::spawn(async move { axum::serve(listener, app).await });

    // Our client: every call is a POST to /rpc, on pooled keep-alive connections.
    let connection = Connection::builder().connect_http(&format!("http://{addr}/rpc"))?;
    let counter = CounterClient::new(connection.handle());
    let (a, b) = tokio::join!(counter.add(5), counter.add(10));
    println!("added concurrently: {} and {}", a?, b?);
    println!("value: {}", counter.get().await?);
    match counter.add(5000).await {
        Err(e) => println!("refused as expected: {e}"),
        Ok(v) => return Err(format!("5000 should have been refused, got {v}").into()),
    }
    server.abort();
    Ok(())
}
