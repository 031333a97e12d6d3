//! JSON nested deeper than anything sane, wherever a peer can put it. The frame parser keeps
//! params, results, ids and unknown members as raw text (serde_json skips them without
//! recursion), so it takes any depth without touching the stack; decoding into a type meets
//! serde_json's recursion limit of 128 and fails with a clear error. Depth 100,000 would
//! overflow the test thread's stack many times over if anything recursed on it.

use crate::support;

use jsonrpc_duplex::{Connection, Error, ErrorObject, Framing, Router};
use serde_json::{Value, json};
use support::raw_peer::{RawPeer, pair};
use support::time::within;

const DEEP: usize = 100_000;

fn deep_array(depth: usize) -> String {
    format!("{}{}", "[".repeat(depth), "]".repeat(depth))
}

fn deep_object(depth: usize) -> String {
    format!("{}1{}", r#"{"a":"#.repeat(depth), "}".repeat(depth))
}

fn server() -> jsonrpc_duplex::Builder {
    Connection::builder().serve(
        Router::new()
            .method("value", |v: Value, _cx| async move { Ok::<_, ErrorObject>(v) })
            .method("add", |(a, b): (i64, i64), _cx| async move { Ok::<_, ErrorObject>(a + b) })
            .notification("note", |_: Value, _cx| async {}),
    )
}

async fn assert_alive(peer: &mut RawPeer, id: i64) {
    peer.send_json(json!({"jsonrpc":"2.0","id":id,"method":"add","params":[id,1]})).await;
    peer.expect(json!({"jsonrpc":"2.0","id":id,"result":id + 1})).await;
}

#[tokio::test]
async fn deeply_nested_params_are_answered_invalid_params_naming_the_recursion_limit() {
    for framing in [Framing::ContentLength, Framing::NewlineDelimited] {
        let (conn, mut peer) = pair(server(), framing);
        for (id, params) in [(1, deep_array(DEEP)), (2, deep_object(DEEP)), (3, deep_array(129))] {
            peer.send(format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"value","params":{params}}}"#)).await;
            let (got, code, message) = peer.recv_error().await;
            assert_eq!((got, code), (json!(id), -32602), "{message}");
            assert!(message.contains("recursion limit exceeded"), "{message}");
        }
        // A typed handler fails on the type first.
        peer.send(format!(r#"{{"jsonrpc":"2.0","id":4,"method":"add","params":{}}}"#, deep_array(DEEP))).await;
        let (got, code, _) = peer.recv_error().await;
        assert_eq!((got, code), (json!(4), -32602));
        // Within the limit, the same handler works (the answer nests the params one level
        // deeper, within what the raw peer's own serde_json parser takes).
        let ok = deep_array(126);
        peer.send(format!(r#"{{"jsonrpc":"2.0","id":5,"method":"value","params":{ok}}}"#)).await;
        assert_eq!(peer.recv_text().await, format!(r#"{{"jsonrpc":"2.0","id":5,"result":{ok}}}"#));
        assert_alive(&mut peer, 6).await;
        assert!(!conn.is_closed());
    }
}

#[tokio::test]
async fn deep_nesting_where_the_frame_parser_only_skips_is_harmless() {
    let (conn, mut peer) = pair(server(), Framing::ContentLength);
    // An unknown member, a notification's params (the handler's decode fails and it is dropped).
    let deep = deep_array(DEEP);
    peer.send(format!(r#"{{"jsonrpc":"2.0","id":1,"method":"add","params":[1,2],"extra":{deep}}}"#)).await;
    peer.expect(json!({"jsonrpc":"2.0","id":1,"result":3})).await;
    peer.send(format!(r#"{{"jsonrpc":"2.0","method":"note","params":{deep}}}"#)).await;
    // Cancellation and progress params that hold no usable id or token are ignored.
    peer.send(format!(r#"{{"jsonrpc":"2.0","method":"$/cancelRequest","params":{{"id":{deep}}}}}"#)).await;
    peer.send(format!(r#"{{"jsonrpc":"2.0","method":"$/progress","params":{{"token":{deep},"value":{deep}}}}}"#)).await;
    peer.send(format!(r#"{{"jsonrpc":"2.0","method":"$/enumerator/abort","params":[{deep}]}}"#)).await;
    assert_alive(&mut peer, 2).await;
    assert!(!conn.is_closed());
}

#[tokio::test]
async fn a_deep_id_a_deep_batch_or_a_deep_object_is_answered_invalid_request() {
    let (conn, mut peer) = pair(server(), Framing::NewlineDelimited);
    let deep = deep_array(DEEP);
    peer.send(format!(r#"{{"jsonrpc":"2.0","id":{deep},"method":"add","params":[1,2]}}"#)).await;
    let (id, code, _) = peer.recv_error().await;
    assert_eq!((id, code), (Value::Null, -32600));
    // A top-level array is a batch: its one element is not a message.
    peer.send(&deep).await;
    let answer = peer.recv().await;
    assert_eq!(answer.as_array().map(Vec::len), Some(1), "{answer}");
    assert_eq!(answer[0]["error"]["code"], -32600, "{answer}");
    peer.send(deep_object(DEEP)).await;
    let (id, code, _) = peer.recv_error().await;
    assert_eq!((id, code), (Value::Null, -32600));
    assert_alive(&mut peer, 3).await;
    assert!(!conn.is_closed());
}

#[tokio::test]
async fn a_deep_result_or_error_data_fails_only_the_typed_decode_of_that_call() {
    let (conn, mut peer) = pair(Connection::builder(), Framing::ContentLength);
    let deep = deep_array(DEEP);
    let h = conn.handle();
    let typed = tokio::spawn(async move { h.request::<Value>("deep", ()).await });
    let req = peer.recv().await;
    peer.send(format!(r#"{{"jsonrpc":"2.0","id":{},"result":{deep}}}"#, req["id"])).await;
    let err = within(typed).await.unwrap().unwrap_err();
    assert!(matches!(&err, Error::Deserialize(e) if e.to_string().contains("recursion limit")), "{err:?}");

    // The raw result is handed over whole.
    let h = conn.handle();
    let raw = tokio::spawn(async move { h.request_raw("deep", &(), Default::default()).await });
    let req = peer.recv().await;
    peer.send(format!(r#"{{"jsonrpc":"2.0","id":{},"result":{deep}}}"#, req["id"])).await;
    assert_eq!(within(raw).await.unwrap().unwrap().get(), deep);

    // Error data stays raw; decoding it meets the limit.
    let h = conn.handle();
    let failing = tokio::spawn(async move { h.request::<Value>("deep", ()).await });
    let req = peer.recv().await;
    peer.send(format!(r#"{{"jsonrpc":"2.0","id":{},"error":{{"code":1,"message":"m","data":{deep}}}}}"#, req["id"]))
        .await;
    let err = within(failing).await.unwrap().unwrap_err();
    let remote = err.as_remote().unwrap_or_else(|| panic!("{err:?}"));
    assert_eq!(remote.code, 1);
    let data = remote.data_as::<Value>().expect("data");
    assert!(data.is_err_and(|e| e.to_string().contains("recursion limit")));
    assert!(!conn.is_closed());
}
