//! Ending streams early, through `#[rpc]` on both sides (two of our connections in memory): a
//! consumer dropping its stream stops the producer, cancelling a streaming call or a call that
//! carries a stream ends them on both sides, and a lost connection ends everything with
//! "connection lost".

use crate::support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use futures::{Stream, StreamExt};
use jsonrpc_duplex::{
    CallOptions, CancellationToken, ClientError, Connection, Error, Progress, RpcError, RpcStream, rpc,
    transport::memory,
};
use support::time::within;
use tokio::sync::{Notify, oneshot};

/// Signals when dropped.
struct DropSignal(Option<oneshot::Sender<()>>);

impl Drop for DropSignal {
    fn drop(&mut self) {
        if let Some(tx) = self.0.take() {
            let _ = tx.send(());
        }
    }
}

/// A service whose streams and reports never end by themselves.
#[rpc(params = "named")]
pub trait Ticker {
    /// 0, 1, 2, … forever, one per pull; the service counts what it made.
    fn ticks(&self) -> impl Stream<Item = u64> + Send;
    /// Sums what the caller streams, taking one item at a time and waiting for `go` in between.
    async fn slow_sum(&self, numbers: RpcStream<u64>) -> Result<u64, RpcError>;
    /// Reports until cancelled.
    async fn forever(&self, progress: Progress<u64>) -> u64;
}

#[derive(Default)]
struct Service {
    made: AtomicUsize,
    /// Dropped with the stream `ticks` returned.
    ticks_dropped: std::sync::Mutex<Option<oneshot::Sender<()>>>,
    sum_dropped: std::sync::Mutex<Option<oneshot::Sender<()>>>,
    taken: Notify,
}

impl Ticker for Service {
    fn ticks(&self) -> impl Stream<Item = u64> + Send {
        let signal = DropSignal(self.ticks_dropped.lock().unwrap().take());
        futures::stream::iter(0..).map(move |i| {
            let _keep = &signal;
            self.made.fetch_add(1, Ordering::SeqCst);
            i
        })
    }

    async fn slow_sum(&self, mut numbers: RpcStream<u64>) -> Result<u64, RpcError> {
        let _signal = DropSignal(self.sum_dropped.lock().unwrap().take());
        let mut total = 0;
        while let Some(n) = numbers.next().await {
            total += n?;
            self.taken.notify_one();
            std::future::pending::<()>().await;
        }
        Ok(total)
    }

    async fn forever(&self, progress: Progress<u64>) -> u64 {
        for i in 0.. {
            if progress.report(i).await.is_err() {
                return i;
            }
            tokio::task::yield_now().await;
        }
        unreachable!()
    }
}

fn pair(service: Arc<Service>) -> (TickerClient, Connection, Connection) {
    let (client, server) =
        memory::pair(Connection::builder(), Connection::builder().serve(TickerServer::from_arc(service)));
    (TickerClient::new(client.handle()), client, server)
}

#[tokio::test]
async fn dropping_the_consumers_stream_drops_the_producers() {
    let service = Arc::new(Service::default());
    let (dropped_tx, dropped) = oneshot::channel();
    *service.ticks_dropped.lock().unwrap() = Some(dropped_tx);
    let (client, _a, _b) = pair(service.clone());
    let mut ticks = client.ticks();
    for i in 0..5 {
        assert_eq!(within(ticks.next()).await.unwrap().unwrap(), i);
    }
    drop(ticks);
    within(dropped).await.expect("the service's stream was dropped");
    // One item per pull, none ahead: exactly what was taken was made.
    assert_eq!(service.made.load(Ordering::SeqCst), 5);
}

#[tokio::test]
async fn cancelling_a_streaming_call_ends_the_sequence_on_both_sides() {
    let service = Arc::new(Service::default());
    let (dropped_tx, dropped) = oneshot::channel();
    *service.ticks_dropped.lock().unwrap() = Some(dropped_tx);
    let (client, _a, _b) = pair(service.clone());
    let cancel = CancellationToken::new();
    let mut ticks = client.with_options(CallOptions::new().cancel(cancel.clone())).ticks();
    assert_eq!(within(ticks.next()).await.unwrap().unwrap(), 0);
    cancel.cancel();
    assert!(matches!(within(ticks.next()).await, Some(Err(ClientError::Call(Error::Cancelled)))));
    assert!(within(ticks.next()).await.is_none());
    within(dropped).await.expect("the service's stream was dropped");
}

#[tokio::test]
async fn cancelling_a_call_that_carries_a_stream_ends_that_stream() {
    let service = Arc::new(Service::default());
    let (sum_tx, sum_dropped) = oneshot::channel();
    *service.sum_dropped.lock().unwrap() = Some(sum_tx);
    let (client, _a, _b) = pair(service.clone());
    let (ours_tx, ours_dropped) = oneshot::channel();
    let signal = DropSignal(Some(ours_tx));
    let numbers = futures::stream::iter(1..=1000u64).map(move |n| {
        let _keep = &signal;
        n
    });
    let cancel = CancellationToken::new();
    let call = {
        let client = client.with_options(CallOptions::new().cancel(cancel.clone()));
        tokio::spawn(async move { client.slow_sum(numbers).await })
    };
    within(service.taken.notified()).await;
    cancel.cancel();
    assert!(matches!(within(call).await.unwrap(), Err(ClientError::Call(Error::Cancelled))));
    within(sum_dropped).await.expect("the handler was dropped");
    within(ours_dropped).await.expect("our argument stream was dropped");
}

#[tokio::test]
async fn cancelling_a_call_with_progress_stops_its_reports() {
    let (client, _a, _b) = pair(Arc::new(Service::default()));
    let cancel = CancellationToken::new();
    let seen = Arc::new(AtomicUsize::new(0));
    let counter = seen.clone();
    let trigger = cancel.clone();
    let outcome = client
        .with_options(CallOptions::new().cancel(cancel))
        .forever(move |_| {
            if counter.fetch_add(1, Ordering::SeqCst) == 100 {
                trigger.cancel();
            }
        })
        .await;
    assert!(matches!(outcome, Err(ClientError::Call(Error::Cancelled))), "{outcome:?}");
    assert!(seen.load(Ordering::SeqCst) > 100);
}

#[tokio::test]
async fn losing_the_connection_ends_streams_and_calls_with_connection_lost() {
    let (client, client_conn, server_conn) = pair(Arc::new(Service::default()));
    let mut ticks = client.ticks();
    assert_eq!(within(ticks.next()).await.unwrap().unwrap(), 0);
    let forever = tokio::spawn({
        let client = client.clone();
        async move { client.forever(|_| {}).await }
    });
    drop(server_conn);
    let mut rest = Vec::new();
    while let Some(item) = within(ticks.next()).await {
        rest.push(item);
    }
    assert!(matches!(rest.last(), Some(Err(ClientError::Call(Error::ConnectionLost(_))))), "{rest:?}");
    assert!(rest[..rest.len() - 1].iter().all(Result::is_ok));
    assert!(matches!(within(forever).await.unwrap(), Err(ClientError::Call(Error::ConnectionLost(_)))));
    drop(client_conn);
}
