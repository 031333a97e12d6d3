//! Calls in both directions: two id spaces, answers from other tasks, dropped replies, panics,
//! and errors coming back to the caller.

use crate::support;

use std::sync::{Arc, Mutex};

use jsonrpc_duplex::{CallOptions, Connection, Error, ErrorObject, Framing, Router, transport::memory};
use serde_json::{Value, json};
use support::raw_peer::{RawPeer, pair};
use support::time::within;
use tokio::sync::oneshot;

async fn assert_alive(peer: &mut RawPeer, id: i64) {
    peer.send_json(json!({"jsonrpc":"2.0","id":id,"method":"add","params":[id,1]})).await;
    peer.expect(json!({"jsonrpc":"2.0","id":id,"result":id + 1})).await;
}

fn add(router: Router) -> Router {
    router.method("add", |(a, b): (i64, i64), _ctx| async move { Ok::<_, ErrorObject>(a + b) })
}

/// A one-shot gate a handler can wait on, opened by the test.
#[derive(Clone, Default)]
struct Gate(Arc<Mutex<Option<oneshot::Receiver<()>>>>);

impl Gate {
    fn new() -> (Self, oneshot::Sender<()>) {
        let (tx, rx) = oneshot::channel();
        (Gate(Arc::new(Mutex::new(Some(rx)))), tx)
    }
    async fn wait(&self) {
        let rx = self.0.lock().unwrap().take();
        if let Some(rx) = rx {
            let _ = rx.await;
        }
    }
}

