//! An idle connection runs its reader and nothing else: the writer task starts when a write is
//! first handed to it (a notification, a full pipe) or when the connection ends, the dispatcher
//! task when a handler first has to wait. Counted with the runtime's live tasks (each test has
//! a runtime of its own), and every ending still flushes and shuts the write side.

use crate::support;

use jsonrpc_duplex::{Connection, ErrorObject, Router};
use support::time::{eventually, within};
use tokio::sync::Notify;

fn alive() -> usize {
    tokio::runtime::Handle::current().metrics().num_alive_tasks()
}

fn adder() -> Router {
    Router::new().method("add", |(a, b): (i64, i64), _| async move { Ok::<_, ErrorObject>(a + b) })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pair_after_calls_runs_only_its_readers() {
    let (a, b) = tokio::io::duplex(64 * 1024);
    let client = Connection::builder().serve(adder()).connect_io(a);
    let server = Connection::builder().serve(adder()).connect_io(b);
    for i in 0..10 {
        let sum: i64 = within(client.handle().request("add", (i, 1))).await.unwrap();
        assert_eq!(sum, i + 1);
        let sum: i64 = within(server.handle().request("add", (i, 2))).await.unwrap();
        assert_eq!(sum, i + 2);
    }
    // Requests and answers were written by their callers and the readers: no writer task, and
    // the handlers finished on the spot: no dispatcher task.
    assert_eq!(alive(), 2, "one reader per connection, nothing else");
    // Closing starts the writer, which flushes, shuts the write side down and lets the peer see
    // the end.
    let reason = within(client.close()).await;
    assert!(!reason.to_string().is_empty());
    within(server.closed()).await;
    within(server.close()).await;
    eventually("every task of both connections ended", || alive() == 0).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_connection_still_ends_its_peer() {
    let (a, b) = tokio::io::duplex(64 * 1024);
    let client = Connection::builder().connect_io(a);
    let server = Connection::builder().serve(adder()).connect_io(b);
    let sum: i64 = within(client.handle().request("add", (1, 1))).await.unwrap();
    assert_eq!(sum, 2);
    // Dropped, not closed: the writer task starts from the drop and shuts the write side.
    drop(client);
    within(server.closed()).await;
    within(server.close()).await;
    eventually("every task of both connections ended", || alive() == 0).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_writer_and_the_dispatcher_start_when_needed() {
    let (a, b) = tokio::io::duplex(64 * 1024);
    let gate = std::sync::Arc::new(Notify::new());
    let (seen_tx, mut seen) = tokio::sync::mpsc::unbounded_channel();
    let waits = gate.clone();
    let router = Router::new().notification("wait", move |(n,): (u32,), _| {
        let (waits, seen_tx) = (waits.clone(), seen_tx.clone());
        async move {
            if n == 0 {
                waits.notified().await;
            }
            seen_tx.send(n).unwrap();
        }
    });
    let client = Connection::builder().connect_io(a);
    let server = Connection::builder().serve(router).connect_io(b);
    within(client.handle().request::<serde_json::Value>("nothing", ())).await.unwrap_err();
    assert_eq!(alive(), 2, "one reader per connection, nothing else");
    // A notification goes to the writer task: it starts.
    within(client.handle().notify("wait", (0,))).await.unwrap();
    within(client.handle().notify("wait", (1,))).await.unwrap();
    // The first handler waits: the dispatcher task takes the lane, and the second notification
    // waits behind the first, in order.
    eventually("the writer and the dispatcher run", || alive() == 4).await;
    assert!(seen.try_recv().is_err(), "nothing handled before the first handler finished");
    gate.notify_one();
    assert_eq!(within(seen.recv()).await, Some(0));
    assert_eq!(within(seen.recv()).await, Some(1));
    within(client.close()).await;
    within(server.closed()).await;
    within(server.close()).await;
    eventually("every task of both connections ended", || alive() == 0).await;
}
