//! Ids come back exactly as they were spelled, and two ids are the same only when they are
//! spelled the same: a number is never squeezed through an `f64` (where 2^64 and 2^64 + 1 meet).

use crate::support;

use std::sync::Arc;

use jsonrpc_duplex::{Connection, ErrorObject, Framing, Router};
use support::raw_peer::pair;
use tokio::sync::Notify;

/// `echo` answers its params; `wait` answers once released (so requests stay in flight).
fn server(release: Arc<Notify>) -> jsonrpc_duplex::Builder {
    Connection::builder().serve(
        Router::new().method("echo", |v: serde_json::Value, _ctx| async move { Ok::<_, ErrorObject>(v) }).method(
            "wait",
            move |(): (), _ctx| {
                let release = release.clone();
                async move {
                    release.notified().await;
                    Ok::<_, ErrorObject>("released")
                }
            },
        ),
    )
}

#[tokio::test]
async fn numeric_ids_come_back_spelled_as_they_came() {
    for framing in [Framing::ContentLength, Framing::NewlineDelimited] {
        let (_conn, mut peer) = pair(server(Arc::new(Notify::new())), framing);
        for id in ["18446744073709551617", "18446744073709551616", "1.50", "1e2", "1E+2", "-0", "-7", "0.1e-5", "7"] {
            // Both parse paths: the plain one, and the general one (an unknown member).
            for extra in ["", r#","x":1"#] {
                peer.send(format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"echo","params":[1]{extra}}}"#)).await;
                assert_eq!(peer.recv_text().await, format!(r#"{{"jsonrpc":"2.0","id":{id},"result":[1]}}"#));
            }
        }
        // In a batch, and in an error answer.
        peer.send(r#"[{"jsonrpc":"2.0","id":1.50,"method":"nope"}]"#).await;
        let text = peer.recv_text().await;
        assert!(text.starts_with(r#"[{"jsonrpc":"2.0","id":1.50,"error":"#), "{text}");
    }
}

#[tokio::test]
async fn ids_that_differ_only_past_f64_precision_are_different_requests() {
    let release = Arc::new(Notify::new());
    let (_conn, mut peer) = pair(server(release.clone()), Framing::ContentLength);
    // 2^64 and 2^64 + 1 (and 1.5 and 1.50) in flight at once: neither is "already in use".
    for id in ["18446744073709551616", "18446744073709551617", "1.5", "1.50"] {
        peer.send(format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"wait"}}"#)).await;
    }
    peer.expect_silence(std::time::Duration::from_millis(50)).await;
    // A cancellation names one of them exactly.
    peer.send(r#"{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":18446744073709551617}}"#).await;
    assert_eq!(
        peer.recv_text().await,
        r#"{"jsonrpc":"2.0","id":18446744073709551617,"error":{"code":-32800,"message":"Request cancelled"}}"#
    );
    release.notify_waiters();
    let mut answers: Vec<String> = Vec::new();
    for _ in 0..3 {
        answers.push(peer.recv_text().await);
    }
    answers.sort();
    assert_eq!(
        answers,
        [
            r#"{"jsonrpc":"2.0","id":1.5,"result":"released"}"#,
            r#"{"jsonrpc":"2.0","id":1.50,"result":"released"}"#,
            r#"{"jsonrpc":"2.0","id":18446744073709551616,"result":"released"}"#,
        ]
    );
}
