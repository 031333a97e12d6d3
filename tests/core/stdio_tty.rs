//! A stdio program on a terminal, in a real pseudo-terminal (`openpty`): the reference peer
//! (`examples/conformance_peer.rs`, served with `Builder::stdio`) reopens the terminal as a
//! non-blocking description of its own, serves it on the reactor, and answers calls; the
//! description it shares with whoever started it (a shell) is never made non-blocking, and the
//! terminal's modes are as they were once it has exited; and a terminal it may not open again
//! (the device's mode cleared, the peer run as `nobody` when the tests run as root) is served by
//! the thread fallback, on fd 0 and 1 themselves. Linux only (the reopening is; see
//! `core/src/transport/stdio/tty.rs`).

#![cfg(target_os = "linux")]

use crate::support;

use std::os::fd::{AsRawFd, OwnedFd};
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use jsonrpc_duplex::Framing;
use nix::fcntl::{FcntlArg, FdFlag, OFlag, fcntl};
use nix::sys::termios::{SetArg, Termios, cfmakeraw, tcgetattr, tcsetattr};
use serde_json::json;
use support::interop;
use support::raw_peer::RawPeer;
use support::time::within;
use tokio::io::AsyncReadExt;
use tokio::net::unix::pipe;
use tokio::process::Command;

const O_NONBLOCK: u32 = 0o4000;

/// The `flags:` of a descriptor of process `pid` (`/proc/PID/fdinfo/N`).
fn flags(pid: &str, fd: &str) -> u32 {
    let info = std::fs::read_to_string(format!("/proc/{pid}/fdinfo/{fd}")).unwrap();
    let flags = info.lines().find_map(|l| l.strip_prefix("flags:")).expect("a flags line").trim();
    u32::from_str_radix(flags, 8).unwrap()
}

/// The descriptors of process `pid` open on `device`, with their flags.
fn open_on(pid: u32, device: &PathBuf) -> Vec<(u32, u32)> {
    let pid = pid.to_string();
    let mut found = Vec::new();
    for entry in std::fs::read_dir(format!("/proc/{pid}/fd")).unwrap() {
        let entry = entry.unwrap();
        if std::fs::read_link(entry.path()).ok().as_ref() == Some(device) {
            let fd = entry.file_name().into_string().unwrap();
            found.push((fd.parse().unwrap(), flags(&pid, &fd)));
        }
    }
    found.sort();
    found
}

/// The master side of the pseudo-terminal as a byte stream on the reactor (ours alone: made
/// non-blocking here).
fn master_stream(master: OwnedFd) -> (pipe::Receiver, pipe::Sender) {
    let mode = OFlag::from_bits_truncate(fcntl(&master, FcntlArg::F_GETFL).unwrap());
    fcntl(&master, FcntlArg::F_SETFL(mode | OFlag::O_NONBLOCK)).unwrap();
    let reader = pipe::Receiver::from_owned_fd_unchecked(master.try_clone().unwrap()).unwrap();
    let writer = pipe::Sender::from_owned_fd_unchecked(master).unwrap();
    (reader, writer)
}

fn same_modes(a: &Termios, b: &Termios) -> bool {
    a.input_flags == b.input_flags
        && a.output_flags == b.output_flags
        && a.control_flags == b.control_flags
        && a.local_flags == b.local_flags
        && a.control_chars == b.control_chars
}

/// A pseudo-terminal in raw mode (no echo and no line editing, so the wire is the bytes written,
/// as a program that speaks a protocol over a serial line sets it), both ends close-on-exec
/// (openpty(3) does not set it: the peer would inherit both): the pair, the slave's modes, and
/// the slave's device path.
fn raw_pty() -> (nix::pty::OpenptyResult, nix::sys::termios::Termios, std::path::PathBuf) {
    let pty = nix::pty::openpty(None, None).expect("a pseudo-terminal");
    for fd in [&pty.master, &pty.slave] {
        fcntl(fd, FcntlArg::F_SETFD(FdFlag::FD_CLOEXEC)).unwrap();
    }
    let mut modes = tcgetattr(&pty.slave).unwrap();
    cfmakeraw(&mut modes);
    tcsetattr(&pty.slave, SetArg::TCSANOW, &modes).unwrap();
    let before = tcgetattr(&pty.slave).unwrap();
    let device = std::fs::read_link(format!("/proc/self/fd/{}", pty.slave.as_raw_fd())).unwrap();
    (pty, before, device)
}

