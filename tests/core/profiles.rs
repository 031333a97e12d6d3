//! Profiles set a protocol's wire conventions in one call; single settings still override them;
//! a route the connection would shadow is refused when it starts; unknown notifications are
//! logged at WARN once per name; a router's fallbacks take what no route does. All against a
//! hand-written peer on raw bytes.

use crate::support;

use std::time::Duration;

use jsonrpc_duplex::{
    Builder, CallOptions, CancelProtocol, CancellationToken, CloseKind, Connection, EnumeratorProtocol, ErrorObject,
    Framing, Notification, Profile, Request, Responder, Router,
};
use serde_json::json;
use support::logs::capture_logs;
use support::raw_peer::RawPeer;
use support::time::within;

/// `builder` on one end of a pipe (its framing left to the profile), a raw peer speaking
/// `framing` on the other.
fn start(builder: Builder, framing: Framing) -> (Connection, RawPeer) {
    let (ours, theirs) = tokio::io::duplex(64 * 1024);
    let conn = builder.connect_io(ours);
    let (r, w) = tokio::io::split(theirs);
    (conn, RawPeer::new(r, w, framing))
}

fn slow_router() -> Router {
    // Never answers by itself: only a cancellation ends it.
    Router::new().method("slow", |(): (), _ctx| std::future::pending::<Result<(), ErrorObject>>())
}

