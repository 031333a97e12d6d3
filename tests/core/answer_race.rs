//! An answer read before a call gives up always wins: a progress receiver ends only once its
//! call's answer is in the caller's hands, and a cancellation (token, timeout, drop) that races
//! an answer already read neither loses the answer nor tells the peer to cancel a request it
//! has answered. Each race is run thousands of times on a multi-thread runtime, where the
//! reader and the caller run on different threads.

use crate::support;

use futures::StreamExt;
use jsonrpc_duplex::{CallOptions, CancelProtocol, CancellationToken, Connection, Error, Framing, ProgressProtocol};
use serde_json::{Value, json};
use support::raw_peer::{RawPeer, pair};
use support::time::within;

/// Runs of each race. Without the ordering fix, the progress race lost an answer within the
/// first few hundred runs on 2 cores.
const RUNS: usize = 5000;

/// An MCP client (its cancellations are notifications that are never answered, so a stray one is
/// seen on the wire and a lost answer is never repaired by a late one).
fn mcp_client() -> (Connection, RawPeer) {
    let builder = Connection::builder()
        .framing(Framing::NewlineDelimited)
        .cancel_protocol(CancelProtocol::mcp())
        .progress_protocol(ProgressProtocol::mcp());
    pair(builder, Framing::NewlineDelimited)
}

/// After each run the client sends `mark`: the next thing the peer reads must be it, not a
/// cancellation of the request it answered.
async fn expect_mark(conn: &Connection, peer: &RawPeer, run: usize) {
    within(conn.handle().notify("mark", [run])).await.unwrap();
    let next = peer.recv().await;
    assert_eq!(
        next,
        json!({"jsonrpc":"2.0","method":"mark","params":[run]}),
        "run {run}: a cancellation went out for an answered request"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_progress_receivers_end_means_the_answer_is_in_the_callers_hands() {
    let (conn, mut peer) = mcp_client();
    for run in 0..RUNS {
        let handle = conn.handle();
        let (token, mut reports) = handle.progress::<Value>();
        let stop = CancellationToken::new();
        let options = CallOptions::new().cancel(stop.clone());
        let call = tokio::spawn(async move {
            // The token binds itself to the call as the params are encoded.
            handle.request_with::<u64>("work", (token,), options).await
        });
        let request = peer.recv().await;
        let (id, token) = (&request["id"], &request["params"][0]);
        // The report and the answer in one write: the reader takes both in one go.
        let mut bytes = peer.frame(
            json!({"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":token,"progress":1}})
                .to_string()
                .as_bytes(),
        );
        bytes.extend(peer.frame(json!({"jsonrpc":"2.0","id":id,"result":run}).to_string().as_bytes()));
        peer.send_raw(bytes).await;
        // The receiver ends when the request is answered: the caller then cancels, as a caller
        // that took the receiver's end for the call's would.
        let mut seen = 0;
        while let Some(report) = within(reports.next()).await {
            assert_eq!(report.unwrap()["progress"], 1);
            seen += 1;
        }
        assert_eq!(seen, 1, "run {run}");
        stop.cancel();
        match within(call).await.unwrap() {
            Ok(n) => assert_eq!(n, run as u64),
            Err(e) => panic!("run {run}: the answer was read before the cancellation, yet the call ended with {e:?}"),
        }
        expect_mark(&conn, &peer, run).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_that_fires_as_the_answer_is_read_never_loses_it() {
    // The token fires from another task at the moment the answer is written: whichever comes
    // first, the call ends with the answer (read first) or `Cancelled` (then the peer is told),
    // and never both.
    let (conn, mut peer) = mcp_client();
    let (mut answered, mut cancelled) = (0, 0);
    for run in 0..RUNS {
        let handle = conn.handle();
        let stop = CancellationToken::new();
        let options = CallOptions::new().cancel(stop.clone());
        let call = tokio::spawn(async move { handle.request_with::<u64>("work", (), options).await });
        let request = peer.recv().await;
        let answer = peer.frame(json!({"jsonrpc":"2.0","id":request["id"],"result":run}).to_string().as_bytes());
        let fire = tokio::spawn(async move { stop.cancel() });
        peer.send_raw(answer).await;
        within(fire).await.unwrap();
        match within(call).await.unwrap() {
            Ok(n) => {
                assert_eq!(n, run as u64);
                answered += 1;
                expect_mark(&conn, &peer, run).await;
            }
            Err(Error::Cancelled) => {
                cancelled += 1;
                let cancel = peer.recv().await;
                assert_eq!(cancel["method"], "notifications/cancelled", "run {run}");
                assert_eq!(cancel["params"]["requestId"], request["id"], "run {run}");
                expect_mark(&conn, &peer, run).await;
            }
            Err(e) => panic!("run {run}: {e:?}"),
        }
    }
    assert_eq!(answered + cancelled, RUNS);
    eprintln!("{RUNS} runs: the answer won {answered} times, the token {cancelled} times");
}
