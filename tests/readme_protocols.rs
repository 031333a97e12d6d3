//! The command lines of the README's protocol sections, run exactly as written there (from the
//! repository's root, through `sh`), so that a reader who copies one gets what it promises.

#[path = "support/interop.rs"]
mod interop;

use std::process::Stdio;
use std::time::Duration;

use tokio::process::Command;

const RUN: Duration = Duration::from_secs(300);

/// The README's line that starts with `prefix`, checked to be `expected` word for word.
fn readme_line(expected: &str) -> String {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).expect("README.md");
    let prefix: String = expected.split(" -- ").next().unwrap_or(expected).to_owned();
    let found: Vec<&str> = readme.lines().filter(|l| l.starts_with(&prefix)).collect();
    assert_eq!(found, [expected], "the README's command line changed: update this test with it");
    expected.to_owned()
}

/// Run `line` with `sh -c` in the repository's root; it must succeed; its stdout.
async fn run(line: &str) -> String {
    let mut cmd = Command::new("sh");
    cmd.arg("-c").arg(line).current_dir(env!("CARGO_MANIFEST_DIR"));
    cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).kill_on_drop(true);
    let out = tokio::time::timeout(RUN, cmd.output())
        .await
        .unwrap_or_else(|_| panic!("`{line}` did not finish within {RUN:?}"))
        .expect("sh could not be run");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "`{line}` failed ({}):\n{stdout}\nstderr:\n{stderr}", out.status);
    stdout
}

#[tokio::test]
async fn the_mcp_line_runs_the_client_against_the_server_example() {
    let line = readme_line(
        r#"cargo run --example mcp_client -- --call count '{"to":3}' --read demo://readme -- target/debug/examples/mcp_server"#,
    );
    // The line names the server's debug build.
    interop::example("mcp_server");
    let stdout = run(&line).await;
    for expected in [
        "client ◂ server jsonrpc-duplex-mcp-server",
        "tools: add, greet, count, list_roots",
        "progress 3/3 counted to 3",
        "client ◂ count: counted to 3",
        "client ◂ demo://readme (text/markdown): # jsonrpc-duplex MCP demo",
    ] {
        assert!(stdout.contains(expected), "{expected:?} missing:\n{stdout}");
    }
}

#[tokio::test]
#[ignore = "needs the fix of issue 13: lsp_server returns from main after `exit` but lingers until its stdin closes"]
async fn the_lsp_line_runs_the_client_against_the_server_example() {
    let line = readme_line("cargo run --example lsp_client -- -- target/debug/examples/lsp_server -- README.md 3 13");
    interop::example("lsp_server");
    let stdout = run(&line).await;
    for expected in ["client ◂ hover:", "**between**", "server exited: the child process exited (exit status: 0)"] {
        assert!(stdout.contains(expected), "{expected:?} missing:\n{stdout}");
    }
}
