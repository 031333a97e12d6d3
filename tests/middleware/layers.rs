//! Middleware over real bytes, against a peer written by hand: the order layers run in, a
//! refusal that never runs the handler, an outbound layer that sees the calls a handler makes
//! back, a panicking layer, a layer that holds calls, extensions for the handler, the peer's
//! identity, the shipped timeout and concurrency limit.

use crate::support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use jsonrpc_duplex::middleware::limit::{ConcurrencyLimit, Timeout};
use jsonrpc_duplex::middleware::{self, Kind};
use jsonrpc_duplex::{Connection, Direction, ErrorObject, Framing, Handle, Notification, RequestContext, Router};
use serde_json::json;
use tokio::sync::{Notify, Semaphore};

use support::raw_peer::pair;
use support::time::within;

type Log = Arc<Mutex<Vec<String>>>;

/// A layer that logs `name>` on the way in and `name<` on the way out, with the direction.
fn logging(name: &'static str, log: &Log) -> impl middleware::Middleware {
    let log = log.clone();
    middleware::from_fn(move |call, next| {
        let log = log.clone();
        let dir = match call.direction() {
            Direction::Incoming => "in",
            Direction::Outgoing => "out",
        };
        let what = format!("{dir} {}", call.method());
        log.lock().unwrap().push(format!("{name}> {what}"));
        async move {
            let outcome = next.run(call).await;
            log.lock().unwrap().push(format!("{name}< {what}"));
            outcome
        }
    })
}

