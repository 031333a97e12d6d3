//! User code (a trace redactor, a handler's `Drop`) never runs under one of the connection's locks,
//! and the connection's own `Drop`s do no I/O: the cases that used to deadlock.

use crate::support;

use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex, OnceLock};
use std::task::{Context, Poll};
use std::time::Duration;

use futures::FutureExt;
use jsonrpc_duplex::{Connection, Direction, ErrorObject, Handle, Responder, Router};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use support::raw_peer::{self as raw_peer, RawPeer};
use support::time::within;

/// Run `scenario` on a thread of its own with a deadline: a deadlock on a std mutex blocks the
/// thread itself, so no timer on it could fire.
fn on_its_own_thread(scenario: impl FnOnce() + Send + 'static) {
    let (done, finished) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        scenario();
        let _ = done.send(());
    });
    finished.recv_timeout(Duration::from_secs(10)).expect("the scenario finished (no deadlock)");
}

#[test]
fn a_trace_redactor_may_use_the_connection() {
    // The process's default subscriber, not a scoped one: with a scoped subscriber on one thread
    // and none on another, tracing may cache a callsite as disabled (and the redactor never runs).
    let subscriber =
        tracing_subscriber::fmt().with_env_filter("jsonrpc_duplex::wire=trace").with_writer(io::sink).finish();
    tracing::subscriber::set_global_default(subscriber).expect("the only subscriber of this test binary");
    on_its_own_thread(|| {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            let handle: Arc<OnceLock<Handle>> = Arc::default();
            let audited = handle.clone();
            // The redactor sends a notification of its own for each outgoing message (but its
            // own): it queues on the connection it traces.
            let builder = Connection::builder().trace_redactor(move |direction, text| {
                if direction == Direction::Outgoing
                    && !text.contains("audit")
                    && let Some(h) = audited.get()
                {
                    let _ = h.notify("audit", ["seen"]).now_or_never();
                }
                text.to_owned()
            });
            let (conn, mut peer) = raw_peer::pair(builder, jsonrpc_duplex::Framing::ContentLength);
            handle.set(conn.handle()).ok();
            let h = conn.handle();
            let call = tokio::spawn(async move { h.request::<i64>("add", [1, 2]).await });
            // The audit is traced (and so queued) while the request is being sent: either may
            // come first.
            let (first, second) = (within(peer.recv()).await, within(peer.recv()).await);
            let (request, audit) = if first["method"] == "add" { (first, second) } else { (second, first) };
            assert_eq!(audit["method"], "audit");
            peer.send_json(serde_json::json!({"jsonrpc": "2.0", "id": request["id"], "result": 3})).await;
            assert_eq!(within(call).await.unwrap().unwrap(), 3);
        });
    });
}

/// A write side whose every write first tries a gate the test may hold.
struct Gated<W> {
    inner: W,
    gate: Arc<Mutex<()>>,
    /// Writes attempted while the gate was held by somebody else (the test's own drop).
    blocked: Arc<Mutex<usize>>,
}

impl<W: AsyncWrite + Unpin> AsyncWrite for Gated<W> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        if self.gate.try_lock().is_err() {
            *self.blocked.lock().unwrap() += 1;
        }
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

struct Reading<R>(R);

impl<R: AsyncRead + Unpin> AsyncRead for Reading<R> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_read(cx, buf)
    }
}

#[tokio::test]
async fn a_responder_dropped_under_a_users_lock_writes_nothing_from_its_drop() {
    let (ours, theirs) = tokio::io::duplex(64 * 1024);
    let (read, write) = tokio::io::split(ours);
    let gate = Arc::new(Mutex::new(()));
    let blocked = Arc::new(Mutex::new(0));
    let kept: Arc<Mutex<Option<Responder>>> = Arc::default();
    let keep = kept.clone();
    let router = Router::new().request_raw("later", move |_req, reply| {
        *keep.lock().unwrap() = Some(reply);
        async {}
    });
    let writer = Gated { inner: write, gate: gate.clone(), blocked: blocked.clone() };
    let _conn = Connection::builder().serve(router).connect(Reading(read), writer);
    let (their_read, their_write) = tokio::io::split(theirs);
    let mut peer = RawPeer::new(their_read, their_write, jsonrpc_duplex::Framing::ContentLength);
    peer.send_json(serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "later"})).await;
    within(async {
        while kept.lock().unwrap().is_none() {
            tokio::task::yield_now().await;
        }
    })
    .await;
    {
        // The user's own lock, held while a responder is dropped unanswered (in a `Drop` of the
        // user's, say): the default answer must not be written from here.
        let _held = gate.lock().unwrap();
        drop(kept.lock().unwrap().take());
    }
    let answer = within(peer.recv()).await;
    assert_eq!(answer["id"], 1);
    assert_eq!(answer["error"]["code"], ErrorObject::internal_error("").code);
    assert_eq!(*blocked.lock().unwrap(), 0, "the dropped responder wrote from its own drop");
}
