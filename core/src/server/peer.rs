//! The server's shared state: its peers, counters and broadcast.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use bytes::Bytes;
use serde::Serialize;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::gate::Gate;
use crate::connection::SharedRefused;
use crate::message::encode_notification;
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
    /// everything else each of them sends. Never waits: the message is serialized once, and
    /// every peer's queue holds that one body (shared, not copied) until its writer takes it.
    ///
    /// A broadcast counts against each peer's outbound buffer
    /// ([`Limits::outbound_buffer`](crate::Limits::outbound_buffer)) like its other messages,
    /// but is queued even past it: a peer that does not read fast enough lags (counted in
    /// [`Broadcast::waiting`]), and must catch up within the server's
    /// [broadcast timeout](super::ServerBuilder::broadcast_timeout); a broadcast that would take
    /// its queue past twice its outbound buffer disconnects it at once
    /// ([`Broadcast::disconnected`]). Either way it is disconnected rather than silently missing
    /// a message, and what one peer can make the server hold is bounded in bytes.
    ///
    /// Must be called inside a tokio runtime.
    pub fn broadcast(&self, method: &str, params: impl Serialize) -> Result<Broadcast, Error> {
        match self.inner.upgrade() {
            Some(inner) => inner.broadcast(&inner, method, &params),
            None => Ok(Broadcast::default()),
        }
    }

    /// The live connections. A connection is listed from before it reads its first message (so
    /// a broadcast made while serving it reaches it) until it has ended.
    pub fn peers(&self) -> Vec<Peer> {
        self.inner.upgrade().map(|i| i.peers()).unwrap_or_default()
    }

    /// A live connection by its [`Peer::id`].
    pub fn peer(&self, id: u64) -> Option<Peer> {
        let inner = self.inner.upgrade()?;
        inner.peers_map().get(&id).map(|l| l.peer(id, &self.inner))
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
    /// Peers whose copy is queued beyond their outbound buffer (they do not read fast enough):
    /// each must catch up within the broadcast timeout or is disconnected.
    pub waiting: usize,
    /// Peers disconnected now: the copy would have taken their queue past twice their outbound
    /// buffer.
    pub disconnected: usize,
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

/// What the peer list keeps of a connection: a [`Peer`] without what it shares with every other
/// (its id is the key, its server the list's). 40 bytes a connection, where the whole `Peer`
/// took 56 (and the table its buckets' worth, grown by doubling, for each).
pub(super) struct Listed {
    addr: PeerAddr,
    handle: Handle,
}

impl Listed {
    fn peer(&self, id: u64, server: &std::sync::Weak<Inner>) -> Peer {
        Peer {
            id,
            addr: self.addr.clone(),
            handle: self.handle.clone(),
            server: ServerHandle { inner: server.clone() },
        }
    }
}

pub(super) struct Inner {
    pub(super) peers: Mutex<HashMap<u64, Listed>>,
    pub(super) next_id: AtomicU64,
    /// Connections counted against the limit (handshakes included).
    pub(super) active: AtomicUsize,
    pub(super) stats: Counters,
    pub(super) max_connections: usize,
    pub(super) broadcast_timeout: Duration,
    /// How long closing one connection may take (its flush timeout and the shutdown of its
    /// write side).
    pub(super) close_bound: Duration,
    /// Peers over their outbound buffer, each watched until it catches up or times out.
    pub(super) lagging: Mutex<HashSet<u64>>,
    pub(super) local_addr: Option<PeerAddr>,
    pub(super) stop_accepting: CancellationToken,
    pub(super) close_all: CancellationToken,
    pub(super) gate: Arc<Gate>,
    /// Per-connection tasks, refusals and background broadcast sends.
    pub(super) tasks: TaskTracker,
    /// The accept loop.
    pub(super) accepting: TaskTracker,
}

impl Inner {
    pub(super) fn peers_map(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Listed>> {
        self.peers.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(super) fn insert(&self, id: u64, addr: PeerAddr, handle: Handle) {
        self.peers_map().insert(id, Listed { addr, handle });
    }

    /// The peer leaves the list: where it was from, if it was listed.
    pub(super) fn remove(&self, id: u64) -> Option<PeerAddr> {
        self.peers_map().remove(&id).map(|l| l.addr)
    }

    /// Close every connection, those still in their handshake too (they see `close_all`; one
    /// that is listed after this looks at it once it runs, see `serve_peer`).
    pub(super) fn close_every_peer(&self) {
        self.close_all.cancel();
        let handles: Vec<Handle> = self.peers_map().values().map(|p| p.handle.clone()).collect();
        for handle in handles {
            handle.close_with(CloseReason::new(CloseKind::LocallyClosed, "the server is shutting down"));
        }
    }

    pub(super) fn peers(self: &Arc<Self>) -> Vec<Peer> {
        let server = Arc::downgrade(self);
        let mut peers: Vec<Peer> = self.peers_map().iter().map(|(&id, l)| l.peer(id, &server)).collect();
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
        // One body for every peer: serialized once, on one line (valid in either framing: the
        // encoder writes raw JSON that way), and shared by the queues it waits in rather than
        // copied into each.
        let mut body = Vec::with_capacity(64 + method.len());
        encode_notification(&mut body, method, params, crate::message::bind::NOWHERE).map_err(Error::Serialize)?;
        body.shrink_to_fit();
        let body = Bytes::from(body);
        let handles: Vec<(u64, Handle)> = self.peers_map().iter().map(|(&id, l)| (id, l.handle.clone())).collect();
        let mut report = Broadcast::default();
        for (id, handle) in handles {
            let limits = handle.limits();
            let limit = limits.frame.max_message_size;
            if body.len() > limit {
                return Err(Error::MessageTooLarge { size: body.len(), limit });
            }
            // A peer may lag by its outbound buffer for the broadcast timeout, by twice that
            // not at all.
            let hard = limits.outbound_buffer.max(1).saturating_mul(2);
            match handle.send_shared(&body, hard) {
                Ok(false) => report.queued += 1,
                Ok(true) => {
                    report.waiting += 1;
                    self.watch_lagging(this, id, handle);
                }
                Err(SharedRefused::Closed) => report.closed += 1,
                Err(SharedRefused::Backlog { queued }) => {
                    report.disconnected += 1;
                    self.lagged_out(
                        id,
                        &handle,
                        format!(
                            "the peer did not take its broadcasts: {queued} bytes were queued for it, and {} more \
                             would pass twice its outbound buffer ({hard} bytes)",
                            body.len()
                        ),
                    );
                }
            }
        }
        Ok(report)
    }

    /// Give a peer that is over its outbound buffer the broadcast timeout to catch up (one
    /// watcher per peer, however many broadcasts pile up meanwhile).
    fn watch_lagging(&self, this: &Arc<Inner>, id: u64, handle: Handle) {
        if !self.lagging_set().insert(id) {
            return;
        }
        let timeout = self.broadcast_timeout;
        let inner = Arc::downgrade(this);
        self.tasks.spawn(async move {
            let caught_up = tokio::time::timeout(timeout, handle.wait_within_budget()).await.is_ok();
            let Some(inner) = inner.upgrade() else { return };
            inner.lagging_set().remove(&id);
            if !caught_up {
                let limit = handle.limits().outbound_buffer;
                inner.lagged_out(
                    id,
                    &handle,
                    format!(
                        "the peer did not take its broadcasts: more than {limit} bytes waited for it for {timeout:?}"
                    ),
                );
            }
        });
    }

    /// Disconnect a peer that does not keep up with broadcasts.
    fn lagged_out(&self, id: u64, handle: &Handle, why: String) {
        tracing::warn!(target: crate::LOG_TARGET, peer = id, "{why}: disconnecting it");
        self.stats.lagged_out.fetch_add(1, Ordering::Relaxed);
        handle.close_with(CloseReason::new(CloseKind::LocallyClosed, why));
    }

    fn lagging_set(&self) -> std::sync::MutexGuard<'_, HashSet<u64>> {
        self.lagging.lock().unwrap_or_else(|p| p.into_inner())
    }
}
