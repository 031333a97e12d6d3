//! The `lsp_server` example against a real LSP client library that this project did not write:
//! `vscode-languageserver-protocol` 3.18.5, the protocol layer of VS Code's language client
//! (`tests/interop/lsp_server/package-lock.json`; `npm ci` runs when `node_modules` is missing),
//! over stdio. Its client (`lsp_client.js`) initializes the server, opens and changes a document
//! (full sync) and waits for the diagnostics of each version, asks for a hover (which the
//! server answers after a `workspace/configuration` call back) and completions, runs a command
//! with work-done progress on its own `workDoneToken`, cancels a second run of it
//! (`$/cancelRequest` → `-32800`), shuts the server down and sends `exit`.
//!
//! Needs `node` (>= 20) and `npm` on the `PATH`. Every run is bounded.

use crate::support;

use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use support::interop;
use tokio::process::Command;

const RUN: Duration = Duration::from_secs(60);

/// Run `node lsp_client.js [flags] <lsp_server>` and return its JSON summary (it must succeed)
/// and the server's stderr.
async fn session(flags: &[&str]) -> (Value, String) {
    let dir = interop::npm_ready("lsp_server", &["vscode-languageserver-protocol"]);
    let mut cmd = Command::new("node");
    cmd.arg("lsp_client.js").args(flags).arg(interop::example("lsp_server")).current_dir(dir);
    cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).kill_on_drop(true);
    let out = tokio::time::timeout(RUN, cmd.output())
        .await
        .unwrap_or_else(|_| panic!("lsp_client.js did not finish within {RUN:?}"))
        .expect("node lsp_client.js could not be run");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let line = stdout.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or_default();
    let summary: Value = serde_json::from_str(line)
        .unwrap_or_else(|e| panic!("no JSON summary ({e})\nstdout:\n{stdout}\nstderr:\n{stderr}"));
    assert!(
        out.status.success() && summary["ok"] == json!(true),
        "lsp_client.js failed: {summary:#}\nstderr:\n{stderr}"
    );
    (summary, stderr)
}

#[tokio::test]
async fn a_vscode_protocol_client_drives_the_lsp_server_example() {
    let (s, stderr) = session(&[]).await;
    assert_eq!(s["initialize"]["serverInfo"]["name"], "jsonrpc-duplex-lsp-server");
    let caps = &s["initialize"]["capabilities"];
    assert_eq!(caps["textDocumentSync"], 1, "full sync");
    assert_eq!(caps["hoverProvider"], true);
    assert_eq!(caps["executeCommandProvider"], json!({"commands": ["notes.countWords"], "workDoneProgress": true}));
    // Diagnostics pushed after the open and after the change, each with its version.
    assert_eq!(
        s["diagnostics"],
        json!([
            {"version": 1, "messages": ["1:0 a TODO is left in this note"]},
            {"version": 2, "messages": ["1:0 a TODO is left in this note", "2:0 a TODO is left in this note"]},
        ])
    );
    // The hover carries the greeting the server asked the client for, mid-request.
    assert_eq!(s["hover"]["value"], "Howdy! **milk**: 2 time(s) in this note");
    assert_eq!(s["hover"]["range"], json!({"start": {"line": 0, "character": 4}, "end": {"line": 0, "character": 8}}));
    assert_eq!(s["hover"]["configAsked"], json!([["notes"]]));
    assert_eq!(s["completion"], json!(["milk", "more"]));
    // Work-done progress on the client's token, every report before the answer.
    assert_eq!(s["command"], json!({"result": 12, "reports": ["begin", "report", "end"]}));
    // Cancelled after its `begin`: `-32800`, and the server saw it.
    assert_eq!(s["cancel"], json!({"rejected": true, "code": -32800, "reports": ["begin"]}));
    assert!(stderr.contains("notes.countWords cancelled"), "{stderr}");
    assert_eq!(s["shutdown"], Value::Null);
    assert_eq!(s["afterShutdown"], json!({"code": -32600}));
}

// `main` returns after `exit` and the process must then end, though the client keeps its
// stdin open (a stdio connection never holds the process).
#[tokio::test]
async fn the_lsp_server_exits_0_promptly_after_shutdown_and_exit() {
    let (s, stderr) = session(&[]).await;
    assert_eq!(s["exit"]["lingered"], false, "the server did not exit within 5 s of `exit`\n{stderr}");
    assert_eq!(s["exit"]["code"], 0, "{s:#}");
    assert!(s["exit"]["ms"].as_u64().is_some_and(|ms| ms < 2000), "{s:#}");
}

#[tokio::test]
async fn the_lsp_server_exits_1_after_exit_without_shutdown() {
    let (s, stderr) = session(&["--no-shutdown"]).await;
    assert_eq!(s["exit"]["lingered"], false, "the server did not exit within 5 s of `exit`\n{stderr}");
    assert_eq!(s["exit"]["code"], 1, "{s:#}");
}
