//! The `lsp_client` example against real language servers that we did not write:
//!
//! - `pyright_hover`: pyright 1.1.414 (npm, `tests/interop/lsp/package-lock.json`; `npm ci` runs
//!   when `node_modules` is missing);
//! - `pylsp_hover`: python-lsp-server 1.15.0 (PyPI, pinned in `tests/interop/lsp/requirements.txt`,
//!   installed into a venv under `target/interop-lsp/` when missing or out of date).
//!
//! Each initializes the server, answers its requests, opens `tests/interop/lsp/fixture/greet.py`,
//! asks for the hover over `greet` on a line whose earlier emoji takes two UTF-16 code units, and
//! shuts the server down (`shutdown`, `exit`, the process reaped with status 0).
//!
//! Needs `node` (>= 20) and `npm`, and `python3` (>= 3.9, with `venv`), on the `PATH`. Every run
//! is bounded, so a hang fails in seconds.

use crate::support;

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use support::interop;
use tokio::process::Command;

/// The bound of one whole run of the example.
const RUN: Duration = Duration::from_secs(60);

fn lsp_dir() -> PathBuf {
    interop::interop_dir("lsp")
}

fn fixture() -> PathBuf {
    lsp_dir().join("fixture").join("greet.py")
}

/// pyright's language server script, after `npm ci` if needed.
fn pyright() -> PathBuf {
    interop::pyright()
}

/// The `pylsp` executable of the pinned venv under `target/`.
fn pylsp() -> PathBuf {
    interop::pylsp()
}

/// Run `lsp_client -- <server…> -- greet.py 9 24` and return its output; it must succeed.
async fn hover_with(server: &[&std::ffi::OsStr]) -> String {
    let mut cmd = Command::new(interop::example("lsp_client"));
    cmd.arg("--").args(server).arg("--").arg(fixture()).args(["9", "24"]);
    cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).kill_on_drop(true);
    let output = tokio::time::timeout(RUN, cmd.output())
        .await
        .unwrap_or_else(|_| panic!("lsp_client did not finish within {RUN:?}"))
        .expect("lsp_client could not be run");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "lsp_client failed ({}):\n{stdout}\nstderr:\n{stderr}", output.status);
    stdout
}

fn assert_lines(stdout: &str, expected: &[&str]) {
    for line in expected {
        assert!(stdout.contains(line), "{line:?} missing from lsp_client's output:\n{stdout}");
    }
}

/// What every server must have seen and said.
fn assert_session(stdout: &str) {
    assert_lines(
        stdout,
        &[
            "client ▸ initialize (root file://",
            "client ▸ textDocument/didOpen ",
            // Column 24 counts characters; the emoji before it is two UTF-16 code units.
            "client ▸ textDocument/hover greet.py:9:24 (LSP line 8, character 24)",
            "client ◂ hover:",
            "Return a friendly greeting for `name`.",
            "client ▸ shutdown",
            "client ▸ exit",
            "server exited: the child process exited by itself (exit status: 0)",
        ],
    );
}

#[tokio::test]
async fn pyright_hover() {
    let script = pyright();
    let stdout = hover_with(&["node".as_ref(), script.as_os_str(), "--stdio".as_ref()]).await;
    assert_session(&stdout);
    assert_lines(
        &stdout,
        &[
            "log    │ info    Pyright language server 1.1.414 starting",
            "client ◂ initialize result: (no serverInfo), hover provider: true",
            // pyright asks for its settings and registers file watching through our callbacks.
            "server ▸ workspace/configuration [python] → null each (defaults)",
            "server ▸ client/registerCapability [workspace/didChangeWatchedFiles] → ok",
            "(function) def greet(name: str) -> str",
        ],
    );
}

#[tokio::test]
async fn pylsp_hover() {
    let pylsp = pylsp();
    let stdout = hover_with(&[pylsp.as_os_str()]).await;
    assert_session(&stdout);
    assert_lines(
        &stdout,
        &["client ◂ initialize result: pylsp 1.15.0, hover provider: true", "greet(name: str) -> str"],
    );
}
