//! Batches (a top-level array) are answered per the JSON-RPC 2.0 spec.

use crate::support;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use jsonrpc_duplex::{Connection, ErrorObject, Framing, Router};
use serde_json::{Value, json};
use support::raw_peer::{RawPeer, pair};

/// The spec's example server: `sum`, `subtract`, `get_data`, and the notifications `update`,
/// `notify_hello`, `notify_sum` (recorded).
fn server(notes: Arc<Mutex<Vec<String>>>) -> jsonrpc_duplex::Builder {
    let (n1, n2, n3) = (notes.clone(), notes.clone(), notes);
    Connection::builder().serve(
        Router::new()
            .method("sum", |v: Vec<i64>, _ctx| async move { Ok::<_, ErrorObject>(v.iter().sum::<i64>()) })
            .method("subtract", |(a, b): (i64, i64), _ctx| async move { Ok::<_, ErrorObject>(a - b) })
            .method("get_data", |(): (), _ctx| async move { Ok::<_, ErrorObject>(json!(["hello", 5])) })
            .notification("update", move |_: Value, _ctx| {
                let n = n1.clone();
                async move { n.lock().unwrap().push("update".into()) }
            })
            .notification("notify_hello", move |_: Value, _ctx| {
                let n = n2.clone();
                async move { n.lock().unwrap().push("notify_hello".into()) }
            })
            .notification("notify_sum", move |_: Value, _ctx| {
                let n = n3.clone();
                async move { n.lock().unwrap().push("notify_sum".into()) }
            }),
    )
}

fn setup() -> (Connection, RawPeer, Arc<Mutex<Vec<String>>>) {
    let notes = Arc::new(Mutex::new(Vec::new()));
    let (conn, peer) = pair(server(notes.clone()), Framing::ContentLength);
    (conn, peer, notes)
}

/// The answers of a batch, by id (`null` ids are collected under "null#k").
fn by_id(answer: &Value) -> BTreeMap<String, Value> {
    let items = answer.as_array().unwrap_or_else(|| panic!("a batch answer must be an array: {answer}"));
    let mut out = BTreeMap::new();
    for (k, item) in items.iter().enumerate() {
        assert_eq!(item["jsonrpc"], "2.0", "{item}");
        let key = match &item["id"] {
            Value::Null => format!("null#{k}"),
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        let mut item = item.clone();
        item.as_object_mut().unwrap().remove("jsonrpc");
        item.as_object_mut().unwrap().remove("id");
        assert!(out.insert(key, item).is_none(), "a duplicate id in {answer}");
    }
    out
}

#[tokio::test]
async fn a_batch_is_answered_with_one_array_and_no_entries_for_notifications() {
    let (_conn, mut peer, notes) = setup();
    peer.send(
        r#"[
        {"jsonrpc":"2.0","method":"sum","params":[1,2,4],"id":"1"},
        {"jsonrpc":"2.0","method":"notify_hello","params":[7]},
        {"jsonrpc":"2.0","method":"subtract","params":[42,23],"id":"2"},
        {"jsonrpc":"2.0","method":"get_data","id":"9"}
    ]"#,
    )
    .await;
    let answer = peer.recv().await;
    let got = by_id(&answer);
    assert_eq!(got.len(), 3, "{answer}");
    assert_eq!(got["1"], json!({"result":7}));
    assert_eq!(got["2"], json!({"result":19}));
    assert_eq!(got["9"], json!({"result":["hello",5]}));
    assert_eq!(*notes.lock().unwrap(), vec!["notify_hello".to_owned()]);
}

#[tokio::test]
async fn the_specs_mixed_batch_of_valid_and_invalid_members() {
    let (_conn, mut peer, _notes) = setup();
    peer.send(
        r#"[
        {"jsonrpc":"2.0","method":"sum","params":[1,2,4],"id":"1"},
        {"jsonrpc":"2.0","method":"notify_hello","params":[7]},
        {"jsonrpc":"2.0","method":"subtract","params":[42,23],"id":"2"},
        {"foo":"boo"},
        {"jsonrpc":"2.0","method":"foo.get","params":{"name":"myself"},"id":"5"},
        {"jsonrpc":"2.0","method":"get_data","id":"9"}
    ]"#,
    )
    .await;
    let answer = peer.recv().await;
    let got = by_id(&answer);
    assert_eq!(got.len(), 5, "{answer}");
    assert_eq!(got["1"], json!({"result":7}));
    assert_eq!(got["2"], json!({"result":19}));
    assert_eq!(got["9"], json!({"result":["hello",5]}));
    assert_eq!(got["5"]["error"]["code"], -32601);
    let invalid: Vec<_> = got.iter().filter(|(k, _)| k.starts_with("null#")).collect();
    assert_eq!(invalid.len(), 1, "{answer}");
    assert_eq!(invalid[0].1["error"]["code"], -32600);
}

