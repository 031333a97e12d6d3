//! What a peer's garbage does to us: broken frames close the connection with a reason; broken
//! messages inside good frames are answered and reading goes on.

use crate::support;

use std::time::Duration;

use jsonrpc_duplex::{CloseKind, Connection, ErrorObject, Framing, Limits, Router};
use serde_json::json;
use support::raw_peer::{RawPeer, pair};
use support::time::within;

fn server() -> jsonrpc_duplex::Builder {
    Connection::builder().serve(
        Router::new()
            .method("add", |(a, b): (i64, i64), _ctx| async move { Ok::<_, ErrorObject>(a + b) })
            .method("add_named", |p: AddNamed, _ctx| async move { Ok::<_, ErrorObject>(p.a + p.b) })
            .notification("note", |_: serde_json::Value, _ctx| async move {}),
    )
}

#[derive(serde::Deserialize)]
struct AddNamed {
    a: i64,
    b: i64,
}

/// The connection still answers a good request.
async fn assert_alive(peer: &mut RawPeer, id: i64) {
    peer.send_json(json!({"jsonrpc":"2.0","id":id,"method":"add","params":[id,1]})).await;
    peer.expect(json!({"jsonrpc":"2.0","id":id,"result":id + 1})).await;
}

async fn assert_closed(conn: &Connection, kind: CloseKind, words: &[&str]) -> String {
    let reason = within(conn.closed()).await;
    assert_eq!(reason.kind, kind, "{reason}");
    for w in words {
        assert!(reason.message.contains(w), "the reason {reason:?} does not mention {w:?}");
    }
    reason.message
}

#[tokio::test]
async fn a_header_block_cut_off_by_eof_closes_with_a_stream_error() {
    let (conn, mut peer) = pair(server(), Framing::ContentLength);
    peer.send_raw("Content-Len").await;
    peer.close_write().await;
    assert_closed(&conn, CloseKind::StreamError, &["Content-Len"]).await;
    peer.expect_eof().await;
}

#[tokio::test]
async fn a_content_length_over_the_limit_closes_naming_the_size_without_reading_the_body() {
    let builder = server().max_message_size(1024);
    let (conn, mut peer) = pair(builder, Framing::ContentLength);
    assert_alive(&mut peer, 1).await;
    // Only the header is sent: the connection must refuse it without waiting for (or allocating)
    // a gigabyte of body.
    peer.send_raw("Content-Length: 1073741824\r\n\r\n{").await;
    assert_closed(&conn, CloseKind::RemoteProtocolViolation, &["1073741824", "1024"]).await;
    peer.expect_eof().await;
}

#[tokio::test]
async fn a_content_length_beyond_u64_is_refused() {
    let (conn, mut peer) = pair(server(), Framing::ContentLength);
    peer.send_raw("Content-Length: 99999999999999999999999\r\n\r\n{}").await;
    assert_closed(&conn, CloseKind::RemoteProtocolViolation, &["Content-Length"]).await;
}

#[tokio::test]
async fn a_non_numeric_content_length_closes_the_connection() {
    for value in ["abc", "-5", "1.5", "0x10", "", "12 34"] {
        let (conn, mut peer) = pair(server(), Framing::ContentLength);
        peer.send_raw(format!("Content-Length: {value}\r\n\r\n{{}}")).await;
        assert_closed(&conn, CloseKind::RemoteProtocolViolation, &["Content-Length"]).await;
        peer.expect_eof().await;
    }
}

#[tokio::test]
async fn a_missing_content_length_closes_the_connection() {
    let (conn, mut peer) = pair(server(), Framing::ContentLength);
    peer.send_raw("Content-Type: application/json\r\n\r\n{}").await;
    assert_closed(&conn, CloseKind::RemoteProtocolViolation, &["Content-Length"]).await;
}

#[tokio::test]
async fn header_lines_must_end_in_crlf() {
    let (conn, mut peer) = pair(server(), Framing::ContentLength);
    peer.send_raw("Content-Length: 2\nX: y\r\n\r\n{}").await;
    assert_closed(&conn, CloseKind::RemoteProtocolViolation, &["CRLF"]).await;
}

