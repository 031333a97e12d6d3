//! Hooks (`middleware::Hook`, the synchronous before/after layers) over real bytes, against a
//! peer written by hand: what a hook sees in both directions and the outcomes it is told, its
//! place among other layers, two hooks as a tuple, its scope around the handler, a panicking
//! hook, a handler that drops its responder, one that answers from another task, one the peer
//! cancels, one still running as the connection closes, a notification for a request handler,
//! 600 in flight answered every way on two worker threads, an outbound call dropped before its
//! answer.

use crate::support;

use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use jsonrpc_duplex::middleware::{self, CallInfo, Hook, Outcome};
use jsonrpc_duplex::{Connection, Direction, ErrorObject, Framing, Handle, Router};
use serde_json::json;

use support::raw_peer::pair;
use support::time::within;

type Log = Arc<Mutex<Vec<String>>>;

/// A hook that logs `name> dir method id params` before and `name< dir method: outcome` after.
struct Logging(&'static str, Log);

impl Hook for Logging {
    type State = String;

    fn on_request(&self, call: &CallInfo<'_>) -> String {
        let dir = if call.direction() == Direction::Incoming { "in" } else { "out" };
        let what = format!("{dir} {}", call.method());
        let id = call.id().map_or("-".to_owned(), |id| id.to_string());
        let params = call.params().map_or("-", |p| p.get()).to_owned();
        self.1.lock().unwrap().push(format!("{}> {what} {id} {params}", self.0));
        what
    }

    fn on_response(&self, what: String, outcome: &Outcome) {
        let status = match outcome {
            Ok(_) => "ok".to_owned(),
            Err(e) => format!("error {}", middleware::error_code(e)),
        };
        self.1.lock().unwrap().push(format!("{}< {what}: {status}", self.0));
    }
}

async fn wait_for(log: &Log, n: usize) {
    within(async {
        while log.lock().unwrap().len() < n {
            tokio::task::yield_now().await;
        }
    })
    .await;
}

fn asking(log: &Log) -> impl Fn(Handle) -> Router + Send + Sync + 'static {
    let log = log.clone();
    move |peer: Handle| {
        let log = log.clone();
        Router::new()
            .method("ask", move |(who,): (String,), _ctx| {
                let (peer, log) = (peer.clone(), log.clone());
                async move {
                    log.lock().unwrap().push("handler".into());
                    let name: String = peer.request("name", [&who]).await?;
                    peer.notify("thanks", [&name]).await.map_err(ErrorObject::from)?;
                    Ok::<_, ErrorObject>(format!("hi {name}"))
                }
            })
            .method("fail", |(): (), _ctx| async { Err::<(), _>(ErrorObject::new(-32042, "no")) })
    }
}

