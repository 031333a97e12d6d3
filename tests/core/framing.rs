//! The exact bytes we write and the frames we accept, checked against a hand-written raw peer.

use crate::support;

use std::time::Duration;

use jsonrpc_duplex::{Connection, ErrorObject, Framing, Router};
use serde_json::json;
use support::raw_peer::pair;
use support::time::within;

fn server() -> jsonrpc_duplex::Builder {
    Connection::builder().serve(
        Router::new()
            .method("add", |(a, b): (i64, i64), _ctx| async move { Ok::<_, ErrorObject>(a + b) })
            .method("unit", |_: (), _ctx| async move { Ok::<_, ErrorObject>(()) })
            .method("echo", |v: serde_json::Value, _ctx| async move { Ok::<_, ErrorObject>(v) }),
    )
}

#[tokio::test]
async fn content_length_response_is_exactly_the_header_then_the_body() {
    let (_conn, mut peer) = pair(server(), Framing::ContentLength);
    peer.send(r#"{"jsonrpc":"2.0","id":1,"method":"add","params":[2,3]}"#).await;
    let (whole, _) = peer.recv_frame().await;
    let body = r#"{"jsonrpc":"2.0","id":1,"result":5}"#;
    assert_eq!(String::from_utf8(whole).unwrap(), format!("Content-Length: {}\r\n\r\n{body}", body.len()));
}

#[tokio::test]
async fn content_length_counts_utf8_bytes_not_characters() {
    let (_conn, mut peer) = pair(server(), Framing::ContentLength);
    peer.send(r#"{"jsonrpc":"2.0","id":1,"method":"echo","params":["héllo ✓ 🦀"]}"#).await;
    let (whole, _) = peer.recv_frame().await;
    let body = r#"{"jsonrpc":"2.0","id":1,"result":["héllo ✓ 🦀"]}"#;
    assert_eq!(String::from_utf8(whole).unwrap(), format!("Content-Length: {}\r\n\r\n{body}", body.len()));
    assert_ne!(body.len(), body.chars().count());
}

#[tokio::test]
async fn outbound_requests_and_notifications_are_exact_frames() {
    let (conn, peer) = pair(Connection::builder(), Framing::ContentLength);
    let handle = conn.handle();
    let call = tokio::spawn(async move { handle.request::<serde_json::Value>("sum", [1, 2]).await });
    let (whole, _) = peer.recv_frame().await;
    let body = r#"{"jsonrpc":"2.0","id":0,"method":"sum","params":[1,2]}"#;
    assert_eq!(String::from_utf8(whole).unwrap(), format!("Content-Length: {}\r\n\r\n{body}", body.len()));

    within(conn.handle().notify("initialized", ())).await.unwrap();
    let (whole, _) = peer.recv_frame().await;
    let body = r#"{"jsonrpc":"2.0","method":"initialized"}"#;
    assert_eq!(String::from_utf8(whole).unwrap(), format!("Content-Length: {}\r\n\r\n{body}", body.len()));

    within(conn.handle().notify("log", json!({"line": "x"}))).await.unwrap();
    assert_eq!(peer.recv_text().await, r#"{"jsonrpc":"2.0","method":"log","params":{"line":"x"}}"#);
    call.abort();
}

#[tokio::test]
async fn notifications_carry_no_id_member() {
    let (conn, peer) = pair(Connection::builder(), Framing::NewlineDelimited);
    within(conn.handle().notify("a", ())).await.unwrap();
    within(conn.handle().notify("b", [1])).await.unwrap();
    within(conn.handle().notify("c", json!({"id": 3}))).await.unwrap();
    for expected in [json!({"jsonrpc":"2.0","method":"a"}), json!({"jsonrpc":"2.0","method":"b","params":[1]})] {
        let got = peer.recv().await;
        assert!(got.get("id").is_none(), "a notification with an id: {got}");
        assert_eq!(got, expected);
    }
    peer.expect(json!({"jsonrpc":"2.0","method":"c","params":{"id":3}})).await;
}

#[tokio::test]
async fn newline_framing_writes_one_line_ending_in_a_bare_lf() {
    let (conn, mut peer) = pair(server(), Framing::NewlineDelimited);
    peer.send(r#"{"jsonrpc":"2.0","id":1,"method":"add","params":[2,3]}"#).await;
    let (whole, _) = peer.recv_frame().await;
    assert_eq!(whole, b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":5}\n");

    within(conn.handle().notify("n", ())).await.unwrap();
    let (whole, _) = peer.recv_frame().await;
    assert_eq!(whole, b"{\"jsonrpc\":\"2.0\",\"method\":\"n\"}\n");
}

#[tokio::test]
async fn newline_framing_escapes_newlines_inside_strings() {
    let (_conn, mut peer) = pair(server(), Framing::NewlineDelimited);
    peer.send(r#"{"jsonrpc":"2.0","id":1,"method":"echo","params":{"text":"a\nb\r\nc"}}"#).await;
    assert_eq!(peer.recv_text().await, r#"{"jsonrpc":"2.0","id":1,"result":{"text":"a\nb\r\nc"}}"#);
}

#[tokio::test]
async fn a_unit_result_is_sent_as_result_null() {
    let (_conn, mut peer) = pair(server(), Framing::ContentLength);
    peer.send(r#"{"jsonrpc":"2.0","id":9,"method":"unit"}"#).await;
    assert_eq!(peer.recv_text().await, r#"{"jsonrpc":"2.0","id":9,"result":null}"#);
    peer.send(r#"{"jsonrpc":"2.0","id":10,"method":"echo","params":null}"#).await;
    assert_eq!(peer.recv_text().await, r#"{"jsonrpc":"2.0","id":10,"result":null}"#);
}

#[tokio::test]
async fn ids_are_echoed_with_their_json_type() {
    let (_conn, mut peer) = pair(server(), Framing::ContentLength);
    for id in
        ["0", "1", "\"1\"", "\"\"", "\"a-uuid-like-id\"", "null", "-7", "9007199254740993", "18446744073709551615"]
    {
        peer.send(format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"unit"}}"#)).await;
        assert_eq!(peer.recv_text().await, format!(r#"{{"jsonrpc":"2.0","id":{id},"result":null}}"#), "id {id}");
    }
    // Error answers echo the id the same way.
    peer.send(r#"{"jsonrpc":"2.0","id":"7","method":"nope"}"#).await;
    let (id, code, _) = peer.recv_error().await;
    assert_eq!((id, code), (json!("7"), -32601));
}

#[tokio::test]
async fn unknown_top_level_members_are_ignored() {
    let (_conn, mut peer) = pair(server(), Framing::ContentLength);
    peer.send(r#"{"jsonrpc":"2.0","id":2,"method":"add","params":[1,2],"traceparent":"00-4bf9-00f0-01","joinableTaskToken":{}}"#)
        .await;
    peer.expect(json!({"jsonrpc":"2.0","id":2,"result":3})).await;
}

#[tokio::test]
async fn header_names_are_read_in_any_case() {
    let (_conn, mut peer) = pair(server(), Framing::ContentLength);
    for name in ["content-length", "CONTENT-LENGTH", "Content-length", "cOnTeNt-LeNgTh"] {
        let body = r#"{"jsonrpc":"2.0","id":1,"method":"add","params":[1,1]}"#;
        peer.send_raw(format!("{name}: {}\r\n\r\n{body}", body.len())).await;
        peer.expect(json!({"jsonrpc":"2.0","id":1,"result":2})).await;
    }
    // Whitespace around the value is tolerated.
    let body = r#"{"jsonrpc":"2.0","id":2,"method":"add","params":[1,1]}"#;
    peer.send_raw(format!("Content-Length:{}  \r\n\r\n{body}", body.len())).await;
    peer.expect(json!({"jsonrpc":"2.0","id":2,"result":2})).await;
}

#[tokio::test]
async fn content_type_is_accepted_and_unknown_headers_are_ignored() {
    let (_conn, mut peer) = pair(server(), Framing::ContentLength);
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"add","params":[4,4]}"#;
    for headers in [
        format!("Content-Length: {}\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n", body.len()),
        format!("Content-Type: application/vscode-jsonrpc; charset=utf8\r\nContent-Length: {}\r\n\r\n", body.len()),
        format!("Content-Type: application/json\r\nContent-Length: {}\r\n\r\n", body.len()),
        format!("X-Trace: abc\r\nContent-Length: {}\r\nX-Other: 1:2:3\r\n\r\n", body.len()),
    ] {
        peer.send_raw(format!("{headers}{body}")).await;
        peer.expect(json!({"jsonrpc":"2.0","id":1,"result":8})).await;
    }
}

#[tokio::test]
async fn a_frame_split_one_byte_at_a_time_is_reassembled() {
    for framing in [Framing::ContentLength, Framing::NewlineDelimited] {
        let (_conn, mut peer) = pair(server(), framing);
        let bytes = peer.frame(br#"{"jsonrpc":"2.0","id":1,"method":"add","params":[20,22]}"#);
        for b in bytes {
            peer.send_raw([b]).await;
        }
        peer.expect(json!({"jsonrpc":"2.0","id":1,"result":42})).await;
    }
}

#[tokio::test]
async fn several_frames_in_one_write_are_all_read() {
    for framing in [Framing::ContentLength, Framing::NewlineDelimited] {
        let (_conn, mut peer) = pair(server(), framing);
        let mut bytes = Vec::new();
        for i in 0..20 {
            bytes.extend(
                peer.frame(format!(r#"{{"jsonrpc":"2.0","id":{i},"method":"add","params":[{i},1]}}"#).as_bytes()),
            );
        }
        peer.send_raw(bytes).await;
        let mut got = Vec::new();
        for _ in 0..20 {
            let msg = peer.recv().await;
            got.push((msg["id"].as_i64().unwrap(), msg["result"].as_i64().unwrap()));
        }
        got.sort();
        assert_eq!(got, (0..20).map(|i| (i, i + 1)).collect::<Vec<_>>(), "{framing:?}");
    }
}

#[tokio::test]
async fn newline_framing_accepts_crlf_and_skips_blank_lines() {
    let (_conn, mut peer) = pair(server(), Framing::NewlineDelimited);
    peer.send_raw("\n\r\n   \n{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"add\",\"params\":[1,2]}\r\n\n\n").await;
    peer.expect(json!({"jsonrpc":"2.0","id":1,"result":3})).await;
    peer.send_raw("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"add\",\"params\":[2,2]}\n").await;
    peer.expect(json!({"jsonrpc":"2.0","id":2,"result":4})).await;
    // Blank lines are not messages: nothing answers them.
    peer.send_raw("\n\n\r\n").await;
    peer.expect_silence(Duration::from_millis(100)).await;
}

#[tokio::test]
async fn newline_framing_reads_a_last_line_without_its_newline() {
    let (conn, mut peer) = pair(server(), Framing::NewlineDelimited);
    peer.send_raw(r#"{"jsonrpc":"2.0","method":"unit"}"#).await;
    peer.send_raw(b"\n").await;
    peer.send_raw(r#"{"jsonrpc":"2.0","id":5,"method":"add","params":[1,2]}"#).await;
    peer.close_write().await;
    peer.expect(json!({"jsonrpc":"2.0","id":5,"result":3})).await;
    let reason = within(conn.closed()).await;
    assert_eq!(reason.kind, jsonrpc_duplex::CloseKind::RemoteClosed);
}

#[tokio::test]
async fn our_responses_parse_with_our_own_strict_peer_in_both_framings() {
    // A round trip where the peer is a RawPeer on each side of the framing choice, with a large
    // body (written by the writer's direct path) between small ones.
    for framing in [Framing::ContentLength, Framing::NewlineDelimited] {
        let (_conn, mut peer) = pair(server(), framing);
        let big = "x".repeat(100_000);
        peer.send_json(json!({"jsonrpc":"2.0","id":1,"method":"unit"})).await;
        peer.send_json(json!({"jsonrpc":"2.0","id":2,"method":"echo","params":[big]})).await;
        peer.send_json(json!({"jsonrpc":"2.0","id":3,"method":"unit"})).await;
        let mut seen = std::collections::BTreeMap::new();
        for _ in 0..3 {
            let msg = peer.recv().await;
            seen.insert(msg["id"].as_i64().unwrap(), msg["result"].clone());
        }
        assert_eq!(seen[&1], json!(null));
        assert_eq!(seen[&2], json!([big]));
        assert_eq!(seen[&3], json!(null));
    }
}

#[tokio::test]
async fn newline_framing_keeps_raw_pretty_printed_json_on_one_line() {
    // Raw JSON passes through untouched by serde: its newlines must not end the frame.
    let pretty = "{\n  \"a\": [\r\n    1,\n    \"x\\ny\"\n  ]\n}";
    let router = Router::new()
        .request_raw("pretty", move |_req, responder| async move {
            responder.ok(serde_json::value::RawValue::from_string(pretty.to_owned()).unwrap());
        })
        .request_raw("pretty_error", move |_req, responder| async move {
            let data = serde_json::value::RawValue::from_string(pretty.to_owned()).unwrap();
            responder.err(ErrorObject::new(1, "with data").with_raw_data(data));
        });
    let (conn, mut peer) = pair(Connection::builder().serve(router), Framing::NewlineDelimited);
    peer.send(r#"{"jsonrpc":"2.0","id":1,"method":"pretty"}"#).await;
    peer.expect(json!({"jsonrpc":"2.0","id":1,"result":{"a":[1,"x\ny"]}})).await;
    peer.send(r#"{"jsonrpc":"2.0","id":2,"method":"pretty_error"}"#).await;
    peer.expect(json!({"jsonrpc":"2.0","id":2,"error":{"code":1,"message":"with data","data":{"a":[1,"x\ny"]}}})).await;
    let params = serde_json::value::RawValue::from_string(pretty.to_owned()).unwrap();
    within(conn.handle().notify("n", &params)).await.unwrap();
    peer.expect(json!({"jsonrpc":"2.0","method":"n","params":{"a":[1,"x\ny"]}})).await;
    // A large one, which the writer sends straight from its own buffer.
    let big = serde_json::to_string_pretty(&json!({"rows": vec![json!({"k": "v\nw"}); 5_000]})).unwrap();
    assert!(big.len() > 64 * 1024 && big.contains('\n'));
    let params = serde_json::value::RawValue::from_string(big).unwrap();
    within(conn.handle().notify("big", &params)).await.unwrap();
    peer.expect(json!({"jsonrpc":"2.0","method":"big","params":{"rows": vec![json!({"k": "v\nw"}); 5_000]}})).await;
}

#[tokio::test]
async fn newline_framing_keeps_pretty_json_a_layer_adds_and_raw_request_params_on_one_line() {
    // A top-level member a layer adds is JSON text as given: pretty-printed, it must not end
    // the frame either; nor may raw params of a request.
    let pretty = "{\n  \"a\": [\r\n    1,\n    \"x\\ny\"\n  ]\n}";
    let tag = jsonrpc_duplex::middleware::from_fn(move |mut call, next| async move {
        assert!(call.add_member("tag", pretty));
        next.run(call).await
    });
    let (conn, mut peer) = pair(Connection::builder().layer(tag), Framing::NewlineDelimited);
    let params = serde_json::value::RawValue::from_string(pretty.to_owned()).unwrap();
    within(conn.handle().notify("n", &params)).await.unwrap();
    peer.expect(json!({"jsonrpc":"2.0","method":"n","params":{"a":[1,"x\ny"]},"tag":{"a":[1,"x\ny"]}})).await;
    let handle = conn.handle();
    let call = tokio::spawn(async move { handle.request::<serde_json::Value>("r", &params).await });
    peer.expect(json!({"jsonrpc":"2.0","id":0,"method":"r","params":{"a":[1,"x\ny"]},"tag":{"a":[1,"x\ny"]}})).await;
    peer.send(r#"{"jsonrpc":"2.0","id":0,"result":7}"#).await;
    assert_eq!(within(call).await.unwrap().unwrap(), json!(7));
}

/// The writer skips the flush of the streams it knows have nothing to flush (a duplex pipe, a
/// socket); any other writer is flushed after every batch: an answer written into a
/// `BufWriter` (which keeps up to 8 KiB until flushed) still reaches the peer.
#[tokio::test]
async fn a_buffered_writer_is_flushed_after_each_answer() {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
    let (ours, theirs) = tokio::io::duplex(64 * 1024);
    let (read, write) = tokio::io::split(ours);
    let _conn = server().framing(Framing::NewlineDelimited).connect(read, tokio::io::BufWriter::new(write));
    let (their_read, mut their_write) = tokio::io::split(theirs);
    let mut their_read = tokio::io::BufReader::new(their_read);
    for id in 1..=3 {
        let call = format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"add\",\"params\":[{id},1]}}\n");
        their_write.write_all(call.as_bytes()).await.unwrap();
        let mut line = String::new();
        within(their_read.read_line(&mut line)).await.unwrap();
        assert_eq!(line, format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{}}}\n", id + 1));
    }
}
