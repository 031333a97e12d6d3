//! `jrpc replay`: a recorded conversation sent again to a fresh server, its answers compared with
//! the recorded ones: the reference peer (a request from the server answered from the trace, a
//! cancellation), python-lsp-server behind the `lsp_client` example, and the `acp_agent` example
//! driven by the ACP SDK's client.

use crate::support;
use crate::support::{Scratch, assert_contains, interop, jrpc_command, run};
use serde_json::Value;

fn replay(trace: &std::path::Path, args: &[&str]) -> tokio::process::Command {
    let mut command = jrpc_command();
    command.arg("replay").arg(trace).args(args);
    command
}

/// Replace `from` by `to` in the trace lines that contain `marker`, as a bug report would show a
/// server answering differently.
fn tamper(trace: &std::path::Path, marker: &str, from: &str, to: &str) {
    let text = std::fs::read_to_string(trace).expect("the trace");
    let mut found = false;
    let lines: Vec<String> = text
        .lines()
        .map(|line| {
            if line.contains(marker) && line.contains(from) {
                found = true;
                line.replace(from, to)
            } else {
                line.to_owned()
            }
        })
        .collect();
    assert!(found, "no line with {marker:?} and {from:?} in:\n{text}");
    std::fs::write(trace, lines.join("\n") + "\n").expect("write the trace");
}

#[tokio::test]
async fn the_reference_peer_answers_the_same_and_a_changed_answer_is_found() {
    let scratch = Scratch::new("replay-reference");
    let trace = scratch.path("trace.jsonl");
    support::reference_session(&["--out".as_ref(), trace.as_os_str()]).await;

    // The trace names the server's command: replay needs nothing else.
    let out = run(replay(&trace, &["-v"]), b"").await;
    assert_eq!(out.code(), Some(0), "{out:?}");
    assert_contains(
        &out.stdout,
        &[
            "#0 add: same",
            "#1 fail: same",
            // The server's request was answered from the trace: the same answer came back.
            "#2 callBack: same",
            "#3 notifyMe: same",
            "#4 slow: not compared (cancelled, as in the trace)",
            "4 of 5 answers the same, 0 differ, 1 not compared",
        ],
    );
    assert!(!out.stdout.contains("note: the server asked"), "every server request was in the trace: {}", out.stdout);

    tamper(&trace, r#""result":42"#, r#""result":42"#, r#""result":41"#);
    tamper(&trace, r#""requested failure""#, r#""data":{"why":"testing"}"#, r#""data":{"why":"other"}"#);
    let out = run(replay(&trace, &[]), b"").await;
    assert_eq!(out.code(), Some(1), "{out:?}");
    assert_contains(
        &out.stdout,
        &[
            "#0 add: differs\n    result: 41 → 42\n",
            "#1 fail: differs\n    error.data.why: \"other\" → \"testing\"\n",
            "2 of 5 answers the same, 2 differ, 1 not compared",
        ],
    );
    let out = run(replay(&trace, &["--ignore", "why"]), b"").await;
    assert_contains(&out.stdout, &["#0 add: differs", "3 of 5 answers the same, 1 differ, 1 not compared"]);
}

/// A language server session recorded through the tap, replayed against a fresh pylsp: the same
/// answers; then with the hover's recorded text changed, the difference at its path.
#[tokio::test]
async fn a_language_server_session_replays_and_differences_are_reported() {
    let scratch = Scratch::new("replay-lsp");
    let trace = scratch.path("trace.jsonl");
    let fixture = interop::interop_dir("lsp").join("fixture").join("greet.py");
    let mut editor = tokio::process::Command::new(interop::example("lsp_client"));
    editor.arg("--").arg(support::jrpc()).arg("tap").arg("--out").arg(&trace).arg("--").arg(interop::pylsp());
    editor.arg("--").arg(&fixture).args(["9", "24"]);
    let out = run(editor, b"").await;
    assert!(out.status.success(), "{out:?}");

    let out = run(replay(&trace, &[]), b"").await;
    assert_eq!(out.code(), Some(0), "{out:?}");
    assert_contains(&out.stdout, &["3 requests, 4 notifications", "3 of 3 answers the same, 0 differ"]);

    // The server's answer only: the file's text (sent by the client) says "friendly" too.
    tamper(&trace, r#""from":"server","size""#, "Return a friendly greeting", "Return a cheerful greeting");
    let out = run(replay(&trace, &[]), b"").await;
    assert_eq!(out.code(), Some(1), "{out:?}");
    assert_contains(
        &out.stdout,
        &[
            "#1 textDocument/hover: differs\n    result.contents.value: \"```python\\ngreet(name: str) -> str\\n```\\n\\n\\nReturn a cheerful greeting",
            "→ \"```python\\ngreet(name: str) -> str\\n```\\n\\n\\nReturn a friendly greeting",
            "2 of 3 answers the same, 1 differ",
        ],
    );
    let out = run(replay(&trace, &["--ignore", "result.contents.value"]), b"").await;
    assert_eq!(out.code(), Some(0), "ignored by its path: {out:?}");
}

/// An ACP turn (the SDK's client and the `acp_agent` example) replayed against a fresh agent:
/// its requests to the client (permission, reading a file) are answered from the trace.
#[tokio::test]
async fn an_acp_turn_replays_with_the_agents_requests_answered_from_the_trace() {
    interop::npm_ready("acp", &["@agentclientprotocol/sdk", "zod"]);
    let scratch = Scratch::new("replay-acp");
    let trace = scratch.path("trace.jsonl");
    std::fs::write(scratch.path("notes.txt"), "Release notes\nThe parser handles nested arrays.\n").expect("notes");
    let mut client = tokio::process::Command::new("node");
    client.arg("sdk_client.mjs").arg("--cwd").arg(&scratch.dir).args(["--prompt", "Summarize notes.txt", "--"]);
    client.arg(support::jrpc()).arg("tap").arg("--out").arg(&trace).arg("--").arg(interop::example("acp_agent"));
    client.current_dir(interop::interop_dir("acp"));
    let out = run(client, b"").await;
    let summary: Value = out.stdout.lines().rev().find_map(|l| serde_json::from_str(l).ok()).expect("a summary");
    assert_eq!(summary["ok"], true, "{summary}");
    // The file is gone: only the trace can answer the agent's read now.
    std::fs::remove_file(scratch.path("notes.txt")).expect("remove");

    let out = run(replay(&trace, &["-v"]), b"").await;
    assert_eq!(out.code(), Some(0), "{out:?}");
    assert_contains(&out.stdout, &["session/prompt: same", "3 of 3 answers the same, 0 differ"]);
    assert!(!out.stdout.contains("note: the server asked"), "{}", out.stdout);
}
