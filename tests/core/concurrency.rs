//! Many calls at once, in both directions, between two of our connections.

use crate::support;

use futures::future::join_all;
use jsonrpc_duplex::{Connection, ErrorObject, RequestContext, Router};
use support::time::within;

fn service(name: &'static str) -> Router {
    Router::new()
        .method("mul", move |(x, k): (i64, i64), _ctx| async move {
            // Yield so that handlers interleave instead of finishing on their first poll.
            tokio::task::yield_now().await;
            Ok::<_, ErrorObject>((name, x * k))
        })
        .method("nested", |(x,): (i64,), ctx: RequestContext| async move {
            // Answer by calling the other side first.
            let (_, doubled): (String, i64) =
                ctx.peer().request("mul", (x, 2)).await.map_err(ErrorObject::internal_error)?;
            Ok::<_, ErrorObject>(doubled + 1)
        })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_concurrent_calls_in_both_directions_are_all_answered_correctly() {
    let (x, y) = tokio::io::duplex(64 * 1024);
    let a = Connection::builder().max_concurrent_requests(4096).serve(service("a")).connect_io(x);
    let b = Connection::builder().max_concurrent_requests(4096).serve(service("b")).connect_io(y);

    let calls = |from: &Connection, to: &'static str| {
        let h = from.handle();
        join_all((0..1000i64).map(move |i| {
            let h = h.clone();
            async move {
                let (who, product): (String, i64) = h.request("mul", (i, 3)).await.unwrap();
                assert_eq!((who.as_str(), product), (to, i * 3));
                i
            }
        }))
    };
    let nested = |from: &Connection| {
        let h = from.handle();
        join_all((0..100i64).map(move |i| {
            let h = h.clone();
            async move {
                let got: i64 = h.request("nested", (i,)).await.unwrap();
                assert_eq!(got, i * 2 + 1);
            }
        }))
    };
    let (ab, ba, nab, nba) =
        within(async { tokio::join!(calls(&a, "b"), calls(&b, "a"), nested(&a), nested(&b)) }).await;
    assert_eq!(ab, (0..1000).collect::<Vec<_>>());
    assert_eq!(ba, (0..1000).collect::<Vec<_>>());
    assert_eq!((nab.len(), nba.len()), (100, 100));
    assert!(!a.is_closed() && !b.is_closed());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_calls_from_many_tasks_through_cloned_handles() {
    let (x, y) = tokio::io::duplex(4 * 1024);
    let _server = Connection::builder().serve(service("s")).connect_io(x);
    let client = Connection::builder().connect_io(y);
    let tasks: Vec<_> = (0..50i64)
        .map(|t| {
            let h = client.handle();
            tokio::spawn(async move {
                for i in 0..20i64 {
                    let (_, p): (String, i64) = h.request("mul", (t * 100 + i, 1)).await.unwrap();
                    assert_eq!(p, t * 100 + i);
                }
            })
        })
        .collect();
    for t in within(join_all(tasks)).await {
        t.unwrap();
    }
}
