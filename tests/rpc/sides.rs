//! `#[rpc(client)]` and `#[rpc(server)]` generate one side only, so a type that travels one way
//! needs only that way's serde trait: a client-only trait's params need only `Serialize` and its
//! results only `Deserialize`; a server-only trait's the other way round. Driven against a
//! hand-written peer on raw bytes.

use crate::support;

use jsonrpc_duplex::{Connection, Framing, RpcError, rpc};
use serde_json::json;
use support::raw_peer::pair;
use support::time::within;

/// Only ever sent.
#[derive(serde::Serialize)]
pub struct Query {
    /// What to look for.
    pub text: String,
}

/// Only ever received.
#[derive(Debug, PartialEq, serde::Deserialize)]
pub struct Answer {
    /// How many were found.
    pub hits: u32,
}

/// What a peer serves; this side only calls it.
#[rpc(client, params = "object")]
pub trait Search {
    /// Look.
    #[method(name = "search/run")]
    async fn run(&self, query: Query) -> Result<Answer, RpcError>;

    /// Forget a query.
    #[notification(name = "search/forget")]
    async fn forget(&self, query: Query);

    /// `$/` names other than the connection's own belong to the protocol (LSP's `$/setTrace`).
    #[notification(name = "$/setTrace")]
    async fn set_trace(&self, query: Query);
}

/// Only ever received by the server below.
#[derive(serde::Deserialize)]
pub struct Ping {
    /// A number.
    pub n: u32,
}

/// Only ever sent by the server below.
#[derive(serde::Serialize)]
pub struct Pong {
    /// Another.
    pub n: u32,
}

/// What this side serves; a server-only trait may also use names the client would have taken.
#[rpc(server, params = "object")]
pub trait Pinger {
    /// Add one.
    #[method(name = "ping")]
    async fn ping(&self, ping: Ping) -> Pong;

    /// Times ten.
    #[method(name = "handle")]
    async fn handle(&self, ping: Ping) -> Pong;
}

struct Me;

impl Pinger for Me {
    async fn ping(&self, ping: Ping) -> Pong {
        Pong { n: ping.n + 1 }
    }
    async fn handle(&self, ping: Ping) -> Pong {
        Pong { n: ping.n * 10 }
    }
}

#[tokio::test]
async fn a_client_only_trait_calls_with_serialize_only_params_and_deserialize_only_results() {
    let (conn, mut peer) = pair(Connection::builder(), Framing::ContentLength);
    let search = SearchClient::new(conn.handle());
    let call = tokio::spawn(async move { search.run(Query { text: "fn".into() }).await.map_err(|e| e.to_string()) });
    peer.expect(json!({"jsonrpc":"2.0","id":0,"method":"search/run","params":{"text":"fn"}})).await;
    peer.send(r#"{"jsonrpc":"2.0","id":0,"result":{"hits":3}}"#).await;
    assert_eq!(within(call).await.unwrap(), Ok(Answer { hits: 3 }));

    let search = SearchClient::new(conn.handle());
    search.forget(Query { text: "fn".into() }).await.unwrap();
    peer.expect(json!({"jsonrpc":"2.0","method":"search/forget","params":{"text":"fn"}})).await;
    search.set_trace(Query { text: "off".into() }).await.unwrap();
    peer.expect(json!({"jsonrpc":"2.0","method":"$/setTrace","params":{"text":"off"}})).await;
}

#[tokio::test]
async fn a_server_only_trait_serves_deserialize_only_params_and_serialize_only_results() {
    let (_conn, mut peer) = pair(Connection::builder().serve(PingerServer::new(Me)), Framing::ContentLength);
    peer.send(r#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{"n":41}}"#).await;
    peer.expect(json!({"jsonrpc":"2.0","id":1,"result":{"n":42}})).await;
    peer.send(r#"{"jsonrpc":"2.0","id":2,"method":"handle","params":{"n":4}}"#).await;
    peer.expect(json!({"jsonrpc":"2.0","id":2,"result":{"n":40}})).await;
    assert_eq!(PingerServer::<Me>::METHODS, ["ping", "handle"]);
}
