//! The peer dies: a real child process killed with SIGKILL mid-call and mid-frame, and an
//! in-process peer cut off mid-stream and while one of its requests is being handled. Every
//! pending call, stream and handler ends, with a reason that says what happened, in bounded time.

use crate::support;

use std::time::Duration;

use futures::StreamExt;
use jsonrpc_duplex::{CallOptions, CloseKind, Connection, Error, ErrorObject, Framing, Router};
use serde_json::Value;
use support::time::within;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

/// A child that reads the start of our first request, announces its pid (as a `pid`
/// notification in `framing`), then stays alive without reading or answering until it is
/// killed. Once the pid is known, our request has been written: nothing of ours is in flight
/// when the child dies.
fn spawn_silent_child(framing: Framing) -> (Connection, mpsc::UnboundedReceiver<u32>) {
    let announce = match framing {
        Framing::ContentLength => {
            r#"msg="{\"jsonrpc\":\"2.0\",\"method\":\"pid\",\"params\":[$$]}"; printf 'Content-Length: %d\r\n\r\n%s' ${#msg} "$msg""#
        }
        _ => r#"printf '{"jsonrpc":"2.0","method":"pid","params":[%s]}\n' $$"#,
    };
    // `exec` keeps the pid; `sleep` neither reads nor writes (the child is killed long before).
    let script = format!("head -c 20 >/dev/null; {announce}; exec sleep 600");
    let (tx, rx) = mpsc::unbounded_channel();
    let router = Router::new().notification("pid", move |(pid,): (u32,), _cx| {
        let _ = tx.send(pid);
        async {}
    });
    let mut command = tokio::process::Command::new("sh");
    command.arg("-c").arg(script);
    let conn = Connection::builder().framing(framing).serve(router).spawn_child(command).expect("spawn sh");
    (conn, rx)
}

fn kill9(pid: u32) {
    let status = std::process::Command::new("kill").arg("-9").arg(pid.to_string()).status().expect("run kill");
    assert!(status.success(), "kill -9 {pid} failed");
}

#[tokio::test]
async fn a_child_killed_mid_call_fails_the_call_with_its_exit_and_ends_the_connection() {
    let (conn, mut pids) = spawn_silent_child(Framing::NewlineDelimited);
    let h = conn.handle();
    let call = tokio::spawn(async move { h.request::<Value>("work", [1]).await });
    // The call is in flight (written, and read by the child, who never answers it).
    let pid = within(pids.recv()).await.expect("a pid");
    kill9(pid);
    let err = within(call).await.unwrap().expect_err("a dead child cannot answer");
    let Error::ConnectionLost(reason) = err else { panic!("expected ConnectionLost, got {err:?}") };
    assert_eq!(reason.kind, CloseKind::RemoteClosed, "{reason}");
    assert!(reason.message.contains("signal: 9") || reason.message.contains("SIGKILL"), "{reason}");
    assert_eq!(within(conn.closed()).await, reason);
    // Everything after fails at once, with the same reason.
    let late = within(conn.handle().request::<Value>("late", ())).await.unwrap_err();
    assert!(matches!(late, Error::ConnectionLost(ref r) if *r == reason), "{late:?}");
    let note = within(conn.handle().notify("late", ())).await.unwrap_err();
    assert!(matches!(note, Error::ConnectionLost(_)), "{note:?}");
    within(conn.close()).await;
}

