//! W3C trace context across the wire, byte for byte against a hand-written peer: read from MCP's
//! `params._meta`, current while the handler runs, written on the calls the handler makes back;
//! StreamJsonRpc's top-level members on outbound messages; nothing where it is off or invalid.

use crate::support;

use jsonrpc_duplex::middleware::context::{Placement, PropagateLayer, TraceContext};
use jsonrpc_duplex::{Connection, ErrorObject, Framing, Handle, RequestContext, Router};
use serde_json::json;

use support::raw_peer::pair;
use support::time::within;

const PARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

/// A server whose `work` handler calls the peer back three ways and answers with the
/// traceparent its context carried.
fn calling_back(placement: Placement) -> jsonrpc_duplex::Builder {
    Connection::builder().layer(PropagateLayer::new(placement)).serve_with(|peer: Handle| {
        Router::new().method("work", move |_: serde_json::Value, ctx: RequestContext| {
            let peer = peer.clone();
            let seen = ctx.extensions().get::<TraceContext>().map(TraceContext::traceparent);
            async move {
                peer.request::<()>("roots/list", json!({})).await?;
                peer.request::<()>("sampling/create", json!({"a": 1})).await?;
                peer.request::<()>("elicit", json!({"_meta": {"progressToken": 5}})).await?;
                peer.notify("log", ["no params object here"]).await.map_err(ErrorObject::from)?;
                Ok::<_, ErrorObject>(seen)
            }
        })
    })
}

#[tokio::test]
async fn mcp_meta_is_read_from_the_peer_and_written_on_the_calls_its_handler_makes() {
    let (_conn, mut peer) = pair(calling_back(Placement::McpMeta), Framing::NewlineDelimited);
    peer.send(format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"work","params":{{"name":"x","_meta":{{"traceparent":"{PARENT}","tracestate":"k=v"}}}}}}"#
    ))
    .await;
    let meta = format!(r#""_meta":{{"traceparent":"{PARENT}","tracestate":"k=v"}}"#);
    assert_eq!(
        peer.recv_text().await,
        format!(r#"{{"jsonrpc":"2.0","id":0,"method":"roots/list","params":{{{meta}}}}}"#)
    );
    peer.send(r#"{"jsonrpc":"2.0","id":0,"result":null}"#).await;
    assert_eq!(
        peer.recv_text().await,
        format!(r#"{{"jsonrpc":"2.0","id":1,"method":"sampling/create","params":{{{meta},"a":1}}}}"#)
    );
    peer.send(r#"{"jsonrpc":"2.0","id":1,"result":null}"#).await;
    assert_eq!(
        peer.recv_text().await,
        format!(
            r#"{{"jsonrpc":"2.0","id":2,"method":"elicit","params":{{"_meta":{{"traceparent":"{PARENT}","tracestate":"k=v","progressToken":5}}}}}}"#
        )
    );
    peer.send(r#"{"jsonrpc":"2.0","id":2,"result":null}"#).await;
    // Params that are not an object carry nothing.
    assert_eq!(peer.recv_text().await, r#"{"jsonrpc":"2.0","method":"log","params":["no params object here"]}"#);
    assert_eq!(peer.recv_text().await, format!(r#"{{"jsonrpc":"2.0","id":1,"result":"{PARENT}"}}"#));
}

#[tokio::test]
async fn an_invalid_or_absent_traceparent_is_not_passed_on() {
    for bad in [
        "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
        "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
        "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
    ] {
        let (_conn, mut peer) = pair(calling_back(Placement::McpMeta), Framing::NewlineDelimited);
        peer.send(format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"work","params":{{"_meta":{{"traceparent":"{bad}"}}}}}}"#
        ))
        .await;
        assert_eq!(peer.recv_text().await, r#"{"jsonrpc":"2.0","id":0,"method":"roots/list","params":{}}"#, "{bad}");
    }
}

#[tokio::test]
async fn top_level_members_are_written_on_outbound_calls_and_notifications() {
    let context = TraceContext::parse(PARENT, Some("a=1")).unwrap();
    let builder = Connection::builder()
        .layer(PropagateLayer::new(Placement::TopLevel).current_from(move || Some(context.clone())));
    let (conn, mut peer) = pair(builder, Framing::NewlineDelimited);
    let handle = conn.handle();
    let call = tokio::spawn(async move { handle.request::<u32>("m", [1]).await });
    assert_eq!(
        peer.recv_text().await,
        format!(r#"{{"jsonrpc":"2.0","id":0,"method":"m","params":[1],"traceparent":"{PARENT}","tracestate":"a=1"}}"#)
    );
    peer.send(r#"{"jsonrpc":"2.0","id":0,"result":3}"#).await;
    assert_eq!(within(call).await.unwrap().unwrap(), 3);
    conn.handle().notify("n", ()).await.unwrap();
    assert_eq!(
        peer.recv_text().await,
        format!(r#"{{"jsonrpc":"2.0","method":"n","traceparent":"{PARENT}","tracestate":"a=1"}}"#)
    );
}

#[tokio::test]
async fn off_carries_nothing() {
    let context = TraceContext::parse(PARENT, None).unwrap();
    let builder =
        Connection::builder().layer(PropagateLayer::new(Placement::Off).current_from(move || Some(context.clone())));
    let (conn, peer) = pair(builder, Framing::NewlineDelimited);
    conn.handle().notify("n", json!({"x": 1})).await.unwrap();
    assert_eq!(peer.recv_text().await, r#"{"jsonrpc":"2.0","method":"n","params":{"x":1}}"#);
}
