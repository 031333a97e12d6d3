//! The server's shared state: its peers, counters and broadcast.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::task::{Context, Poll};
use std::time::Duration;

use serde::Serialize;
use serde_json::value::RawValue;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::gate::Gate;
use crate::transport::PeerAddr;
use crate::{CloseKind, CloseReason, Error, Handle};

/// One connection of a [`Server`](super::Server): who it is, and a handle to call it.
#[derive(Clone, Debug)]
pub struct Peer {
    pub(super) id: u64,
    pub(super) addr: PeerAddr,
    pub(super) handle: Handle,
    pub(super) server: ServerHandle,
}

impl Peer {
    /// The server's number for this connection (0, 1, 2, … in accept order).
    pub fn id(&self) -> u64 {
        self.id
    }

    /// Where the peer connected from.
    pub fn addr(&self) -> &PeerAddr {
        &self.addr
    }

    /// A handle to this connection: call or notify this peer, watch for its end.
    pub fn handle(&self) -> &Handle {
        &self.handle
    }

    /// The server this peer is connected to (to broadcast, or reach the other peers).
    pub fn server(&self) -> &ServerHandle {
        &self.server
    }
}

/// A cloneable handle to a [`Server`](super::Server), for its handlers: broadcast, counters,
/// the list of peers. It does not keep the server running; once the server is gone it sees no
/// peers.
#[derive(Clone)]
pub struct ServerHandle {
    pub(super) inner: Weak<Inner>,
}

impl std::fmt::Debug for ServerHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerHandle").field("running", &(self.inner.strong_count() > 0)).finish()
    }
}

impl ServerHandle {
    /// Send the notification `method` with `params` to every live connection, in order with
    /// everything else each of them sends. Never waits: params are serialized once, and each
    /// peer's copy is queued at once — or, for a peer whose outbound queue is full because it
    /// does not read, queued in the background as soon as there is room (counted in
    /// [`Broadcast::waiting`]; later broadcasts queue behind it, so order is kept). A peer that
    /// has made no room within the server's
    /// [broadcast timeout](super::ServerBuilder::broadcast_timeout) is disconnected rather than
    /// silently missing a message.
    ///
    /// Must be called inside a tokio runtime.
    pub fn broadcast(&self, method: &str, params: impl Serialize) -> Result<Broadcast, Error> {
        match self.inner.upgrade() {
            Some(inner) => inner.broadcast(&inner, method, &params),
            None => Ok(Broadcast::default()),
        }
    }

    /// The live connections.
    pub fn peers(&self) -> Vec<Peer> {
        self.inner.upgrade().map(|i| i.peers()).unwrap_or_default()
    }

    /// A live connection by its [`Peer::id`].
    pub fn peer(&self, id: u64) -> Option<Peer> {
        let inner = self.inner.upgrade()?;
        inner.peers_map().get(&id).cloned()
    }

    /// The counters (all zero once the server is gone).
    pub fn stats(&self) -> ServerStats {
        self.inner.upgrade().map(|i| i.stats()).unwrap_or_default()
    }
}

/// What a broadcast did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Broadcast {
    /// Peers whose copy is queued.
    pub queued: usize,
    /// Peers whose outbound queue is full: their copy waits for room in the background.
    pub waiting: usize,
    /// Peers that closed meanwhile.
    pub closed: usize,
}

/// A server's counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ServerStats {
    /// Peers accepted within the connection limit.
    pub accepted: u64,
    /// Peers turned away at the connection limit.
    pub refused: u64,
    /// Accepted peers whose connection did not start (a failed or timed-out handshake).
    pub failed: u64,
    /// Connections open now, handshakes included.
    pub active: usize,
    /// Connections that have ended.
    pub closed: u64,
    /// Connections closed because they did not take a broadcast within the broadcast timeout.
    pub lagged_out: u64,
    /// Failed `accept` calls (say, out of file descriptors).
    pub accept_errors: u64,
}

#[derive(Default)]
pub(super) struct Counters {
    pub(super) accepted: AtomicU64,
    pub(super) refused: AtomicU64,
    pub(super) failed: AtomicU64,
    pub(super) closed: AtomicU64,
    pub(super) lagged_out: AtomicU64,
    pub(super) accept_errors: AtomicU64,
}