/// The peer with a terminal as stdin and stdout, and stderr a pipe (its DEBUG log says which path
/// served each) or the terminal too (as in an interactive shell; nothing logged then, so the
/// wire stays clean): both are served on the reactor through descriptions of the peer's own.
#[tokio::test]
async fn a_terminal_is_reopened_and_served_on_the_reactor_leaving_the_shared_description_blocking() {
    for stderr_on_the_terminal in [false, true] {
        let (pty, before, device) = raw_pty();
        // Our copy shares the description the peer's fd 0 and 1 (and 2) have, as the shell's does.
        let shared = pty.slave.try_clone().unwrap();

        let mut command = Command::new(interop::example("conformance_peer"));
        command
            .stdin(Stdio::from(pty.slave.try_clone().unwrap()))
            .stdout(Stdio::from(pty.slave.try_clone().unwrap()))
            .kill_on_drop(true);
        let (log_rx, log_tx) = std::os::unix::net::UnixStream::pair().unwrap();
        if stderr_on_the_terminal {
            command.stderr(Stdio::from(pty.slave)).env("RUST_LOG", "off");
        } else {
            command.stderr(Stdio::from(OwnedFd::from(log_tx))).env("RUST_LOG", "jsonrpc_duplex=debug");
            drop(pty.slave);
        }
        let mut child = command.spawn().expect("the conformance_peer example starts");
        // Our copies of the peer's stdio close with the command (the log's end sees EOF at exit).
        drop(command);
        let (from_peer, to_peer) = master_stream(pty.master);
        let mut peer = RawPeer::new(from_peer, to_peer, Framing::ContentLength);

        peer.send(r#"{"jsonrpc":"2.0","id":1,"method":"echo","params":["over a terminal"]}"#).await;
        peer.expect(json!({"jsonrpc":"2.0","id":1,"result":["over a terminal"]})).await;
        peer.send(r#"{"jsonrpc":"2.0","id":2,"method":"add","params":{"a":40,"b":2}}"#).await;
        peer.expect(json!({"jsonrpc":"2.0","id":2,"result":42})).await;

        // Which path: the peer holds two descriptions of the terminal besides fd 0-2, both
        // non-blocking (read, write), while its fd 0 and 1 (shared with us) stay blocking.
        let pid = child.id().expect("the peer runs");
        let open = open_on(pid, &device);
        let std_fds = if stderr_on_the_terminal { 3 } else { 2 };
        let (standard, own): (Vec<_>, Vec<_>) = open.iter().partition(|(fd, _)| *fd <= 2);
        assert_eq!(standard.len(), std_fds, "fd 0-2 on the terminal: {open:?}");
        assert!(standard.iter().all(|(_, f)| f & O_NONBLOCK == 0), "a shared description made non-blocking: {open:?}");
        assert_eq!(own.len(), 2, "the terminal reopened for reading and for writing: {open:?}");
        assert!(own.iter().all(|(_, f)| f & O_NONBLOCK != 0), "the reopened terminal is non-blocking: {open:?}");
        let ours = flags("self", &shared.as_raw_fd().to_string());
        assert_eq!(ours & O_NONBLOCK, 0, "the description shared with the peer was made non-blocking");

        peer.send(r#"{"jsonrpc":"2.0","method":"exit"}"#).await;
        let status = tokio::time::timeout(Duration::from_secs(2), child.wait())
            .await
            .expect("the peer exits within 2 s of `exit`")
            .unwrap();
        assert!(status.success(), "the peer exited with {status}");
        assert!(same_modes(&before, &tcgetattr(&shared).unwrap()), "the terminal's modes changed");
        assert_eq!(flags("self", &shared.as_raw_fd().to_string()) & O_NONBLOCK, 0);

        if !stderr_on_the_terminal {
            let mut log = String::new();
            log_rx.set_nonblocking(true).unwrap();
            let mut log_rx = tokio::net::UnixStream::from_std(log_rx).unwrap();
            within(log_rx.read_to_string(&mut log)).await.unwrap();
            assert!(log.contains("stdin is a terminal: reopened, served on the reactor"), "{log}");
            assert!(log.contains("stdout is a terminal: reopened, served on the reactor"), "{log}");
        }
    }
}

/// A terminal the peer may not open again (as after `su`: the device is not the peer's to open)
/// is served by threads, the fallback: the device's mode is cleared, and when the tests run as
/// root (whom modes do not stop) the peer runs as `nobody`. It answers calls over the terminal
/// on its fd 0 and 1 themselves, holds no description of the terminal of its own, leaves the
/// shared one blocking (a thread's reads and writes block), exits on `exit` with its stdin
/// thread still in `read`, and leaves the terminal's modes as they were.
#[tokio::test]
async fn a_terminal_that_cannot_be_reopened_is_served_by_threads() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};

    let (pty, before, device) = raw_pty();
    // Not to be opened again by anyone but root (the device is ours: openpty made it).
    std::fs::set_permissions(&device, std::fs::Permissions::from_mode(0o000)).unwrap();
    let shared = pty.slave.try_clone().unwrap();

    let mut command = Command::new(interop::example("conformance_peer"));
    let (log_rx, log_tx) = std::os::unix::net::UnixStream::pair().unwrap();
    command
        .stdin(Stdio::from(pty.slave.try_clone().unwrap()))
        .stdout(Stdio::from(pty.slave))
        .stderr(Stdio::from(OwnedFd::from(log_tx)))
        .env("RUST_LOG", "jsonrpc_duplex=debug")
        .kill_on_drop(true);
    // `/proc/self` belongs to the effective user.
    let root = std::fs::metadata("/proc/self").unwrap().uid() == 0;
    if root {
        command.uid(65534).gid(65534);
    }
    let mut child = command.spawn().expect("the conformance_peer example starts");
    drop(command);
    let (from_peer, to_peer) = master_stream(pty.master);
    let mut peer = RawPeer::new(from_peer, to_peer, Framing::ContentLength);

    peer.send(r#"{"jsonrpc":"2.0","id":1,"method":"echo","params":["over a terminal, on threads"]}"#).await;
    peer.expect(json!({"jsonrpc":"2.0","id":1,"result":["over a terminal, on threads"]})).await;
    peer.send(r#"{"jsonrpc":"2.0","id":2,"method":"add","params":{"a":40,"b":2}}"#).await;
    peer.expect(json!({"jsonrpc":"2.0","id":2,"result":42})).await;

    let pid = child.id().expect("the peer runs");
    let open = open_on(pid, &device);
    assert_eq!(open.iter().map(|(fd, _)| *fd).collect::<Vec<_>>(), [0, 1], "no description of its own: {open:?}");
    assert!(open.iter().all(|(_, f)| f & O_NONBLOCK == 0), "a shared description made non-blocking: {open:?}");

    peer.send(r#"{"jsonrpc":"2.0","method":"exit"}"#).await;
    let status = tokio::time::timeout(Duration::from_secs(2), child.wait())
        .await
        .expect("the peer exits within 2 s of `exit`")
        .unwrap();
    assert!(status.success(), "the peer exited with {status} (as root: {root})");
    assert!(same_modes(&before, &tcgetattr(&shared).unwrap()), "the terminal's modes changed");
    assert_eq!(flags("self", &shared.as_raw_fd().to_string()) & O_NONBLOCK, 0);

    let mut log = String::new();
    log_rx.set_nonblocking(true).unwrap();
    let mut log_rx = tokio::net::UnixStream::from_std(log_rx).unwrap();
    within(log_rx.read_to_string(&mut log)).await.unwrap();
    assert!(log.contains("stdin is served by a thread"), "{log}");
    assert!(log.contains("stdout is served by a thread"), "{log}");
    assert!(!log.contains("reopened"), "{log}");
}
