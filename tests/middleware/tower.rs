//! tower's own layers around calls through the adapter (feature `tower`): load shedding over a
//! concurrency limit, and a timeout, over raw bytes.
#![cfg(feature = "tower")]

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use jsonrpc_duplex::middleware::tower::{RunNext, TowerLayer};
use jsonrpc_duplex::{Connection, ErrorObject, Framing, Router};
use serde_json::json;
use tokio::sync::Notify;

use support::raw_peer::pair;

fn slow_router(release: &Arc<Notify>) -> Router {
    let gate = release.clone();
    Router::new()
        .method("hold", move |(): (), _| {
            let gate = gate.clone();
            async move {
                gate.notified().await;
                Ok::<_, ErrorObject>("done")
            }
        })
        .method("quick", |(): (), _| async { Ok::<_, ErrorObject>("quick") })
}

#[tokio::test]
async fn load_shedding_over_a_concurrency_limit_refuses_what_does_not_fit() {
    let release = Arc::new(Notify::new());
    let stack = tower::ServiceBuilder::new().load_shed().concurrency_limit(1).service(RunNext);
    let builder = Connection::builder().layer(TowerLayer::new(stack)).serve(slow_router(&release));
    let (_conn, mut peer) = pair(builder, Framing::NewlineDelimited);
    peer.send(r#"{"jsonrpc":"2.0","id":1,"method":"hold"}"#).await;
    // The limit's one permit is held: the next call is shed, answered at once.
    peer.send(r#"{"jsonrpc":"2.0","id":2,"method":"quick"}"#).await;
    let (id, code, message) = peer.recv_error().await;
    assert_eq!((id, code), (json!(2), -32000), "{message}");
    assert!(message.contains("overloaded"), "{message}");
    release.notify_one();
    assert_eq!(peer.recv_text().await, r#"{"jsonrpc":"2.0","id":1,"result":"done"}"#);
    // The permit is back.
    assert_eq!(
        peer.call(r#"{"jsonrpc":"2.0","id":3,"method":"quick"}"#).await,
        r#"{"jsonrpc":"2.0","id":3,"result":"quick"}"#
    );
}

#[tokio::test(start_paused = true)]
async fn towers_timeout_answers_a_handler_that_takes_too_long() {
    let release = Arc::new(Notify::new());
    let stack = tower::ServiceBuilder::new().timeout(Duration::from_secs(2)).service(RunNext);
    let layer = TowerLayer::new(stack).map_err(|e| ErrorObject::new(-32001, format!("tower: {e}")));
    let builder = Connection::builder().layer(layer).serve(slow_router(&release));
    let (_conn, mut peer) = pair(builder, Framing::NewlineDelimited);
    peer.send(r#"{"jsonrpc":"2.0","id":1,"method":"hold"}"#).await;
    let (id, code, message) = peer.recv_error().await;
    assert_eq!((id, code, message.as_str()), (json!(1), -32001, "tower: request timed out"));
}

#[tokio::test]
async fn an_error_of_ours_passes_through_the_stack_unchanged() {
    let stack = tower::ServiceBuilder::new().concurrency_limit(4).service(RunNext);
    let builder = Connection::builder()
        .layer(TowerLayer::new(stack))
        .serve(Router::new().method("no", |(): (), _| async { Err::<(), _>(ErrorObject::new(-32099, "mine")) }));
    let (_conn, mut peer) = pair(builder, Framing::NewlineDelimited);
    assert_eq!(
        peer.call(r#"{"jsonrpc":"2.0","id":1,"method":"no"}"#).await,
        r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32099,"message":"mine"}}"#
    );
}
