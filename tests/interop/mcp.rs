//! The MCP examples against the official MCP TypeScript SDK, `@modelcontextprotocol/sdk` 1.32.2
//! (`tests/interop/mcp/package-lock.json`; `npm ci` runs when `node_modules` is missing), over
//! stdio:
//!
//! - `sdk_client_drives_the_mcp_server_example`: the SDK's `Client` (`sdk_client.mjs`) starts the
//!   `mcp_server` example and uses every part of it: typed tools, a bad input, an unknown tool,
//!   progress on its `_meta.progressToken`, a cancellation (`notifications/cancelled`), a tool that
//!   calls back `roots/list`, resources, prompts, and the close of stdin that ends it;
//! - `mcp_client_example_drives_an_sdk_server`: the `mcp_client` example starts an `McpServer`
//!   of the SDK (`sdk_server.mjs`) and calls its tools (with progress, one cancelled), answers its
//!   `roots/list`, shows its log messages, reads a resource and gets a prompt.
//!
//! Needs `node` (>= 18) and `npm` on the `PATH`. Every run is bounded.

use crate::support;

use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use support::interop;
use tokio::process::Command;

const RUN: Duration = Duration::from_secs(60);

fn mcp_dir() -> std::path::PathBuf {
    interop::npm_ready("mcp", &["@modelcontextprotocol/sdk", "zod"])
}

