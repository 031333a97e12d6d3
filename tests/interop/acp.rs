//! Interop with the official ACP TypeScript SDK (`@agentclientprotocol/sdk@2.4.0`, see
//! `tests/interop/acp/`), both ways, over real processes:
//!
//! - `sdk_client_*`: an SDK client (`sdk_client.mjs`) spawns the `acp_agent` example and drives a
//!   prompt turn; it prints a JSON summary of everything it saw;
//! - `rust_client_*`: the `acp_client` example spawns an SDK agent (`sdk_agent.mjs`) and drives
//!   it; the test reads its printed session and the files it wrote;
//! - `rust_client_drives_rust_agent`: both examples together.
//!
//! Needs `node` (>= 20) and `npm` on the `PATH`; `npm ci` runs once when `node_modules` is
//! missing. Every run is bounded, so a hang fails in seconds.

use crate::support;

use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::interop;
use support::interop::example;
use tokio::process::Command;

/// The bound of one whole run of a peer.
const RUN: Duration = Duration::from_secs(30);

// ---------------------------------------------------------------------------------------------
// Setup
// ---------------------------------------------------------------------------------------------

fn acp_dir() -> PathBuf {
    interop::interop_dir("acp")
}

/// Node is on the `PATH` and the ACP SDK is installed (`npm ci` runs once if it is not).
fn node_ready() {
    interop::npm_ready("acp", &["@agentclientprotocol/sdk", "zod"]);
}

/// A scratch directory with a `notes.txt`, removed on drop.
struct Workspace {
    dir: PathBuf,
}

const NOTES: &str = "Release notes\n\nThe parser handles nested arrays.\nThe parser reports errors with positions.\n";

