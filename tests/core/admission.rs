//! The request permits are a seam point (`Extension::admission`): the connection's own
//! (`max_concurrent_requests`, `max_concurrent_request_bytes`) plug in through it, and a
//! feature's admission replaces them, here one limit shared by every connection that has the
//! feature (a server-wide one). Driven with real bytes by a hand-written peer.

use crate::support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

use jsonrpc_duplex::seam::{Admission, Extension, Feature, Start};
use jsonrpc_duplex::{Connection, ErrorObject, Framing, Router};
use tokio::sync::Notify;

use support::raw_peer::pair;
use support::time::within;

/// One request at a time, across every connection that shares it.
#[derive(Default)]
struct OneAtATime {
    /// A request runs; the lanes waiting for room (one per connection at most).
    state: Mutex<(bool, Vec<Waker>)>,
    /// Told each time the lane waits.
    waits: Notify,
    admitted: AtomicUsize,
}

impl Admission for OneAtATime {
    fn try_admit(&self, _bytes: usize) -> Option<u64> {
        let mut state = self.state.lock().unwrap();
        if state.0 {
            return None;
        }
        state.0 = true;
        self.admitted.fetch_add(1, Ordering::Relaxed);
        Some(1)
    }

    fn poll_admit(&self, bytes: usize, cx: &mut Context<'_>) -> Poll<u64> {
        if let Some(weight) = self.try_admit(bytes) {
            return Poll::Ready(weight);
        }
        let mut state = self.state.lock().unwrap();
        // Checked again under the lock: a release in between would not wake this lane.
        if !state.0 {
            state.0 = true;
            self.admitted.fetch_add(1, Ordering::Relaxed);
            return Poll::Ready(1);
        }
        state.1.push(cx.waker().clone());
        drop(state);
        self.waits.notify_one();
        Poll::Pending
    }

    fn release(&self, weight: u64) {
        assert_eq!(weight, 1, "the weight it gave");
        let waiting = {
            let mut state = self.state.lock().unwrap();
            state.0 = false;
            std::mem::take(&mut state.1)
        };
        // Every lane that waits tries again; one gets the room, the others wait again.
        for waker in waiting {
            waker.wake();
        }
    }
}

#[derive(Clone, Default)]
struct Serial(Arc<OneAtATime>);

struct SerialExtension(Arc<OneAtATime>);

impl Feature for Serial {
    fn start(&self, _: &Start<'_>) -> Arc<dyn Extension> {
        Arc::new(SerialExtension(self.0.clone()))
    }
}

impl Extension for SerialExtension {
    fn admission(self: Arc<Self>) -> Option<Arc<dyn Admission>> {
        Some(self.0.clone())
    }
}

/// `hold` answers once told to; `probe` at once.
fn server(release: Arc<Notify>) -> jsonrpc_duplex::Builder {
    let router = Router::new()
        .method("hold", move |(): (), _| {
            let release = release.clone();
            async move {
                release.notified().await;
                Ok::<_, ErrorObject>("held")
            }
        })
        .method("probe", |(): (), _| async { Ok::<_, ErrorObject>("probe") });
    Connection::builder().max_concurrent_requests(8).serve(router)
}

#[tokio::test]
async fn the_connection_s_own_permits_let_requests_run_side_by_side() {
    let release = Arc::new(Notify::new());
    let (_conn, mut peer) = pair(server(release.clone()), Framing::NewlineDelimited);
    peer.send(br#"{"jsonrpc":"2.0","id":1,"method":"hold"}"#).await;
    peer.send(br#"{"jsonrpc":"2.0","id":2,"method":"probe"}"#).await;
    assert_eq!(peer.recv_text().await, r#"{"jsonrpc":"2.0","id":2,"result":"probe"}"#);
    release.notify_one();
    assert_eq!(peer.recv_text().await, r#"{"jsonrpc":"2.0","id":1,"result":"held"}"#);
}

#[tokio::test]
async fn a_feature_s_admission_replaces_the_connection_s_own_and_may_be_shared_by_connections() {
    let release = Arc::new(Notify::new());
    let shared = Serial::default();
    let (_a, mut a) = pair(server(release.clone()).feature(shared.clone()), Framing::NewlineDelimited);
    let (_b, mut b) = pair(server(release.clone()).feature(shared.clone()), Framing::NewlineDelimited);
    a.send(br#"{"jsonrpc":"2.0","id":1,"method":"hold"}"#).await;
    a.send(br#"{"jsonrpc":"2.0","id":2,"method":"probe"}"#).await;
    // `probe` waits for room (the connection alone would let it run beside `hold`).
    within(shared.0.waits.notified()).await;
    // On the other connection too: the limit is the feature's, for both.
    b.send(br#"{"jsonrpc":"2.0","id":7,"method":"probe"}"#).await;
    within(shared.0.waits.notified()).await;
    release.notify_one();
    assert_eq!(a.recv_text().await, r#"{"jsonrpc":"2.0","id":1,"result":"held"}"#);
    // Whichever connection's lane was woken last goes next; both get their turn.
    let (ra, rb) = within(async { tokio::join!(a.recv_text(), b.recv_text()) }).await;
    assert_eq!(ra, r#"{"jsonrpc":"2.0","id":2,"result":"probe"}"#);
    assert_eq!(rb, r#"{"jsonrpc":"2.0","id":7,"result":"probe"}"#);
    assert_eq!(shared.0.admitted.load(Ordering::Relaxed), 3);
}