#[tokio::test]
async fn mcp_profile_is_newline_framing_with_mcp_cancellation_and_progress() {
    let (conn, peer) = start(Connection::builder().profile(Profile::mcp()), Framing::NewlineDelimited);
    let cancel = CancellationToken::new();
    let call = {
        let handle = conn.handle();
        let cancel = cancel.clone();
        tokio::spawn(async move {
            handle.request_with::<()>("tools/call", json!({"name": "x"}), CallOptions::new().cancel(cancel)).await
        })
    };
    let (wire, _body) = within(peer.recv_frame()).await;
    assert_eq!(wire, b"{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"tools/call\",\"params\":{\"name\":\"x\"}}\n");
    cancel.cancel();
    peer.expect(json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":0,"reason":"cancelled by the caller"}}))
        .await;
    // MCP does not answer a cancelled request: the call ends at once.
    assert!(matches!(within(call).await.unwrap(), Err(jsonrpc_duplex::Error::Cancelled)));
}

#[tokio::test]
async fn acp_profile_is_newline_framing_with_acp_cancellation() {
    let (_conn, mut peer) =
        start(Connection::builder().profile(Profile::acp()).serve(slow_router()), Framing::NewlineDelimited);
    peer.send(r#"{"jsonrpc":"2.0","id":4,"method":"slow"}"#).await;
    peer.send(r#"{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":4}}"#).await;
    let (id, code, _) = within(peer.recv_error()).await;
    assert_eq!((id, code), (json!(4), -32800));
}

#[tokio::test]
async fn lsp_and_plain_profiles_are_content_length_with_lsp_cancellation() {
    for profile in [Profile::lsp(), Profile::json_rpc()] {
        let (_conn, mut peer) =
            start(Connection::builder().profile(profile).serve(slow_router()), Framing::ContentLength);
        peer.send(r#"{"jsonrpc":"2.0","id":1,"method":"slow"}"#).await;
        peer.send(r#"{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":1}}"#).await;
        let (id, code, _) = within(peer.recv_error()).await;
        assert_eq!((id, code), (json!(1), -32800));
    }
}

/// A protocol of the user's own: lines, `acme/cancel {"call": id}` never answered, streams
/// pulled with `acme/next`.
fn acme() -> Profile {
    let mut cancel = CancelProtocol::new("acme/cancel", "call");
    cancel.answers_cancelled = false;
    Profile::new("ACME")
        .with_framing(Framing::NewlineDelimited)
        .with_cancel(cancel)
        .with_enumerator(EnumeratorProtocol::new("acme/next", "acme/abort"))
}

#[tokio::test]
async fn a_user_built_profile_sets_its_framing_and_its_spellings() {
    let (tx, mut cancelled) = tokio::sync::mpsc::unbounded_channel();
    let router = Router::new()
        .method("slow", move |(): (), ctx: jsonrpc_duplex::RequestContext| {
            let tx = tx.clone();
            async move {
                ctx.cancellation().cancelled().await;
                let _ = tx.send(());
                Ok::<_, ErrorObject>(())
            }
        })
        .method("ping", |(): (), _| async { Ok::<_, ErrorObject>("pong") });
    let (conn, mut peer) = start(Connection::builder().profile(acme()).serve(router), Framing::NewlineDelimited);
    peer.send(r#"{"jsonrpc":"2.0","id":3,"method":"slow"}"#).await;
    peer.send(r#"{"jsonrpc":"2.0","method":"acme/cancel","params":{"call":3}}"#).await;
    within(cancelled.recv()).await.expect("the handler's token fired");
    // Not answered (`answers_cancelled = false`): the next answer is the ping's.
    peer.send(r#"{"jsonrpc":"2.0","id":4,"method":"ping"}"#).await;
    peer.expect(json!({"jsonrpc":"2.0","id":4,"result":"pong"})).await;
    // `$/cancelRequest` means nothing under this profile: it is an unknown notification.
    peer.send(r#"{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":4}}"#).await;
    // The profile's enumerator spelling is served by the connection (a token nobody offered:
    // -32001), StreamJsonRpc's is an unknown method.
    peer.send(r#"{"jsonrpc":"2.0","id":5,"method":"acme/next","params":{"token":99}}"#).await;
    let (id, code, _) = within(peer.recv_error()).await;
    assert_eq!((id, code), (json!(5), -32001));
    peer.send(r#"{"jsonrpc":"2.0","id":6,"method":"$/enumerator/next","params":{"token":99}}"#).await;
    let (id, code, _) = within(peer.recv_error()).await;
    assert_eq!((id, code), (json!(6), -32601));
    assert!(!conn.is_closed());
}

#[tokio::test]
async fn a_route_for_a_user_built_profiles_names_is_refused() {
    for taken in ["acme/cancel", "acme/next"] {
        let router = Router::new().method(taken, |_: serde_json::Value, _| async { Ok::<_, ErrorObject>(()) });
        let (conn, _peer) = start(Connection::builder().profile(acme()).serve(router), Framing::NewlineDelimited);
        let reason = within(conn.closed()).await;
        assert_eq!(reason.kind, CloseKind::FatalError);
        assert!(reason.message.contains(&format!("{taken:?}")), "{reason}");
    }
}

#[test]
fn the_presets_are_built_from_the_names_in_one_place() {
    use jsonrpc_duplex::names;
    let mcp = Profile::mcp();
    assert_eq!((mcp.cancel.method.as_ref(), mcp.progress.method.as_ref()), (names::cancel::MCP, names::progress::MCP));
    assert_eq!(mcp.progress.request_token.as_deref(), Some(names::progress::MCP_REQUEST_TOKEN));
    assert_eq!(Profile::lsp().progress.request_token.as_deref(), Some(names::progress::LSP_WORK_DONE_TOKEN));
    assert_eq!(Profile::acp().cancel.method, names::cancel::ACP);
    for p in Profile::presets() {
        assert_eq!(
            (p.enumerator.next.as_ref(), p.enumerator.abort.as_ref()),
            (names::enumerator::NEXT, names::enumerator::ABORT)
        );
        // Every cancellation a preset speaks is a name `#[rpc]` refuses to declare.
        assert_eq!(names::handled(&p.cancel.method), Some(names::Handled::Cancellation), "{}", p.name());
    }
    assert_eq!(Profile::new("X").cancel, Profile::json_rpc().cancel);
}

#[tokio::test]
async fn a_single_setting_overrides_its_part_of_a_profile_before_or_after_it() {
    let before = Connection::builder().framing(Framing::ContentLength).profile(Profile::mcp());
    let after = Connection::builder().profile(Profile::mcp()).framing(Framing::ContentLength);
    for builder in [before, after] {
        let (_conn, mut peer) = start(builder.serve(slow_router()), Framing::ContentLength);
        peer.send(r#"{"jsonrpc":"2.0","id":"a","method":"slow"}"#).await;
        // Still MCP's cancellation: no answer to a cancelled request.
        peer.send(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"a"}}"#).await;
        peer.expect_silence(Duration::from_millis(200)).await;
    }
    let builder = Connection::builder().cancel_protocol(CancelProtocol::lsp()).profile(Profile::mcp());
    let (_conn, mut peer) = start(builder.serve(slow_router()), Framing::NewlineDelimited);
    peer.send(r#"{"jsonrpc":"2.0","id":2,"method":"slow"}"#).await;
    peer.send(r#"{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":2}}"#).await;
    let (id, code, _) = within(peer.recv_error()).await;
    assert_eq!((id, code), (json!(2), -32800));
}

#[tokio::test]
async fn a_route_for_the_profiles_cancel_method_is_refused_naming_it() {
    let router = Router::new().notification("notifications/cancelled", |_: serde_json::Value, _| async {});
    let (conn, _peer) = start(Connection::builder().profile(Profile::mcp()).serve(router), Framing::NewlineDelimited);
    let reason = within(conn.closed()).await;
    assert_eq!(reason.kind, CloseKind::FatalError);
    assert!(
        reason.message.contains("\"notifications/cancelled\"") && reason.message.contains("MCP profile"),
        "{reason}"
    );

    // The same name is an ordinary notification under LSP: the connection serves on.
    let router = Router::new()
        .notification("notifications/cancelled", |_: serde_json::Value, _| async {})
        .method("ping", |(): (), _| async { Ok::<_, ErrorObject>("pong") });
    let (conn, mut peer) = start(Connection::builder().profile(Profile::lsp()).serve(router), Framing::ContentLength);
    peer.send(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{}}"#).await;
    peer.send(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#).await;
    peer.expect(json!({"jsonrpc":"2.0","id":1,"result":"pong"})).await;
    assert!(!conn.is_closed());
}

#[tokio::test]
async fn a_route_for_the_enumerator_protocol_is_refused_naming_it() {
    let router =
        Router::new().method("$/enumerator/next", |_: serde_json::Value, _| async { Ok::<_, ErrorObject>(()) });
    let (conn, _peer) = start(Connection::builder().serve(router), Framing::ContentLength);
    let reason = within(conn.closed()).await;
    assert_eq!(reason.kind, CloseKind::FatalError);
    assert!(reason.message.contains("\"$/enumerator/next\""), "{reason}");
}

#[tokio::test(flavor = "current_thread")]
async fn an_unknown_notification_is_logged_at_warn_once_per_name() {
    let (guard, logs) = capture_logs();
    let (conn, mut peer) = start(
        Connection::builder().serve(Router::new().method("ping", |(): (), _| async { Ok::<_, ErrorObject>("pong") })),
        Framing::ContentLength,
    );
    for _ in 0..3 {
        peer.send(r#"{"jsonrpc":"2.0","method":"textDocument/didchange","params":{}}"#).await;
    }
    peer.send(r#"{"jsonrpc":"2.0","method":"$/setTrace","params":{"value":"off"}}"#).await;
    peer.send(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#).await;
    peer.expect(json!({"jsonrpc":"2.0","id":1,"result":"pong"})).await;
    drop(guard);
    let text = logs.text();
    let warned: Vec<_> = text.lines().filter(|l| l.contains("WARN") && l.contains("textDocument/didchange")).collect();
    assert_eq!(warned.len(), 1, "{text}");
    assert!(warned[0].contains("no route"), "{text}");
    assert_eq!(
        text.lines()
            .filter(
                |l| l.contains("DEBUG") && l.contains("unhandled notification dropped method=textDocument/didchange")
            )
            .count(),
        2,
        "{text}"
    );
    // `$/` notifications are optional by LSP's rules: not a mistake.
    assert!(!text.lines().any(|l| l.contains("WARN") && l.contains("$/setTrace")), "{text}");
    drop(conn);
}

#[tokio::test]
async fn a_routers_fallbacks_take_unknown_requests_and_notifications() {
    let (seen_tx, mut seen) = tokio::sync::mpsc::unbounded_channel();
    let router = Router::new()
        .fallback(|request: Request, reply: Responder| async move {
            reply.ok(json!({ "fallback": request.method() }));
        })
        .notification_fallback(move |note: Notification| {
            let seen_tx = seen_tx.clone();
            async move {
                let _ = seen_tx.send((note.method().to_owned(), note.params().map(|p| p.get().to_owned())));
            }
        });
    let (_conn, mut peer) = start(Connection::builder().serve(router), Framing::ContentLength);
    peer.send(r#"{"jsonrpc":"2.0","method":"custom/event","params":{"n":1}}"#).await;
    peer.send(r#"{"jsonrpc":"2.0","id":3,"method":"custom/ask"}"#).await;
    peer.expect(json!({"jsonrpc":"2.0","id":3,"result":{"fallback":"custom/ask"}})).await;
    assert_eq!(within(seen.recv()).await, Some(("custom/event".to_owned(), Some(r#"{"n":1}"#.to_owned()))));
}

#[test]
fn two_notification_fallbacks_clash() {
    let a = Router::new().notification_fallback(|_| async {});
    let b = Router::new().notification_fallback(|_| async {});
    assert_eq!(a.try_merge(b).unwrap_err().method, "<notification fallback>");
}
