//! What the CLI's tests share: the `jrpc` binary, scratch directories, bounded runs, traces.
#![allow(dead_code)]

#[path = "../../../tests/support/interop.rs"]
pub(crate) mod interop;

use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use jsonrpc_duplex_core::{CallOptions, CancellationToken, Connection, Error, ErrorObject, Router};
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;
use tokio::process::Command;

/// The bound of one run of a command.
pub(crate) const RUN: Duration = Duration::from_secs(60);

/// The `jrpc` binary under test.
pub(crate) fn jrpc() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_jrpc"))
}

/// A `jrpc` command.
pub(crate) fn jrpc_command() -> Command {
    let mut command = Command::new(jrpc());
    command.kill_on_drop(true).env("NO_COLOR", "1");
    command
}

/// A scratch directory, removed on drop.
pub(crate) struct Scratch {
    pub(crate) dir: PathBuf,
}

impl Scratch {
    pub(crate) fn new(test: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("jrpc-test-{}-{test}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("creating a scratch directory");
        Scratch { dir }
    }

    pub(crate) fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// What a finished command printed.
#[derive(Debug)]
pub(crate) struct Output {
    pub(crate) status: ExitStatus,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
}

impl Output {
    pub(crate) fn code(&self) -> Option<i32> {
        self.status.code()
    }
}

/// Run `command` with `stdin` as its input, within [`RUN`].
pub(crate) async fn run(command: Command, stdin: &[u8]) -> Output {
    run_with_limit(command, stdin, RUN).await
}

/// Run `command` with `stdin` as its input, within `limit`.
pub(crate) async fn run_with_limit(mut command: Command, stdin: &[u8], limit: Duration) -> Output {
    command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).kill_on_drop(true);
    let what = format!("{command:?}");
    let mut child = command.spawn().unwrap_or_else(|e| panic!("{what} cannot start: {e}"));
    let mut input = child.stdin.take().expect("piped stdin");
    let stdin = stdin.to_vec();
    let feed = tokio::spawn(async move {
        // A command that does not read its input is fine.
        let _ = input.write_all(&stdin).await;
    });
    let output = tokio::time::timeout(limit, child.wait_with_output())
        .await
        .unwrap_or_else(|_| panic!("{what} did not finish within {limit:?}"))
        .unwrap_or_else(|e| panic!("{what} failed: {e}"));
    let _ = feed.await;
    Output {
        status: output.status,
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// A trace's records as JSON values (the header first).
pub(crate) fn read_trace(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("not a JSON line ({e}): {line}")))
        .collect()
}

/// The message records of a trace, as (from, message) for JSON messages.
pub(crate) fn messages(trace: &[Value]) -> Vec<(String, Value)> {
    trace
        .iter()
        .filter(|r| r["type"] == "message" && r.get("message").is_some())
        .map(|r| (r["from"].as_str().unwrap_or_default().to_owned(), r["message"].clone()))
        .collect()
}

/// A `Content-Length` frame.
pub(crate) fn frame(body: &str) -> Vec<u8> {
    format!("Content-Length: {}\r\n\r\n{body}", body.len()).into_bytes()
}

/// Assert that every line is in `text`, saying what is missing.
pub(crate) fn assert_contains(text: &str, expected: &[&str]) {
    for line in expected {
        assert!(text.contains(line), "{line:?} missing from:\n{text}");
    }
}

/// A conversation with the reference peer through `jrpc tap <tap_args> -- conformance_peer`,
/// driven by a client on this crate's connection: an answer, an error, a request from the server
/// answered by the client, notifications, a cancellation.
pub(crate) async fn reference_session(tap_args: &[&std::ffi::OsStr]) {
    let mut tap = Command::new(jrpc());
    tap.arg("tap").args(tap_args).arg("--").arg(interop::example("conformance_peer"));
    let router = Router::new()
        .method("client/ask", |q: Value, _| async move { Ok::<_, ErrorObject>(json!({"answer": q["n"]})) });
    let conn = Connection::builder().serve(router).spawn_child(tap).expect("jrpc tap starts");
    let peer = conn.handle();
    let sum: i64 = peer.request("add", json!({"a": 2, "b": 40})).await.expect("add");
    assert_eq!(sum, 42);
    let failed = peer.request::<Value>("fail", json!({"why": "testing"})).await;
    assert!(matches!(&failed, Err(Error::Remote(e)) if e.code == -32001), "{failed:?}");
    let asked: Value =
        peer.request("callBack", json!({"method": "client/ask", "params": {"n": 6}})).await.expect("callBack");
    assert_eq!(asked, json!({"answer": 6}));
    let ticks: u64 = peer.request("notifyMe", json!({"count": 2})).await.expect("notifyMe");
    assert_eq!(ticks, 2);
    let cancel = CancellationToken::new();
    let slow = peer.request_with::<Value>("slow", json!({"ms": 30_000}), CallOptions::new().cancel(cancel.clone()));
    let (slow, ()) = tokio::join!(slow, async { cancel.cancel() });
    assert!(matches!(slow, Err(Error::Cancelled)), "{slow:?}");
    conn.close().await;
}