#[tokio::test]
async fn a_hook_alone_sees_both_directions_and_every_outcome() {
    let log: Log = Arc::default();
    let builder = Connection::builder().layer(Logging("H", log.clone())).serve_with(asking(&log));
    let (conn, mut peer) = pair(builder, Framing::NewlineDelimited);
    peer.send(r#"{"jsonrpc":"2.0","id":1,"method":"ask","params":["ana"]}"#).await;
    // The handler's call back and notification reach the wire byte for byte as without layers.
    assert_eq!(peer.recv_text().await, r#"{"jsonrpc":"2.0","id":0,"method":"name","params":["ana"]}"#);
    peer.send(r#"{"jsonrpc":"2.0","id":0,"result":"Ana"}"#).await;
    assert_eq!(peer.recv_text().await, r#"{"jsonrpc":"2.0","method":"thanks","params":["Ana"]}"#);
    assert_eq!(peer.recv_text().await, r#"{"jsonrpc":"2.0","id":1,"result":"hi Ana"}"#);
    wait_for(&log, 7).await;
    let answer = peer.call(r#"{"jsonrpc":"2.0","id":"f","method":"fail"}"#).await;
    assert_eq!(answer, r#"{"jsonrpc":"2.0","id":"f","error":{"code":-32042,"message":"no"}}"#);
    // A request no route takes passes the hook too, answered -32601 after it.
    let answer = peer.call(r#"{"jsonrpc":"2.0","id":2,"method":"nope"}"#).await;
    assert!(answer.contains("-32601"), "{answer}");
    wait_for(&log, 11).await;
    assert_eq!(
        *log.lock().unwrap(),
        [
            r#"H> in ask 1 ["ana"]"#,
            "handler",
            r#"H> out name 0 ["ana"]"#,
            "H< out name: ok",
            r#"H> out thanks - ["Ana"]"#,
            "H< out thanks: ok",
            "H< in ask: ok",
            r#"H> in fail "f" -"#,
            "H< in fail: error -32042",
            "H> in nope 2 -",
            "H< in nope: error -32601",
        ]
    );
    assert!(!conn.is_closed());
}

#[tokio::test]
async fn a_hook_takes_its_place_among_middleware_and_a_tuple_runs_its_first_outside() {
    let log: Log = Arc::default();
    let mw = |name: &'static str, log: &Log| {
        let log = log.clone();
        middleware::from_fn(move |call, next| {
            let (log, what) =
                (log.clone(), format!("{} {}", if call.is_inbound() { "in" } else { "out" }, call.method()));
            log.lock().unwrap().push(format!("{name}> {what}"));
            async move {
                let outcome = next.run(call).await;
                log.lock().unwrap().push(format!("{name}< {what}"));
                outcome
            }
        })
    };
    let builder = Connection::builder()
        .layer(mw("A", &log))
        .layer((Logging("H1", log.clone()), Logging("H2", log.clone())))
        .layer(mw("B", &log))
        .serve(Router::new().method("ping", |(): (), _| async { Ok::<_, ErrorObject>("pong") }));
    let (_conn, mut peer) = pair(builder, Framing::NewlineDelimited);
    let answer = peer.call(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#).await;
    assert_eq!(answer, r#"{"jsonrpc":"2.0","id":1,"result":"pong"}"#);
    wait_for(&log, 8).await;
    assert_eq!(
        *log.lock().unwrap(),
        [
            "A> in ping",
            "H1> in ping 1 -",
            "H2> in ping 1 -",
            "B> in ping",
            "B< in ping",
            "H2< in ping: ok",
            "H1< in ping: ok",
            "A< in ping"
        ]
    );
}

thread_local! {
    static IN_SCOPE: Cell<bool> = const { Cell::new(false) };
}

/// A hook whose scope is a thread-local flag, set while the call is polled.
struct Scoped;

impl Hook for Scoped {
    type State = ();
    fn on_request(&self, _: &CallInfo<'_>) {}
    fn on_response(&self, (): (), _: &Outcome) {}
    fn in_scope<R>(&self, (): &(), f: impl FnOnce() -> R) -> R {
        let before = IN_SCOPE.with(|s| s.replace(true));
        let out = f();
        IN_SCOPE.with(|s| s.set(before));
        out
    }
}

#[tokio::test]
async fn the_handler_runs_inside_the_hooks_scope() {
    let builder = Connection::builder().layer(Scoped).serve(Router::new().method("scoped", |(): (), _| async {
        let inside = IN_SCOPE.with(Cell::get);
        tokio::task::yield_now().await;
        Ok::<_, ErrorObject>([inside, IN_SCOPE.with(Cell::get)])
    }));
    let (_conn, mut peer) = pair(builder, Framing::NewlineDelimited);
    let answer = peer.call(r#"{"jsonrpc":"2.0","id":1,"method":"scoped"}"#).await;
    assert_eq!(answer, r#"{"jsonrpc":"2.0","id":1,"result":[true,true]}"#, "in scope at every poll");
    assert!(!IN_SCOPE.with(Cell::get));
}

struct Panicky;

impl Hook for Panicky {
    type State = bool;
    fn on_request(&self, call: &CallInfo<'_>) -> bool {
        assert_ne!(call.method(), "early", "the hook broke early");
        call.method() == "late"
    }
    fn on_response(&self, late: bool, _: &Outcome) {
        assert!(!late, "the hook broke late");
    }
}

#[tokio::test]
async fn a_panicking_hook_answers_internal_error_and_the_connection_lives() {
    let builder = Connection::builder().layer(Panicky).serve(
        Router::new()
            .method("early", |(): (), _| async { Ok::<_, ErrorObject>(1) })
            .method("late", |(): (), _| async { Ok::<_, ErrorObject>(1) })
            .method("ok", |(): (), _| async { Ok::<_, ErrorObject>(2) }),
    );
    let (conn, mut peer) = pair(builder, Framing::NewlineDelimited);
    peer.send(r#"{"jsonrpc":"2.0","id":1,"method":"early"}"#).await;
    let (got, code, message) = peer.recv_error().await;
    assert_eq!((got, code), (json!(1), -32603), "{message}");
    assert!(message.contains("the hook broke early"), "{message}");
    // After the handler answered, a panic changes no answer: the result is on the wire.
    let answer = peer.call(r#"{"jsonrpc":"2.0","id":2,"method":"late"}"#).await;
    assert_eq!(answer, r#"{"jsonrpc":"2.0","id":2,"result":1}"#);
    assert_eq!(peer.call(r#"{"jsonrpc":"2.0","id":3,"method":"ok"}"#).await, r#"{"jsonrpc":"2.0","id":3,"result":2}"#);
    assert!(!conn.is_closed());
}

/// A hook told by reference (as the shipped ones are) that panics when told of `late` calls;
/// counts how often it is told and how often its state is dropped.
#[derive(Default)]
struct PanickyByRef {
    told: AtomicUsize,
    dropped: Arc<AtomicUsize>,
}

struct Held(bool, Arc<AtomicUsize>);

impl Drop for Held {
    fn drop(&mut self) {
        self.1.fetch_add(1, Ordering::SeqCst);
    }
}

impl Hook for PanickyByRef {
    type State = Held;
    fn on_request(&self, call: &CallInfo<'_>) -> Held {
        Held(call.method().starts_with("late"), self.dropped.clone())
    }
    fn on_response(&self, state: Held, outcome: &Outcome) {
        self.on_response_ref(&state, outcome);
    }
    const TOLD_BY_REF: bool = true;
    fn on_response_ref(&self, state: &Held, _: &Outcome) {
        self.told.fetch_add(1, Ordering::SeqCst);
        assert!(!state.0, "the hook broke late");
    }
}

#[tokio::test]
async fn a_hook_told_by_reference_that_panics_is_told_once_and_its_state_dropped_once() {
    let hook = Arc::new(PanickyByRef::default());
    let builder = Connection::builder().layer(hook.clone()).serve(
        Router::new()
            // Answered in the handler's first poll, and after a wait (the hook told on another path).
            .method("late", |(): (), _| async { Ok::<_, ErrorObject>(1) })
            .method("late/waiting", |(): (), _| async {
                tokio::task::yield_now().await;
                Ok::<_, ErrorObject>(2)
            })
            .method("ok", |(): (), _| async { Ok::<_, ErrorObject>(3) }),
    );
    let (conn, mut peer) = pair(builder, Framing::NewlineDelimited);
    let calls = [("late", "1"), ("late/waiting", "2"), ("ok", "3")];
    for (n, (method, result)) in calls.into_iter().enumerate() {
        let id = n + 1;
        let answer = peer.call(&format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}"}}"#)).await;
        assert_eq!(answer, format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{result}}}"#));
        // Told just after the answer is written (on this thread: the test runs on one).
        within(async {
            while hook.told.load(Ordering::SeqCst) < id {
                tokio::task::yield_now().await;
            }
        })
        .await;
        // The state is dropped as the hook is told, panic or not, not left for later.
        assert_eq!(hook.dropped.load(Ordering::SeqCst), id, "{method}: dropped once, at once");
    }
    assert_eq!(hook.told.load(Ordering::SeqCst), 3, "told once a call");
    assert!(!conn.is_closed());
}

#[tokio::test]
async fn an_outbound_call_whose_hook_panics_when_told_lets_the_panic_up_once_and_the_connection_lives() {
    use futures::FutureExt;
    let hook = Arc::new(PanickyByRef::default());
    let (conn, mut peer) = pair(Connection::builder().layer(hook.clone()), Framing::NewlineDelimited);
    let handle = conn.handle();
    let mut call = std::pin::pin!(handle.request::<i64>("late", ()));
    let answered = async {
        let request = peer.recv().await;
        assert_eq!(request["method"], "late");
        peer.send_json(json!({"jsonrpc": "2.0", "id": request["id"], "result": 7})).await;
    };
    let (panicked, ()) =
        within(async { tokio::join!(std::panic::AssertUnwindSafe(call.as_mut()).catch_unwind(), answered) }).await;
    let message = panicked.expect_err("the hook panics as it is told");
    assert_eq!(message.downcast_ref::<&str>(), Some(&"the hook broke late"));
    assert_eq!(hook.told.load(Ordering::SeqCst), 1);
    assert_eq!(hook.dropped.load(Ordering::SeqCst), 1, "the state dropped as the panic went up");
    // The connection goes on: the next call is answered, its hook told.
    let next = async {
        let request = peer.recv().await;
        peer.send_json(json!({"jsonrpc": "2.0", "id": request["id"], "result": 8})).await;
    };
    let (sum, ()) = within(async { tokio::join!(handle.request::<i64>("ok", ()), next) }).await;
    assert_eq!(sum.unwrap(), 8);
    assert_eq!((hook.told.load(Ordering::SeqCst), hook.dropped.load(Ordering::SeqCst)), (2, 2));
    assert!(!conn.is_closed());
}

#[tokio::test]
async fn a_handler_dropping_its_responder_under_a_hook_is_answered_and_the_hook_told() {
    let log: Log = Arc::default();
    let builder =
        Connection::builder().layer(Logging("H", log.clone())).serve(Router::new().request_raw(
            "drop",
            |_request: jsonrpc_duplex::Request, responder: jsonrpc_duplex::Responder| async move { drop(responder) },
        ));
    let (_conn, mut peer) = pair(builder, Framing::NewlineDelimited);
    peer.send(r#"{"jsonrpc":"2.0","id":5,"method":"drop"}"#).await;
    let (got, code, message) = peer.recv_error().await;
    assert_eq!((got, code), (json!(5), -32603), "{message}");
    wait_for(&log, 2).await;
    assert_eq!(*log.lock().unwrap(), ["H> in drop 5 -", "H< in drop: error -32603"]);
}

/// `Logging` with a scope: counts the polls it was asked to wrap.
struct Counted(Logging, Arc<std::sync::atomic::AtomicUsize>);

impl Hook for Counted {
    type State = String;
    fn on_request(&self, call: &CallInfo<'_>) -> String {
        self.0.on_request(call)
    }
    fn on_response(&self, what: String, outcome: &Outcome) {
        self.0.on_response(what, outcome)
    }
    fn in_scope<R>(&self, _: &String, f: impl FnOnce() -> R) -> R {
        self.1.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        f()
    }
}

#[tokio::test]
async fn a_responder_answered_from_another_task_tells_the_hook_once_with_the_answer() {
    for scoped in [false, true] {
        let log: Log = Arc::default();
        let polls = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let logging = Logging("H", log.clone());
        let router = Router::new().request_raw(
            "later",
            |_request: jsonrpc_duplex::Request, responder: jsonrpc_duplex::Responder| async move {
                // Answered by a task of its own after the handler's future has ended.
                tokio::spawn(async move {
                    tokio::task::yield_now().await;
                    responder.err(ErrorObject::new(-32077, "later"));
                });
            },
        );
        let builder = if scoped {
            Connection::builder().layer(Counted(logging, polls.clone())).serve(router)
        } else {
            Connection::builder().layer(logging).serve(router)
        };
        let (_conn, mut peer) = pair(builder, Framing::NewlineDelimited);
        let answer = peer.call(r#"{"jsonrpc":"2.0","id":9,"method":"later"}"#).await;
        assert_eq!(answer, r#"{"jsonrpc":"2.0","id":9,"error":{"code":-32077,"message":"later"}}"#);
        wait_for(&log, 2).await;
        assert_eq!(*log.lock().unwrap(), ["H> in later 9 -", "H< in later: error -32077"], "scoped: {scoped}");
        // The handler's one poll was in the scope (its start, before the hook's state, is not).
        assert_eq!(polls.load(std::sync::atomic::Ordering::SeqCst), usize::from(scoped));
    }
}

#[tokio::test]
async fn an_outbound_call_dropped_under_a_hook_is_cancelled_and_its_state_dropped_untold() {
    let log: Log = Arc::default();
    let builder = Connection::builder().layer(Logging("H", log.clone()));
    let (conn, mut peer) = pair(builder, Framing::NewlineDelimited);
    let handle = conn.handle();
    // The call waits for its answer while the peer reads the request; then the caller gives up
    // (the block ends: the call's future is dropped).
    let request = {
        let mut call = std::pin::pin!(handle.request::<String>("slow", ("x",)));
        tokio::select! {
            biased;
            _ = &mut call => panic!("answered without an answer"),
            request = peer.recv_text() => request,
        }
    };
    assert_eq!(request, r#"{"jsonrpc":"2.0","id":0,"method":"slow","params":["x"]}"#);
    peer.expect(json!({"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":0}})).await;
    // Told of the next call, not of the dropped one: its state went with its future.
    let next = handle.request::<String>("fast", ());
    let answered = async {
        assert_eq!(peer.recv_text().await, r#"{"jsonrpc":"2.0","id":1,"method":"fast"}"#);
        // The dropped call's state was dropped, never told (told calls are logged with `<`).
        assert_eq!(*log.lock().unwrap(), [r#"H> out slow 0 ["x"]"#, "H> out fast 1 -"]);
        peer.send(r#"{"jsonrpc":"2.0","id":1,"result":"done"}"#).await;
    };
    let (result, ()) = within(async { tokio::join!(next, answered) }).await;
    assert_eq!(result.unwrap(), "done");
    assert_eq!(*log.lock().unwrap(), [r#"H> out slow 0 ["x"]"#, "H> out fast 1 -", "H< out fast: ok"]);
}

#[tokio::test]
async fn a_request_the_peer_cancels_under_a_hook_is_answered_cancelled_and_the_hook_told_once() {
    let log: Log = Arc::default();
    let (started_tx, started_rx) = tokio::sync::oneshot::channel::<()>();
    let started_tx = Arc::new(Mutex::new(Some(started_tx)));
    let builder = Connection::builder().layer(Logging("H", log.clone())).serve(Router::new().method(
        "wait",
        move |(): (), ctx: jsonrpc_duplex::RequestContext| {
            let started_tx = started_tx.clone();
            async move {
                if let Some(tx) = started_tx.lock().unwrap().take() {
                    let _ = tx.send(());
                }
                // Runs on, past its first poll (in a task of its own), until cancelled.
                std::future::pending::<()>().await;
                drop(ctx);
                Ok::<_, ErrorObject>(())
            }
        },
    ));
    let (conn, mut peer) = pair(builder, Framing::NewlineDelimited);
    peer.send(r#"{"jsonrpc":"2.0","id":4,"method":"wait"}"#).await;
    within(started_rx).await.unwrap();
    peer.send(r#"{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":4}}"#).await;
    let (got, code, message) = peer.recv_error().await;
    assert_eq!((got, code), (json!(4), -32800), "{message}");
    wait_for(&log, 2).await;
    assert_eq!(*log.lock().unwrap(), ["H> in wait 4 -", "H< in wait: error -32800"]);
    assert!(peer.call(r#"{"jsonrpc":"2.0","id":5,"method":"nope"}"#).await.contains("-32601"));
    wait_for(&log, 4).await;
    assert!(!conn.is_closed());
}

#[tokio::test]
async fn a_handler_still_running_as_the_connection_closes_has_its_hook_told_once() {
    let log: Log = Arc::default();
    let builder = Connection::builder().layer(Logging("H", log.clone())).serve(
        Router::new().method("forever", |(): (), _| async { std::future::pending::<Result<(), ErrorObject>>().await }),
    );
    let (conn, mut peer) = pair(builder, Framing::NewlineDelimited);
    peer.send(r#"{"jsonrpc":"2.0","id":8,"method":"forever"}"#).await;
    wait_for(&log, 1).await;
    within(conn.close()).await;
    wait_for(&log, 2).await;
    let log = log.lock().unwrap().clone();
    assert_eq!(log[0], "H> in forever 8 -");
    assert!(log[1].starts_with("H< in forever: error "), "{log:?}");
    assert_eq!(log.len(), 2, "told once: {log:?}");
}

#[tokio::test]
async fn a_notification_for_a_request_handler_runs_under_the_hook() {
    let log: Log = Arc::default();
    let builder = Connection::builder()
        .layer(Logging("H", log.clone()))
        .serve(Router::new().method("add", |(a, b): (i64, i64), _| async move { Ok::<_, ErrorObject>(a + b) }));
    let (_conn, mut peer) = pair(builder, Framing::NewlineDelimited);
    // Run, its answer discarded: the hook sees it as an inbound call without an id.
    peer.send(r#"{"jsonrpc":"2.0","method":"add","params":[1,2]}"#).await;
    wait_for(&log, 2).await;
    assert_eq!(*log.lock().unwrap(), ["H> in add null [1,2]", "H< in add: ok"]);
}

/// Counts, per request id, how often the hook was told and with what.
#[derive(Default)]
struct Tally(Mutex<std::collections::HashMap<String, Vec<String>>>);

impl Hook for Tally {
    type State = String;
    fn on_request(&self, call: &CallInfo<'_>) -> String {
        call.id().map_or("-".to_owned(), |id| id.to_string())
    }
    fn on_response(&self, id: String, outcome: &Outcome) {
        let status = match outcome {
            Ok(_) => "ok".to_owned(),
            Err(e) => format!("error {}", middleware::error_code(e)),
        };
        self.0.lock().unwrap().entry(id).or_default().push(status);
    }
}

/// The hand-off between the task polling a handler and whoever answers, under load on two
/// worker threads: answers given in the handler's first poll, in a later one, and from another
/// task after the handler has ended (at once, or after some yields), results and errors mixed,
/// 600 requests in flight together. Each request's hook is told exactly once, with its answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn under_load_each_hooked_request_is_told_once_whoever_answers_and_when() {
    let tally = Arc::new(Tally::default());
    let builder = Connection::builder().layer(tally.clone()).serve(Router::new().request_raw(
        "go",
        |request: jsonrpc_duplex::Request, responder: jsonrpc_duplex::Responder| async move {
            let [n]: [u64; 1] = serde_json::from_str(request.params().map_or("[0]", |p| p.get())).unwrap();
            let answer = move |responder: jsonrpc_duplex::Responder| {
                if n % 3 == 0 {
                    responder.err(ErrorObject::new(-32000 - (n % 7) as i64, "no"));
                } else {
                    responder.ok(n);
                }
            };
            match n % 4 {
                // In the first poll.
                0 => answer(responder),
                // In a later poll of the handler.
                1 => {
                    tokio::task::yield_now().await;
                    answer(responder);
                }
                // From another task, once the handler has ended, after some yields.
                2 => {
                    tokio::spawn(async move {
                        for _ in 0..(n % 5) {
                            tokio::task::yield_now().await;
                        }
                        answer(responder);
                    });
                }
                // From another task at once, racing the handler's end.
                _ => {
                    tokio::spawn(async move { answer(responder) });
                }
            }
        },
    ));
    let (_conn, mut peer) = pair(builder, Framing::NewlineDelimited);
    const N: u64 = 600;
    for n in 0..N {
        peer.send(format!(r#"{{"jsonrpc":"2.0","id":{n},"method":"go","params":[{n}]}}"#)).await;
    }
    let mut answered = std::collections::HashMap::new();
    for _ in 0..N {
        let answer = peer.recv().await;
        let id = answer["id"].as_u64().unwrap();
        let status = match answer.get("error") {
            Some(error) => format!("error {}", error["code"]),
            None => {
                assert_eq!(answer["result"], json!(id), "{answer}");
                "ok".to_owned()
            }
        };
        // A third are errors, of the handler's own codes.
        assert_eq!(status != "ok", id % 3 == 0, "{answer}");
        assert!(answered.insert(id, status).is_none(), "answered twice: {answer}");
    }
    within(async {
        while tally.0.lock().unwrap().values().map(Vec::len).sum::<usize>() < N as usize {
            tokio::task::yield_now().await;
        }
    })
    .await;
    let told = tally.0.lock().unwrap();
    for n in 0..N {
        let statuses = &told[&n.to_string()];
        assert_eq!(statuses.len(), 1, "request {n} told {statuses:?}");
        assert_eq!(statuses[0], answered[&n], "request {n}: the hook was told what the peer was answered");
    }
    assert_eq!(told.len(), N as usize);
}