#[tokio::test]
async fn the_peers_request_id_1_and_our_call_id_1_live_in_separate_id_spaces() {
    let (gate, open) = Gate::new();
    let router = Router::new().method("theirs", move |(): (), _ctx| {
        let gate = gate.clone();
        async move {
            gate.wait().await;
            Ok::<_, ErrorObject>("answer to their 1")
        }
    });
    let (conn, mut peer) = pair(Connection::builder().serve(router), Framing::ContentLength);

    // Our calls get ids 0 and 1.
    let h = conn.handle();
    let call0 = tokio::spawn(async move { h.request::<String>("ours", ["zero"]).await });
    assert_eq!(peer.recv().await, json!({"jsonrpc":"2.0","id":0,"method":"ours","params":["zero"]}));
    let h = conn.handle();
    let call1 = tokio::spawn(async move { h.request::<String>("ours", ["one"]).await });
    assert_eq!(peer.recv().await, json!({"jsonrpc":"2.0","id":1,"method":"ours","params":["one"]}));

    // The peer's own request 1 arrives while our call 1 is in flight; its handler waits.
    peer.send(r#"{"jsonrpc":"2.0","id":1,"method":"theirs"}"#).await;
    // The answer to our call 1 goes to our call, not to their request.
    peer.send(r#"{"jsonrpc":"2.0","id":1,"result":"answer to our 1"}"#).await;
    assert_eq!(within(call1).await.unwrap().unwrap(), "answer to our 1");

    // Their request 1 is answered by its handler, once, when it is done.
    open.send(()).unwrap();
    peer.expect(json!({"jsonrpc":"2.0","id":1,"result":"answer to their 1"})).await;

    peer.send(r#"{"jsonrpc":"2.0","id":0,"result":"answer to our 0"}"#).await;
    assert_eq!(within(call0).await.unwrap().unwrap(), "answer to our 0");
    // A string id "0" is not our number 0.
    let h = conn.handle();
    let call2 = tokio::spawn(async move { h.request::<String>("ours", ()).await });
    assert_eq!(peer.recv().await["id"], 2);
    peer.send(r#"{"jsonrpc":"2.0","id":"2","result":"wrong type"}"#).await;
    peer.send(r#"{"jsonrpc":"2.0","id":2,"result":"right"}"#).await;
    assert_eq!(within(call2).await.unwrap().unwrap(), "right");
}

#[tokio::test]
async fn a_reply_can_be_sent_later_from_another_task() {
    let (release_tx, release_rx) = oneshot::channel::<()>();
    let release_rx = Arc::new(Mutex::new(Some(release_rx)));
    let router = add(Router::new()).request_raw("later", move |req, responder| {
        let release = release_rx.lock().unwrap().take();
        async move {
            let n: (i64,) = req.decode_params().unwrap();
            // The handler returns at once; another task answers when told to.
            tokio::spawn(async move {
                if let Some(r) = release {
                    let _ = r.await;
                }
                assert!(responder.ok(json!({"doubled": n.0 * 2})));
            });
        }
    });
    let (_conn, mut peer) = pair(Connection::builder().serve(router), Framing::ContentLength);
    peer.send(r#"{"jsonrpc":"2.0","id":"late","method":"later","params":[21]}"#).await;
    // Meanwhile the connection answers other requests.
    assert_alive(&mut peer, 1).await;
    release_tx.send(()).unwrap();
    peer.expect(json!({"jsonrpc":"2.0","id":"late","result":{"doubled":42}})).await;
}

#[tokio::test]
async fn dropping_a_responder_unanswered_sends_an_internal_error() {
    let router = add(Router::new())
        .request_raw("forget", |_req, responder| async move { drop(responder) })
        .request_raw("forget_elsewhere", |_req, responder| async move {
            tokio::spawn(async move {
                tokio::task::yield_now().await;
                drop(responder);
            });
        })
        .request_raw("panic_elsewhere", |_req, responder| async move {
            tokio::spawn(async move {
                let _responder = responder;
                tokio::task::yield_now().await;
                panic!("the task holding the reply dies");
            });
        });
    let (_conn, mut peer) = pair(Connection::builder().serve(router), Framing::NewlineDelimited);
    for (id, method) in [(1, "forget"), (2, "forget_elsewhere")] {
        peer.send_json(json!({"jsonrpc":"2.0","id":id,"method":method})).await;
        let (got, code, message) = peer.recv_error().await;
        assert_eq!((got, code), (json!(id), -32603), "{message}");
        assert!(message.contains("without answering"), "{message}");
    }
    peer.send_json(json!({"jsonrpc":"2.0","id":3,"method":"panic_elsewhere"})).await;
    let (got, code, message) = peer.recv_error().await;
    assert_eq!((got, code), (json!(3), -32603), "{message}");
    assert!(message.contains("panicked"), "{message}");
    assert_alive(&mut peer, 4).await;
}

#[tokio::test]
async fn a_panicking_handler_is_answered_internal_error_and_the_connection_lives_on() {
    let router = add(Router::new())
        .method("boom_now", |(): (), _ctx| async move {
            if true {
                panic!("kaboom at once");
            }
            Ok::<(), ErrorObject>(())
        })
        .method("boom_later", |(): (), _ctx| async move {
            tokio::task::yield_now().await;
            if true {
                panic!("kaboom after a yield");
            }
            Ok::<(), ErrorObject>(())
        })
        .method("boom_sync", |(): (), _ctx| {
            // The closure itself panics, before there is a future to poll.
            if true {
                panic!("kaboom before the future");
            }
            async move { Ok::<(), ErrorObject>(()) }
        })
        .request_raw("boom_raw_sync", |_req, _responder| {
            if true {
                panic!("kaboom holding the responder");
            }
            async move {}
        })
        .notification("boom_note", |(): (), _ctx| async move { panic!("kaboom in a notification") })
        .notification("boom_note_sync", |(): (), _ctx| {
            if true {
                panic!("kaboom before the notification future");
            }
            async move {}
        });
    let (_conn, mut peer) = pair(Connection::builder().serve(router), Framing::ContentLength);
    for (id, method, words) in [
        (1, "boom_now", "kaboom at once"),
        (2, "boom_later", "kaboom after a yield"),
        (3, "boom_sync", "kaboom before the future"),
        (4, "boom_raw_sync", "kaboom holding the responder"),
    ] {
        peer.send_json(json!({"jsonrpc":"2.0","id":id,"method":method})).await;
        let (got, code, message) = peer.recv_error().await;
        assert_eq!((got, code), (json!(id), -32603));
        assert!(message.contains(words), "{message}");
        assert_alive(&mut peer, 10 + id).await;
    }
    peer.send(r#"{"jsonrpc":"2.0","method":"boom_note"}"#).await;
    assert_alive(&mut peer, 20).await;
    peer.send(r#"{"jsonrpc":"2.0","method":"boom_note_sync"}"#).await;
    assert_alive(&mut peer, 21).await;
    // A request routed to a panicking notification handler is still answered.
    peer.send(r#"{"jsonrpc":"2.0","id":22,"method":"boom_note_sync"}"#).await;
    let (id, code, _) = peer.recv_error().await;
    assert_eq!((id, code), (json!(22), -32603));
    assert_alive(&mut peer, 23).await;
}

#[tokio::test]
async fn a_request_to_a_notification_handler_is_answered_null_and_a_notification_to_a_request_handler_is_not_answered()
{
    let seen = Arc::new(Mutex::new(Vec::new()));
    let (s1, s2) = (seen.clone(), seen.clone());
    let router = add(Router::new())
        .notification("note", move |(n,): (i64,), _ctx| {
            let seen = s1.clone();
            async move { seen.lock().unwrap().push(("note", n)) }
        })
        .method("req", move |(n,): (i64,), _ctx| {
            let seen = s2.clone();
            async move {
                seen.lock().unwrap().push(("req", n));
                Ok::<_, ErrorObject>(n)
            }
        });
    let (_conn, mut peer) = pair(Connection::builder().serve(router), Framing::ContentLength);
    peer.send(r#"{"jsonrpc":"2.0","id":1,"method":"note","params":[5]}"#).await;
    peer.expect(json!({"jsonrpc":"2.0","id":1,"result":null})).await;
    peer.send(r#"{"jsonrpc":"2.0","method":"req","params":[6]}"#).await;
    assert_alive(&mut peer, 2).await;
    assert_eq!(*seen.lock().unwrap(), vec![("note", 5), ("req", 6)]);
}

#[tokio::test]
async fn the_peers_error_object_reaches_the_caller_whole() {
    let (conn, mut peer) = pair(Connection::builder(), Framing::ContentLength);
    let h = conn.handle();
    let call = tokio::spawn(async move { h.request::<i64>("fail", ()).await });
    let req = peer.recv().await;
    peer.send_json(
        json!({"jsonrpc":"2.0","id":req["id"],"error":{"code":-32000,"message":"nope","data":{"why":[1,2]}}}),
    )
    .await;
    match within(call).await.unwrap() {
        Err(Error::Remote(e)) => {
            assert_eq!(e.code, -32000);
            assert_eq!(e.message, "nope");
            assert_eq!(e.data_as::<serde_json::Value>().unwrap().unwrap(), json!({"why":[1,2]}));
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_result_that_does_not_decode_is_a_deserialize_error() {
    let (conn, mut peer) = pair(Connection::builder(), Framing::ContentLength);
    let h = conn.handle();
    let call = tokio::spawn(async move { h.request::<i64>("x", ()).await });
    let req = peer.recv().await;
    peer.send_json(json!({"jsonrpc":"2.0","id":req["id"],"result":"not a number"})).await;
    assert!(matches!(within(call).await.unwrap(), Err(Error::Deserialize(_))));
    // The raw API hands back exactly the JSON the peer sent.
    let h = conn.handle();
    let call = tokio::spawn(async move { h.request_raw("x", &(), CallOptions::new()).await });
    let req = peer.recv().await;
    peer.send(format!(r#"{{"jsonrpc":"2.0","id":{},"result":{{"b": 1,  "a":[ 2 ]}}}}"#, req["id"])).await;
    assert_eq!(within(call).await.unwrap().unwrap().get(), r#"{"b": 1,  "a":[ 2 ]}"#);
}

#[tokio::test]
async fn a_message_over_the_size_limit_is_refused_before_sending() {
    let (conn, peer) = pair(Connection::builder().max_message_size(100), Framing::ContentLength);
    let big = "x".repeat(200);
    let err = within(conn.handle().request::<()>("big", [&big])).await.unwrap_err();
    assert!(matches!(err, Error::MessageTooLarge { limit: 100, .. }), "{err:?}");
    let err = within(conn.handle().notify("big", [&big])).await.unwrap_err();
    assert!(matches!(err, Error::MessageTooLarge { .. }), "{err:?}");
    peer.expect_silence(std::time::Duration::from_millis(50)).await;
    assert!(!conn.is_closed());
}

#[tokio::test]
async fn a_result_over_the_size_limit_is_answered_with_an_internal_error() {
    let router = Router::new().method("big", |(): (), _ctx| async move { Ok::<_, ErrorObject>("y".repeat(500)) });
    let (_conn, mut peer) = pair(Connection::builder().max_message_size(200).serve(router), Framing::ContentLength);
    peer.send(r#"{"jsonrpc":"2.0","id":1,"method":"big"}"#).await;
    let (id, code, message) = peer.recv_error().await;
    assert_eq!((id, code), (json!(1), -32603));
    assert!(message.contains("200"), "{message}");
}

#[tokio::test]
async fn two_connections_call_each_other_through_the_facade() {
    let (a, b) = memory::pair(
        Connection::builder().serve(Router::new().method("whoami", |(): (), _| async { Ok::<_, ErrorObject>("a") })),
        Connection::builder().serve(Router::new().method(
            "relay",
            |(): (), ctx: jsonrpc_duplex::RequestContext| async move {
                // B answers by asking A first.
                let who: String = ctx.peer().request("whoami", ()).await.map_err(ErrorObject::internal_error)?;
                Ok::<_, ErrorObject>(format!("b via {who}"))
            },
        )),
    );
    let got: String = within(a.handle().request("relay", ())).await.unwrap();
    assert_eq!(got, "b via a");
    let got: String = within(b.handle().request("whoami", ())).await.unwrap();
    assert_eq!(got, "a");
}

#[tokio::test]
async fn params_that_are_not_an_object_or_array_are_refused_not_sent() {
    let (conn, peer) = pair(Connection::builder(), Framing::ContentLength);
    for err in [
        within(conn.handle().request::<Value>("m", 5)).await.unwrap_err(),
        within(conn.handle().request::<Value>("m", "text")).await.unwrap_err(),
        within(conn.handle().notify("m", true)).await.unwrap_err(),
    ] {
        match err {
            Error::Serialize(e) => assert!(e.to_string().contains("object or an array"), "{e}"),
            other => panic!("{other:?}"),
        }
    }
    peer.expect_silence(std::time::Duration::from_millis(50)).await;
    // Absent, empty and structured params are fine.
    within(conn.handle().notify("a", ())).await.unwrap();
    within(conn.handle().notify("b", Option::<i32>::None)).await.unwrap();
    within(conn.handle().notify("c", Vec::<i32>::new())).await.unwrap();
    within(conn.handle().notify("d", (1,))).await.unwrap();
    peer.expect(json!({"jsonrpc":"2.0","method":"a"})).await;
    peer.expect(json!({"jsonrpc":"2.0","method":"b"})).await;
    peer.expect(json!({"jsonrpc":"2.0","method":"c","params":[]})).await;
    peer.expect(json!({"jsonrpc":"2.0","method":"d","params":[1]})).await;
}

#[tokio::test]
async fn a_calls_future_stays_small() {
    // A call's future is what a `FuturesUnordered` or a spawned task allocates per call: the
    // waiting paths (budget, pending slots, timeout, cancellation) are boxed where they start,
    // so the common call's future holds little more than its answer's receiver. Above 1 KiB
    // an allocation is a large-bin one in glibc, several times slower.
    let (a, _b) = tokio::io::duplex(1024);
    let conn = Connection::builder().connect_io(a);
    let handle = conn.handle();
    let call = handle.request::<i64>("add", (1, 2));
    assert!(std::mem::size_of_val(&call) <= 384, "Handle::request's future is {} bytes", std::mem::size_of_val(&call));
    let note = handle.notify("tick", (1,));
    assert!(std::mem::size_of_val(&note) <= 192, "Handle::notify's future is {} bytes", std::mem::size_of_val(&note));
}
