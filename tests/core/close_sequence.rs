//! The close sequence's two settings: after the peer's EOF, handlers still running get the EOF
//! grace and are then cancelled (what finishes in time is answered); whatever the ending, a peer
//! that does not read what is queued gets the flush timeout and no more.

use crate::support;

use std::time::Duration;

use jsonrpc_duplex::connection::{DEFAULT_EOF_GRACE, DEFAULT_FLUSH_TIMEOUT};
use jsonrpc_duplex::{CloseKind, Connection, ErrorObject, Framing, Router};
use serde_json::json;
use support::raw_peer::{pair, pair_with_buffer};
use support::time::within;
use tokio::sync::mpsc;
use tokio::time::Instant;

/// `sleep` `[ms]` answers after `ms`; `hang` never finishes and reports when its token fires.
fn server(fired: mpsc::UnboundedSender<Instant>) -> jsonrpc_duplex::Builder {
    Connection::builder().serve(
        Router::new()
            .method("sleep", |(ms,): (u64,), _ctx| async move {
                tokio::time::sleep(Duration::from_millis(ms)).await;
                Ok::<_, ErrorObject>(ms)
            })
            .method("hang", move |(): (), ctx: jsonrpc_duplex::RequestContext| {
                let fired = fired.clone();
                async move {
                    let token = ctx.cancellation().clone();
                    // On a task of its own: the handler's future is dropped when the token fires.
                    tokio::spawn(async move {
                        token.cancelled().await;
                        let _ = fired.send(Instant::now());
                    });
                    std::future::pending::<()>().await;
                    Ok::<(), ErrorObject>(())
                }
            }),
    )
}

#[test]
fn the_defaults_are_short() {
    assert_eq!(DEFAULT_EOF_GRACE, Duration::from_secs(1));
    assert_eq!(DEFAULT_FLUSH_TIMEOUT, Duration::from_secs(2));
}

