//! The two `#[rpc]` traits of a small key-value service the `net_*` tests serve (the server
//! serves `Store`, each client serves `Watcher` so that the server can call it back and push to
//! it), and implementations of both.
#![allow(unreachable_pub)]

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use jsonrpc_duplex::server::Peer;
use jsonrpc_duplex::{RpcError, rpc};
use tokio::sync::{Notify, watch};

use super::time::within;

/// What the server offers: a key-value store shared by every client.
#[rpc(namespace = "kv")]
pub trait Store {
    /// Set a key; every client is told (`watcher/changed`). Returns the old value.
    async fn set(&self, key: String, value: String) -> Result<Option<String>, RpcError>;

    /// Read a key.
    async fn get(&self, key: String) -> Option<String>;

    /// Add two numbers (the load tests' call).
    async fn add(&self, a: i64, b: i64) -> i64;

    /// Greet the caller by the name it gives when asked: a call back to the client mid-request.
    async fn hello(&self, #[context] watcher: WatcherClient) -> Result<String, RpcError>;

    /// This connection's number on the server (per-connection state).
    async fn whoami(&self) -> u64;

    /// A string of `size` bytes (to fill a peer's buffers).
    async fn blob(&self, size: usize) -> String;

    /// Wait until the test releases it, then answer `n`.
    async fn parked(&self, n: u64) -> u64;
}

/// What each client offers its server.
#[rpc(namespace = "watcher")]
pub trait Watcher {
    /// The client's name.
    async fn name(&self) -> String;

    /// A key changed.
    #[notification]
    async fn changed(&self, key: String, value: String);

    /// A server-wide announcement with a sequence number.
    #[notification]
    async fn news(&self, seq: u64, text: String);
}

/// Server-side state shared by every connection, and the test's view of it.
#[derive(Default)]
pub struct Shared {
    pub map: Mutex<HashMap<String, String>>,
    /// `blob` calls answered so far.
    pub blobs: AtomicUsize,
    pub blobs_seen: watch::Sender<usize>,
    /// `parked` calls that have started.
    pub parked_started: watch::Sender<usize>,
    /// Releases every `parked` call.
    pub release: Notify,
    pub released: std::sync::atomic::AtomicBool,
}

impl Shared {
    pub fn release_parked(&self) {
        self.released.store(true, Ordering::Release);
        self.release.notify_waiters();
    }
}

/// One connection's service: the shared store plus who this peer is.
pub struct Session {
    pub shared: Arc<Shared>,
    pub peer: Peer,
}

impl Session {
    /// The factory for `ServerBuilder::serve_with`.
    pub fn factory(shared: Arc<Shared>) -> impl Fn(&Peer) -> StoreServer<Session> + Send + Sync + 'static {
        move |peer| StoreServer::new(Session { shared: shared.clone(), peer: peer.clone() })
    }
}

impl Store for Session {
    async fn set(&self, key: String, value: String) -> Result<Option<String>, RpcError> {
        let old = self.shared.map.lock().unwrap().insert(key.clone(), value.clone());
        self.peer.server().broadcast("watcher/changed", (&key, &value))?;
        Ok(old)
    }

    async fn get(&self, key: String) -> Option<String> {
        self.shared.map.lock().unwrap().get(&key).cloned()
    }

    async fn add(&self, a: i64, b: i64) -> i64 {
        a + b
    }

    async fn hello(&self, watcher: WatcherClient) -> Result<String, RpcError> {
        let name = watcher.name().await?;
        Ok(format!("hello, {name} (connection {})", self.peer.id()))
    }

    async fn whoami(&self) -> u64 {
        self.peer.id()
    }

    async fn blob(&self, size: usize) -> String {
        let n = self.shared.blobs.fetch_add(1, Ordering::AcqRel) + 1;
        self.shared.blobs_seen.send_replace(n);
        "x".repeat(size)
    }

    async fn parked(&self, n: u64) -> u64 {
        let released = self.shared.release.notified();
        tokio::pin!(released);
        released.as_mut().enable();
        self.shared.parked_started.send_modify(|c| *c += 1);
        if !self.shared.released.load(Ordering::Acquire) {
            released.await;
        }
        n
    }
}

/// A client's side: its name, and what the server pushed to it.
#[derive(Default)]
pub struct ClientSide {
    pub name: String,
    pub changes: Mutex<Vec<(String, String)>>,
    pub changed_count: watch::Sender<usize>,
    pub news: Mutex<Vec<u64>>,
    pub news_count: watch::Sender<usize>,
    pub news_bytes: AtomicU64,
}

impl ClientSide {
    pub fn named(name: &str) -> Arc<Self> {
        Arc::new(ClientSide { name: name.to_owned(), ..Default::default() })
    }
}

impl Watcher for Arc<ClientSide> {
    async fn name(&self) -> String {
        self.name.clone()
    }

    async fn changed(&self, key: String, value: String) {
        let n = {
            let mut changes = self.changes.lock().unwrap();
            changes.push((key, value));
            changes.len()
        };
        self.changed_count.send_replace(n);
    }

    async fn news(&self, seq: u64, text: String) {
        self.news_bytes.fetch_add(text.len() as u64, Ordering::Relaxed);
        let n = {
            let mut news = self.news.lock().unwrap();
            news.push(seq);
            news.len()
        };
        self.news_count.send_replace(n);
    }
}

/// Wait until a watch counter reaches `n`.
pub async fn reach(counter: &watch::Sender<usize>, n: usize) {
    let mut rx = counter.subscribe();
    within(rx.wait_for(|c| *c >= n)).await.expect("the counter's sender lives");
}