#[tokio::test]
async fn a_header_block_over_its_limit_closes_the_connection() {
    let mut limits = Limits::default();
    limits.frame.max_header_size = 128;
    let (conn, mut peer) = pair(server().limits(limits), Framing::ContentLength);
    peer.send_raw(format!("X-Junk: {}\r\n", "j".repeat(200))).await;
    assert_closed(&conn, CloseKind::RemoteProtocolViolation, &["128"]).await;
}

#[tokio::test]
async fn a_charset_other_than_utf8_closes_the_connection() {
    let (conn, mut peer) = pair(server(), Framing::ContentLength);
    peer.send_raw("Content-Length: 2\r\nContent-Type: application/json; charset=latin1\r\n\r\n{}").await;
    assert_closed(&conn, CloseKind::RemoteProtocolViolation, &["latin1"]).await;
}

#[tokio::test]
async fn invalid_utf8_is_answered_parse_error_and_reading_goes_on() {
    for framing in [Framing::ContentLength, Framing::NewlineDelimited] {
        let (_conn, mut peer) = pair(server(), framing);
        let bodies: [&[u8]; 5] = [
            b"\xff\xfe",
            b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\xff\"}",
            b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"add\",\"params\":[\"\xc3\x28\"]}",
            // Even where nothing reads it: the message is not UTF-8 text.
            b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"add\",\"params\":[1,2],\"x\":\"\xed\xa0\x80\"}",
            b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"add\",\"params\":[1,2],\"\xe2\x82\":0}",
        ];
        for (i, body) in bodies.into_iter().enumerate() {
            peer.send(body).await;
            let (id, code, message) = peer.recv_error().await;
            assert_eq!((id, code), (json!(null), -32700), "{framing:?} body {i}: {message}");
            assert_alive(&mut peer, i as i64 + 10).await;
        }
    }
}

#[tokio::test]
async fn invalid_json_is_answered_parse_error_and_reading_goes_on() {
    let (_conn, mut peer) = pair(server(), Framing::ContentLength);
    for (i, body) in [
        r#"{"jsonrpc":"2.0","method":"foobar, "params":"bar","baz]"#,
        "{",
        r#"{"jsonrpc":"2.0","id":1,"method":"add","params":[1,2]"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"add"} trailing"#,
        "nul",
        "",
        r#"[{"jsonrpc":"2.0","method":"sum","params":[1,2,4],"id":"1"},{"jsonrpc":"2.0","method"]"#,
    ]
    .into_iter()
    .enumerate()
    {
        peer.send(body).await;
        let got = peer.recv().await;
        assert_eq!(got["jsonrpc"], "2.0", "{got}");
        assert_eq!(got["id"], json!(null), "{got}");
        assert_eq!(got["error"]["code"], -32700, "body {body:?}: {got}");
        assert!(got["error"]["message"].as_str().unwrap().starts_with("Parse error"), "{got}");
        assert_alive(&mut peer, i as i64).await;
    }
}

