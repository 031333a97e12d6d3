//! How a connection ends: the peer's EOF, a broken stream, a local close or drop, a child's exit;
//! what pending calls, queued messages and running handlers see; and real OS transports.

use crate::support;

use std::time::{Duration, Instant};

use jsonrpc_duplex::{CloseKind, Connection, Error, ErrorObject, Framing, Router};
use serde_json::{Value, json};
use support::raw_peer::{RawPeer, pair};
use support::time::within;

fn server() -> jsonrpc_duplex::Builder {
    Connection::builder().serve(
        Router::new()
            .method("add", |(a, b): (i64, i64), _ctx| async move { Ok::<_, ErrorObject>(a + b) })
            .method("slow_add", |(a, b): (i64, i64), _ctx| async move {
                tokio::time::sleep(Duration::from_millis(50)).await;
                Ok::<_, ErrorObject>(a + b)
            })
            .method("hang", |(): (), _ctx| async move {
                std::future::pending::<()>().await;
                Ok::<(), ErrorObject>(())
            }),
    )
}

/// Start `n` calls and wait until the peer has read all of them.
async fn calls_in_flight(
    conn: &Connection,
    peer: &RawPeer,
    n: usize,
) -> Vec<tokio::task::JoinHandle<Result<Value, Error>>> {
    let mut calls = Vec::new();
    for i in 0..n {
        let h = conn.handle();
        calls.push(tokio::spawn(async move { h.request::<Value>("pending", [i]).await }));
        assert_eq!(peer.recv().await["method"], "pending");
    }
    calls
}

// Paused time: "promptly" is exact, before any timer (the EOF grace's 1 s) has run, instead of
// "within 1 s of a real clock", which a stalled runner can miss.
#[tokio::test(start_paused = true)]
async fn the_peers_eof_fails_every_pending_call_promptly_with_connection_lost_remote_closed() {
    let (conn, mut peer) = pair(server(), Framing::ContentLength);
    let calls = calls_in_flight(&conn, &peer, 5).await;
    let start = tokio::time::Instant::now();
    peer.close_write().await;
    for call in calls {
        match within(call).await.unwrap() {
            Err(Error::ConnectionLost(reason)) => assert_eq!(reason.kind, CloseKind::RemoteClosed, "{reason}"),
            other => panic!("{other:?}"),
        }
    }
    assert!(start.elapsed() < Duration::from_secs(1), "pending calls failed only after {:?}", start.elapsed());
    let reason = within(conn.closed()).await;
    assert_eq!(reason.kind, CloseKind::RemoteClosed);
    assert!(conn.is_closed());
    // Our side shuts its write side too.
    peer.expect_eof().await;
}