#[tokio::test]
async fn an_empty_batch_is_answered_with_a_single_invalid_request() {
    let (_conn, mut peer, _notes) = setup();
    peer.send("[]").await;
    let answer = peer.recv().await;
    assert!(answer.is_object(), "a single error object, not an array: {answer}");
    assert_eq!(answer["id"], Value::Null);
    assert_eq!(answer["error"]["code"], -32600);
    peer.send("  [ ]  ").await;
    assert_eq!(peer.recv().await["error"]["code"], -32600);
}

#[tokio::test]
async fn a_batch_of_only_notifications_gets_no_answer_at_all() {
    let (_conn, mut peer, notes) = setup();
    peer.send(
        r#"[{"jsonrpc":"2.0","method":"notify_sum","params":[1,2,4]},{"jsonrpc":"2.0","method":"notify_hello","params":[7]}]"#,
    )
    .await;
    peer.expect_silence(Duration::from_millis(100)).await;
    // Still alive, and the notifications ran in order.
    peer.send(r#"{"jsonrpc":"2.0","id":1,"method":"sum","params":[1]}"#).await;
    peer.expect(json!({"jsonrpc":"2.0","id":1,"result":1})).await;
    assert_eq!(*notes.lock().unwrap(), vec!["notify_sum".to_owned(), "notify_hello".to_owned()]);
}

#[tokio::test]
async fn a_batch_of_non_objects_is_answered_with_one_invalid_request_each() {
    let (_conn, mut peer, _notes) = setup();
    peer.send("[1]").await;
    let answer = peer.recv().await;
    assert_eq!(answer, json!([{"jsonrpc":"2.0","id":null,"error":answer[0]["error"].clone()}]));
    assert_eq!(answer[0]["error"]["code"], -32600);

    peer.send("[1,2,3]").await;
    let answer = peer.recv().await;
    let items = answer.as_array().unwrap();
    assert_eq!(items.len(), 3, "{answer}");
    for item in items {
        assert_eq!((&item["id"], &item["error"]["code"]), (&Value::Null, &json!(-32600)), "{answer}");
    }
}

#[tokio::test]
async fn a_batch_that_is_not_valid_json_is_answered_with_a_single_parse_error() {
    let (_conn, mut peer, _notes) = setup();
    peer.send(r#"[{"jsonrpc":"2.0","method":"sum","params":[1,2,4],"id":"1"},{"jsonrpc":"2.0","method"]"#).await;
    let answer = peer.recv().await;
    assert!(answer.is_object(), "{answer}");
    assert_eq!((&answer["id"], &answer["error"]["code"]), (&Value::Null, &json!(-32700)));
}

#[tokio::test]
async fn a_batch_mixing_answers_to_our_calls_with_requests_routes_each() {
    let (conn, mut peer, _notes) = setup();
    let h = conn.handle();
    let call = tokio::spawn(async move { h.request::<i64>("remote", ()).await });
    let req = peer.recv().await;
    peer.send_json(json!([
        {"jsonrpc":"2.0","id":req["id"],"result":99},
        {"jsonrpc":"2.0","method":"sum","params":[2,3],"id":7}
    ]))
    .await;
    assert_eq!(support::time::within(call).await.unwrap().unwrap(), 99);
    // The response gets no entry; the request does.
    peer.expect(json!([{"jsonrpc":"2.0","id":7,"result":5}])).await;
}

#[tokio::test]
async fn invalid_params_and_unknown_methods_inside_a_batch_are_answered_inside_it() {
    let (_conn, mut peer, _notes) = setup();
    peer.send(
        r#"[{"jsonrpc":"2.0","method":"subtract","params":["a"],"id":1},
            {"jsonrpc":"2.0","method":"nope","id":2},
            {"jsonrpc":"1.0","method":"sum","params":[1],"id":3},
            {"jsonrpc":"2.0","method":"sum","params":[1],"id":4}]"#,
    )
    .await;
    let answer = peer.recv().await;
    let got = by_id(&answer);
    assert_eq!(got["1"]["error"]["code"], -32602);
    assert_eq!(got["2"]["error"]["code"], -32601);
    assert_eq!(got["3"]["error"]["code"], -32600);
    assert_eq!(got["4"], json!({"result":1}));
}

/// Members that are arrays are not messages, however much they look like one read in field
/// order (`["2.0", id, method, params]`): each is answered `-32600` and nothing runs.
#[tokio::test]
async fn batch_members_that_are_arrays_are_invalid_requests_and_never_run() {
    let (_conn, mut peer, notes) = setup();
    peer.send(r#"[["2.0",1,"sum",[5]],["2.0",null,"notify_hello",[7]],["2.0","x","get_data"]]"#).await;
    let answer = peer.recv().await;
    let items = answer.as_array().unwrap_or_else(|| panic!("{answer}"));
    assert_eq!(items.len(), 3, "{answer}");
    for item in items {
        assert_eq!((&item["id"], &item["error"]["code"]), (&Value::Null, &json!(-32600)), "{answer}");
        assert!(item.get("result").is_none(), "{answer}");
    }
    assert!(notes.lock().unwrap().is_empty(), "a notification in an array must not run");
}

#[tokio::test]
async fn a_batch_longer_than_the_limit_is_one_invalid_request_with_a_null_id() {
    let limits = jsonrpc_duplex::Limits::new().max_batch_len(3);
    let notes = Arc::new(Mutex::new(Vec::new()));
    let (_conn, mut peer) = pair(server(notes.clone()).limits(limits), Framing::ContentLength);
    let call = |id: usize| json!({"jsonrpc":"2.0","method":"sum","params":[id],"id":id});
    peer.send_json(json!([call(1), call(2), call(3)])).await;
    assert_eq!(by_id(&peer.recv().await).len(), 3);
    peer.send_json(json!([call(1), call(2), call(3), call(4)])).await;
    let answer = peer.recv().await;
    assert!(answer.is_object(), "a single error object, not an array: {answer}");
    assert_eq!((&answer["id"], &answer["error"]["code"]), (&Value::Null, &json!(-32600)), "{answer}");
    assert!(answer["error"]["message"].as_str().unwrap().contains("at most 3"), "{answer}");
    // The default limit: a 2 MB batch of a million members costs one short error.
    let (_conn, mut peer, _notes) = setup();
    let huge = format!("[{}1]", "1,".repeat(1_000_000));
    peer.send(huge).await;
    let answer = peer.recv_text().await;
    assert!(answer.len() < 200, "{answer}");
    assert!(answer.contains("-32600") && answer.contains("at most 1000"), "{answer}");
    peer.send(r#"{"jsonrpc":"2.0","id":1,"method":"sum","params":[1]}"#).await;
    peer.expect(json!({"jsonrpc":"2.0","id":1,"result":1})).await;
}

/// The answer to a batch is one message: it stays within the message size limit as a whole.
#[tokio::test]
async fn a_batchs_answer_over_the_size_limit_has_its_members_replaced_then_is_refused_whole() {
    let big = "x".repeat(300);
    let router = Router::new().method("big", move |(): (), _ctx| {
        let big = big.clone();
        async move { Ok::<_, ErrorObject>(big) }
    });
    let builder = Connection::builder().serve(router).max_message_size(1000);
    let (_conn, mut peer) = pair(builder, Framing::ContentLength);
    let call = |id: usize| json!({"jsonrpc":"2.0","method":"big","id":id});
    // Two answers of about 340 bytes fit in 1000; the third is replaced by a short error.
    peer.send_json(json!([call(1), call(2), call(3)])).await;
    let text = peer.recv_text().await;
    assert!(text.len() <= 1000, "{} bytes: {text}", text.len());
    let got = by_id(&serde_json::from_str(&text).unwrap());
    assert_eq!(got.values().filter(|v| v.get("result").is_some()).count(), 2, "{text}");
    let replaced: Vec<_> = got.values().filter(|v| v.get("error").is_some()).collect();
    assert_eq!(replaced.len(), 1, "{text}");
    assert_eq!(replaced[0]["error"]["code"], -32603);
    assert!(replaced[0]["error"]["message"].as_str().unwrap().contains("limit of 1000 bytes"), "{text}");
    // Ten of them: not even the errors fit, so the batch gets one error with a null id.
    peer.send_json(Value::Array((1..=10).map(call).collect())).await;
    let answer = peer.recv().await;
    assert!(answer.is_object(), "{answer}");
    assert_eq!((&answer["id"], &answer["error"]["code"]), (&Value::Null, &json!(-32603)), "{answer}");
    assert!(answer["error"]["message"].as_str().unwrap().contains("limit of 1000 bytes"), "{answer}");
}