#[tokio::test(start_paused = true)]
async fn after_the_peers_eof_what_finishes_within_the_grace_is_answered_and_the_rest_cancelled() {
    for framing in [Framing::ContentLength, Framing::NewlineDelimited] {
        let (tx, mut fired) = mpsc::unbounded_channel();
        let grace = Duration::from_millis(300);
        let (conn, mut peer) = pair(server(tx).eof_grace(grace), framing);
        peer.send(r#"{"jsonrpc":"2.0","id":1,"method":"hang"}"#).await;
        peer.send(r#"{"jsonrpc":"2.0","id":2,"method":"sleep","params":[100]}"#).await;
        peer.send(r#"{"jsonrpc":"2.0","id":3,"method":"sleep","params":[5000]}"#).await;
        let eof = Instant::now();
        peer.close_write().await;
        // Within the grace: answered.
        peer.expect(json!({"jsonrpc":"2.0","id":2,"result":100})).await;
        // Not within it: their tokens fire when it is over, and they are answered -32800.
        let mut cancelled = [peer.recv_error().await, peer.recv_error().await];
        cancelled.sort_by_key(|(id, _, _)| id.as_i64());
        assert_eq!(
            cancelled.iter().map(|(id, code, _)| (id.clone(), *code)).collect::<Vec<_>>(),
            vec![(json!(1), -32800), (json!(3), -32800)],
            "{framing:?}"
        );
        let at = within(fired.recv()).await.unwrap() - eof;
        assert!(at >= grace && at < grace + Duration::from_millis(50), "{framing:?}: the token fired {at:?} after EOF");
        peer.expect_eof().await;
        assert_eq!(within(conn.close()).await.kind, CloseKind::RemoteClosed);
    }
}

#[tokio::test(start_paused = true)]
async fn a_zero_grace_cancels_the_running_handlers_at_eof() {
    let (tx, mut fired) = mpsc::unbounded_channel();
    let (conn, mut peer) = pair(server(tx).eof_grace(Duration::ZERO), Framing::NewlineDelimited);
    peer.send(r#"{"jsonrpc":"2.0","id":1,"method":"hang"}"#).await;
    // Started (requests start in order): the next one is answered.
    peer.send(r#"{"jsonrpc":"2.0","id":2,"method":"sleep","params":[0]}"#).await;
    peer.expect(json!({"jsonrpc":"2.0","id":2,"result":0})).await;
    let eof = Instant::now();
    peer.close_write().await;
    let (id, code, _) = peer.recv_error().await;
    assert_eq!((id, code), (json!(1), -32800));
    assert_eq!(within(fired.recv()).await.unwrap(), eof);
    assert_eq!(within(conn.close()).await.kind, CloseKind::RemoteClosed);
}

#[tokio::test(start_paused = true)]
async fn a_peer_that_never_reads_holds_a_closing_connection_no_longer_than_the_flush_timeout() {
    let flush = Duration::from_millis(400);
    for eof in [false, true] {
        let (tx, _fired) = mpsc::unbounded_channel();
        let (conn, mut peer) = pair_with_buffer(server(tx).flush_timeout(flush), Framing::ContentLength, 1024);
        peer.set_reading(false);
        // Answers far beyond the pipe's 1 KiB: the writer is stuck until the peer reads.
        let pad = "p".repeat(2000);
        for id in 0..20 {
            peer.send_json(json!({"jsonrpc":"2.0","id":id,"method":"sleep","params":[0],"pad":pad})).await;
        }
        let start = Instant::now();
        let reason = if eof {
            peer.close_write().await;
            within(conn.close()).await
        } else {
            within(conn.close()).await
        };
        let took = start.elapsed();
        // The flush timeout, then at most the write side's own shutdown bound.
        assert!(took >= flush && took < flush + Duration::from_secs(1), "eof {eof}: closed after {took:?} ({reason})");
    }
}

/// The peer is gone (its process killed: EOF, and every write fails): once a write has failed,
/// nothing a handler answers can be read, so the handlers still running are cancelled at once,
/// not after the EOF grace.
#[tokio::test(start_paused = true)]
async fn a_failed_write_cancels_the_running_handlers_at_once_not_after_the_eof_grace() {
    let (tx, mut fired) = mpsc::unbounded_channel();
    let grace = Duration::from_secs(30);
    let (conn, mut peer) = pair(server(tx).eof_grace(grace), Framing::NewlineDelimited);
    peer.send(r#"{"jsonrpc":"2.0","id":1,"method":"hang"}"#).await;
    peer.send(r#"{"jsonrpc":"2.0","id":2,"method":"sleep","params":[100]}"#).await;
    // Both handlers are running before the peer goes.
    peer.send(r#"{"jsonrpc":"2.0","id":3,"method":"sleep","params":[0]}"#).await;
    peer.expect(json!({"jsonrpc":"2.0","id":3,"result":0})).await;
    let gone = Instant::now();
    drop(peer);
    // EOF, then the answer to `sleep` 100 ms later cannot be written.
    let at = within(fired.recv()).await.expect("the hanging handler's token fired");
    let took = at - gone;
    assert!(took < Duration::from_secs(1), "cancelled {took:?} after the peer went (the grace is {grace:?})");
    let reason = within(conn.closed()).await;
    assert_eq!(reason.kind, CloseKind::RemoteClosed, "{reason}");
}

/// A write side that has failed, and whose shutdown never ends (a closing handshake the gone peer
/// will not finish, a stuck flush).
struct Broken;

impl tokio::io::AsyncWrite for Broken {
    fn poll_write(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
        _: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        std::task::Poll::Ready(Err(std::io::ErrorKind::BrokenPipe.into()))
    }
    fn poll_flush(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::task::Poll::Ready(Ok(()))
    }
    fn poll_shutdown(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::task::Poll::Pending
    }
}

#[tokio::test(start_paused = true)]
async fn a_failed_write_cancels_the_running_handlers_before_the_write_side_is_shut() {
    use tokio::io::AsyncWriteExt;
    let (tx, mut fired) = mpsc::unbounded_channel();
    let (ours, mut theirs) = tokio::io::duplex(64 * 1024);
    let conn = server(tx).eof_grace(Duration::from_secs(30)).framing(Framing::NewlineDelimited).connect(ours, Broken);
    theirs.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"hang\"}\n").await.unwrap();
    theirs.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"sleep\",\"params\":[100]}\n").await.unwrap();
    let start = Instant::now();
    // The peer is gone: EOF (the grace begins), and the answer to `sleep` cannot be written:
    // `hang` is cancelled then, not after the grace, nor once the write side's shutdown has timed
    // out.
    drop(theirs);
    let at = within(fired.recv()).await.expect("the hanging handler's token fired");
    let took = at - start;
    assert!(took < Duration::from_millis(300), "cancelled {took:?} after the start (the write failed at 100 ms)");
    let reason = within(conn.closed()).await;
    assert_eq!(reason.kind, CloseKind::RemoteClosed, "{reason}");
}
