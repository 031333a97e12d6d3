//! How a stdio program ends, in a real child process: the reference peer
//! (`examples/conformance_peer.rs`, served with `Builder::stdio`) exits when `main` returns
//! while its parent keeps the pipes open, exits after EOF even if nobody reads its stdout, and
//! exits within 2 s of EOF with a 30 s request and an unanswerable call in flight, in both
//! framings, every time. Pipes and sockets (Node's `child_process.spawn` hands a child one
//! socketpair per stream: `node_spawns_the_peer_over_socketpairs`) take the non-blocking path on
//! the reactor, non-blocking only while the connection lives.

use crate::support;

use std::process::Stdio;
use std::time::{Duration, Instant};

use jsonrpc_duplex::Framing;
use serde_json::json;
use support::raw_peer::RawPeer;
use support::time::within;
use support::{interop, raw_peer};
use tokio::io::AsyncWriteExt;
use tokio::process::{Child, Command};

/// Runs per framing of the EOF-with-work-in-flight test.
const EOF_RUNS: usize = 5;

fn framing_arg(framing: Framing) -> &'static str {
    match framing {
        Framing::NewlineDelimited => "newline",
        _ => "content-length",
    }
}

/// The reference peer with piped stdio (stderr inherited: its log is the test's).
fn spawn_peer(framing: Framing) -> Child {
    Command::new(interop::example("conformance_peer"))
        .args(["--framing", framing_arg(framing)])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("the conformance_peer example starts")
}

/// The reference peer and a raw peer on its pipes.
fn peer_on_pipes(framing: Framing) -> (Child, RawPeer) {
    let mut child = spawn_peer(framing);
    let stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    (child, RawPeer::new(stdout, stdin, framing))
}

/// The reference peer (Content-Length) with one end of a Unix socket pair as its stdin and
/// stdout, and the other end.
#[cfg(unix)]
fn peer_on_socket() -> (Child, tokio::net::UnixStream) {
    use std::os::fd::OwnedFd;
    let (ours, theirs) = std::os::unix::net::UnixStream::pair().unwrap();
    let stdin = OwnedFd::from(theirs.try_clone().unwrap());
    let child = Command::new(interop::example("conformance_peer"))
        .stdin(Stdio::from(stdin))
        .stdout(Stdio::from(OwnedFd::from(theirs)))
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    ours.set_nonblocking(true).unwrap();
    (child, tokio::net::UnixStream::from_std(ours).unwrap())
}

/// How long `child` takes to exit from now (at most `limit`), and that it exited 0.
async fn exits_within(child: &mut Child, limit: Duration, what: &str) -> Duration {
    let start = Instant::now();
    match tokio::time::timeout(limit, child.wait()).await {
        Ok(Ok(status)) => {
            assert!(status.success(), "{what}: the peer exited with {status}");
            start.elapsed()
        }
        Ok(Err(e)) => panic!("{what}: waiting for the peer failed: {e}"),
        Err(_) => {
            let _ = child.start_kill();
            panic!("{what}: the peer did not exit within {limit:?}")
        }
    }
}

