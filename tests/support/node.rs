//! The vscode-jsonrpc peers (`tests/interop/node`) and the `conformance_peer` example, for the
//! interop tests.

use std::path::PathBuf;
use std::time::Duration;

/// The bound of every single wait in the interop tests.
pub(crate) const STEP: Duration = Duration::from_secs(10);

/// `tests/interop/node`, with `vscode-jsonrpc` installed.
pub(crate) fn node_dir() -> PathBuf {
    super::interop::interop_dir("node")
}

/// Node is on the `PATH` and `vscode-jsonrpc` is installed (`npm ci` runs once if it is not).
pub(crate) fn node_ready() {
    super::interop::npm_ready("node", &["vscode-jsonrpc"]);
}

/// The `conformance_peer` example, built on demand.
pub(crate) fn conformance_peer() -> PathBuf {
    super::interop::example("conformance_peer")
}

/// Run `node <script> <conformance_peer>` in `tests/interop/node` (at most 60 s), require its
/// last line to be a JSON summary with `"ok": true`, and return it with the names of the checks it
/// passed.
pub(crate) async fn run_client_script(script: &str) -> (serde_json::Value, Vec<String>) {
    use serde_json::{Value, json};
    node_ready();
    let mut cmd = tokio::process::Command::new("node");
    cmd.arg(script)
        .arg(conformance_peer())
        .current_dir(node_dir())
        .env("RUST_LOG", "warn")
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true);
    let output = tokio::time::timeout(Duration::from_secs(60), cmd.output())
        .await
        .unwrap_or_else(|_| panic!("{script} did not finish within 60 s"))
        .unwrap_or_else(|e| panic!("node {script} could not be run: {e}"));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let line = stdout.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or_default();
    let summary: Value = serde_json::from_str(line)
        .unwrap_or_else(|e| panic!("no JSON summary from {script} ({e})\nstdout:\n{stdout}\nstderr:\n{stderr}"));
    assert!(
        output.status.success() && summary["ok"] == json!(true),
        "{script} failed ({}):\n{}\nstderr:\n{stderr}",
        output.status,
        serde_json::to_string_pretty(&summary).unwrap_or_default()
    );
    let checks = summary["checks"].as_array().expect("checks").iter().filter_map(Value::as_str).map(str::to_owned);
    let checks = checks.collect();
    (summary, checks)
}