#[tokio::test]
async fn layers_run_in_the_order_added_and_see_the_calls_a_handler_makes_back() {
    let log: Log = Arc::default();
    let handler_log = log.clone();
    let builder =
        Connection::builder().layer(logging("A", &log)).layer(logging("B", &log)).serve_with(move |peer: Handle| {
            let log = handler_log.clone();
            Router::new().method("ask", move |(): (), _ctx| {
                let (peer, log) = (peer.clone(), log.clone());
                async move {
                    log.lock().unwrap().push("handler".into());
                    let name: String = peer.request("name", ()).await?;
                    peer.notify("thanks", [&name]).await.map_err(ErrorObject::from)?;
                    Ok::<_, ErrorObject>(format!("hi {name}"))
                }
            })
        });
    let (_conn, mut peer) = pair(builder, Framing::NewlineDelimited);
    peer.send(r#"{"jsonrpc":"2.0","id":1,"method":"ask"}"#).await;
    // The handler's call back reaches the wire, byte for byte as without layers.
    assert_eq!(peer.recv_text().await, r#"{"jsonrpc":"2.0","id":0,"method":"name"}"#);
    peer.send(r#"{"jsonrpc":"2.0","id":0,"result":"ana"}"#).await;
    assert_eq!(peer.recv_text().await, r#"{"jsonrpc":"2.0","method":"thanks","params":["ana"]}"#);
    assert_eq!(peer.recv_text().await, r#"{"jsonrpc":"2.0","id":1,"result":"hi ana"}"#);
    // The handler answers; the layers see the answer just after it is written.
    within(async {
        while log.lock().unwrap().len() < 13 {
            tokio::task::yield_now().await;
        }
    })
    .await;
    assert_eq!(
        *log.lock().unwrap(),
        [
            "A> in ask",
            "B> in ask",
            "handler",
            "A> out name",
            "B> out name",
            "B< out name",
            "A< out name",
            "A> out thanks",
            "B> out thanks",
            "B< out thanks",
            "A< out thanks",
            "B< in ask",
            "A< in ask",
        ]
    );
}

#[tokio::test]
async fn a_refusal_answers_without_running_the_handler() {
    let ran = Arc::new(AtomicUsize::new(0));
    let counter = ran.clone();
    let builder = Connection::builder()
        .layer(middleware::from_fn(|call, next| async move {
            if call.is_inbound() && call.method().starts_with("admin/") {
                return middleware::refuse(ErrorObject::new(-32001, "not for you"));
            }
            next.run(call).await
        }))
        .serve(Router::new().method("admin/wipe", move |(): (), _ctx| {
            counter.fetch_add(1, Ordering::SeqCst);
            async { Ok::<_, ErrorObject>(true) }
        }));
    let (_conn, mut peer) = pair(builder, Framing::NewlineDelimited);
    let answer = peer.call(r#"{"jsonrpc":"2.0","id":"x","method":"admin/wipe","params":{}}"#).await;
    assert_eq!(answer, r#"{"jsonrpc":"2.0","id":"x","error":{"code":-32001,"message":"not for you"}}"#);
    // Unknown methods pass the layers too (refused here, -32601 otherwise).
    let answer = peer.call(r#"{"jsonrpc":"2.0","id":2,"method":"admin/nope"}"#).await;
    assert_eq!(answer, r#"{"jsonrpc":"2.0","id":2,"error":{"code":-32001,"message":"not for you"}}"#);
    let (id, code, _) = {
        peer.send(r#"{"jsonrpc":"2.0","id":3,"method":"nope"}"#).await;
        peer.recv_error().await
    };
    assert_eq!((id, code), (json!(3), -32601));
    assert_eq!(ran.load(Ordering::SeqCst), 0, "the handler ran");
}

#[tokio::test]
async fn a_panicking_layer_answers_internal_error_and_the_connection_lives() {
    let builder = Connection::builder()
        .layer(middleware::from_fn(|call, next| async move {
            if call.method() == "boom" {
                panic!("the layer broke");
            }
            next.run(call).await
        }))
        // A layer that panics before it returns its future, too.
        .layer(middleware::from_fn(|call, next| {
            assert_ne!(call.method(), "early", "the layer broke early");
            next.run(call)
        }))
        .serve(
            Router::new()
                .method("boom", |(): (), _| async { Ok::<_, ErrorObject>(1) })
                .method("early", |(): (), _| async { Ok::<_, ErrorObject>(1) })
                .method("ok", |(): (), _| async { Ok::<_, ErrorObject>(2) }),
        );
    let (conn, mut peer) = pair(builder, Framing::NewlineDelimited);
    for (id, method) in [(1, "boom"), (2, "early")] {
        peer.send(format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}"}}"#)).await;
        let (got, code, message) = peer.recv_error().await;
        assert_eq!((got, code), (json!(id), -32603), "{message}");
        assert!(message.contains("the layer broke"), "{message}");
    }
    assert_eq!(peer.call(r#"{"jsonrpc":"2.0","id":3,"method":"ok"}"#).await, r#"{"jsonrpc":"2.0","id":3,"result":2}"#);
    assert!(!conn.is_closed());
}

#[tokio::test]
async fn a_layer_that_holds_calls_keeps_their_order_and_the_eof_sequence() {
    // A rate limit of sorts: every inbound message waits for a permit the test hands out.
    let permits = Arc::new(Semaphore::new(0));
    let gate = permits.clone();
    let seen: Log = Arc::default();
    let (notes, asks) = (seen.clone(), seen.clone());
    let builder = Connection::builder()
        .eof_grace(Duration::from_secs(30))
        .layer(middleware::from_fn(move |call, next| {
            let gate = gate.clone();
            async move {
                let _permit = gate.acquire().await.map_err(|_| jsonrpc_duplex::Error::Cancelled)?;
                next.run(call).await
            }
        }))
        .serve(
            Router::new()
                .notification("note", move |(n,): (u32,), _| {
                    notes.lock().unwrap().push(format!("note {n}"));
                    async {}
                })
                .method("ask", move |(n,): (u32,), _ctx| {
                    asks.lock().unwrap().push(format!("ask {n}"));
                    async move { Ok::<_, ErrorObject>(n) }
                }),
        );
    let (_conn, mut peer) = pair(builder, Framing::NewlineDelimited);
    for n in 0..3 {
        peer.send(format!(r#"{{"jsonrpc":"2.0","method":"note","params":[{n}]}}"#)).await;
    }
    peer.send(r#"{"jsonrpc":"2.0","id":7,"method":"ask","params":[7]}"#).await;
    // The peer is done: its EOF arrives while everything is held.
    peer.close_write().await;
    peer.expect_silence(Duration::from_millis(50)).await;
    assert!(seen.lock().unwrap().is_empty());
    permits.add_permits(1);
    permits.add_permits(3);
    // Answered within the EOF grace, then our side ends.
    assert_eq!(peer.recv_text().await, r#"{"jsonrpc":"2.0","id":7,"result":7}"#);
    peer.expect_eof().await;
    assert_eq!(*seen.lock().unwrap(), ["note 0", "note 1", "note 2", "ask 7"]);
}

#[tokio::test]
async fn a_layer_reads_the_call_and_passes_extensions_to_the_handler() {
    #[derive(Clone, Debug)]
    struct User(String);
    let seen: Log = Arc::default();
    let log = seen.clone();
    let builder = Connection::builder()
        .layer(middleware::from_fn(move |mut call, next| {
            let id = call.id().map(|id| id.to_string());
            let params = call.params().map(|p| p.get().to_owned());
            log.lock().unwrap().push(format!(
                "{:?} {:?} {} {id:?} {params:?}",
                call.direction(),
                call.kind(),
                call.method()
            ));
            if call.kind() == Kind::Request {
                call.extensions_mut().insert(User("ana".into()));
            }
            next.run(call)
        }))
        .serve(
            Router::new()
                .method("whoami", |_: serde_json::Value, ctx: RequestContext| async move {
                    Ok::<_, ErrorObject>(ctx.extensions().get::<User>().map(|u| u.0.clone()))
                })
                .notification_raw("n", |_n: Notification| async {}),
        );
    let (conn, mut peer) = pair(builder, Framing::NewlineDelimited);
    let answer = peer.call(r#"{"jsonrpc":"2.0","id":"a","method":"whoami","params":{"k": [1, 2]}}"#).await;
    assert_eq!(answer, r#"{"jsonrpc":"2.0","id":"a","result":"ana"}"#);
    peer.send(r#"{"jsonrpc":"2.0","method":"n","params":[true]}"#).await;
    let handle = conn.handle();
    let call = tokio::spawn(async move { handle.request::<u32>("out", json!({"x": "y"})).await });
    assert_eq!(peer.recv_text().await, r#"{"jsonrpc":"2.0","id":0,"method":"out","params":{"x":"y"}}"#);
    peer.send(r#"{"jsonrpc":"2.0","id":0,"result":5}"#).await;
    assert_eq!(within(call).await.unwrap().unwrap(), 5);
    assert_eq!(
        *seen.lock().unwrap(),
        [
            r#"Incoming Request whoami Some("\"a\"") Some("{\"k\": [1, 2]}")"#,
            r#"Incoming Notification n None Some("[true]")"#,
            r#"Outgoing Request out Some("0") Some("{\"x\":\"y\"}")"#,
        ]
    );
}

#[tokio::test]
async fn an_outbound_layer_may_refuse_a_call_before_it_reaches_the_wire() {
    let builder = Connection::builder().layer(middleware::from_fn(|call, next| async move {
        if !call.is_inbound() && call.method() == "forbidden" {
            return middleware::refuse(ErrorObject::new(-32050, "not sent"));
        }
        next.run(call).await
    }));
    let (conn, peer) = pair(builder, Framing::NewlineDelimited);
    let refused = conn.handle().request::<u32>("forbidden", ()).await.unwrap_err();
    assert_eq!(refused.as_remote().map(|e| e.code), Some(-32050));
    conn.handle().notify("allowed", ()).await.unwrap();
    // The refused call never reached the wire, and its id is free again.
    assert_eq!(peer.recv_text().await, r#"{"jsonrpc":"2.0","method":"allowed"}"#);
}

#[tokio::test(start_paused = true)]
async fn the_timeout_layer_answers_minus_32001_and_drops_the_handler() {
    struct Dropped(Arc<Notify>);
    impl Drop for Dropped {
        fn drop(&mut self) {
            self.0.notify_one();
        }
    }
    let dropped = Arc::new(Notify::new());
    let seen = dropped.clone();
    let builder = Connection::builder().layer(Timeout::per_method().method("slow", Duration::from_secs(5))).serve(
        Router::new().method("slow", move |(): (), _| {
            let guard = Dropped(seen.clone());
            async move {
                let _guard = guard;
                std::future::pending::<()>().await;
                Ok::<_, ErrorObject>(())
            }
        }),
    );
    let (_conn, mut peer) = pair(builder, Framing::NewlineDelimited);
    peer.send(r#"{"jsonrpc":"2.0","id":1,"method":"slow"}"#).await;
    let (id, code, message) = peer.recv_error().await;
    assert_eq!((id, code), (json!(1), -32001), "{message}");
    assert!(message.contains("5s"), "{message}");
    within(dropped.notified()).await;
}

#[tokio::test]
async fn the_concurrency_limit_holds_a_method_over_its_limit() {
    let running = Arc::new(AtomicUsize::new(0));
    let most = Arc::new(AtomicUsize::new(0));
    let release = Arc::new(Semaphore::new(0));
    let (r, m, gate) = (running.clone(), most.clone(), release.clone());
    let builder = Connection::builder().layer(ConcurrencyLimit::per_method().method("work", 2)).serve(
        Router::new().method("work", move |(n,): (u32,), _| {
            let (r, m, gate) = (r.clone(), m.clone(), gate.clone());
            async move {
                let now = r.fetch_add(1, Ordering::SeqCst) + 1;
                m.fetch_max(now, Ordering::SeqCst);
                let _ = gate.acquire().await.map_err(|_| ErrorObject::internal_error("closed"))?;
                r.fetch_sub(1, Ordering::SeqCst);
                Ok::<_, ErrorObject>(n)
            }
        }),
    );
    let (_conn, mut peer) = pair(builder, Framing::NewlineDelimited);
    for n in 0..5 {
        peer.send(format!(r#"{{"jsonrpc":"2.0","id":{n},"method":"work","params":[{n}]}}"#)).await;
    }
    within(async {
        while running.load(Ordering::SeqCst) < 2 {
            tokio::task::yield_now().await;
        }
    })
    .await;
    release.add_permits(5);
    let mut ids = Vec::new();
    for _ in 0..5 {
        ids.push(peer.recv().await["id"].as_u64().unwrap());
    }
    ids.sort();
    assert_eq!(ids, [0, 1, 2, 3, 4]);
    assert_eq!(most.load(Ordering::SeqCst), 2, "more than two ran at once");
}

#[tokio::test]
async fn a_batch_passes_the_layers_member_by_member() {
    let builder = Connection::builder()
        .layer(middleware::from_fn(|call, next| async move {
            if call.method() == "no" {
                return middleware::refuse(ErrorObject::new(-32001, "refused"));
            }
            next.run(call).await
        }))
        .serve(
            Router::new()
                .method("yes", |(): (), _| async { Ok::<_, ErrorObject>(1) })
                .method("no", |(): (), _| async { Ok::<_, ErrorObject>(2) }),
        );
    let (_conn, mut peer) = pair(builder, Framing::NewlineDelimited);
    peer.send(r#"[{"jsonrpc":"2.0","id":1,"method":"yes"},{"jsonrpc":"2.0","id":2,"method":"no"}]"#).await;
    let mut answers: Vec<serde_json::Value> = serde_json::from_value(peer.recv().await).unwrap();
    answers.sort_by_key(|a| a["id"].as_u64());
    assert_eq!(
        serde_json::Value::from(answers),
        json!([
            {"jsonrpc": "2.0", "id": 1, "result": 1},
            {"jsonrpc": "2.0", "id": 2, "error": {"code": -32001, "message": "refused"}},
        ])
    );
}
