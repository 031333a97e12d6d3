//! `$/progress` on the wire, both sides, against a hand-written raw-byte peer: the caller's token
//! in the params, reports in both shapes delivered in order and all before the answer, reports
//! after the answer dropped, tokens we did not issue left to the router, the callee's reports
//! before its answer and never after, MCP's spelling, and the connection ending.

use crate::support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use jsonrpc_duplex::{
    CallOptions, CancellationToken, Connection, Error, ErrorObject, Framing, Progress, ProgressProtocol, ProgressToken,
    Router,
};
use serde_json::{Value, json};
use support::raw_peer::pair;
use support::time::within;
use tokio::sync::mpsc;

const SILENCE: Duration = Duration::from_millis(100);

#[tokio::test]
async fn reports_in_both_shapes_reach_the_caller_in_order_before_the_answer() {
    let (conn, mut peer) = pair(Connection::builder(), Framing::NewlineDelimited);
    let (token, receiver) = conn.handle().progress::<Value>();
    assert_eq!(token, ProgressToken::from(0u64), "tokens count from 0, like StreamJsonRpc's");
    let h = conn.handle();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    let call = tokio::spawn(async move {
        let call = h.request::<String>("work", json!({"units": 2, "progress": token}));
        let answer = receiver.drive(call, |v| log.lock().unwrap().push(v)).await;
        // Everything read before the answer was handed over before the call returned.
        (answer, log.lock().unwrap().len())
    });
    peer.expect(json!({"jsonrpc":"2.0","id":0,"method":"work","params":{"units":2,"progress":0}})).await;
    // One write: the reports and the answer arrive together, and still in order.
    let mut burst = Vec::new();
    burst.extend(peer.frame(br#"{"jsonrpc":"2.0","method":"$/progress","params":{"token":0,"value":{"percent":40}}}"#));
    burst.extend(peer.frame(br#"{"jsonrpc":"2.0","method":"$/progress","params":[0,{"percent":80}]}"#));
    burst.extend(peer.frame(br#"{"jsonrpc":"2.0","id":0,"result":"done"}"#));
    peer.send_raw(burst).await;
    let (answer, seen_at_return) = within(call).await.unwrap();
    assert_eq!(answer.unwrap(), "done");
    assert_eq!(seen_at_return, 2);
    assert_eq!(*seen.lock().unwrap(), [json!({"percent":40}), json!({"percent":80})]);
}

#[tokio::test]
async fn a_thousand_reports_then_the_answer_all_arrive_first() {
    let (conn, mut peer) = pair(Connection::builder(), Framing::ContentLength);
    let (token, receiver) = conn.handle().progress::<u32>();
    let h = conn.handle();
    let call = tokio::spawn(async move {
        let mut seen = Vec::new();
        let answer = receiver.drive(h.request::<u32>("work", (token,)), |v| seen.push(v)).await;
        (answer, seen)
    });
    peer.expect(json!({"jsonrpc":"2.0","id":0,"method":"work","params":[0]})).await;
    let mut burst = Vec::new();
    for i in 0..1000 {
        let report = json!({"jsonrpc":"2.0","method":"$/progress","params":{"token":0,"value":i}});
        burst.extend(peer.frame(report.to_string().as_bytes()));
    }
    burst.extend(peer.frame(br#"{"jsonrpc":"2.0","id":0,"result":1000}"#));
    peer.send_raw(burst).await;
    let (answer, seen) = within(call).await.unwrap();
    assert_eq!(answer.unwrap(), 1000);
    assert_eq!(seen, (0..1000).collect::<Vec<u32>>());
}

#[tokio::test]
async fn the_receiver_ends_at_the_answer_and_later_reports_go_to_the_router() {
    let (routed_tx, mut routed) = mpsc::unbounded_channel::<Value>();
    let router = Router::new().notification("$/progress", move |p: Value, _cx| {
        let _ = routed_tx.send(p);
        async {}
    });
    let (conn, mut peer) = pair(Connection::builder().serve(router), Framing::NewlineDelimited);
    let (token, mut receiver) = conn.handle().progress::<u32>();
    let h = conn.handle();
    let call = tokio::spawn(async move { h.request::<()>("work", (token,)).await });
    peer.expect(json!({"jsonrpc":"2.0","id":0,"method":"work","params":[0]})).await;
    peer.send_json(json!({"jsonrpc":"2.0","method":"$/progress","params":{"token":0,"value":1}})).await;
    peer.send_json(json!({"jsonrpc":"2.0","id":0,"result":null})).await;
    within(call).await.unwrap().unwrap();
    // Too late: the token was forgotten with the answer.
    peer.send_json(json!({"jsonrpc":"2.0","method":"$/progress","params":{"token":0,"value":2}})).await;
    assert_eq!(within(receiver.next()).await.unwrap().unwrap(), 1);
    assert!(within(receiver.next()).await.is_none());
    // A token this side never issued (an LSP server's own) is the router's business.
    peer.send_json(
        json!({"jsonrpc":"2.0","method":"$/progress","params":{"token":"indexing","value":{"kind":"begin"}}}),
    )
    .await;
    assert_eq!(within(routed.recv()).await.unwrap(), json!({"token":0,"value":2}));
    assert_eq!(within(routed.recv()).await.unwrap(), json!({"token":"indexing","value":{"kind":"begin"}}));
}

/// `work [steps, token]`: reports `{"step": i}` for each step, then answers `steps`; the reporter
/// is also handed to `keep`, to try reporting after the answer.
fn worker(keep: mpsc::UnboundedSender<Progress<Value>>) -> Router {
    Router::new().method("work", move |(steps, token): (u32, Option<ProgressToken>), cx| {
        let keep = keep.clone();
        async move {
            let progress = Progress::<Value>::for_request(&cx, token);
            for step in 1..=steps {
                progress.report(json!({"step": step})).await.map_err(ErrorObject::internal_error)?;
            }
            let _ = keep.send(progress);
            Ok::<_, ErrorObject>(steps)
        }
    })
}

#[tokio::test]
async fn the_callee_reports_on_the_callers_token_before_its_answer_and_never_after() {
    let (keep_tx, mut keep) = mpsc::unbounded_channel();
    let (_conn, mut peer) = pair(Connection::builder().serve(worker(keep_tx)), Framing::NewlineDelimited);
    peer.send(r#"{"jsonrpc":"2.0","id":"w","method":"work","params":[2,"tok-1"]}"#).await;
    assert_eq!(
        peer.recv_text().await,
        r#"{"jsonrpc":"2.0","method":"$/progress","params":{"token":"tok-1","value":{"step":1}}}"#
    );
    peer.expect(json!({"jsonrpc":"2.0","method":"$/progress","params":{"token":"tok-1","value":{"step":2}}})).await;
    peer.expect(json!({"jsonrpc":"2.0","id":"w","result":2})).await;
    // The reporter of the answered request is quiet.
    let progress = within(keep.recv()).await.unwrap();
    assert!(!progress.is_active());
    progress.report(json!({"step": 3})).await.unwrap();
    peer.expect_silence(SILENCE).await;
}

#[tokio::test]
async fn without_a_token_the_callee_reports_nothing() {
    let (keep_tx, _keep) = mpsc::unbounded_channel();
    let (_conn, mut peer) = pair(Connection::builder().serve(worker(keep_tx)), Framing::NewlineDelimited);
    peer.send_json(json!({"jsonrpc":"2.0","id":1,"method":"work","params":[3,null]})).await;
    peer.expect(json!({"jsonrpc":"2.0","id":1,"result":3})).await;
}

#[tokio::test]
async fn cancelling_the_call_ends_its_reports() {
    let (conn, mut peer) = pair(Connection::builder(), Framing::NewlineDelimited);
    let (token, receiver) = conn.handle().progress::<u32>();
    let cancel = CancellationToken::new();
    let h = conn.handle();
    let options = CallOptions::new().cancel(cancel.clone());
    let call = tokio::spawn(async move {
        let mut seen = Vec::new();
        let answer = receiver.drive(h.request_with::<u32>("work", (token,), options), |v| seen.push(v)).await;
        (answer, seen)
    });
    peer.expect(json!({"jsonrpc":"2.0","id":0,"method":"work","params":[0]})).await;
    peer.send_json(json!({"jsonrpc":"2.0","method":"$/progress","params":{"token":0,"value":1}})).await;
    cancel.cancel();
    peer.expect(json!({"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":0}})).await;
    peer.send_json(json!({"jsonrpc":"2.0","id":0,"error":{"code":-32800,"message":"Request cancelled"}})).await;
    let (answer, seen) = within(call).await.unwrap();
    assert!(matches!(answer, Err(Error::Cancelled)), "{answer:?}");
    assert_eq!(seen, [1]);
}

#[tokio::test]
async fn the_connection_ending_ends_receivers_with_connection_lost() {
    let (conn, mut peer) = pair(Connection::builder(), Framing::NewlineDelimited);
    let (_token, mut receiver) = conn.handle().progress::<u32>();
    peer.send_json(json!({"jsonrpc":"2.0","method":"$/progress","params":[0,5]})).await;
    assert_eq!(within(receiver.next()).await.unwrap().unwrap(), 5);
    peer.close_write().await;
    assert!(matches!(within(receiver.next()).await, Some(Err(Error::ConnectionLost(_)))));
    assert!(within(receiver.next()).await.is_none());
    // A receiver made afterwards says so at once.
    let (_token, mut late) = conn.handle().progress::<u32>();
    assert!(matches!(within(late.next()).await, Some(Err(Error::ConnectionLost(_)))));
}

#[tokio::test]
async fn mcp_spells_progress_with_the_values_members_beside_the_token() {
    let (keep_tx, _keep) = mpsc::unbounded_channel();
    let (conn, mut peer) = pair(
        Connection::builder().progress_protocol(ProgressProtocol::mcp()).serve(worker(keep_tx)),
        Framing::NewlineDelimited,
    );
    peer.send_json(json!({"jsonrpc":"2.0","id":1,"method":"work","params":[1,"p"]})).await;
    assert_eq!(
        peer.recv_text().await,
        r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p","step":1}}"#
    );
    peer.expect(json!({"jsonrpc":"2.0","id":1,"result":1})).await;

    let (_token, mut receiver) = conn.handle().progress::<Value>();
    peer.send_json(
        json!({"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":5,"progressToken":0,"total":10}}),
    )
    .await;
    assert_eq!(within(receiver.next()).await.unwrap().unwrap(), json!({"progress":5,"total":10}));
}