#[tokio::test]
async fn invalid_request_shapes_are_answered_invalid_request() {
    let (_conn, mut peer) = pair(server(), Framing::NewlineDelimited);
    for (body, id) in [
        (r#"{"jsonrpc":"2.0","method":1,"params":"bar"}"#, json!(null)),
        (r#"{"jsonrpc":"2.0","id":3,"method":5}"#, json!(3)),
        (r#"{"jsonrpc":"2.0","id":"s","method":"add","params":"bar"}"#, json!("s")),
        (r#"{"jsonrpc":"2.0","id":4,"method":"add","params":7}"#, json!(4)),
        (r#"{"jsonrpc":"2.0","id":{"a":1},"method":"add"}"#, json!(null)),
        (r#"{"jsonrpc":"2.0","id":[1],"method":"add"}"#, json!(null)),
        (r#"{"jsonrpc":"2.0","id":true,"method":"add"}"#, json!(null)),
        (r#"{"jsonrpc":"2.0","id":5}"#, json!(5)),
        (r#"{"foo":"boo"}"#, json!(null)),
        (r#"5"#, json!(null)),
        (r#""a string""#, json!(null)),
        (r#"null"#, json!(null)),
    ] {
        peer.send(body).await;
        let (got_id, code, message) = peer.recv_error().await;
        assert_eq!((got_id, code), (id, -32600), "{body}: {message}");
        assert_alive(&mut peer, 100).await;
    }
}

#[tokio::test]
async fn a_wrong_jsonrpc_version_is_invalid_request() {
    let (_conn, mut peer) = pair(server(), Framing::ContentLength);
    for (i, version) in [r#""1.0""#, "2.0", "2", r#""2.0 ""#, "null"].into_iter().enumerate() {
        peer.send(format!(r#"{{"jsonrpc":{version},"id":{i},"method":"add","params":[1,2]}}"#)).await;
        let (id, code, message) = peer.recv_error().await;
        assert_eq!((id, code), (json!(i), -32600), "version {version}");
        assert!(message.contains("jsonrpc"), "{message}");
    }
    // A request without the member at all.
    peer.send(r#"{"id":9,"method":"add","params":[1,2]}"#).await;
    let (id, code, _) = peer.recv_error().await;
    assert_eq!((id, code), (json!(9), -32600));
    assert_alive(&mut peer, 50).await;
}

#[tokio::test]
async fn responses_with_unknown_ids_are_ignored_and_the_connection_is_fine() {
    let (conn, mut peer) = pair(server(), Framing::ContentLength);
    for body in [
        r#"{"jsonrpc":"2.0","id":999,"result":1}"#,
        r#"{"jsonrpc":"2.0","id":"0","result":1}"#,
        r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}"#,
        r#"{"jsonrpc":"2.0","id":-1,"error":{"code":1,"message":"x"}}"#,
        r#"{"jsonrpc":"2.0","result":1}"#,
    ] {
        peer.send(body).await;
    }
    // Nothing answers a response.
    peer.expect_silence(Duration::from_millis(100)).await;
    assert!(!conn.is_closed());
    assert_alive(&mut peer, 1).await;

    // And our own calls still work, numbered from where they were.
    let handle = conn.handle();
    let call = tokio::spawn(async move { handle.request::<i64>("double", [21]).await });
    let req = peer.recv().await;
    assert_eq!(req["method"], "double");
    peer.send_json(json!({"jsonrpc":"2.0","id":req["id"],"result":42})).await;
    assert_eq!(within(call).await.unwrap().unwrap(), 42);
}

#[tokio::test]
async fn an_over_long_newline_line_is_discarded_with_invalid_request_and_the_stream_goes_on() {
    let (conn, mut peer) = pair(server().max_message_size(256), Framing::NewlineDelimited);
    assert_alive(&mut peer, 1).await;
    let long = format!(r#"{{"jsonrpc":"2.0","id":2,"method":"add","params":["{}"]}}"#, "x".repeat(10_000));
    peer.send(&long).await;
    let (id, code, message) = peer.recv_error().await;
    assert_eq!((id, code), (json!(null), -32600));
    assert!(message.contains("256"), "{message}");
    assert_alive(&mut peer, 3).await;

    // Split across many writes, with the next message in the same write as its end.
    let mut bytes = peer.frame(long.as_bytes());
    bytes.extend(peer.frame(br#"{"jsonrpc":"2.0","id":4,"method":"add","params":[4,1]}"#));
    for chunk in bytes.chunks(100) {
        peer.send_raw(chunk).await;
    }
    let (id, code, _) = peer.recv_error().await;
    assert_eq!((id, code), (json!(null), -32600));
    peer.expect(json!({"jsonrpc":"2.0","id":4,"result":5})).await;
    assert!(!conn.is_closed());
}

#[tokio::test]
async fn an_unknown_method_is_answered_method_not_found_naming_it() {
    let (_conn, mut peer) = pair(server(), Framing::ContentLength);
    peer.send(r#"{"jsonrpc":"2.0","id":"1","method":"foobar"}"#).await;
    let (id, code, message) = peer.recv_error().await;
    assert_eq!((id, code), (json!("1"), -32601));
    assert!(message.contains("foobar"), "{message}");
    // `$/` requests unknown to us are answered the same way (LSP).
    peer.send(r#"{"jsonrpc":"2.0","id":2,"method":"$/unknown"}"#).await;
    let (id, code, _) = peer.recv_error().await;
    assert_eq!((id, code), (json!(2), -32601));
    // An unknown notification is dropped silently.
    peer.send(r#"{"jsonrpc":"2.0","method":"nobody/listens"}"#).await;
    peer.send(r#"{"jsonrpc":"2.0","method":"$/setTrace","params":{"value":"off"}}"#).await;
    peer.expect_silence(Duration::from_millis(50)).await;
    assert_alive(&mut peer, 3).await;
}

#[tokio::test]
async fn params_that_do_not_decode_are_answered_invalid_params_naming_the_problem() {
    let (_conn, mut peer) = pair(server(), Framing::ContentLength);
    for (params, words) in [
        (json!(["x", 1]), &["invalid type", "string"][..]),
        (json!([1]), &["invalid length 1", "2"][..]),
        (json!({"a": 1}), &["invalid type", "map"][..]),
    ] {
        peer.send_json(json!({"jsonrpc":"2.0","id":1,"method":"add","params":params})).await;
        let (id, code, message) = peer.recv_error().await;
        assert_eq!((id, code), (json!(1), -32602), "{message}");
        for w in words {
            assert!(message.contains(w), "{message:?} does not mention {w:?}");
        }
    }
    peer.send_json(json!({"jsonrpc":"2.0","id":2,"method":"add_named","params":{"a":1}})).await;
    let (_, code, message) = peer.recv_error().await;
    assert_eq!(code, -32602);
    assert!(message.contains("missing field `b`"), "{message}");
    peer.send_json(json!({"jsonrpc":"2.0","id":3,"method":"add_named"})).await;
    let (_, code, message) = peer.recv_error().await;
    assert_eq!(code, -32602, "{message}");
    assert_alive(&mut peer, 4).await;
}

#[tokio::test]
async fn a_response_carrying_both_result_and_error_fails_the_call_not_the_connection() {
    let (conn, mut peer) = pair(server(), Framing::ContentLength);
    let handle = conn.handle();
    let call = tokio::spawn(async move { handle.request::<i64>("x", ()).await });
    let req = peer.recv().await;
    peer.send_json(json!({"jsonrpc":"2.0","id":req["id"],"result":1,"error":{"code":1,"message":"m"}})).await;
    let err = within(call).await.unwrap().unwrap_err();
    assert!(err.as_remote().is_some(), "{err:?}");
    assert_alive(&mut peer, 1).await;
}

#[tokio::test]
async fn a_malformed_error_object_fails_the_call_with_what_was_received() {
    let (conn, mut peer) = pair(server(), Framing::ContentLength);
    let handle = conn.handle();
    let call = tokio::spawn(async move { handle.request::<i64>("x", ()).await });
    let req = peer.recv().await;
    peer.send_json(json!({"jsonrpc":"2.0","id":req["id"],"error":"boom"})).await;
    let err = within(call).await.unwrap().unwrap_err();
    let remote = err.as_remote().expect("a remote error");
    assert!(remote.message.contains("boom"), "{remote}");
    assert_alive(&mut peer, 1).await;
}

#[tokio::test]
async fn a_request_id_reused_while_in_flight_is_refused_and_the_first_is_still_answered() {
    let (release_tx, release_rx) = tokio::sync::oneshot::channel::<()>();
    let release_rx = std::sync::Mutex::new(Some(release_rx));
    let router = Router::new().method("wait", move |(): (), _ctx| {
        let rx = release_rx.lock().unwrap().take();
        async move {
            if let Some(rx) = rx {
                let _ = rx.await;
            }
            Ok::<_, ErrorObject>("done")
        }
    });
    let (_conn, mut peer) = pair(Connection::builder().serve(router), Framing::ContentLength);
    peer.send(r#"{"jsonrpc":"2.0","id":1,"method":"wait"}"#).await;
    peer.send(r#"{"jsonrpc":"2.0","id":1,"method":"wait"}"#).await;
    let (id, code, _) = peer.recv_error().await;
    assert_eq!((id, code), (json!(1), -32600));
    release_tx.send(()).unwrap();
    peer.expect(json!({"jsonrpc":"2.0","id":1,"result":"done"})).await;
}
