//! Ordering: notifications run to completion in arrival order, requests start in order and then
//! overlap, outbound messages leave in the order they were queued, and a handler that calls the
//! peer back never deadlocks the reader.

use crate::support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use jsonrpc_duplex::{Connection, ErrorObject, Framing, Limits, Router};
use serde_json::json;
use support::raw_peer::{RawPeer, pair, pair_with_buffer};
use support::time::within;
use tokio::sync::{Notify, oneshot};

type Log = Arc<Mutex<Vec<i64>>>;

// Paused time: the handlers' sleeps end in the order of their lengths, not of a busy machine's whims.
#[tokio::test(start_paused = true)]
async fn notification_handlers_run_to_completion_in_arrival_order() {
    let log = Log::default();
    let (l1, l2) = (log.clone(), log.clone());
    let router = Router::new()
        .notification("append", move |(n, delay_ms): (i64, u64), _ctx| {
            let log = l1.clone();
            async move {
                // Slow work: a later, faster notification must still wait for this one.
                tokio::time::sleep(Duration::from_millis(delay_ms)).await;
                log.lock().unwrap().push(n);
            }
        })
        .method("read", move |(): (), _ctx| {
            let log = l2.clone();
            async move { Ok::<_, ErrorObject>(log.lock().unwrap().clone()) }
        });
    let (_conn, mut peer) = pair(Connection::builder().serve(router), Framing::ContentLength);
    let mut bytes = Vec::new();
    for (n, delay) in [(1, 30), (2, 0), (3, 10), (4, 0), (5, 5)] {
        bytes.extend(peer.frame(json!({"jsonrpc":"2.0","method":"append","params":[n, delay]}).to_string().as_bytes()));
    }
    bytes.extend(peer.frame(br#"{"jsonrpc":"2.0","id":1,"method":"read"}"#));
    peer.send_raw(bytes).await;
    peer.expect(json!({"jsonrpc":"2.0","id":1,"result":[1,2,3,4,5]})).await;
}

#[tokio::test]
async fn a_request_after_a_notification_observes_its_effect() {
    // LSP's didChange then hover: the hover must see the change, even when applying it awaits.
    let text = Arc::new(Mutex::new(String::from("old")));
    let applied = Arc::new(Notify::new());
    let (t1, t2, a1) = (text.clone(), text.clone(), applied.clone());
    let router = Router::new()
        .notification("didChange", move |(new,): (String,), _ctx| {
            let (text, applied) = (t1.clone(), a1.clone());
            async move {
                applied.notified().await;
                *text.lock().unwrap() = new;
            }
        })
        .method("hover", move |(): (), _ctx| {
            let text = t2.clone();
            async move { Ok::<_, ErrorObject>(text.lock().unwrap().clone()) }
        });
    let (_conn, mut peer) = pair(Connection::builder().serve(router), Framing::NewlineDelimited);
    peer.send(r#"{"jsonrpc":"2.0","method":"didChange","params":["new"]}"#).await;
    peer.send(r#"{"jsonrpc":"2.0","id":1,"method":"hover"}"#).await;
    // The hover waits behind the unfinished didChange.
    peer.expect_silence(Duration::from_millis(100)).await;
    applied.notify_one();
    peer.expect(json!({"jsonrpc":"2.0","id":1,"result":"new"})).await;
}

#[tokio::test]
async fn requests_start_in_arrival_order_and_then_run_concurrently() {
    let started = Log::default();
    let (gate_tx, gate_rx) = oneshot::channel::<()>();
    let gate = Arc::new(Mutex::new(Some(gate_rx)));
    let s = started.clone();
    let router = Router::new().method("work", move |(n,): (i64,), _ctx| {
        let (started, gate) = (s.clone(), gate.clone());
        async move {
            started.lock().unwrap().push(n);
            if n == 0 {
                // The first request blocks; the later ones must not wait for it.
                let rx = gate.lock().unwrap().take();
                if let Some(rx) = rx {
                    let _ = rx.await;
                }
            } else {
                tokio::task::yield_now().await;
            }
            Ok::<_, ErrorObject>(n)
        }
    });
    let (_conn, mut peer) = pair(Connection::builder().serve(router), Framing::ContentLength);
    let mut bytes = Vec::new();
    for n in 0..10 {
        bytes.extend(peer.frame(json!({"jsonrpc":"2.0","id":n,"method":"work","params":[n]}).to_string().as_bytes()));
    }
    peer.send_raw(bytes).await;
    let mut answered = Vec::new();
    for _ in 1..10 {
        answered.push(peer.recv().await["id"].as_i64().unwrap());
    }
    answered.sort();
    assert_eq!(answered, (1..10).collect::<Vec<_>>());
    assert_eq!(*started.lock().unwrap(), (0..10).collect::<Vec<_>>());
    gate_tx.send(()).unwrap();
    peer.expect(json!({"jsonrpc":"2.0","id":0,"result":0})).await;
}

#[tokio::test]
async fn notifications_a_handler_sends_before_its_response_arrive_before_it() {
    let router = Router::new()
        .method("report", |(n,): (i64,), ctx: jsonrpc_duplex::RequestContext| async move {
            for i in 0..n {
                ctx.peer().notify("$/progress", json!({"token": 1, "value": i})).await.unwrap();
            }
            Ok::<_, ErrorObject>("done")
        })
        .request_raw("report_later", |req, responder| async move {
            let peer = req.peer().clone();
            tokio::spawn(async move {
                for i in 0..3 {
                    peer.notify("$/progress", json!({"token": 2, "value": i})).await.unwrap();
                }
                responder.ok("done later");
            });
        });
    let (_conn, mut peer) = pair(Connection::builder().serve(router), Framing::ContentLength);
    peer.send(r#"{"jsonrpc":"2.0","id":1,"method":"report","params":[50]}"#).await;
    for i in 0..50 {
        peer.expect(json!({"jsonrpc":"2.0","method":"$/progress","params":{"token":1,"value":i}})).await;
    }
    peer.expect(json!({"jsonrpc":"2.0","id":1,"result":"done"})).await;

    peer.send(r#"{"jsonrpc":"2.0","id":2,"method":"report_later"}"#).await;
    for i in 0..3 {
        peer.expect(json!({"jsonrpc":"2.0","method":"$/progress","params":{"token":2,"value":i}})).await;
    }
    peer.expect(json!({"jsonrpc":"2.0","id":2,"result":"done later"})).await;
}

#[tokio::test]
async fn outbound_calls_and_notifications_leave_in_the_order_they_were_queued() {
    let (conn, peer) = pair(Connection::builder(), Framing::NewlineDelimited);
    let h = conn.handle();
    let sender = tokio::spawn(async move {
        for i in 0..20 {
            if i % 2 == 0 {
                h.notify("n", [i]).await.unwrap();
            } else {
                // Queue the request (its first poll queues it) and move on without waiting for
                // its answer.
                let h = h.clone();
                let mut call = Box::pin(async move { h.request::<()>("r", [i]).await });
                assert!(futures::poll!(call.as_mut()).is_pending());
                tokio::spawn(call);
            }
        }
    });
    within(sender).await.unwrap();
    let mut seen = Vec::new();
    for _ in 0..20 {
        let msg = peer.recv().await;
        seen.push(msg["params"][0].as_i64().unwrap());
    }
    assert_eq!(seen, (0..20).collect::<Vec<_>>());
}

#[tokio::test]
async fn a_request_handler_awaiting_a_call_to_the_peer_never_deadlocks_while_the_peer_keeps_sending() {
    let counted = Arc::new(Mutex::new(0));
    let c1 = counted.clone();
    let c2 = counted.clone();
    let router = Router::new()
        .method("ask_back", |(): (), ctx: jsonrpc_duplex::RequestContext| async move {
            let answer: i64 = ctx.peer().request("question", ()).await.map_err(ErrorObject::internal_error)?;
            Ok::<_, ErrorObject>(answer * 2)
        })
        .notification("noise", move |(): (), _ctx| {
            let c = c1.clone();
            async move { *c.lock().unwrap() += 1 }
        })
        .method("count", move |(): (), _ctx| {
            let c = c2.clone();
            async move { Ok::<_, ErrorObject>(*c.lock().unwrap()) }
        });
    let limits = Limits::new().read_ahead(4);
    let (_conn, mut peer) = pair(Connection::builder().limits(limits).serve(router), Framing::ContentLength);
    peer.send(r#"{"jsonrpc":"2.0","id":"a","method":"ask_back"}"#).await;
    let question = peer.recv().await;
    assert_eq!(question["method"], "question");
    // Before answering, the peer keeps talking.
    let mut bytes = Vec::new();
    for _ in 0..200 {
        bytes.extend(peer.frame(br#"{"jsonrpc":"2.0","method":"noise"}"#));
    }
    peer.send_raw(bytes).await;
    peer.send_json(json!({"jsonrpc":"2.0","id":question["id"],"result":21})).await;
    peer.expect(json!({"jsonrpc":"2.0","id":"a","result":42})).await;
    peer.send(r#"{"jsonrpc":"2.0","id":"c","method":"count"}"#).await;
    peer.expect(json!({"jsonrpc":"2.0","id":"c","result":200})).await;
}

#[tokio::test]
async fn a_notification_handler_awaiting_a_call_to_the_peer_never_deadlocks_behind_a_flood() {
    // The handler blocks the ordered lane; the peer floods before and after the call. The reader
    // pauses at the read-ahead limit, and must wake up to read the answer once the call starts.
    let counted = Arc::new(Mutex::new(0));
    let go = Arc::new(Notify::new());
    let (c1, c2, g) = (counted.clone(), counted.clone(), go.clone());
    let router = Router::new()
        .notification("trigger", move |(): (), ctx: jsonrpc_duplex::NotificationContext| {
            let go = g.clone();
            async move {
                go.notified().await;
                let answer: i64 = ctx.peer().request("question", ()).await.unwrap();
                ctx.peer().notify("answered", [answer]).await.unwrap();
            }
        })
        .notification("noise", move |(): (), _ctx| {
            let c = c1.clone();
            async move { *c.lock().unwrap() += 1 }
        })
        .method("count", move |(): (), _ctx| {
            let c = c2.clone();
            async move { Ok::<_, ErrorObject>(*c.lock().unwrap()) }
        });
    let limits = Limits::new().read_ahead(4).max_buffered_inbound(10_000);
    let (_conn, mut peer) = pair(Connection::builder().limits(limits).serve(router), Framing::ContentLength);
    let mut bytes = peer.frame(br#"{"jsonrpc":"2.0","method":"trigger"}"#);
    for _ in 0..100 {
        bytes.extend(peer.frame(br#"{"jsonrpc":"2.0","method":"noise"}"#));
    }
    peer.send_raw(bytes).await;
    go.notify_one();
    let question = peer.recv().await;
    assert_eq!(question["method"], "question");
    let mut bytes = Vec::new();
    for _ in 0..100 {
        bytes.extend(peer.frame(br#"{"jsonrpc":"2.0","method":"noise"}"#));
    }
    bytes.extend(peer.frame(json!({"jsonrpc":"2.0","id":question["id"],"result":7}).to_string().as_bytes()));
    peer.send_raw(bytes).await;
    peer.expect(json!({"jsonrpc":"2.0","method":"answered","params":[7]})).await;
    peer.send(r#"{"jsonrpc":"2.0","id":1,"method":"count"}"#).await;
    peer.expect(json!({"jsonrpc":"2.0","id":1,"result":200})).await;
}

/// The pipe of the tests below: a message longer than this is written whole only once the
/// reader has taken everything sent before it.
const PIPE: usize = 64;

/// `router` served with `limits` over a pipe of [`PIPE`] bytes, with `hold`, a notification whose
/// handler runs until the returned `Notify` fires. Returns once that handler has started (the
/// peer sent `hold`): what the peer sends from then on waits on the lane behind it.
async fn held_lane(router: Router, limits: Limits) -> (Connection, RawPeer, Arc<Notify>) {
    let (started, go) = (Arc::new(Notify::new()), Arc::new(Notify::new()));
    let (s, g) = (started.clone(), go.clone());
    let router = router
        .notification("hold", move |(): (), _ctx| {
            let (started, go) = (s.clone(), g.clone());
            async move {
                started.notify_one();
                go.notified().await;
            }
        })
        .notification_raw("filler", |_note: jsonrpc_duplex::Notification| async {});
    let builder = Connection::builder().limits(limits).serve(router);
    let (conn, mut peer) = pair_with_buffer(builder, Framing::NewlineDelimited, PIPE);
    peer.send(r#"{"jsonrpc":"2.0","method":"hold"}"#).await;
    within(started.notified()).await;
    (conn, peer, go)
}

/// Returns once the reader has read everything sent before (and routed it: the reader routes
/// what it has read before it reads on): a notification longer than the pipe is written.
async fn read_all_sent(peer: &mut RawPeer) {
    let filler = json!({"jsonrpc":"2.0","method":"filler","params":["f".repeat(2 * PIPE)]});
    within(peer.send(filler.to_string())).await;
}

/// Request `id`'s text, long enough to span reads of the pipe.
fn request_text(id: usize) -> String {
    format!("text {id} {}", "x".repeat(id * 50))
}

#[tokio::test]
async fn requests_queued_behind_a_running_notification_start_from_their_own_params() {
    // While the lane is free a request's params are read where they arrived; queued, they are
    // its own copy: the read buffer they came in is reused for what follows meanwhile.
    let (_conn, mut peer, go) = held_lane(echo_router(), Limits::new()).await;
    for id in 1..=20 {
        peer.send(echo_request(id)).await;
    }
    read_all_sent(&mut peer).await;
    go.notify_one();
    for id in 1..=20 {
        peer.expect(echo_answer(id)).await;
    }
}

#[tokio::test]
async fn a_request_held_while_the_read_ahead_is_full_starts_from_its_own_params() {
    // With the read-ahead full (2 queued), the reader holds the third request it read until
    // there is room: its own copy too. (No read barrier here: the reader stops reading; the
    // silence, which must hold anyway, is its time to read the third request to its end.)
    let (_conn, mut peer, go) = held_lane(echo_router(), Limits::new().read_ahead(2)).await;
    for id in 1..=3 {
        peer.send(echo_request(id)).await;
    }
    peer.expect_silence(Duration::from_millis(50)).await;
    go.notify_one();
    for id in 1..=3 {
        peer.expect(echo_answer(id)).await;
    }
}

/// `echo` (typed) and `echo_raw` (the params' text, raw).
fn echo_router() -> Router {
    Router::new().method("echo", |(text,): (String,), _ctx| async move { Ok::<_, ErrorObject>(text) }).request_raw(
        "echo_raw",
        |request: jsonrpc_duplex::Request, reply: jsonrpc_duplex::Responder| async move {
            reply.ok(request.params().map(|p| p.get().to_owned()));
        },
    )
}

/// Request `id`: `echo` when even, `echo_raw` when odd.
fn echo_request(id: usize) -> String {
    let method = if id.is_multiple_of(2) { "echo" } else { "echo_raw" };
    json!({"jsonrpc":"2.0","id":id,"method":method,"params":[request_text(id)]}).to_string()
}

fn echo_answer(id: usize) -> serde_json::Value {
    let text = request_text(id);
    let result = if id.is_multiple_of(2) { json!(text) } else { json!(json!([text]).to_string()) };
    json!({"jsonrpc":"2.0","id":id,"result":result})
}

#[tokio::test]
async fn notifications_queued_behind_a_running_one_run_with_their_own_params() {
    // The same for notifications: typed and raw handlers queued on the lane see their own params.
    let seen = Arc::new(Mutex::new(Vec::<String>::new()));
    let (s1, s2, s3) = (seen.clone(), seen.clone(), seen.clone());
    let router = Router::new()
        .notification("note", move |(text,): (String,), _ctx| {
            let seen = s1.clone();
            async move { seen.lock().unwrap().push(text) }
        })
        .notification_raw("note_raw", move |note: jsonrpc_duplex::Notification| {
            let seen = s2.clone();
            async move { seen.lock().unwrap().push(note.params().map_or(String::new(), |p| p.get().to_owned())) }
        })
        .method("seen", move |(): (), _ctx| {
            let seen = s3.clone();
            async move { Ok::<_, ErrorObject>(seen.lock().unwrap().clone()) }
        });
    let (_conn, mut peer, go) = held_lane(router, Limits::new()).await;
    let mut expected = Vec::new();
    for n in 1..=20 {
        let text = request_text(n);
        let method = if n.is_multiple_of(2) { "note" } else { "note_raw" };
        peer.send(json!({"jsonrpc":"2.0","method":method,"params":[text]}).to_string()).await;
        expected.push(if n.is_multiple_of(2) { text } else { json!([text]).to_string() });
    }
    read_all_sent(&mut peer).await;
    go.notify_one();
    peer.send(r#"{"jsonrpc":"2.0","id":1,"method":"seen"}"#).await;
    peer.expect(json!({"jsonrpc":"2.0","id":1,"result":expected})).await;
}