impl Workspace {
    fn new(test: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("jsonrpc-duplex-acp-{}-{test}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("creating a scratch directory");
        std::fs::write(dir.join("notes.txt"), NOTES).expect("writing notes.txt");
        Workspace { dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    fn cwd(&self) -> String {
        self.dir.display().to_string()
    }
}

impl Drop for Workspace {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

struct Output {
    status: std::process::ExitStatus,
    stdout: String,
    stderr: String,
    elapsed: Duration,
}

async fn run(mut cmd: Command, what: &str) -> Output {
    cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).kill_on_drop(true);
    let started = Instant::now();
    let output = tokio::time::timeout(RUN, cmd.output())
        .await
        .unwrap_or_else(|_| panic!("{what} did not finish within {RUN:?}"))
        .unwrap_or_else(|e| panic!("{what} could not be run: {e}"));
    Output {
        status: output.status,
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        elapsed: started.elapsed(),
    }
}

// ---------------------------------------------------------------------------------------------
// SDK client → our agent
// ---------------------------------------------------------------------------------------------

/// Run `sdk_client.mjs` against the `acp_agent` example and return its JSON summary.
async fn sdk_client(ws: &Workspace, prompt: &str, extra: &[&str]) -> (Value, Output) {
    node_ready();
    let agent = example("acp_agent");
    let mut cmd = Command::new("node");
    cmd.arg("sdk_client.mjs").args(["--cwd", &ws.cwd(), "--prompt", prompt]).args(extra).arg("--").arg(agent);
    cmd.current_dir(acp_dir());
    let out = run(cmd, "node sdk_client.mjs").await;
    let line = out.stdout.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or_default();
    let summary: Value = serde_json::from_str(line).unwrap_or_else(|e| {
        panic!("no JSON summary from sdk_client.mjs ({e})\nstdout:\n{}\nstderr:\n{}", out.stdout, out.stderr)
    });
    assert!(
        out.status.success() && summary["ok"] == json!(true),
        "sdk_client.mjs failed ({}):\n{}\nstderr:\n{}",
        out.status,
        serde_json::to_string_pretty(&summary).unwrap_or_default(),
        out.stderr
    );
    assert_eq!(summary["agentExit"], json!({"code": 0, "signal": null}), "the agent exits 0 on stdin EOF");
    (summary, out)
}

fn methods_of(summary: &Value) -> Vec<&str> {
    summary["agentRequests"].as_array().expect("agentRequests").iter().filter_map(|r| r["method"].as_str()).collect()
}

fn updates_of(summary: &Value) -> &Vec<Value> {
    summary["updates"].as_array().expect("updates")
}

/// The texts of the `agent_message_chunk`s.
fn chunks(summary: &Value) -> Vec<&str> {
    updates_of(summary)
        .iter()
        .filter(|u| u["sessionUpdate"] == "agent_message_chunk")
        .filter_map(|u| u["content"]["text"].as_str())
        .collect()
}

#[tokio::test]
async fn sdk_client_drives_rust_agent() {
    let ws = Workspace::new("sdk-allow");
    let (s, _) = sdk_client(&ws, "Please summarize notes.txt.", &["--probe"]).await;
    let notes = ws.path("notes.txt").display().to_string();
    let target = ws.path("notes.txt.summary.md");

    // initialize, and the typed errors on the wire.
    assert_eq!(s["initialize"]["protocolVersion"], json!(1));
    assert_eq!(s["initialize"]["agentInfo"]["name"], json!("jsonrpc-duplex-acp-agent"));
    assert_eq!(s["initialize"]["authMethods"], json!([]));
    assert_eq!(s["probes"]["newBeforeInitialize"]["error"]["code"], json!(-32600));
    assert_eq!(s["probes"]["promptUnknownSession"]["error"]["code"], json!(-32002));
    assert_eq!(s["probes"]["promptUnknownSession"]["error"]["data"], json!({"sessionId": "no-such-session"}));
    assert_eq!(s["probes"]["unknownMethod"]["error"]["code"], json!(-32601));

    // The agent's calls to the editor, in order, with ACP's shapes.
    assert_eq!(methods_of(&s), ["fs/read_text_file", "session/request_permission", "fs/write_text_file"]);
    let requests = s["agentRequests"].as_array().unwrap();
    assert_eq!(requests[0]["params"], json!({"sessionId": s["sessionId"], "path": notes}));
    let permission = &requests[1]["params"];
    assert_eq!(permission["toolCall"]["kind"], json!("edit"));
    let kinds: Vec<_> = permission["options"].as_array().unwrap().iter().map(|o| o["kind"].clone()).collect();
    assert_eq!(kinds, [json!("allow_once"), json!("reject_once")]);
    assert_eq!(requests[2]["params"]["path"], json!(target.display().to_string()));

    // The streamed updates: a read tool call that completes, the summary, an edit that completes.
    let updates = updates_of(&s);
    let kinds: Vec<_> = updates.iter().map(|u| u["sessionUpdate"].as_str().unwrap_or("?")).collect();
    assert_eq!(kinds.first(), Some(&"agent_message_chunk"), "{kinds:?}");
    let read = updates.iter().find(|u| u["sessionUpdate"] == "tool_call" && u["kind"] == "read").expect("a read");
    assert_eq!(read["locations"], json!([{"path": notes}]));
    let edit = updates.iter().find(|u| u["sessionUpdate"] == "tool_call" && u["kind"] == "edit").expect("an edit");
    assert_eq!(edit["status"], json!("pending"));
    assert_eq!(edit["content"][0]["type"], json!("diff"));
    let completed = updates
        .iter()
        .filter(|u| u["sessionUpdate"] == "tool_call_update" && u["status"] == "completed")
        .map(|u| u["toolCallId"].clone())
        .collect::<Vec<_>>();
    assert_eq!(completed, [read["toolCallId"].clone(), edit["toolCallId"].clone()]);
    let text = chunks(&s).concat();
    assert!(text.contains("notes.txt: 4 lines, 13 words, 91 characters."), "{text}");
    assert!(text.contains("It begins: \"Release notes\""), "{text}");
    assert!(text.contains("Frequent words: parser (2×)"), "{text}");
    assert!(chunks(&s).last().unwrap().starts_with("Wrote the summary to"), "{text}");

    assert_eq!(s["stopReason"], json!("end_turn"));
    let summary = std::fs::read_to_string(&target).expect("the summary was written through the editor");
    assert!(summary.starts_with("# Summary of notes.txt\n"), "{summary}");
    assert!(summary.contains("4 lines, 13 words, 91 characters"), "{summary}");
}

#[tokio::test]
async fn sdk_client_rejects_rust_agent_write() {
    let ws = Workspace::new("sdk-deny");
    let (s, _) = sdk_client(&ws, "summarize notes.txt", &["--deny"]).await;
    assert_eq!(methods_of(&s), ["fs/read_text_file", "session/request_permission"]);
    let failed = updates_of(&s).iter().find(|u| u["status"] == "failed").expect("a failed tool call");
    assert_eq!(failed["content"][0]["content"]["text"], json!("rejected by the user"));
    assert!(chunks(&s).last().unwrap().contains("did not write"), "{:?}", chunks(&s));
    assert_eq!(s["stopReason"], json!("end_turn"));
    assert!(!ws.path("notes.txt.summary.md").exists());
}

#[tokio::test]
async fn sdk_client_cancels_rust_agent_turn() {
    // The user would take 20 s over the permission dialog; as soon as it is open, the client
    // sends `session/cancel` (and answers the open dialog `cancelled`): the turn ends "cancelled".
    let ws = Workspace::new("sdk-cancel");
    let (s, out) = sdk_client(&ws, "summarize notes.txt", &["--think", "20000", "--cancel-when-asked"]).await;
    assert_eq!(s["stopReason"], json!("cancelled"), "{s}");
    assert_eq!(s["promptError"], Value::Null);
    assert_eq!(methods_of(&s), ["fs/read_text_file", "session/request_permission"]);
    assert!(!ws.path("notes.txt.summary.md").exists());
    assert!(out.elapsed < Duration::from_secs(10), "cancelling took {:?}", out.elapsed);
}

#[tokio::test]
async fn sdk_client_aborts_rust_agent_prompt() {
    // The SDK aborts its own `session/prompt` request: `$/cancel_request {"requestId"}`; the
    // framework drops the agent's handler and answers -32800.
    let ws = Workspace::new("sdk-abort");
    let (s, out) = sdk_client(&ws, "summarize notes.txt", &["--think", "20000", "--abort-when-asked"]).await;
    assert_eq!(s["stopReason"], Value::Null, "{s}");
    assert_eq!(s["promptError"]["code"], json!(-32800), "{s}");
    assert_eq!(methods_of(&s), ["fs/read_text_file", "session/request_permission"]);
    assert!(!ws.path("notes.txt.summary.md").exists());
    assert!(out.elapsed < Duration::from_secs(10), "aborting took {:?}", out.elapsed);
}

#[tokio::test]
async fn sdk_client_missing_file_reaches_rust_agent_as_typed_error() {
    // The SDK client answers `RequestError.resourceNotFound(path)`: -32002 with `data.uri`,
    // which the agent's typed client decodes as `AcpError::ResourceNotFound`.
    let ws = Workspace::new("sdk-missing");
    let missing = ws.path("missing.txt").display().to_string();
    let (s, _) = sdk_client(&ws, &format!("summarize {missing}"), &[]).await;
    assert_eq!(methods_of(&s), ["fs/read_text_file"]);
    let failed = updates_of(&s).iter().find(|u| u["status"] == "failed").expect("a failed tool call");
    assert_eq!(failed["content"][0]["content"]["text"], json!(format!("Resource not found: {missing} (-32002)")));
    assert_eq!(s["stopReason"], json!("end_turn"));
}

#[tokio::test]
async fn sdk_client_without_write_capability() {
    let ws = Workspace::new("sdk-readonly");
    let (s, _) = sdk_client(&ws, "summarize ./notes.txt", &["--no-write"]).await;
    assert_eq!(methods_of(&s), ["fs/read_text_file"], "no permission asked, nothing written");
    assert!(chunks(&s).last().unwrap().contains("does not let agents write"), "{:?}", chunks(&s));
    assert_eq!(s["stopReason"], json!("end_turn"));
}

// ---------------------------------------------------------------------------------------------
// Our client → SDK agent (and → our agent)
// ---------------------------------------------------------------------------------------------

async fn rust_client(ws: &Workspace, prompt: &str, extra: &[&str], agent: &[&str]) -> Output {
    let client = example("acp_client");
    let mut cmd = Command::new(client);
    cmd.args(["--cwd", &ws.cwd(), "--prompt", prompt, "--think", "100"]).args(extra).arg("--").args(agent);
    cmd.current_dir(acp_dir());
    let out = run(cmd, "acp_client").await;
    assert!(out.status.success(), "acp_client failed ({}):\n{}\nstderr:\n{}", out.status, out.stdout, out.stderr);
    out
}

async fn rust_client_with_sdk_agent(ws: &Workspace, prompt: &str, extra: &[&str]) -> Output {
    node_ready();
    rust_client(ws, prompt, extra, &["node", "sdk_agent.mjs"]).await
}

fn assert_lines(out: &Output, expected: &[&str]) {
    for line in expected {
        assert!(out.stdout.contains(line), "{line:?} missing from acp_client's output:\n{}", out.stdout);
    }
}

#[tokio::test]
async fn rust_client_drives_sdk_agent() {
    let ws = Workspace::new("rust-allow");
    let out = rust_client_with_sdk_agent(&ws, "Summarize notes.txt", &[]).await;
    let notes = ws.path("notes.txt").display().to_string();
    let target = ws.path("notes.txt.sdk-summary.txt");
    assert_lines(
        &out,
        &[
            "connected to sdk-test-agent 2.4.0 (protocol 1)",
            "session sdk-sess-1 in ",
            &format!("agent │ Reading {notes}"),
            &format!("tool  │ sdk-call-1 [read] Read notes.txt (pending) at {notes}"),
            "tool  │ sdk-call-1 → in_progress",
            &format!("fs    │ read {notes} (91 bytes)"),
            "tool  │ sdk-call-1 → completed: 91 characters",
            "agent │ Read 91 characters from notes.txt.",
            "ask   │ may the agent \"Write notes.txt.sdk-summary.txt\"? [Allow once: allow_once] [Reject: reject_once]",
            "you   │ Allow once (after 100 ms)",
            &format!("fs    │ wrote {}", target.display()),
            "agent │ Wrote notes.txt.sdk-summary.txt.",
            "stop reason: end_turn",
        ],
    );
    let written = std::fs::read_to_string(&target).expect("the SDK agent wrote through our fs/write_text_file");
    assert_eq!(written, "notes.txt: 3 lines, 91 characters\n");
}

#[tokio::test]
async fn rust_client_denies_sdk_agent() {
    let ws = Workspace::new("rust-deny");
    let out = rust_client_with_sdk_agent(&ws, "Summarize notes.txt", &["--deny"]).await;
    assert_lines(&out, &["you   │ Reject (after 100 ms)", "→ failed: rejected", "stop reason: end_turn"]);
    assert!(!out.stdout.contains("fs    │ wrote"), "{}", out.stdout);
    assert!(!ws.path("notes.txt.sdk-summary.txt").exists());
}

#[tokio::test]
async fn rust_client_cancels_waiting_sdk_agent() {
    let ws = Workspace::new("rust-cancel-wait");
    let out = rust_client_with_sdk_agent(&ws, "please wait", &["--cancel-after", "300"]).await;
    assert_lines(
        &out,
        &["agent │ Waiting until you cancel…", "you   │ (cancel: sending session/cancel)", "stop reason: cancelled"],
    );
    assert!(out.elapsed < Duration::from_secs(10), "cancelling took {:?}", out.elapsed);
}

#[tokio::test]
async fn rust_client_cancels_during_permission_dialog() {
    // The SDK agent waits for our permission answer; the user stops the turn instead, so the
    // open question is answered `cancelled` and the agent stops with "cancelled".
    let ws = Workspace::new("rust-cancel-ask");
    let out = rust_client_with_sdk_agent(&ws, "Summarize notes.txt", &["--stop-at-question"]).await;
    assert_lines(
        &out,
        &[
            "ask   │ may the agent",
            "you   │ Stop (after 100 ms)",
            "you   │ (cancel: sending session/cancel)",
            "ask   │ (the turn was cancelled: answering `cancelled`)",
            "stop reason: cancelled",
        ],
    );
    assert!(!ws.path("notes.txt.sdk-summary.txt").exists());
}

#[tokio::test]
async fn rust_client_drives_rust_agent() {
    let ws = Workspace::new("rust-rust");
    let agent = example("acp_agent");
    let out = rust_client(&ws, "summarize notes.txt", &[], &[agent.to_str().expect("a UTF-8 path")]).await;
    assert_lines(
        &out,
        &[
            "connected to jsonrpc-duplex-acp-agent",
            "agent │ notes.txt: 4 lines, 13 words, 91 characters.",
            "you   │ Allow (after 100 ms)",
            "stop reason: end_turn",
        ],
    );
    assert!(ws.path("notes.txt.summary.md").is_file());
}