// Paused time: `slow_add`'s 50 ms end before the EOF grace's 1 s however loaded the machine is
// (a real clock lets a stalled runner pass the grace first, and the request is then cancelled).
#[tokio::test(start_paused = true)]
async fn requests_read_before_the_peers_eof_are_still_answered() {
    // `printf '<request>' | server`: the peer half-closes right after its request.
    for framing in [Framing::ContentLength, Framing::NewlineDelimited] {
        let (conn, mut peer) = pair(server(), framing);
        let mut bytes = peer.frame(br#"{"jsonrpc":"2.0","id":1,"method":"slow_add","params":[1,2]}"#);
        bytes.extend(peer.frame(br#"{"jsonrpc":"2.0","id":2,"method":"add","params":[2,2]}"#));
        peer.send_raw(bytes).await;
        peer.close_write().await;
        let mut got = vec![peer.recv().await, peer.recv().await];
        got.sort_by_key(|m| m["id"].as_i64());
        assert_eq!(
            got,
            vec![json!({"jsonrpc":"2.0","id":1,"result":3}), json!({"jsonrpc":"2.0","id":2,"result":4})],
            "{framing:?}"
        );
        peer.expect_eof().await;
        assert_eq!(within(conn.close()).await.kind, CloseKind::RemoteClosed);
    }
}

#[tokio::test]
async fn closed_reports_the_kind_of_ending() {
    // RemoteClosed: EOF between messages.
    let (conn, mut peer) = pair(server(), Framing::ContentLength);
    peer.close_write().await;
    assert_eq!(within(conn.closed()).await.kind, CloseKind::RemoteClosed);

    // StreamError: EOF inside a frame.
    let (conn, mut peer) = pair(server(), Framing::ContentLength);
    peer.send_raw("Content-Length: 10\r\n\r\n{\"jso").await;
    peer.close_write().await;
    let reason = within(conn.closed()).await;
    assert_eq!(reason.kind, CloseKind::StreamError, "{reason}");

    // RemoteProtocolViolation: a broken frame.
    let (conn, mut peer) = pair(server(), Framing::ContentLength);
    peer.send_raw("Content-Length: x\r\n\r\n").await;
    assert_eq!(within(conn.closed()).await.kind, CloseKind::RemoteProtocolViolation);

    // LocallyClosed: close() and drop.
    let (conn, _peer) = pair(server(), Framing::ContentLength);
    let handle = conn.handle();
    assert_eq!(within(conn.close()).await.kind, CloseKind::LocallyClosed);
    assert_eq!(within(handle.closed()).await.kind, CloseKind::LocallyClosed);

    let (conn, _peer) = pair(server(), Framing::ContentLength);
    let handle = conn.handle();
    drop(conn);
    assert_eq!(within(handle.closed()).await.kind, CloseKind::LocallyClosed);

    // The first reason wins.
    let (conn, mut peer) = pair(server(), Framing::ContentLength);
    conn.handle().close();
    peer.send_raw("garbage\r\n\r\n").await;
    assert_eq!(within(conn.closed()).await.kind, CloseKind::LocallyClosed);
}

#[tokio::test]
async fn a_local_close_flushes_queued_messages_before_eof() {
    let (conn, peer) = pair(server(), Framing::ContentLength);
    let big = "z".repeat(100_000);
    for i in 0..100 {
        within(conn.handle().notify("queued", [i])).await.unwrap();
    }
    within(conn.handle().notify("big", [&big])).await.unwrap();
    within(conn.handle().notify("last", ())).await.unwrap();
    let reason = within(conn.close()).await;
    assert_eq!(reason.kind, CloseKind::LocallyClosed);
    for i in 0..100 {
        peer.expect(json!({"jsonrpc":"2.0","method":"queued","params":[i]})).await;
    }
    peer.expect(json!({"jsonrpc":"2.0","method":"big","params":[big]})).await;
    peer.expect(json!({"jsonrpc":"2.0","method":"last"})).await;
    peer.expect_eof().await;
}

#[tokio::test]
async fn a_local_close_fails_pending_calls_and_answers_running_requests_cancelled() {
    let (conn, mut peer) = pair(server(), Framing::ContentLength);
    let calls = calls_in_flight(&conn, &peer, 2).await;
    peer.send(r#"{"jsonrpc":"2.0","id":"h","method":"hang"}"#).await;
    peer.send(r#"{"jsonrpc":"2.0","id":"a","method":"add","params":[1,1]}"#).await;
    peer.expect(json!({"jsonrpc":"2.0","id":"a","result":2})).await;
    let handle = conn.handle();
    let closing = tokio::spawn(conn.close());
    for call in calls {
        match within(call).await.unwrap() {
            Err(Error::ConnectionLost(reason)) => assert_eq!(reason.kind, CloseKind::LocallyClosed),
            other => panic!("{other:?}"),
        }
    }
    let (id, code, _) = peer.recv_error().await;
    assert_eq!((id, code), (json!("h"), -32800));
    peer.expect_eof().await;
    assert_eq!(within(closing).await.unwrap().kind, CloseKind::LocallyClosed);
    assert!(handle.is_closed());
}

#[tokio::test]
async fn calls_and_notifications_after_close_fail_with_connection_lost() {
    let (conn, peer) = pair(server(), Framing::NewlineDelimited);
    let handle = conn.handle();
    within(conn.close()).await;
    match within(handle.request::<Value>("x", ())).await {
        Err(Error::ConnectionLost(reason)) => assert_eq!(reason.kind, CloseKind::LocallyClosed),
        other => panic!("{other:?}"),
    }
    assert!(matches!(within(handle.notify("x", ())).await, Err(Error::ConnectionLost(_))));
    peer.expect_eof().await;
}

#[tokio::test]
async fn dropping_the_connection_closes_it_and_the_peer_sees_eof() {
    let (conn, peer) = pair(server(), Framing::ContentLength);
    let handle = conn.handle();
    within(conn.handle().notify("bye", ())).await.unwrap();
    drop(conn);
    peer.expect(json!({"jsonrpc":"2.0","method":"bye"})).await;
    peer.expect_eof().await;
    assert_eq!(within(handle.closed()).await.kind, CloseKind::LocallyClosed);
}

#[tokio::test]
async fn a_peer_that_dies_mid_frame_fails_pending_calls_with_a_stream_error() {
    for cut in ["Content-Length: 40\r\n", "Content-Length: 40\r\n\r\n{\"jsonrpc\":\"2.0\","] {
        let (conn, mut peer) = pair(server(), Framing::ContentLength);
        let calls = calls_in_flight(&conn, &peer, 1).await;
        peer.send_raw(cut).await;
        peer.close_write().await;
        for call in calls {
            match within(call).await.unwrap() {
                Err(Error::ConnectionLost(reason)) => {
                    assert_eq!(reason.kind, CloseKind::StreamError, "{reason}");
                    assert!(reason.message.contains("inside a frame"), "{reason}");
                }
                other => panic!("{other:?}"),
            }
        }
    }
    // Newline framing: a dangling partial line at EOF is still parsed; a broken one is answered
    // -32700 and then the stream ends normally.
    let (conn, mut peer) = pair(server(), Framing::NewlineDelimited);
    peer.send_raw("{\"jsonrpc\":\"2.0\",\"id\":1,").await;
    peer.close_write().await;
    let (id, code, _) = peer.recv_error().await;
    assert_eq!((id, code), (json!(null), -32700));
    assert_eq!(within(conn.closed()).await.kind, CloseKind::RemoteClosed);
}

#[tokio::test]
async fn a_failed_write_closes_with_a_stream_error_and_fails_the_call() {
    // Separate pipes each way: the peer stops reading (drops its read end) but keeps writing.
    let (our_read, mut their_write) = tokio::io::duplex(1024);
    let (our_write, their_read) = tokio::io::duplex(1024);
    drop(their_read);
    let conn = server().connect(our_read, our_write);
    let err = within(conn.handle().request::<Value>("x", ())).await.unwrap_err();
    match err {
        Error::ConnectionLost(reason) => assert_eq!(reason.kind, CloseKind::StreamError, "{reason}"),
        other => panic!("{other:?}"),
    }
    use tokio::io::AsyncWriteExt;
    let _ = their_write.write_all(b"x").await;
}

#[tokio::test]
async fn a_handler_may_close_the_connection_it_serves() {
    let router = Router::new().notification("exit", |(): (), ctx: jsonrpc_duplex::NotificationContext| async move {
        ctx.peer().notify("exiting", ()).await.unwrap();
        ctx.peer().close();
    });
    let (conn, mut peer) = pair(Connection::builder().serve(router), Framing::ContentLength);
    peer.send(r#"{"jsonrpc":"2.0","method":"exit"}"#).await;
    peer.expect(json!({"jsonrpc":"2.0","method":"exiting"})).await;
    peer.expect_eof().await;
    assert_eq!(within(conn.closed()).await.kind, CloseKind::LocallyClosed);
}

#[cfg(unix)]
mod os {
    use super::*;
    use jsonrpc_duplex::ChildExit;
    use jsonrpc_duplex::transport::ChildOptions;
    use tokio::net::UnixStream;
    use tokio::net::unix::pipe;

    #[tokio::test]
    async fn a_connection_over_two_os_pipes_writes_exact_frames_and_sees_eof() {
        let (their_tx, our_rx) = pipe::pipe().unwrap();
        let (our_tx, their_rx) = pipe::pipe().unwrap();
        let conn = server().framing(Framing::ContentLength).connect(our_rx, our_tx);
        let mut peer = RawPeer::new(their_rx, their_tx, Framing::ContentLength);
        peer.send(r#"{"jsonrpc":"2.0","id":1,"method":"add","params":[40,2]}"#).await;
        let (whole, _) = peer.recv_frame().await;
        let body = r#"{"jsonrpc":"2.0","id":1,"result":42}"#;
        assert_eq!(String::from_utf8(whole).unwrap(), format!("Content-Length: {}\r\n\r\n{body}", body.len()));
        // A big message crosses the pipe's own buffer (64 KiB on Linux) in several writes.
        let big = "p".repeat(300_000);
        peer.send_json(json!({"jsonrpc":"2.0","id":2,"method":"add","params":[1,2],"pad":big})).await;
        peer.expect(json!({"jsonrpc":"2.0","id":2,"result":3})).await;
        let calls = calls_in_flight(&conn, &peer, 1).await;
        peer.close_write().await;
        assert!(matches!(within(calls.into_iter().next().unwrap()).await.unwrap(), Err(Error::ConnectionLost(_))));
        assert_eq!(within(conn.closed()).await.kind, CloseKind::RemoteClosed);
        peer.expect_eof().await;
    }

    #[tokio::test]
    async fn two_connections_over_a_unix_socket_pair() {
        let (a, b) = UnixStream::pair().unwrap();
        let server = server().framing(Framing::NewlineDelimited).connect_io(a);
        let client = Connection::builder().framing(Framing::NewlineDelimited).connect_io(b);
        let sum: i64 = within(client.handle().request("add", (20, 22))).await.unwrap();
        assert_eq!(sum, 42);
        within(client.close()).await;
        assert_eq!(within(server.closed()).await.kind, CloseKind::RemoteClosed);
    }

    #[tokio::test]
    async fn a_childs_exit_ends_the_connection_with_its_status_in_the_reason() {
        let conn = Connection::builder().spawn_child(tokio::process::Command::from({
            let mut c = std::process::Command::new("sh");
            c.args(["-c", "exit 3"]);
            c
        }));
        let conn = conn.unwrap();
        let reason = within(conn.closed()).await;
        assert_eq!(reason.kind, CloseKind::RemoteClosed, "{reason}");
        assert!(reason.message.contains("exit status: 3"), "{reason}");
        match reason.child() {
            Some(ChildExit::Exited(status)) => assert_eq!(status.code(), Some(3), "{reason}"),
            other => panic!("{other:?} ({reason})"),
        }
    }

    #[tokio::test]
    async fn closing_says_whether_the_child_exited_by_itself_and_how() {
        let mut cmd = tokio::process::Command::new("sh");
        // Exits by itself on EOF, with a status of its own.
        cmd.args(["-c", "cat > /dev/null; exit 4"]);
        let conn = Connection::builder().spawn_child(cmd).unwrap();
        let closed = conn.closed();
        let reason = within(conn.close()).await;
        assert_eq!(reason.kind, CloseKind::LocallyClosed, "{reason}");
        match reason.child() {
            Some(ChildExit::Exited(status)) => assert_eq!(status.code(), Some(4), "{reason}"),
            other => panic!("{other:?} ({reason})"),
        }
        assert!(reason.message.contains("exited by itself (exit status: 4)"), "{reason}");
        assert_eq!(within(closed).await, reason, "Connection::closed says the same");
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_child_that_writes_while_it_shuts_down_exits_by_itself_not_of_a_broken_pipe() {
        let (_guard, logs) = support::logs::capture_logs();
        let mut cmd = tokio::process::Command::new("sh");
        // After EOF on stdin it writes ~90 KB (more than a pipe holds) before it exits 0: a pipe
        // closed under it kills it with SIGPIPE, one nobody reads blocks it until it is killed.
        cmd.args([
            "-c",
            "cat > /dev/null; i=0; while [ $i -lt 3000 ]; do echo \"shutting down, step $i of 3000\"; i=$((i+1)); done; exit 0",
        ]);
        let options = ChildOptions::new().exit_grace(Duration::from_secs(5));
        let conn = Connection::builder().spawn_child_with(cmd, options).unwrap();
        let reason = within(conn.close()).await;
        match reason.child() {
            Some(ChildExit::Exited(status)) => assert_eq!(status.code(), Some(0), "{reason}"),
            other => panic!("{other:?} ({reason})"),
        }
        let logs = logs.text();
        // All of it read (and discarded) after the connection stopped reading.
        let written: usize = (0..3000).map(|i| format!("shutting down, step {i} of 3000\n").len()).sum();
        assert!(logs.contains("DEBUG") && logs.contains(&format!("discarded={written}")), "{logs}");
    }

    #[tokio::test(flavor = "current_thread")]
    async fn closing_says_the_child_was_killed_after_its_grace_and_warns() {
        let (_guard, logs) = support::logs::capture_logs();
        let mut cmd = tokio::process::Command::new("sh");
        // It ignores SIGTERM too (an ignored signal stays ignored across exec).
        cmd.args(["-c", "trap '' TERM; exec sleep 30"]);
        let options = ChildOptions::new().exit_grace(Duration::from_millis(100)).term_grace(Duration::from_millis(100));
        let conn = Connection::builder().spawn_child_with(cmd, options).unwrap();
        let reason = within(conn.close()).await;
        assert_eq!(reason.kind, CloseKind::LocallyClosed, "{reason}");
        match reason.child() {
            Some(ChildExit::Killed { grace, status }) => {
                assert_eq!(*grace, Duration::from_millis(100));
                use std::os::unix::process::ExitStatusExt;
                assert_eq!(status.and_then(|s| s.signal()), Some(9), "{reason}");
            }
            other => panic!("{other:?} ({reason})"),
        }
        assert!(reason.message.contains("killed after a grace of 100ms"), "{reason}");
        let logs = logs.text();
        assert!(logs.contains("WARN") && logs.contains("did not exit after its stdin was closed"), "{logs}");
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_child_that_ignores_eof_is_sent_sigterm_and_its_own_exit_is_kept() {
        let mut cmd = tokio::process::Command::new("sh");
        // Ignores EOF on stdin; finishes its shutdown (exit 7) on SIGTERM. The trap runs once
        // the `sleep` in progress ends, well within the 10 s given.
        cmd.args(["-c", "trap 'exit 7' TERM; while :; do sleep 0.05; done"]);
        let options = ChildOptions::new().exit_grace(Duration::from_millis(100)).term_grace(Duration::from_secs(10));
        let conn = Connection::builder().spawn_child_with(cmd, options).unwrap();
        let reason = within(conn.close()).await;
        match reason.child() {
            Some(ChildExit::Terminated { grace, status }) => {
                assert_eq!(*grace, Duration::from_millis(100));
                assert_eq!(status.code(), Some(7), "{reason}");
            }
            other => panic!("{other:?} ({reason})"),
        }
        assert!(reason.message.contains("exited on SIGTERM"), "{reason}");
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_child_that_does_not_handle_sigterm_ends_of_it_without_a_kill() {
        let mut cmd = tokio::process::Command::new("sh");
        cmd.args(["-c", "exec sleep 30"]);
        let options = ChildOptions::new().exit_grace(Duration::from_millis(100));
        let conn = Connection::builder().spawn_child_with(cmd, options).unwrap();
        let reason = within(conn.close()).await;
        match reason.child() {
            Some(ChildExit::Terminated { status, .. }) => {
                use std::os::unix::process::ExitStatusExt;
                assert_eq!(status.signal(), Some(15), "{reason}");
            }
            other => panic!("{other:?} ({reason})"),
        }
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_term_grace_of_zero_kills_at_once() {
        let mut cmd = tokio::process::Command::new("sh");
        cmd.args(["-c", "exec sleep 30"]);
        let options = ChildOptions::new().exit_grace(Duration::from_millis(100)).term_grace(Duration::ZERO);
        let conn = Connection::builder().spawn_child_with(cmd, options).unwrap();
        let reason = within(conn.close()).await;
        match reason.child() {
            Some(ChildExit::Killed { status, .. }) => {
                use std::os::unix::process::ExitStatusExt;
                assert_eq!(status.and_then(|s| s.signal()), Some(9), "{reason}");
            }
            other => panic!("{other:?} ({reason})"),
        }
    }

    #[tokio::test]
    async fn a_pending_call_fails_when_the_child_exits() {
        let mut cmd = tokio::process::Command::new("sh");
        // Read one line (our request), then die without answering.
        cmd.args(["-c", "read line; exit 7"]);
        let conn = Connection::builder().framing(Framing::NewlineDelimited).spawn_child(cmd).unwrap();
        match within(conn.handle().request::<Value>("anything", ())).await {
            Err(Error::ConnectionLost(reason)) => {
                assert_eq!(reason.kind, CloseKind::RemoteClosed, "{reason}");
                assert!(reason.message.contains("exit status: 7"), "{reason}");
            }
            other => panic!("{other:?}"),
        }
    }

    #[tokio::test]
    async fn our_request_echoed_by_cat_comes_back_as_a_request_we_answer() {
        // `cat` sends every frame back: our request arrives as the peer's request (answered
        // -32601 by us), whose answer arrives as the answer to our request.
        let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let s = seen.clone();
        let router = Router::new().notification("ping", move |(n,): (i64,), _ctx| {
            let s = s.clone();
            async move { s.lock().unwrap().push(n) }
        });
        let conn = Connection::builder().serve(router).spawn_child(tokio::process::Command::new("cat")).unwrap();
        match within(conn.handle().request::<Value>("nobody/home", ())).await {
            Err(Error::Remote(e)) => {
                assert_eq!(e.code, -32601);
                assert!(e.message.contains("nobody/home"), "{e}");
            }
            other => panic!("{other:?}"),
        }
        within(conn.handle().notify("ping", [7])).await.unwrap();
        let ok: Result<Value, _> = within(conn.handle().request("still/here", ())).await;
        assert!(ok.is_err());
        assert_eq!(*seen.lock().unwrap(), vec![7]);
        let reason = within(conn.close()).await;
        assert_eq!(reason.kind, CloseKind::LocallyClosed);
    }

    fn pid_file(name: &str) -> std::path::PathBuf {
        std::env::temp_dir().join(format!("jsonrpc-duplex-{name}-{}", std::process::id()))
    }

    async fn child_pid(file: &std::path::Path) -> u32 {
        within(async {
            loop {
                if let Ok(text) = std::fs::read_to_string(file)
                    && let Ok(pid) = text.trim().parse()
                {
                    return pid;
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
        .await
    }

    fn alive(pid: u32) -> bool {
        std::process::Command::new("kill")
            .args(["-0", &pid.to_string()])
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    }

    async fn wait_until_gone(pid: u32) {
        within(async {
            while alive(pid) {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
        .await
    }

    #[tokio::test]
    async fn dropping_the_connection_ends_a_child_that_exits_on_eof() {
        let file = pid_file("cat");
        let mut cmd = tokio::process::Command::new("sh");
        cmd.args(["-c", &format!("echo $$ > {}; exec cat", file.display())]);
        let conn = Connection::builder().spawn_child(cmd).unwrap();
        let pid = child_pid(&file).await;
        assert!(alive(pid));
        drop(conn);
        wait_until_gone(pid).await;
        let _ = std::fs::remove_file(file);
    }

    #[tokio::test]
    async fn closing_waits_until_the_child_has_exited() {
        let file = pid_file("close-waits");
        let _ = std::fs::remove_file(&file);
        let mut cmd = tokio::process::Command::new("sh");
        // On EOF the child takes a moment, leaves its mark, then exits by itself.
        cmd.args(["-c", &format!("cat > /dev/null; sleep 0.2; echo done > {}", file.display())]);
        let conn = Connection::builder().spawn_child(cmd).unwrap();
        let reason = within(conn.close()).await;
        assert_eq!(reason.kind, CloseKind::LocallyClosed);
        let mark = std::fs::read_to_string(&file).expect("close() returned before the child finished");
        assert_eq!(mark.trim(), "done");
        let _ = std::fs::remove_file(file);
    }

    #[tokio::test]
    async fn dropping_the_connection_kills_a_child_that_ignores_eof() {
        let file = pid_file("sleep");
        let mut cmd = tokio::process::Command::new("sh");
        cmd.args(["-c", &format!("echo $$ > {}; exec sleep 30", file.display())]);
        let options = ChildOptions::new().exit_grace(Duration::from_millis(100));
        let conn = Connection::builder().spawn_child_with(cmd, options).unwrap();
        let pid = child_pid(&file).await;
        assert!(alive(pid));
        let start = Instant::now();
        drop(conn);
        wait_until_gone(pid).await;
        assert!(start.elapsed() < Duration::from_secs(2), "killed only after {:?}", start.elapsed());
        let _ = std::fs::remove_file(file);
    }
}