pub(super) struct Inner {
    pub(super) peers: Mutex<HashMap<u64, Peer>>,
    pub(super) next_id: AtomicU64,
    /// Connections counted against the limit (handshakes included).
    pub(super) active: AtomicUsize,
    pub(super) stats: Counters,
    pub(super) max_connections: usize,
    pub(super) broadcast_timeout: Duration,
    /// How long closing one connection may take (its flush timeout and the shutdown of its
    /// write side).
    pub(super) close_bound: Duration,
    pub(super) local_addr: Option<PeerAddr>,
    pub(super) stop_accepting: CancellationToken,
    pub(super) close_all: CancellationToken,
    pub(super) gate: Arc<Gate>,
    /// Per-connection tasks, refusals and background broadcast sends.
    pub(super) tasks: TaskTracker,
    /// The accept loop.
    pub(super) accepting: TaskTracker,
}

type SendFuture = Pin<Box<dyn Future<Output = Result<(), Error>> + Send>>;

impl Inner {
    pub(super) fn peers_map(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Peer>> {
        self.peers.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(super) fn insert(&self, peer: Peer) {
        self.peers_map().insert(peer.id, peer);
    }

    pub(super) fn remove(&self, id: u64) {
        self.peers_map().remove(&id);
    }

    pub(super) fn peers(&self) -> Vec<Peer> {
        let mut peers: Vec<Peer> = self.peers_map().values().cloned().collect();
        peers.sort_by_key(|p| p.id);
        peers
    }

    pub(super) fn stats(&self) -> ServerStats {
        let s = &self.stats;
        ServerStats {
            accepted: s.accepted.load(Ordering::Relaxed),
            refused: s.refused.load(Ordering::Relaxed),
            failed: s.failed.load(Ordering::Relaxed),
            active: self.active.load(Ordering::Acquire),
            closed: s.closed.load(Ordering::Relaxed),
            lagged_out: s.lagged_out.load(Ordering::Relaxed),
            accept_errors: s.accept_errors.load(Ordering::Relaxed),
        }
    }

    pub(super) fn broadcast<P: Serialize + ?Sized>(
        &self,
        this: &Arc<Inner>,
        method: &str,
        params: &P,
    ) -> Result<Broadcast, Error> {
        let params: Arc<RawValue> = Arc::from(serde_json::value::to_raw_value(params).map_err(Error::Serialize)?);
        let method: Arc<str> = Arc::from(method);
        let handles: Vec<(u64, Handle)> = self.peers_map().values().map(|p| (p.id, p.handle.clone())).collect();
        let mut report = Broadcast::default();
        let waker = futures::task::noop_waker_ref();
        let mut cx = Context::from_waker(waker);
        for (id, handle) in handles {
            let (method, params) = (method.clone(), params.clone());
            let peer = handle.clone();
            // Unconstrained: tokio's cooperative budget would otherwise turn the 129th poll in
            // this loop into a spurious `Pending`.
            let mut send: SendFuture =
                Box::pin(tokio::task::unconstrained(async move { peer.notify(&method, &*params).await }));
            // One poll queues the message when there is room, or takes a place in line for
            // room (kept when the future moves to its own task).
            match send.as_mut().poll(&mut cx) {
                Poll::Ready(Ok(())) => report.queued += 1,
                Poll::Ready(Err(Error::ConnectionLost(_))) => report.closed += 1,
                Poll::Ready(Err(e)) => return Err(e),
                Poll::Pending => {
                    report.waiting += 1;
                    let timeout = self.broadcast_timeout;
                    let inner = Arc::downgrade(this);
                    self.tasks.spawn(async move {
                        if tokio::time::timeout(timeout, send).await.is_err() {
                            tracing::warn!(target: crate::LOG_TARGET, peer = id, ?timeout, "peer did not take a broadcast in time: disconnecting it");
                            if let Some(inner) = inner.upgrade() {
                                inner.stats.lagged_out.fetch_add(1, Ordering::Relaxed);
                            }
                            handle.shared.close(CloseReason::new(
                                CloseKind::LocallyClosed,
                                format!("the peer did not take a broadcast within {timeout:?}"),
                            ));
                        }
                    });
                }
            }
        }
        Ok(report)
    }
}