#[tokio::test]
async fn a_child_killed_mid_frame_ends_the_connection_with_a_stream_error() {
    // The child reads the start of our request, writes half a frame, then its pid to a file:
    // once the file is there, our request is written and the half frame is in the pipe.
    let pid_file = std::env::temp_dir().join(format!("jsonrpc-duplex-fault-{}.pid", std::process::id()));
    let _ = std::fs::remove_file(&pid_file);
    let script = format!(
        r#"head -c 20 >/dev/null; printf 'Content-Length: 200\r\n\r\n{{"jsonrpc":"2.0","id":0,"res'; echo $$ > {0}.tmp; mv {0}.tmp {0}; exec sleep 600"#,
        pid_file.display()
    );
    let mut command = tokio::process::Command::new("sh");
    command.arg("-c").arg(script);
    let conn = Connection::builder().spawn_child(command).expect("spawn sh");
    let h = conn.handle();
    let call = tokio::spawn(async move { h.request::<Value>("work", [1]).await });
    let pid = within(async {
        loop {
            if let Some(pid) = std::fs::read_to_string(&pid_file).ok().and_then(|s| s.trim().parse::<u32>().ok()) {
                break pid;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await;
    let _ = std::fs::remove_file(&pid_file);
    kill9(pid);
    let err = within(call).await.unwrap().expect_err("a dead child cannot answer");
    let Error::ConnectionLost(reason) = err else { panic!("expected ConnectionLost, got {err:?}") };
    assert_eq!(reason.kind, CloseKind::StreamError, "{reason}");
    assert!(reason.message.contains("inside a frame") && reason.message.contains("200"), "{reason}");
    within(conn.close()).await;
}

/// Two of our connections joined by a cable that can be cut: both ends then see their stream
/// end at once, as when a process dies (nothing is flushed, nothing more arrives).
struct Cable(JoinHandle<()>);

impl Cable {
    fn cut(self) {
        self.0.abort();
    }
}

fn cabled(a: jsonrpc_duplex::Builder, b: jsonrpc_duplex::Builder) -> (Connection, Connection, Cable) {
    let (a_io, mut a_far) = tokio::io::duplex(64 * 1024);
    let (b_io, mut b_far) = tokio::io::duplex(64 * 1024);
    let relay = tokio::spawn(async move {
        let _ = tokio::io::copy_bidirectional(&mut a_far, &mut b_far).await;
    });
    (a.connect_io(a_io), b.connect_io(b_io), Cable(relay))
}

/// Fires when dropped.
struct DropSignal(Option<oneshot::Sender<()>>);

impl Drop for DropSignal {
    fn drop(&mut self) {
        if let Some(tx) = self.0.take() {
            let _ = tx.send(());
        }
    }
}

#[tokio::test]
async fn a_peer_cut_off_mid_stream_ends_the_stream_on_both_sides() {
    let (dropped_tx, dropped_rx) = oneshot::channel();
    let dropped_tx = std::sync::Mutex::new(Some(dropped_tx));
    let producer = Connection::builder().serve(Router::new().request_raw("ticks", move |req, reply| {
        let signal = DropSignal(dropped_tx.lock().unwrap().take());
        let ticks = futures::stream::iter(0u64..).map(move |i| {
            let _keep = &signal;
            i
        });
        let stream = req.peer().offer_stream(ticks);
        async move {
            reply.ok(stream);
        }
    }));
    let (consumer, producer, cable) = cabled(Connection::builder(), producer);
    let mut ticks = consumer.handle().request_stream::<u64>("ticks", (), CallOptions::default());
    for i in 0..5 {
        assert_eq!(within(ticks.next()).await.expect("an item").expect("a tick"), i);
    }
    cable.cut();
    // The consumer's next pull fails with the lost connection, and the stream ends there.
    let end = within(ticks.next()).await.expect("an error item");
    assert!(matches!(end, Err(Error::ConnectionLost(_))), "{end:?}");
    assert!(within(ticks.next()).await.is_none());
    // The producer's side drops the stream it was serving.
    within(dropped_rx).await.expect("the stream was dropped");
    for conn in [&consumer, &producer] {
        let reason = within(conn.closed()).await;
        assert!(matches!(reason.kind, CloseKind::RemoteClosed | CloseKind::StreamError), "{reason}");
    }
}

#[tokio::test(start_paused = true)]
async fn a_peer_cut_off_mid_request_cancels_our_handler_and_fails_its_call() {
    let (started_tx, mut started) = mpsc::unbounded_channel();
    let (cancelled_tx, mut cancelled) = mpsc::unbounded_channel();
    let server = Connection::builder().serve(Router::new().method("slow", move |(): (), cx| {
        let (started_tx, cancelled_tx) = (started_tx.clone(), cancelled_tx.clone());
        async move {
            let _ = started_tx.send(());
            cx.cancellation().cancelled().await;
            let _ = cancelled_tx.send(());
            Err::<(), _>(ErrorObject::internal_error("cancelled"))
        }
    }));
    let (client, server, cable) = cabled(Connection::builder(), server);
    let h = client.handle();
    let call = tokio::spawn(async move { h.request::<()>("slow", ()).await });
    within(started.recv()).await.expect("started");
    cable.cut();
    let err = within(call).await.unwrap().unwrap_err();
    assert!(matches!(err, Error::ConnectionLost(_)), "{err:?}");
    // The handler of a request from a dead peer is cancelled (after the drain that a cleanly
    // closing peer gets: the flush timeout, on this test's paused clock).
    within(cancelled.recv()).await.expect("cancelled");
    let reason = within(server.closed()).await;
    assert_eq!(reason.kind, CloseKind::RemoteClosed, "{reason}");
    within(server.close()).await;
}
