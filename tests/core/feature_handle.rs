//! A feature that calls the peer: its extension keeps a `WeakHandle` of its connection
//! (`Start::handle`), or takes the handle on demand when the connection calls it
//! (`Link::handle`), like LSP's partial results sent ahead of a request's answer. Driven with
//! real bytes by a hand-written peer; and the weak handle does not keep a closed connection
//! alive.

use crate::support;

use std::borrow::Cow;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use jsonrpc_duplex::seam::{Extension, Feature, Link, Start, Take};
use jsonrpc_duplex::{Connection, Framing, Request, Responder, WeakHandle};
use serde_json::json;
use serde_json::value::RawValue;
use tokio::sync::oneshot;

use support::raw_peer::pair;
use support::time::within;

/// Answers `search` itself, after sending each of its results as a `search/partial`
/// notification through the weak handle it keeps; answers `$/ping` with a `$/pong` sent from a
/// task through the handle its link gives.
#[derive(Clone, Default)]
struct PartialResults {
    /// Told when the connection's extension is freed.
    freed: Arc<Mutex<Option<oneshot::Sender<()>>>>,
}

struct Partials {
    peer: WeakHandle,
    freed: Option<oneshot::Sender<()>>,
}

impl Drop for Partials {
    fn drop(&mut self) {
        if let Some(freed) = self.freed.take() {
            let _ = freed.send(());
        }
    }
}

impl Feature for PartialResults {
    fn start(&self, start: &Start<'_>) -> Arc<dyn Extension> {
        // Not upgradable yet: the connection is being built.
        assert!(start.handle().upgrade().is_none());
        let freed = self.freed.lock().unwrap().take();
        Arc::new(Partials { peer: start.handle().clone(), freed })
    }
}

impl Extension for Partials {
    fn requests(&self) -> Vec<Cow<'static, str>> {
        vec!["search".into()]
    }

    fn serve(
        self: Arc<Self>,
        _: &dyn Link,
        _request: Request,
        responder: Responder,
    ) -> Pin<Box<dyn Future<Output = ()> + Send>> {
        Box::pin(async move {
            let Some(peer) = self.peer.upgrade() else {
                let _ = responder.err(jsonrpc_duplex::ErrorObject::internal_error("the connection is gone"));
                return;
            };
            for item in ["alpha", "beta"] {
                if peer.notify("search/partial", json!({ "item": item })).await.is_err() {
                    return;
                }
            }
            let _ = responder.ok(json!({ "done": 2 }));
        })
    }

    fn notifications(&self) -> Vec<Cow<'static, str>> {
        vec!["$/ping".into()]
    }

    fn take(&self, link: &dyn Link, _: &str, _: Option<&RawValue>) -> Take {
        // The reader must not wait: the notification is sent by a task of its own.
        let peer = link.handle();
        tokio::spawn(async move { peer.notify("$/pong", ()).await });
        Take::Taken
    }
}

#[tokio::test]
async fn a_feature_sends_partial_results_ahead_of_its_answer_through_its_weak_handle() {
    let (conn, mut peer) = pair(Connection::builder().feature(PartialResults::default()), Framing::NewlineDelimited);
    peer.send(br#"{"jsonrpc":"2.0","id":7,"method":"search"}"#).await;
    assert_eq!(peer.recv_text().await, r#"{"jsonrpc":"2.0","method":"search/partial","params":{"item":"alpha"}}"#);
    assert_eq!(peer.recv_text().await, r#"{"jsonrpc":"2.0","method":"search/partial","params":{"item":"beta"}}"#);
    assert_eq!(peer.recv_text().await, r#"{"jsonrpc":"2.0","id":7,"result":{"done":2}}"#);
    drop(conn);
}

#[tokio::test]
async fn a_feature_calls_the_peer_through_the_handle_its_link_gives() {
    let (conn, mut peer) = pair(Connection::builder().feature(PartialResults::default()), Framing::NewlineDelimited);
    peer.send(br#"{"jsonrpc":"2.0","method":"$/ping"}"#).await;
    assert_eq!(peer.recv_text().await, r#"{"jsonrpc":"2.0","method":"$/pong"}"#);
    drop(conn);
}

#[tokio::test]
async fn the_weak_handle_a_feature_keeps_does_not_keep_a_closed_connection_alive() {
    let feature = PartialResults::default();
    let (freed_tx, freed) = oneshot::channel();
    *feature.freed.lock().unwrap() = Some(freed_tx);
    let (conn, mut peer) = pair(Connection::builder().feature(feature), Framing::NewlineDelimited);
    // The feature has been used (both ways of reaching the peer), so its handles have been
    // upgraded and dropped again.
    peer.send(br#"{"jsonrpc":"2.0","id":1,"method":"search"}"#).await;
    peer.send(br#"{"jsonrpc":"2.0","method":"$/ping"}"#).await;
    let mut seen = Vec::new();
    while seen.len() < 4 {
        seen.push(peer.recv_text().await);
    }
    assert!(seen.contains(&r#"{"jsonrpc":"2.0","id":1,"result":{"done":2}}"#.to_owned()), "{seen:?}");
    assert!(seen.contains(&r#"{"jsonrpc":"2.0","method":"$/pong"}"#.to_owned()), "{seen:?}");
    let weak = conn.handle().extension::<Partials>().expect("plugged in").peer.clone();
    assert!(weak.upgrade().is_some(), "alive while open");

    within(conn.close()).await;
    drop(peer);
    // The extension, which holds the weak handle, is freed with the connection: a strong
    // handle in it would keep the connection (and the extension) alive for ever.
    within(freed).await.expect("the extension is freed, not forgotten");
    assert!(weak.upgrade().is_none(), "the connection was freed");
}
