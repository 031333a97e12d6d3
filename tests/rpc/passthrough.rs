//! A handler that calls its peer back and passes a failure on with `?`: the peer's error object
//! travels on unchanged (code, message, data); a cancelled call becomes `-32800`, a timed-out one
//! `-32001`. Against a hand-written peer on raw bytes.

use crate::support;

use std::time::Duration;

use jsonrpc_duplex::{
    CallOptions, CancellationToken, Connection, ErrorObject, Framing, Handle, RequestContext, Router, RpcError, rpc,
};
use serde_json::json;
use support::raw_peer::pair;
use support::time::within;

/// What the peer serves.
#[rpc(client)]
pub trait Back {
    /// A question for the peer.
    #[method(name = "ask")]
    async fn ask(&self, question: String) -> Result<String, RpcError>;
}

/// What this side serves: each method calls the peer back.
#[rpc(server)]
pub trait Relay {
    /// Ask the peer and answer what it said.
    #[method(name = "relay")]
    async fn relay(&self, question: String, #[context] peer: BackClient) -> Result<String, RpcError>;

    /// The same with a timeout on the call back.
    #[method(name = "relay_with_timeout")]
    async fn relay_with_timeout(&self, question: String, #[context] peer: BackClient) -> Result<String, RpcError>;

    /// The same, cancelling the call back.
    #[method(name = "relay_cancelled")]
    async fn relay_cancelled(&self, question: String, #[context] peer: BackClient) -> Result<String, RpcError>;
}

struct Relayer;

impl Relay for Relayer {
    async fn relay(&self, question: String, peer: BackClient) -> Result<String, RpcError> {
        Ok(peer.ask(question).await?)
    }

    async fn relay_with_timeout(&self, question: String, peer: BackClient) -> Result<String, RpcError> {
        let peer = peer.with_options(CallOptions::new().timeout(Duration::from_millis(100)));
        Ok(peer.ask(question).await?)
    }

    async fn relay_cancelled(&self, question: String, peer: BackClient) -> Result<String, RpcError> {
        let cancel = CancellationToken::new();
        let call = peer.with_options(CallOptions::new().cancel(cancel.clone()));
        let (answer, ()) = tokio::join!(call.ask(question), async { cancel.cancel() });
        Ok(answer?)
    }
}

#[tokio::test]
async fn the_peers_error_object_passes_through_a_handlers_question_mark_unchanged() {
    let (_conn, mut peer) = pair(Connection::builder().serve(RelayServer::new(Relayer)), Framing::ContentLength);
    peer.send(r#"{"jsonrpc":"2.0","id":"outer","method":"relay","params":["why?"]}"#).await;
    peer.expect(json!({"jsonrpc":"2.0","id":0,"method":"ask","params":["why?"]})).await;
    peer.send(
        r#"{"jsonrpc":"2.0","id":0,"error":{"code":-32042,"message":"quota exceeded","data":{"retryAfter":30}}}"#,
    )
    .await;
    peer.expect(json!({
        "jsonrpc":"2.0","id":"outer",
        "error":{"code":-32042,"message":"quota exceeded","data":{"retryAfter":30}}
    }))
    .await;
}

#[tokio::test]
async fn a_timed_out_call_back_answers_request_timeout() {
    let (_conn, mut peer) = pair(Connection::builder().serve(RelayServer::new(Relayer)), Framing::ContentLength);
    peer.send(r#"{"jsonrpc":"2.0","id":1,"method":"relay_with_timeout","params":["slow?"]}"#).await;
    peer.expect(json!({"jsonrpc":"2.0","id":0,"method":"ask","params":["slow?"]})).await;
    // Not answered: the call times out and is cancelled on the peer.
    peer.expect(json!({"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":0}})).await;
    let (id, code, message) = within(peer.recv_error()).await;
    assert_eq!((id, code), (json!(1), -32001), "{message}");
    assert!(message.starts_with("Request timed out"), "{message}");
}

#[tokio::test]
async fn a_cancelled_call_back_answers_request_cancelled() {
    let (_conn, mut peer) = pair(
        Connection::builder().profile(jsonrpc_duplex::Profile::mcp()).serve(RelayServer::new(Relayer)),
        Framing::ContentLength,
    );
    peer.send(r#"{"jsonrpc":"2.0","id":2,"method":"relay_cancelled","params":["never mind"]}"#).await;
    let mut seen = Vec::new();
    let code = loop {
        let message = within(peer.recv()).await;
        if message["id"] == json!(2) {
            break message["error"]["code"].clone();
        }
        seen.push(message);
    };
    assert_eq!(code, json!(-32800), "{seen:?}");
}

#[tokio::test]
async fn a_hand_written_handler_passes_the_core_error_on_with_question_mark() {
    let router = Router::new().method("relay", |(question,): (String,), ctx: RequestContext| async move {
        let peer: Handle = ctx.peer().clone();
        let answer: String = peer.request("ask", [question]).await?;
        Ok::<_, ErrorObject>(answer)
    });
    let (_conn, mut peer) = pair(Connection::builder().serve(router), Framing::ContentLength);
    peer.send(r#"{"jsonrpc":"2.0","id":7,"method":"relay","params":["x"]}"#).await;
    peer.expect(json!({"jsonrpc":"2.0","id":0,"method":"ask","params":["x"]})).await;
    peer.send(r#"{"jsonrpc":"2.0","id":0,"error":{"code":-32602,"message":"bad question","data":null}}"#).await;
    peer.expect(json!({"jsonrpc":"2.0","id":7,"error":{"code":-32602,"message":"bad question","data":null}})).await;
}
