//! `jrpc tap`: bytes pass through unchanged, framing is detected per direction, stderr, exit codes
//! and signals are the server's, and conversations with real peers are recorded: the reference
//! peer, a language server (python-lsp-server, driven by the `lsp_client` example) and the
//! official ACP SDK's client (driving the `acp_agent` example).

use std::process::Stdio;

use crate::support;
use crate::support::{Scratch, assert_contains, frame, interop, jrpc_command, messages, read_trace, run};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};

/// A mix of everything a stream may carry: frames split anywhere, a log line, a pretty-printed
/// body, bytes that are not UTF-8, a frame with a Content-Type header.
fn mixed_input() -> Vec<u8> {
    let mut input = Vec::new();
    input.extend(frame(r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#));
    input.extend(b"a log line printed to stdout by mistake\n");
    input.extend(frame("{\n  \"jsonrpc\": \"2.0\",\r\n  \"method\": \"pretty\"\n}"));
    input.extend(b"Content-Length: 5\r\n\r\n\xff\xfe\x00ab");
    input.extend(b"Content-Length: 28\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n");
    input.extend(br#"{"jsonrpc":"2.0","result":1}"#);
    input
}

#[tokio::test]
async fn bytes_pass_through_unchanged_in_both_directions() {
    let scratch = Scratch::new("passthrough");
    let trace = scratch.path("trace.jsonl");
    // `cat` sends back exactly what it reads: both directions carry the same bytes.
    let mut tap = jrpc_command()
        .arg("tap")
        .arg("--out")
        .arg(&trace)
        .args(["--", "cat"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("jrpc tap starts");
    let mut stdin = tap.stdin.take().expect("piped");
    let mut stdout = tap.stdout.take().expect("piped");
    let reader = tokio::spawn(async move {
        let mut out = Vec::new();
        stdout.read_to_end(&mut out).await.map(|_| out)
    });
    let input = mixed_input();
    // Odd chunk sizes, each flushed, so that frames arrive cut anywhere.
    let mut rest = &input[..];
    for size in [1, 7, 13, 2, 64, 5].iter().cycle() {
        if rest.is_empty() {
            break;
        }
        let (chunk, tail) = rest.split_at((*size).min(rest.len()));
        stdin.write_all(chunk).await.expect("tap reads its stdin");
        stdin.flush().await.expect("flush");
        rest = tail;
    }
    drop(stdin);
    let output = tokio::time::timeout(support::RUN, reader).await.expect("cat ends").expect("join").expect("read");
    let status = tokio::time::timeout(support::RUN, tap.wait()).await.expect("tap exits").expect("wait");
    assert_eq!(output, input, "what came back is exactly what went in");
    assert_eq!(status.code(), Some(0), "cat's exit code");

    let records = read_trace(&trace);
    assert_eq!(records[0]["type"], "header");
    assert_eq!(records[0]["format"], "jsonrpc-trace");
    assert_eq!(records[0]["version"], 1);
    assert_eq!(records[0]["command"], json!(["cat"]));
    let side = |from: &str| -> Vec<Value> {
        records
            .iter()
            .filter(|r| r["type"] == "message" && r["from"] == from)
            .map(|r| {
                let mut r = r.clone();
                r.as_object_mut().map(|o| {
                    o.remove("t");
                    o.remove("from")
                });
                r
            })
            .collect()
    };
    let client = side("client");
    assert_eq!(client, side("server"), "both directions recorded alike");
    assert_eq!(
        client,
        vec![
            json!({"type":"message","size":58,"framing":"content-length","message":{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}}),
            json!({"type":"message","size":40,"framing":"unframed","raw":"a log line printed to stdout by mistake\n","error":"bad header: header line without a colon: \"a log line printed to stdout by mistake\""}),
            json!({"type":"message","size":45,"framing":"content-length","message":{"jsonrpc":"2.0","method":"pretty"}}),
            json!({"type":"message","size":5,"framing":"content-length","raw":"\u{fffd}\u{fffd}\u{0}ab","error":"not JSON: invalid utf-8 sequence of 1 bytes from index 0"}),
            json!({"type":"message","size":28,"framing":"content-length","message":{"jsonrpc":"2.0","result":1}}),
        ]
    );
    let pretty = records.iter().find(|r| r["message"]["method"] == "pretty").expect("the pretty message");
    let line = serde_json::to_string(&pretty["message"]).expect("json");
    assert!(!line.contains('\n'), "line breaks of a pretty body become spaces in the record");
    assert_eq!(records.last().expect("records")["type"], "exit");
    assert_eq!(records.last().expect("records")["code"], 0);
}

#[tokio::test]
async fn framing_is_detected_in_each_direction() {
    let scratch = Scratch::new("framing");
    let trace = scratch.path("trace.jsonl");
    // The client speaks Content-Length, the server answers with one JSON line.
    let server = r#"read -r _; printf '%s\n' '{"jsonrpc":"2.0","method":"ready"}'"#;
    let mut tap = jrpc_command();
    tap.arg("tap").arg("--out").arg(&trace).args(["--", "sh", "-c", server]);
    let out = run(tap, &frame(r#"{"jsonrpc":"2.0","method":"hello"}"#)).await;
    assert_eq!(out.stdout, "{\"jsonrpc\":\"2.0\",\"method\":\"ready\"}\n");
    let framing: Vec<(String, String)> = read_trace(&trace)
        .iter()
        .filter(|r| r["type"] == "message")
        .map(|r| (r["from"].as_str().unwrap().to_owned(), r["framing"].as_str().unwrap().to_owned()))
        .collect();
    assert_eq!(framing, [("client".into(), "content-length".into()), ("server".into(), "newline".into())]);
}

#[tokio::test]
async fn the_exit_code_and_stderr_are_the_servers() {
    let scratch = Scratch::new("exit");
    let trace = scratch.path("trace.jsonl");
    let mut tap = jrpc_command();
    tap.arg("tap").arg("--out").arg(&trace).args(["--", "sh", "-c", "echo 'to stderr' >&2; exit 7"]);
    let out = run(tap, b"").await;
    assert_eq!(out.code(), Some(7));
    assert_eq!(out.stderr, "to stderr\n", "the server's stderr, unchanged, and nothing else");
    assert_eq!(read_trace(&trace).last().expect("records")["code"], 7);

    // Captured: still passed through, and recorded.
    let mut tap = jrpc_command();
    tap.arg("tap").arg("--capture-stderr").arg("--out").arg(&trace).args(["--", "sh", "-c", "echo 'to stderr' >&2"]);
    let out = run(tap, b"").await;
    assert_eq!((out.code(), out.stderr.as_str()), (Some(0), "to stderr\n"));
    let records = read_trace(&trace);
    let stderr: Vec<&Value> = records.iter().filter(|r| r["type"] == "stderr").collect();
    assert_eq!(stderr.len(), 1, "{records:?}");
    assert_eq!((&stderr[0]["from"], &stderr[0]["text"]), (&json!("server"), &json!("to stderr")));

    let mut tap = jrpc_command();
    tap.args(["tap", "--", "/nonexistent/server"]);
    let out = run(tap, b"").await;
    assert_eq!(out.code(), Some(127), "the shell's code for a command not found");
    assert!(out.stderr.contains("cannot start \"/nonexistent/server\""), "{}", out.stderr);
}

#[cfg(unix)]
#[tokio::test]
async fn a_server_killed_by_a_signal_kills_the_tap_with_it() {
    use std::os::unix::process::ExitStatusExt;
    let mut tap = jrpc_command();
    tap.args(["tap", "--", "sh", "-c", "kill -TERM $$"]);
    let out = run(tap, b"").await;
    assert_eq!(out.status.signal(), Some(15), "{:?}", out.status);
}

#[cfg(unix)]
#[tokio::test]
async fn signals_to_the_tap_reach_the_server() {
    use nix::sys::signal::{Signal, kill};
    use nix::unistd::Pid;
    // The server says it is ready once its handler is in place, then waits.
    let server = r#"trap 'echo "got TERM" >&2; exit 42' TERM; echo ready; while :; do sleep 0.05; done"#;
    let mut tap = jrpc_command()
        .args(["tap", "--", "sh", "-c", server])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("jrpc tap starts");
    let mut stdout = BufReader::new(tap.stdout.take().expect("piped"));
    let mut line = String::new();
    tokio::time::timeout(support::RUN, stdout.read_line(&mut line)).await.expect("ready in time").expect("read");
    assert_eq!(line, "ready\n");
    let pid = Pid::from_raw(tap.id().expect("running") as i32);
    kill(pid, Signal::SIGTERM).expect("signal the tap");
    let output = tokio::time::timeout(support::RUN, tap.wait_with_output()).await.expect("exits").expect("wait");
    assert_eq!(output.status.code(), Some(42), "the server's own exit after its TERM handler");
    assert_eq!(String::from_utf8_lossy(&output.stderr), "got TERM\n");
}

/// The reference peer through the tap, driven by a client on this crate's connection: answers,
/// an error, a request from the server answered by the client, notifications, a cancellation.
#[tokio::test]
async fn a_conversation_with_the_reference_peer_is_recorded_and_shown_live() {
    let scratch = Scratch::new("reference");
    let trace = scratch.path("trace.jsonl");
    let view = scratch.path("view.txt");
    support::reference_session(&[
        "--out".as_ref(),
        trace.as_os_str(),
        "--view".as_ref(),
        view.as_os_str(),
        "--full".as_ref(),
    ])
    .await;

    let records = read_trace(&trace);
    let methods: Vec<(String, String)> = messages(&records)
        .into_iter()
        .map(|(from, m)| (from, m["method"].as_str().map_or_else(|| format!("answer {}", m["id"]), str::to_owned)))
        .collect();
    for expected in [
        ("client", "add"),
        ("server", "answer 0"),
        ("server", "client/ask"),
        ("client", "answer 0"),
        ("server", "answer 1"),
        ("server", "tick"),
        ("client", "slow"),
        ("client", "$/cancelRequest"),
    ] {
        assert!(methods.contains(&(expected.0.to_owned(), expected.1.to_owned())), "{expected:?} in {methods:?}");
    }
    assert_eq!(records.last().expect("records")["type"], "exit", "the peer's exit ends the trace");

    // The live view pairs answers with their requests and marks errors and cancellation.
    let view = std::fs::read_to_string(&view).expect("the view");
    assert_contains(
        &view,
        &[
            "C→S req    #0 add",
            "S→C ok     #0 add (",
            "S→C ERROR  #1 fail (",
            ") -32001 \"requested failure\"",
            "S→C req    #0 client/ask",
            "C→S ok     #0 client/ask (",
            "S→C notif  tick {\"jsonrpc\":\"2.0\",\"method\":\"tick\",\"params\":{\"n\":1}}",
            "C→S notif  $/cancelRequest {\"jsonrpc\":\"2.0\",\"method\":\"$/cancelRequest\",\"params\":{\"id\":4}}  [cancels #4 slow]",
            "S→C ERROR  #4 slow (",
            ") [cancelled] -32800",
            "exit   the server exited with code 0",
        ],
    );
}

/// A language server through the tap, as an editor would run it: the `lsp_client` example starts
/// `jrpc tap -- pylsp` instead of `pylsp`.
#[tokio::test]
async fn an_editor_and_a_language_server_through_the_tap() {
    let scratch = Scratch::new("lsp");
    let trace = scratch.path("trace.jsonl");
    let fixture = interop::interop_dir("lsp").join("fixture").join("greet.py");
    let mut editor = tokio::process::Command::new(interop::example("lsp_client"));
    editor
        .arg("--")
        .arg(support::jrpc())
        .arg("tap")
        .arg("--out")
        .arg(&trace)
        .arg("--")
        .arg(interop::pylsp())
        .arg("--")
        .arg(&fixture)
        .args(["9", "24"]);
    let out = run(editor, b"").await;
    assert!(out.status.success(), "lsp_client failed: {out:?}");
    assert_contains(
        &out.stdout,
        &[
            "client ◂ initialize result: pylsp 1.15.0, hover provider: true",
            "greet(name: str) -> str",
            // Main says "exited by itself" since issue 13; either way the server exited 0.
            "server exited: the child process exited",
            "(exit status: 0)",
        ],
    );
    let records = read_trace(&trace);
    let conversation = messages(&records);
    let method = |m: &Value| m["method"].as_str().unwrap_or_default().to_owned();
    let sent: Vec<String> = conversation.iter().filter(|(from, _)| from == "client").map(|(_, m)| method(m)).collect();
    assert_eq!(
        sent,
        [
            "initialize",
            "initialized",
            "textDocument/didOpen",
            "textDocument/hover",
            "textDocument/didClose",
            "shutdown",
            "exit"
        ]
    );
    let hover = conversation.iter().find(|(from, m)| from == "server" && m["id"] == 1).expect("the hover's answer");
    assert!(hover.1["result"]["contents"]["value"].as_str().is_some_and(|v| v.contains("greet(name: str) -> str")));
    assert!(records.iter().all(|r| r["type"] != "message" || r["framing"] == "content-length"), "{records:?}");
    assert_eq!(records.last().expect("records")["code"], 0);

    // The summary pairs them.
    let mut show = jrpc_command();
    show.arg("show").arg("--summary").arg(&trace);
    let out = run(show, b"").await;
    assert_eq!(out.code(), Some(0), "{out:?}");
    let hover_row = out.stdout.lines().find(|l| l.starts_with("textDocument/hover")).expect("a hover row");
    let cells: Vec<&str> = hover_row.split_whitespace().collect();
    assert_eq!(&cells[1..5], ["client", "1", "0", "0"], "{hover_row}");
}

/// The official ACP SDK's client drives the `acp_agent` example through the tap (newline framing,
/// the agent's own requests to the client).
#[tokio::test]
async fn an_acp_client_and_agent_through_the_tap() {
    interop::npm_ready("acp", &["@agentclientprotocol/sdk", "zod"]);
    let scratch = Scratch::new("acp");
    let trace = scratch.path("trace.jsonl");
    std::fs::write(scratch.path("notes.txt"), "Release notes\nThe parser handles nested arrays.\n").expect("notes");
    let mut client = tokio::process::Command::new("node");
    client
        .arg("sdk_client.mjs")
        .arg("--cwd")
        .arg(&scratch.dir)
        .args(["--prompt", "Summarize notes.txt", "--"])
        .arg(support::jrpc())
        .arg("tap")
        .arg("--out")
        .arg(&trace)
        .arg("--")
        .arg(interop::example("acp_agent"))
        .current_dir(interop::interop_dir("acp"));
    let out = run(client, b"").await;
    let summary: Value = out
        .stdout
        .lines()
        .rev()
        .find_map(|l| serde_json::from_str(l).ok())
        .unwrap_or_else(|| panic!("no summary from sdk_client.mjs: {out:?}"));
    assert_eq!(summary["ok"], true, "{summary}");
    assert_eq!(summary["stopReason"], "end_turn", "{summary}");

    let records = read_trace(&trace);
    let conversation = messages(&records);
    assert!(records.iter().all(|r| r["type"] != "message" || r["framing"] == "newline"), "{records:?}");
    let from_agent =
        |name: &str| conversation.iter().filter(|(from, m)| from == "server" && m["method"] == name).count();
    assert!(from_agent("session/update") >= 3, "{conversation:?}");
    assert_eq!(from_agent("session/request_permission"), 1);
    assert_eq!(from_agent("fs/read_text_file"), 1);

    // Filtered views of it.
    let mut show = jrpc_command();
    show.arg("show").arg("--method").arg("session/*").arg(&trace);
    let out = run(show, b"").await;
    assert!(out.stdout.lines().all(|l| l.contains(" session/")), "{}", out.stdout);
    assert_contains(
        &out.stdout,
        &["C→S req    #1 session/new", "S→C ok     #1 session/new (", "S→C req    #1 session/request_permission"],
    );
}