/// Make sure the peer is up and serving (its start is not what is measured).
async fn round_trip(peer: &mut RawPeer) {
    peer.send(r#"{"jsonrpc":"2.0","id":"up","method":"echo","params":[1]}"#).await;
    peer.expect(json!({"jsonrpc":"2.0","id":"up","result":[1]})).await;
}

#[tokio::test]
async fn the_peer_exits_when_main_returns_while_its_stdin_stays_open() {
    for framing in [Framing::ContentLength, Framing::NewlineDelimited] {
        let (mut child, mut peer) = peer_on_pipes(framing);
        round_trip(&mut peer).await;
        // LSP's `exit`: the peer closes its connection and returns from `main`; we keep our
        // end of its stdin open, as an editor waiting for its server to exit does.
        peer.send(r#"{"jsonrpc":"2.0","method":"exit"}"#).await;
        let took = exits_within(&mut child, Duration::from_secs(1), &format!("{framing:?} over pipes")).await;
        eprintln!("{framing:?} over pipes: exited {took:?} after `exit`, stdin still open");
        drop(peer);
    }
}

#[cfg(unix)]
#[tokio::test]
async fn the_peer_exits_when_main_returns_with_a_socket_for_stdio() {
    // One socket for both stdin and stdout (as inetd gives it): on the reactor too.
    let (mut child, ours) = peer_on_socket();
    let (r, w) = ours.into_split();
    let mut peer = RawPeer::new(r, w, Framing::ContentLength);
    round_trip(&mut peer).await;
    peer.send(r#"{"jsonrpc":"2.0","method":"exit"}"#).await;
    let took = exits_within(&mut child, Duration::from_secs(1), "over a socket").await;
    eprintln!("over a socket: exited {took:?} after `exit`, stdin still open");
}

/// 200 requests whose answers (about 4 KiB each, 800 KiB together) are far more than a pipe
/// or socket buffer holds.
fn flood(framing: Framing) -> Vec<u8> {
    let pad = "x".repeat(4000);
    (0..200)
        .flat_map(|id| {
            raw_peer::frame(
                framing,
                json!({"jsonrpc":"2.0","id":id,"method":"echo","params":[pad]}).to_string().as_bytes(),
            )
        })
        .collect()
}

/// The most a peer whose output nobody reads may take to exit after EOF: the flush timeout
/// (2 s by default), and some slack.
const UNREAD_EXIT: Duration = Duration::from_secs(5);

#[tokio::test]
async fn the_peer_exits_after_eof_even_if_nobody_reads_its_stdout() {
    for framing in [Framing::ContentLength, Framing::NewlineDelimited] {
        let mut child = spawn_peer(framing);
        let mut stdin = child.stdin.take().unwrap();
        // Its stdout is held open, never read.
        let _stdout = child.stdout.take().unwrap();
        within(stdin.write_all(&flood(framing))).await.unwrap();
        drop(stdin);
        let took = exits_within(&mut child, UNREAD_EXIT, &format!("{framing:?}, stdout never read")).await;
        eprintln!("{framing:?}, stdout never read: exited {took:?} after EOF");
    }
}

#[cfg(unix)]
#[tokio::test]
async fn the_peer_exits_after_eof_even_if_nobody_reads_its_socket() {
    let (mut child, mut ours) = peer_on_socket();
    within(ours.write_all(&flood(Framing::ContentLength))).await.unwrap();
    // EOF on its stdin; what it writes is never read.
    within(ours.shutdown()).await.unwrap();
    let took = exits_within(&mut child, UNREAD_EXIT, "socket never read").await;
    eprintln!("socket never read: exited {took:?} after EOF");
}

#[tokio::test]
async fn the_peer_exits_within_2s_of_eof_with_work_in_flight() {
    // The runs are separate children, side by side: each waits out the peer's 1 s grace, which
    // one after another made this the slowest test of its binary (10 s of idle cores).
    for framing in [Framing::ContentLength, Framing::NewlineDelimited] {
        let runs = (0..EOF_RUNS).map(|run| exit_with_work_in_flight(framing, format!("{framing:?}, run {run}")));
        let mut times = futures::future::join_all(runs).await;
        times.sort();
        eprintln!(
            "{framing:?}: exit after EOF with work in flight over {EOF_RUNS} runs side by side: min {:?}, median {:?}, max {:?}",
            times[0],
            times[EOF_RUNS / 2],
            times[EOF_RUNS - 1]
        );
    }
}

/// One run of the test above: how long the peer took to exit after EOF.
async fn exit_with_work_in_flight(framing: Framing, what: String) -> Duration {
    let (mut child, mut peer) = peer_on_pipes(framing);
    round_trip(&mut peer).await;
    // A 30 s request, then one that calls us back (we never answer): requests start in
    // order, so once its call reaches us both are running.
    peer.send(r#"{"jsonrpc":"2.0","id":1,"method":"slow","params":{"ms":30000}}"#).await;
    peer.send(r#"{"jsonrpc":"2.0","id":2,"method":"callBack","params":{"method":"unanswered","params":[]}}"#).await;
    let call = peer.recv().await;
    assert_eq!(call["method"], "unanswered", "{what}: {call}");
    peer.close_write().await;
    let took = exits_within(&mut child, Duration::from_secs(2), &what).await;
    // Both were answered before it left: the call back failed at EOF, the slow request
    // was cancelled when the grace ran out.
    let mut answers = [peer.recv().await, peer.recv().await];
    answers.sort_by_key(|a| a["id"].as_i64());
    assert_eq!(answers[0]["error"]["code"], -32800, "{what}: {}", answers[0]);
    assert_eq!(answers[1]["error"]["code"], -32603, "{what}: {}", answers[1]);
    peer.expect_eof().await;
    took
}

/// Whether the open file description behind `fd` is non-blocking (Linux: `/proc/self/fdinfo`).
#[cfg(target_os = "linux")]
fn non_blocking(fd: &std::os::fd::OwnedFd) -> bool {
    use std::os::fd::AsRawFd;
    let info = std::fs::read_to_string(format!("/proc/self/fdinfo/{}", fd.as_raw_fd())).unwrap();
    let flags = info.lines().find_map(|l| l.strip_prefix("flags:")).expect("a flags line").trim();
    const O_NONBLOCK: u32 = 0o4000;
    u32::from_str_radix(flags, 8).unwrap() & O_NONBLOCK != 0
}

/// O_NONBLOCK belongs to the open file description, which whoever else holds the pipe shares:
/// the peer sets it on its stdio pipes only while its connection lives, and never on a stdout
/// that is also its stderr (`2>&1`).
#[cfg(target_os = "linux")]
#[tokio::test]
async fn stdio_pipes_are_non_blocking_only_while_the_connection_lives() {
    use tokio::net::unix::pipe;
    for shared_stderr in [false, true] {
        let (to_peer, their_stdin) = pipe::pipe().unwrap();
        let (their_stdout, from_peer) = pipe::pipe().unwrap();
        let their_stdin = their_stdin.into_blocking_fd().unwrap();
        let their_stdout = their_stdout.into_blocking_fd().unwrap();
        // Our copies share the peer's open file descriptions, as a sibling process would.
        let (stdin_copy, stdout_copy) = (their_stdin.try_clone().unwrap(), their_stdout.try_clone().unwrap());
        let mut command = Command::new(interop::example("conformance_peer"));
        command.stdin(Stdio::from(their_stdin)).stdout(Stdio::from(their_stdout.try_clone().unwrap()));
        if shared_stderr {
            // Nothing is logged at `off`, so the wire stays clean.
            command.stderr(Stdio::from(their_stdout)).env("RUST_LOG", "off");
        }
        let mut child = command.kill_on_drop(true).spawn().unwrap();
        let mut peer = RawPeer::new(from_peer, to_peer, Framing::ContentLength);
        round_trip(&mut peer).await;
        assert!(non_blocking(&stdin_copy), "stdin is served on the reactor");
        assert_eq!(non_blocking(&stdout_copy), !shared_stderr, "stdout non-blocking unless it is stderr too");
        peer.send(r#"{"jsonrpc":"2.0","method":"exit"}"#).await;
        exits_within(&mut child, Duration::from_secs(1), "exit").await;
        assert!(!non_blocking(&stdin_copy), "stdin left non-blocking");
        assert!(!non_blocking(&stdout_copy), "stdout left non-blocking");
    }
}

/// A stdio program spawned the way Node's `child_process.spawn` does it (`stdio: 'pipe'`): one
/// Unix socketpair for each of stdin, stdout and stderr, the parent keeping the other ends.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn socketpairs_as_node_gives_them_are_served_on_the_reactor_and_non_blocking_only_while_the_connection_lives() {
    use std::os::fd::OwnedFd;
    use std::os::unix::net::UnixStream as StdUnixStream;
    use tokio::io::AsyncReadExt;
    let (their_stdin, to_peer) = StdUnixStream::pair().unwrap();
    let (their_stdout, from_peer) = StdUnixStream::pair().unwrap();
    let (their_stderr, peer_log) = StdUnixStream::pair().unwrap();
    // Our copies share the child's open file descriptions, as a parent that keeps them does.
    let stdin_copy = OwnedFd::from(their_stdin.try_clone().unwrap());
    let stdout_copy = OwnedFd::from(their_stdout.try_clone().unwrap());
    let mut child = Command::new(interop::example("conformance_peer"))
        .env("RUST_LOG", "jsonrpc_duplex=debug")
        .stdin(Stdio::from(OwnedFd::from(their_stdin)))
        .stdout(Stdio::from(OwnedFd::from(their_stdout)))
        .stderr(Stdio::from(OwnedFd::from(their_stderr)))
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let nonblocking = |s: StdUnixStream| {
        s.set_nonblocking(true).unwrap();
        tokio::net::UnixStream::from_std(s).unwrap()
    };
    let (to_peer, from_peer, mut peer_log) = (nonblocking(to_peer), nonblocking(from_peer), nonblocking(peer_log));
    let mut peer = RawPeer::new(from_peer, to_peer, Framing::ContentLength);
    round_trip(&mut peer).await;
    peer.send(r#"{"jsonrpc":"2.0","id":2,"method":"add","params":{"a":40,"b":2}}"#).await;
    peer.expect(json!({"jsonrpc":"2.0","id":2,"result":42})).await;
    assert!(non_blocking(&stdin_copy), "stdin is served on the reactor");
    assert!(non_blocking(&stdout_copy), "stdout is served on the reactor");
    // As Node ends its child: close its stdin (the socket's sending side), and wait.
    drop(peer);
    exits_within(&mut child, Duration::from_secs(3), "after EOF on a socketpair").await;
    assert!(!non_blocking(&stdin_copy), "stdin left non-blocking");
    assert!(!non_blocking(&stdout_copy), "stdout left non-blocking");
    let mut log = String::new();
    within(peer_log.read_to_string(&mut log)).await.unwrap();
    assert!(log.contains("stdin is a socket: served on the reactor"), "{log}");
    assert!(log.contains("stdout is a socket: served on the reactor"), "{log}");
}

/// One socket as both stdin and stdout: non-blocking while the connection lives, and blocking
/// again only once both sides have let go.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn one_socket_for_stdin_and_stdout_is_non_blocking_only_while_the_connection_lives() {
    use std::os::fd::OwnedFd;
    let (ours, theirs) = std::os::unix::net::UnixStream::pair().unwrap();
    let copy = OwnedFd::from(theirs.try_clone().unwrap());
    let mut child = Command::new(interop::example("conformance_peer"))
        .stdin(Stdio::from(OwnedFd::from(theirs.try_clone().unwrap())))
        .stdout(Stdio::from(OwnedFd::from(theirs)))
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    ours.set_nonblocking(true).unwrap();
    let (r, w) = tokio::net::UnixStream::from_std(ours).unwrap().into_split();
    let mut peer = RawPeer::new(r, w, Framing::ContentLength);
    round_trip(&mut peer).await;
    assert!(non_blocking(&copy), "served on the reactor");
    peer.send(r#"{"jsonrpc":"2.0","method":"exit"}"#).await;
    exits_within(&mut child, Duration::from_secs(1), "exit").await;
    assert!(!non_blocking(&copy), "left non-blocking");
}

/// Node itself spawns the peer (`child_process.spawn`, socketpairs), talks to it by hand, closes
/// its stdin and sees it exit 0 (`tests/interop/node/stdio_spawn.js`).
#[tokio::test]
async fn node_spawns_the_peer_over_socketpairs() {
    let script = interop::interop_dir("node").join("stdio_spawn.js");
    let mut cmd = Command::new("node");
    cmd.arg(&script).arg(interop::example("conformance_peer")).stdin(Stdio::null()).kill_on_drop(true);
    let out = within(cmd.output()).await.expect("node runs (the interop tests need node on the PATH)");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout.lines().last().unwrap_or_default();
    let summary: serde_json::Value = serde_json::from_str(line)
        .unwrap_or_else(|e| panic!("no summary ({e}):\n{stdout}\n{}", String::from_utf8_lossy(&out.stderr)));
    assert!(out.status.success() && summary["ok"] == json!(true), "{summary:#}");
    assert_eq!(summary["answers"][0], json!({"jsonrpc":"2.0","id":1,"result":{"hello":"node"}}));
    assert_eq!(summary["answers"][1], json!({"jsonrpc":"2.0","id":2,"result":42}));
    assert_eq!(summary["answers"][2]["error"]["code"], json!(-32601));
    assert_eq!(summary["exit"], json!({"code": 0, "signal": null}));
    // Nothing in flight: EOF ends it at once (the EOF grace is for running handlers).
    assert!(summary["exitMs"].as_f64().unwrap() < 1000.0, "{summary:#}");
}

/// Its parent gone, a stdio program's stderr fails with `EPIPE`: the `files_server` example still
/// ends as it means to (exit 0), where `eprintln!` of its last line would panic (exit 101).
#[cfg(unix)]
#[tokio::test]
async fn an_example_whose_stderr_is_closed_still_exits_0() {
    let (stderr_tx, stderr_rx) = tokio::net::unix::pipe::pipe().unwrap();
    // Nobody reads its stderr any more.
    drop(stderr_rx);
    let mut child = Command::new(interop::example("files_server"))
        .env("RUST_LOG", "off")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::from(stderr_tx.into_blocking_fd().unwrap()))
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut peer = RawPeer::new(stdout, stdin, Framing::ContentLength);
    peer.send(r#"{"jsonrpc":"2.0","id":1,"method":"no/such/method"}"#).await;
    let answer = peer.recv().await;
    assert_eq!(answer["error"]["code"], json!(-32601), "{answer}");
    // EOF: it writes its last line to stderr and returns from `main`.
    drop(peer);
    exits_within(&mut child, Duration::from_secs(5), "files_server with its stderr closed").await;
}
