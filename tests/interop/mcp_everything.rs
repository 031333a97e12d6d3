//! The `mcp_client` example against the MCP project's reference server,
//! `@modelcontextprotocol/server-everything` 2026.8.31 (`tests/interop/mcp_everything/package-lock.json`;
//! `npm ci` runs when `node_modules` is missing), over stdio: how the session ends.
//!
//! Closing a `spawn_child` connection closes the server's stdin and keeps reading its stdout
//! until it has exited. This server writes during its own shutdown (it asks for `roots/list` 350 ms
//! after `notifications/initialized`, answered or not): a client that stops reading first kills it
//! with `EPIPE` (an uncaught exception, a stack trace and exit 1).
//!
//! Needs `node` (>= 18) and `npm` on the `PATH`. Every run is bounded.

use crate::support;

use std::process::Stdio;
use std::time::Duration;

use support::interop;
use tokio::process::Command;

const RUN: Duration = Duration::from_secs(60);

async fn mcp_client(args: &[&str]) -> (std::process::ExitStatus, String, String) {
    let dir = interop::npm_ready("mcp_everything", &["@modelcontextprotocol/server-everything"]);
    let server = dir.join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    let mut cmd = Command::new(interop::example("mcp_client"));
    cmd.args(args)
        .arg("--")
        .arg("node")
        .arg(server)
        .arg("stdio")
        .current_dir(&dir)
        // The server's stderr (forwarded at INFO) and what was discarded of its stdout (DEBUG).
        .env("RUST_LOG", "warn,jsonrpc_duplex::child=info,jsonrpc_duplex=debug")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let out = tokio::time::timeout(RUN, cmd.output())
        .await
        .unwrap_or_else(|_| panic!("mcp_client did not finish within {RUN:?}"))
        .unwrap_or_else(|e| panic!("mcp_client could not be run: {e}"));
    (out.status, String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

/// What the server printed to stderr (forwarded by `spawn_child` on the `jsonrpc_duplex::child` target).
fn server_stderr(stderr: &str) -> Vec<&str> {
    stderr.lines().filter(|l| l.contains("jsonrpc_duplex::child")).collect()
}

#[tokio::test]
async fn closing_right_after_a_call_does_not_kill_the_server_with_a_broken_pipe() {
    // The session closes before the server's `roots/list`: the server writes it into a pipe we
    // still read (and discard), rather than dying of EPIPE.
    let (status, stdout, stderr) = mcp_client(&["--call", "echo", r#"{"message":"hi"}"#]).await;
    assert!(stdout.contains("client ◂ echo: Echo: hi"), "{stdout}\nstderr:\n{stderr}");
    let from_server = server_stderr(&stderr);
    assert!(
        !from_server.iter().any(|l| l.contains("EPIPE") || l.contains("Error") || l.contains("    at ")),
        "the server died of a broken pipe:\n{}",
        from_server.join("\n")
    );
    assert!(
        stderr.contains("discarded what the child wrote to stdout") && stderr.contains("roots/list"),
        "the server's late request was not read:\n{stderr}"
    );
    // Its own request, sent after our stdin closed, is never answered: the server waits for it
    // (its 60 s request timeout) and so does not exit by itself; after the grace it is sent
    // SIGTERM (or, were it to ignore that, killed). The example says so and exits 1 — but the
    // server did not crash.
    let closed = stdout.lines().find(|l| l.contains("session closed")).unwrap_or_default();
    assert!(
        closed.contains("exited by itself (exit status: 0)")
            || closed.contains("exited on SIGTERM sent after a grace of 2s")
            || closed.contains("killed after a grace of 2s"),
        "{stdout}\nstderr:\n{stderr}"
    );
    assert_eq!(status.success(), closed.contains("exit status: 0"), "{stdout}");
}

#[tokio::test]
async fn closing_after_the_servers_own_requests_lets_it_exit_0_by_itself() {
    // A call that outlasts the server's `roots/list` (answered): on EOF it has nothing left to
    // wait for and exits 0, by itself.
    let (status, stdout, stderr) =
        mcp_client(&["--call", "trigger-long-running-operation", r#"{"duration":1,"steps":2}"#]).await;
    assert!(status.success(), "mcp_client failed ({status}):\n{stdout}\nstderr:\n{stderr}");
    assert!(stdout.contains("server ▸ roots/list"), "{stdout}");
    assert!(stdout.contains("progress 2/2"), "{stdout}");
    assert!(
        stdout.contains("session closed: closed by this side; the child process exited by itself (exit status: 0)"),
        "{stdout}"
    );
    let from_server = server_stderr(&stderr);
    assert!(!from_server.iter().any(|l| l.contains("EPIPE") || l.contains("Error")), "{}", from_server.join("\n"));
}
