//! A feature a user adds through the public seam (`examples/feature_logging`: MCP's
//! `logging/setLevel` filter), driven with real bytes by a hand-written peer: the feature answers
//! its request before the router, in order with the requests around it, and drops the logs below
//! the level; a route it would shadow is refused; a feature that panics ends its connection.

use crate::support;

#[path = "../../examples/feature_logging/logging.rs"]
mod logging;

use std::borrow::Cow;
use std::sync::Arc;

use jsonrpc_duplex::seam::{Extension, Feature, Link, Start, Take};
use jsonrpc_duplex::{CloseKind, Connection, ErrorObject, Framing, Profile, RequestContext, Router};
use serde_json::value::RawValue;
use serde_json::{Value, json};

use logging::{Level, LogFilter, Logging, log, log_failed};
use support::raw_peer::pair;
use support::time::within;

/// A server whose `work` logs at debug, warning and error, then answers.
fn server() -> jsonrpc_duplex::Builder {
    let work = Router::new().method("work", |(): (), ctx: RequestContext| async move {
        let peer = ctx.peer();
        log(&peer, Level::Debug, "work", "starting").await.map_err(log_failed)?;
        log(&peer, Level::Warning, "work", "the disk is almost full").await.map_err(log_failed)?;
        log(&peer, Level::Error, "work", json!({ "step": 2 })).await.map_err(log_failed)?;
        Ok::<_, ErrorObject>("done")
    });
    Connection::builder().profile(Profile::mcp()).feature(Logging::default()).serve(work)
}

fn parse(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

#[tokio::test]
async fn set_level_is_answered_by_the_feature_and_filters_the_logs_that_follow() {
    let (conn, mut peer) = pair(server(), Framing::NewlineDelimited);
    // Before any level is set, the feature's initial one (info) lets the warning and the error
    // through, and drops the debug line.
    peer.send(br#"{"jsonrpc":"2.0","id":1,"method":"work"}"#).await;
    let mut seen = Vec::new();
    loop {
        let message = parse(&peer.recv_text().await);
        if message.get("id").is_some() {
            assert_eq!(message, json!({"jsonrpc": "2.0", "id": 1, "result": "done"}));
            break;
        }
        seen.push(message);
    }
    let levels: Vec<_> = seen.iter().map(|m| (m["method"].clone(), m["params"]["level"].clone())).collect();
    assert_eq!(
        levels,
        [(json!("notifications/message"), json!("warning")), (json!("notifications/message"), json!("error"))]
    );
    assert_eq!(seen[0]["params"], json!({"level": "warning", "logger": "work", "data": "the disk is almost full"}));

    // The level set and a `work` sent in one write: the feature answers first, and the
    // request after it already logs under the new level (only the error goes out).
    peer.send_raw(
        b"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"logging/setLevel\",\"params\":{\"level\":\"error\"}}\n\
          {\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"work\"}\n",
    )
    .await;
    assert_eq!(peer.recv_text().await, r#"{"jsonrpc":"2.0","id":2,"result":{}}"#);
    assert_eq!(
        parse(&peer.recv_text().await),
        json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "error", "logger": "work", "data": {"step": 2}}})
    );
    assert_eq!(parse(&peer.recv_text().await), json!({"jsonrpc": "2.0", "id": 3, "result": "done"}));
    let filter = conn.handle().extension::<LogFilter>().expect("the feature is plugged in");
    assert_eq!(filter.level(), Level::Error);
}

#[tokio::test]
async fn a_level_that_is_not_one_is_refused_and_changes_nothing() {
    let (conn, mut peer) = pair(server(), Framing::NewlineDelimited);
    let answer =
        parse(&peer.call(r#"{"jsonrpc":"2.0","id":7,"method":"logging/setLevel","params":{"level":"loud"}}"#).await);
    assert_eq!(answer["id"], 7);
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    let answer = parse(&peer.call(r#"{"jsonrpc":"2.0","id":8,"method":"logging/setLevel"}"#).await);
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    assert_eq!(conn.handle().extension::<LogFilter>().unwrap().level(), Level::Info);
}

#[tokio::test]
async fn without_the_feature_the_method_is_unknown_and_nothing_is_filtered() {
    let builder = Connection::builder().profile(Profile::mcp()).serve(Router::new());
    let (conn, mut peer) = pair(builder, Framing::NewlineDelimited);
    let answer =
        parse(&peer.call(r#"{"jsonrpc":"2.0","id":1,"method":"logging/setLevel","params":{"level":"error"}}"#).await);
    assert_eq!(answer["error"]["code"], -32601, "{answer}");
    assert!(conn.handle().extension::<LogFilter>().is_none());
    // The example's `log` sends nothing on a connection without its filter.
    assert!(!within(log(&conn.handle(), Level::Emergency, "x", "y")).await.unwrap());
}

#[tokio::test]
async fn a_route_the_feature_would_shadow_is_refused_at_connect() {
    let builder = server()
        .serve(Router::new().method(logging::SET_LEVEL, |_: Value, _| async { Ok::<_, ErrorObject>(json!({})) }));
    let (conn, _peer) = pair(builder, Framing::NewlineDelimited);
    let reason = within(conn.closed()).await;
    assert_eq!(reason.kind, CloseKind::FatalError, "{reason}");
    assert!(reason.to_string().contains("logging/setLevel"), "{reason}");
    assert!(reason.to_string().contains("the `Logging` feature answers it"), "{reason}");
}

/// A feature whose extension panics when it takes its notification.
#[derive(Clone)]
struct Fragile;

struct FragileExtension;

impl Feature for Fragile {
    fn start(&self, _: &Start<'_>) -> Arc<dyn Extension> {
        Arc::new(FragileExtension)
    }
}

impl Extension for FragileExtension {
    fn notifications(&self) -> Vec<Cow<'static, str>> {
        vec!["$/fragile".into()]
    }

    fn take(&self, _: &dyn Link, _: &str, _: Option<&RawValue>) -> Take {
        panic!("the feature broke")
    }
}

#[tokio::test]
async fn a_feature_that_panics_ends_the_connection_with_the_reason_instead_of_hanging() {
    let (conn, mut peer) = pair(Connection::builder().feature(Fragile), Framing::NewlineDelimited);
    peer.send(br#"{"jsonrpc":"2.0","method":"$/fragile"}"#).await;
    let reason = within(conn.closed()).await;
    assert_eq!(reason.kind, CloseKind::FatalError, "{reason}");
    assert!(reason.to_string().contains("the feature broke"), "{reason}");
    assert!(reason.to_string().contains("$/fragile"), "{reason}");
}