async fn output(mut cmd: Command, what: &str) -> (std::process::ExitStatus, String, String) {
    cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).kill_on_drop(true);
    let out = tokio::time::timeout(RUN, cmd.output())
        .await
        .unwrap_or_else(|_| panic!("{what} did not finish within {RUN:?}"))
        .unwrap_or_else(|e| panic!("{what} could not be run: {e}"));
    (out.status, String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[tokio::test]
async fn sdk_client_drives_the_mcp_server_example() {
    let dir = mcp_dir();
    let mut cmd = Command::new("node");
    cmd.arg("sdk_client.mjs").arg(interop::example("mcp_server")).current_dir(&dir).env("RUST_LOG", "info");
    let (status, stdout, stderr) = output(cmd, "sdk_client.mjs").await;
    let line = stdout.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or_default();
    let s: Value = serde_json::from_str(line)
        .unwrap_or_else(|e| panic!("no JSON summary ({e})\nstdout:\n{stdout}\nstderr:\n{stderr}"));
    assert!(status.success() && s["ok"] == json!(true), "sdk_client.mjs failed ({status}): {s:#}\nstderr:\n{stderr}");

    assert_eq!(s["serverVersion"]["name"], "jsonrpc-duplex-mcp-server");
    assert_eq!(s["tools"], json!(["add", "greet", "count", "list_roots"]));
    assert_eq!(s["add"], "42");
    assert_eq!(s["greet"], "Hello, Ada!");
    // Input that does not fit the tool's type: a tool error the model reads, not a protocol error.
    assert_eq!(s["badInput"]["isError"], true);
    assert_eq!(s["unknownTool"]["code"], -32602);
    // Every report, in order, on the wire before the result.
    assert_eq!(s["progress"]["result"], "counted to 3");
    let on_wire: Vec<_> =
        s["progress"]["wireReports"].as_array().unwrap().iter().map(|r| r["progress"].clone()).collect();
    assert_eq!(on_wire, [json!(1), json!(2), json!(3)], "{s:#}");
    assert_eq!(s["progress"]["wireReports"][2], json!({"progress": 3, "total": 3, "message": "counted to 3"}));
    // The SDK hands them on in order, but drops those read together with the answer (it runs
    // notification handlers a microtask after it settles responses; on a busy machine reads
    // gather more): what it delivers is a prefix of what was sent.
    let delivered: Vec<_> =
        s["progress"]["reports"].as_array().unwrap().iter().map(|r| r["progress"].clone()).collect();
    assert!(delivered.len() <= 3 && delivered[..] == on_wire[..delivered.len()], "{s:#}");
    // Cancelled after its first report: the call ends at once and the server carries on.
    assert_eq!(s["cancel"]["rejected"], true, "{s:#}");
    assert_eq!(s["cancel"]["reports"], 1);
    assert!(stderr.contains("count cancelled by the client"), "the server did not see the cancellation:\n{stderr}");
    assert_eq!(s["afterCancel"], "2");
    // The server called the client back mid-call.
    assert_eq!(s["roots"], json!({"text": "project: file:///work/project", "asked": 1}));
    assert_eq!(s["resources"], json!(["demo://readme", "demo://stats"]));
    assert!(s["readme"].as_str().unwrap().starts_with("# jsonrpc-duplex MCP demo"));
    assert_eq!(s["missingResource"], json!({"code": -32002, "data": {"uri": "demo://missing"}}));
    assert_eq!(s["prompts"], json!([{"name": "review", "arguments": ["code"]}]));
    assert_eq!(s["prompt"], json!(["user: Please review this code:\n\nfn main() {}"]));
    // Closing its stdin ends the server: it returns from `main` with 0, by itself.
    assert_eq!(s["exit"], json!({"code": 0, "signal": null}));
    // Nothing came after an answer (a report for a finished call), and the SDK found nothing else
    // to complain about: its "unknown token" errors are the reports it dropped because they
    // shared a read with their answer (see the progress step), and the cancelled call's reports
    // the server sent before our cancel reached it (the wire's race: on a loaded machine the
    // cancel can take longer than the tool's 20 ms between reports).
    assert_eq!(s["progress"]["afterAnswer"], json!([]), "{s:#}");
    let errors: Vec<&str> = s["errors"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    let late = s["lateCancelledReports"].as_u64().expect("lateCancelledReports") as usize;
    let dropped = 3 - s["progress"]["reports"].as_array().unwrap().len() + late;
    let unknown_token = errors.iter().filter(|e| e.contains("progress notification for an unknown token")).count();
    assert!(unknown_token <= dropped && errors.len() == unknown_token, "{errors:#?}");
}

#[tokio::test]
async fn mcp_client_example_drives_an_sdk_server() {
    let dir = mcp_dir();
    let mut cmd = Command::new(interop::example("mcp_client"));
    cmd.args(["--call", "echo", r#"{"text":"hi"}"#])
        .args(["--call", "slow", r#"{"steps":3}"#])
        .args(["--cancel-after", "2", "--call", "slow", r#"{"steps":1000}"#])
        .args(["--call", "ask_roots", "{}"])
        .args(["--call", "stats", "{}"])
        .args(["--call", "echo", r#"{"text":7}"#])
        .args(["--read", "note://hello"])
        .args(["--prompt", "greet", r#"{"name":"Ada"}"#])
        .args(["--root", "file:///tmp/project"])
        .args(["--", "node", "sdk_server.mjs"])
        .current_dir(&dir);
    let (status, stdout, stderr) = output(cmd, "mcp_client").await;
    assert!(status.success(), "mcp_client failed ({status}):\n{stdout}\nstderr:\n{stderr}");
    let mut lines: Vec<&str> = stdout.lines().map(|l| l.get(9..).unwrap_or_default()).collect();
    // A report the SDK server sent before our cancel reached it may arrive after we sent the
    // cancel: the race is the wire's, not ours. Such reports (only between the cancel and the
    // call's end, and only of that call) are taken out before the order is compared.
    if let Some(cancel) = lines.iter().position(|l| *l == "client ▸ cancel after 2 report(s)") {
        let end =
            lines[cancel..].iter().position(|l| *l == "client ◂ slow: cancelled").map_or(lines.len(), |at| cancel + at);
        let late = lines[cancel + 1..end].iter().all(|l| l.starts_with("progress ") && l.contains("/1000 step "));
        assert!(late, "only the cancelled call's reports may come after its cancel:\n{stdout}");
        lines.drain(cancel + 1..end);
    }
    let expected = [
        "client ▸ initialize",
        "client ◂ server sdk-server 1.0.0 (protocol 2025-06-18)",
        "tools: echo, slow, ask_roots, stats",
        "resources: note://hello",
        "prompts: greet",
        "client ▸ tools/call echo {\"text\":\"hi\"}",
        "log    │ info    echo hi",
        "client ◂ echo: hi",
        "client ▸ tools/call slow {\"steps\":3}",
        "progress 1/3 step 1",
        "progress 2/3 step 2",
        "progress 3/3 step 3",
        "client ◂ slow: did 3 steps",
        "client ▸ tools/call slow {\"steps\":1000}",
        "progress 1/1000 step 1",
        "progress 2/1000 step 2",
        "client ▸ cancel after 2 report(s)",
        "client ◂ slow: cancelled",
        "client ▸ tools/call ask_roots {}",
        "server ▸ roots/list → file:///tmp/project",
        "client ◂ ask_roots: file:///tmp/project",
        "client ▸ tools/call stats {}",
        // The SDK server saw our `notifications/cancelled` before the next request.
        "client ◂ stats: {\"cancelled\":1}",
        "client ▸ tools/call echo {\"text\":7}",
    ];
    assert_eq!(&lines[..expected.len()], expected, "\n{stdout}\nstderr:\n{stderr}");
    let rest = &lines[expected.len()..];
    // The SDK validates the input against the tool's schema: a tool error, answered.
    assert!(rest[0].starts_with("client ◂ echo (the tool reports an error): "), "{stdout}");
    assert_eq!(
        &rest[1..],
        [
            "client ▸ resources/read note://hello",
            "client ◂ note://hello (text/plain): hello from the SDK",
            "client ▸ prompts/get greet",
            "client ◂ user: Say hello to Ada",
            "session closed: closed by this side; the child process exited by itself (exit status: 0)",
        ],
        "\n{stdout}"
    );
}
