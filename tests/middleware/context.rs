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

/// A server that answers `work` with the traceparent its handler saw, after one call back.
fn echoing(builder: jsonrpc_duplex::Builder) -> jsonrpc_duplex::Builder {
    builder.serve_with(|peer: Handle| {
        Router::new().method("work", move |_: serde_json::Value, ctx: RequestContext| {
            let peer = peer.clone();
            let seen = ctx.extensions().get::<TraceContext>().map(TraceContext::traceparent);
            async move {
                peer.request::<()>("back", json!({"a": 1})).await?;
                Ok::<_, ErrorObject>(seen)
            }
        })
    })
}

#[tokio::test]
async fn top_level_members_are_read_from_the_peer_and_written_on_the_calls_its_handler_makes() {
    // StreamJsonRpc's placement, as the plain JSON-RPC profile (the default) gives it.
    let (_conn, mut peer) =
        pair(echoing(Connection::builder().layer(PropagateLayer::from_profile())), Framing::NewlineDelimited);
    // Before and after the envelope's members, as a hand-written peer may put them.
    peer.send(format!(
        r#"{{"tracestate":"k=v,l=w","jsonrpc":"2.0","id":1,"method":"work","params":{{}},"traceparent":"{PARENT}"}}"#
    ))
    .await;
    assert_eq!(
        peer.recv_text().await,
        format!(
            r#"{{"jsonrpc":"2.0","id":0,"method":"back","params":{{"a":1}},"traceparent":"{PARENT}","tracestate":"k=v,l=w"}}"#
        )
    );
    peer.send(r#"{"jsonrpc":"2.0","id":0,"result":null}"#).await;
    assert_eq!(peer.recv_text().await, format!(r#"{{"jsonrpc":"2.0","id":1,"result":"{PARENT}"}}"#));
    // A request without them: nothing is carried.
    peer.send(r#"{"jsonrpc":"2.0","id":2,"method":"work","params":{}}"#).await;
    assert_eq!(peer.recv_text().await, r#"{"jsonrpc":"2.0","id":1,"method":"back","params":{"a":1}}"#);
    peer.send(r#"{"jsonrpc":"2.0","id":1,"result":null}"#).await;
    assert_eq!(peer.recv_text().await, r#"{"jsonrpc":"2.0","id":2,"result":null}"#);
}

#[tokio::test]
async fn top_level_members_are_not_read_where_the_layer_carries_meta() {
    // MCP's placement ignores top-level members (and the reader does not keep them).
    let (_conn, mut peer) =
        pair(echoing(Connection::builder().layer(PropagateLayer::new(Placement::McpMeta))), Framing::NewlineDelimited);
    peer.send(format!(r#"{{"jsonrpc":"2.0","id":1,"method":"work","params":{{}},"traceparent":"{PARENT}"}}"#)).await;
    assert_eq!(peer.recv_text().await, r#"{"jsonrpc":"2.0","id":0,"method":"back","params":{"a":1}}"#);
    peer.send(r#"{"jsonrpc":"2.0","id":0,"result":null}"#).await;
    assert_eq!(peer.recv_text().await, r#"{"jsonrpc":"2.0","id":1,"result":null}"#);
}

#[tokio::test]
async fn the_profile_picks_the_placement() {
    use jsonrpc_duplex::Profile;
    assert_eq!(Profile::json_rpc().trace_context(), Placement::TopLevel);
    assert_eq!(Profile::mcp().trace_context(), Placement::McpMeta);
    assert_eq!(Profile::acp().trace_context(), Placement::McpMeta);
    assert_eq!(Profile::lsp().trace_context(), Placement::Off);
    // MCP: read from and written to `params._meta`, the layer told nothing.
    let builder = Connection::builder().profile(Profile::mcp()).layer(PropagateLayer::from_profile());
    let (_conn, mut peer) = pair(echoing(builder), Framing::NewlineDelimited);
    peer.send(format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"work","params":{{"_meta":{{"traceparent":"{PARENT}"}}}}}}"#
    ))
    .await;
    assert_eq!(
        peer.recv_text().await,
        format!(
            r#"{{"jsonrpc":"2.0","id":0,"method":"back","params":{{"_meta":{{"traceparent":"{PARENT}"}},"a":1}}}}"#
        )
    );
    peer.send(r#"{"jsonrpc":"2.0","id":0,"result":null}"#).await;
    assert_eq!(peer.recv_text().await, format!(r#"{{"jsonrpc":"2.0","id":1,"result":"{PARENT}"}}"#));
    // LSP: off, whichever way the peer sends it; the layer added before the profile.
    let builder = Connection::builder().layer(PropagateLayer::default()).profile(Profile::lsp());
    let (_conn, mut peer) = pair(echoing(builder), Framing::ContentLength);
    peer.send(format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"work","params":{{"_meta":{{"traceparent":"{PARENT}"}}}},"traceparent":"{PARENT}"}}"#
    ))
    .await;
    assert_eq!(peer.recv_text().await, r#"{"jsonrpc":"2.0","id":0,"method":"back","params":{"a":1}}"#);
    peer.send(r#"{"jsonrpc":"2.0","id":0,"result":null}"#).await;
    assert_eq!(peer.recv_text().await, r#"{"jsonrpc":"2.0","id":1,"result":null}"#);
}

/// A server whose `note` notification handler tells the peer, with a notification and a call
/// of its own, which traceparent it saw.
fn noting(builder: jsonrpc_duplex::Builder) -> jsonrpc_duplex::Builder {
    builder.serve(Router::new().notification(
        "note",
        |_: serde_json::Value, ctx: jsonrpc_duplex::NotificationContext| async move {
            let seen = TraceContext::current().map(|c| c.traceparent());
            let peer = ctx.peer();
            let _ = peer.notify("seen", [seen]).await;
            let _ = peer.request::<()>("back", json!({"a": 1})).await;
        },
    ))
}

#[tokio::test]
async fn top_level_members_of_an_inbound_notification_are_read_and_carried_by_what_its_handler_sends() {
    let (_conn, mut peer) =
        pair(noting(Connection::builder().layer(PropagateLayer::from_profile())), Framing::NewlineDelimited);
    // After the envelope's members and before them, as a hand-written peer may put them.
    peer.send(format!(
        r#"{{"jsonrpc":"2.0","method":"note","params":{{}},"traceparent":"{PARENT}","tracestate":"k=v"}}"#
    ))
    .await;
    let members = format!(r#""traceparent":"{PARENT}","tracestate":"k=v""#);
    assert_eq!(
        peer.recv_text().await,
        format!(r#"{{"jsonrpc":"2.0","method":"seen","params":["{PARENT}"],{members}}}"#)
    );
    assert_eq!(
        peer.recv_text().await,
        format!(r#"{{"jsonrpc":"2.0","id":0,"method":"back","params":{{"a":1}},{members}}}"#)
    );
    peer.send(r#"{"jsonrpc":"2.0","id":0,"result":null}"#).await;
    peer.send(format!(r#"{{"traceparent":"{PARENT}","method":"note","jsonrpc":"2.0"}}"#)).await;
    let members = format!(r#""traceparent":"{PARENT}""#);
    assert_eq!(
        peer.recv_text().await,
        format!(r#"{{"jsonrpc":"2.0","method":"seen","params":["{PARENT}"],{members}}}"#)
    );
    assert_eq!(
        peer.recv_text().await,
        format!(r#"{{"jsonrpc":"2.0","id":1,"method":"back","params":{{"a":1}},{members}}}"#)
    );
    peer.send(r#"{"jsonrpc":"2.0","id":1,"result":null}"#).await;
    // A notification without them, and one with an invalid one: nothing is carried.
    for note in [
        r#"{"jsonrpc":"2.0","method":"note"}"#.to_owned(),
        r#"{"jsonrpc":"2.0","method":"note","traceparent":"00-00000000000000000000000000000000-00f067aa0ba902b7-01"}"#
            .to_owned(),
    ] {
        peer.send(note).await;
        assert_eq!(peer.recv_text().await, r#"{"jsonrpc":"2.0","method":"seen","params":[null]}"#);
        let back = peer.recv().await;
        assert_eq!(back["params"], json!({"a": 1}));
        assert!(back.get("traceparent").is_none(), "{back}");
        peer.send(json!({"jsonrpc": "2.0", "id": back["id"], "result": null}).to_string()).await;
    }
}

#[tokio::test]
async fn an_inbound_notification_s_mcp_meta_is_read_and_carried_by_what_its_handler_sends() {
    let builder = Connection::builder().profile(jsonrpc_duplex::Profile::mcp()).layer(PropagateLayer::from_profile());
    let (_conn, mut peer) = pair(noting(builder), Framing::NewlineDelimited);
    peer.send(format!(
        r#"{{"jsonrpc":"2.0","method":"note","params":{{"_meta":{{"traceparent":"{PARENT}","tracestate":"k=v"}}}},"traceparent":"00-11111111111111111111111111111111-1111111111111111-01"}}"#
    ))
    .await;
    // `params._meta` is MCP's place; the top-level member (which MCP forbids) is not read.
    let meta = format!(r#""_meta":{{"traceparent":"{PARENT}","tracestate":"k=v"}}"#);
    assert_eq!(peer.recv_text().await, format!(r#"{{"jsonrpc":"2.0","method":"seen","params":["{PARENT}"]}}"#));
    assert_eq!(
        peer.recv_text().await,
        format!(r#"{{"jsonrpc":"2.0","id":0,"method":"back","params":{{{meta},"a":1}}}}"#)
    );
    peer.send(r#"{"jsonrpc":"2.0","id":0,"result":null}"#).await;
}
