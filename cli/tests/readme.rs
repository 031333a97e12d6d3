//! The command lines of the README's `jrpc` section, run exactly as written, and their output
//! checked against what the README shows.
//!
//! - `cargo install --locked --path cli` runs from the workspace root, installing into
//!   `target/readme-jrpc/install` (`CARGO_INSTALL_ROOT`); it builds in the workspace's
//!   `target/release`, as it does for a user (so it reuses what the benches' release build made);
//!   the `jrpc` commands that follow are that installed binary.
//! - `trace.jsonl` is recorded first the way the README says: the `lsp_client` example as the
//!   editor, asking pylsp for a hover through `jrpc tap --out trace.jsonl -- pylsp`.
//! - Each `$ …` line of a `console` block runs with `sh -c` in a scratch directory holding the
//!   trace and `greet.py`, with pylsp, pyright and the installed `jrpc` on the `PATH` and a
//!   110-column terminal (`COLUMNS`). Every output line the README shows must be in the real
//!   output, compared with the numbers masked (times, latencies, sizes and ids of processes vary)
//!   and, for conversation lines, up to their message (which the width cuts where the numbers
//!   before it put the cut).
//!
//! It takes minutes (a release build of the cli, pylsp and pyright installed), so the README's
//! test command leaves it out (`#[ignore]`) and `.ci/run` runs it:
//! `cargo test --workspace --all-features --test readme -- --ignored`.
//!
//! `JRPC_README_SHOW=1` prints each command's real output (to update the README with).

mod support;

use std::path::Path;
use std::time::Duration;

use support::{Scratch, interop};

/// The install builds the CLI in release: minutes the first time.
const INSTALL: Duration = Duration::from_secs(1200);

/// One `$ command` of the README and the lines shown after it.
struct Example {
    command: String,
    shown: Vec<String>,
}

fn section(readme: &str) -> &str {
    let start = readme.find("## See the conversation: `jrpc`").expect("the README's jrpc section");
    let rest = &readme[start..];
    let end = rest[3..].find("\n## ").map_or(rest.len(), |e| e + 3);
    &rest[..end]
}

fn examples(section: &str) -> Vec<Example> {
    let mut examples: Vec<Example> = Vec::new();
    let mut in_console = false;
    for line in section.lines() {
        if line.starts_with("```") {
            in_console = line == "```console";
            continue;
        }
        if !in_console {
            continue;
        }
        match line.strip_prefix("$ ") {
            Some(command) => examples.push(Example { command: command.to_owned(), shown: Vec::new() }),
            None => examples.last_mut().expect("output after a command").shown.push(line.to_owned()),
        }
    }
    examples
}

/// A line as compared: blanks collapsed, a conversation line cut before its message, and the
/// numbers that vary from run to run masked: times and latencies (`0.784`, `583.9ms`), sizes
/// (`331 B`), and the count of pylsp's diagnostics. Other counts, ids and exit codes stay.
fn normalized(line: &str) -> String {
    let trimmed = line.trim();
    let conversation =
        trimmed.starts_with(|c: char| c.is_ascii_digit()) && (line.contains(" C→S ") || line.contains(" S→C "));
    let line = match trimmed.find(" {") {
        Some(body) if conversation => &trimmed[..body],
        _ => trimmed,
    };
    let chars: Vec<char> = line.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_ascii_digit() && !(i > 0 && chars[i - 1].is_alphanumeric()) {
            let start = i;
            while i < chars.len() && (chars[i].is_ascii_digit() || chars[i] == '.') {
                i += 1;
            }
            let number: String = chars[start..i].iter().collect();
            let unit: String = chars[i..].iter().collect::<String>().trim_start().chars().take(3).collect();
            // pylsp sends its second `publishDiagnostics` (after `didClose`) only when it comes
            // before `shutdown`: how many there are varies.
            let varies = number.contains('.')
                || ["ms", "µs", "s)", "B", "KiB", "MiB"].iter().any(|u| unit.starts_with(u))
                || line.contains("publishDiagnostics");
            out.push_str(if varies { "#" } else { &number });
            if varies {
                // A duration's unit goes with it: `583.9ms` and `1.45s` are the same shape.
                while i < chars.len() && (chars[i].is_ascii_lowercase() || chars[i] == 'µ') {
                    i += 1;
                }
            }
            continue;
        }
        if !(c == ' ' && out.ends_with(' ')) {
            out.push(c);
        }
        i += 1;
    }
    out
}

async fn sh(command: &str, dir: &Path, path: &str, limit: Duration) -> support::Output {
    let mut sh = tokio::process::Command::new("sh");
    sh.arg("-c").arg(command).current_dir(dir).env("PATH", path).env("COLUMNS", "110").env("NO_COLOR", "1");
    support::run_with_limit(sh, b"", limit).await
}

#[tokio::test]
#[ignore = "a release install of the cli and pylsp/pyright (minutes): .ci/run runs it (--ignored)"]
async fn the_readme_commands_run_as_written() {
    let workspace = interop::workspace_dir();
    let readme = std::fs::read_to_string(workspace.join("README.md")).expect("README.md");
    let examples = examples(section(&readme));
    assert!(examples.len() >= 6, "the section's examples: {}", examples.len());
    let show = std::env::var_os("JRPC_README_SHOW").is_some();

    // The install, exactly as written, into a directory of the target dir.
    let target = interop::profile_dir().parent().expect("target/").join("readme-jrpc");
    let install = examples.iter().find(|e| e.command.starts_with("cargo install")).expect("an install line");
    let mut cargo = tokio::process::Command::new("sh");
    cargo.arg("-c").arg(&install.command).current_dir(&workspace).env("CARGO_INSTALL_ROOT", target.join("install"));
    let out = support::run_with_limit(cargo, b"", INSTALL).await;
    assert!(out.status.success(), "`{}` failed: {out:?}", install.command);
    let bin = target.join("install").join("bin");
    assert!(bin.join("jrpc").is_file(), "no jrpc in {}", bin.display());

    let pylsp_bin = interop::pylsp().parent().expect("the venv's bin").to_owned();
    let node_bin =
        interop::pyright().ancestors().nth(2).map(|node_modules| node_modules.join(".bin")).expect("node_modules/.bin");
    let path = std::env::join_paths(
        [bin.clone(), pylsp_bin, node_bin]
            .into_iter()
            .chain(std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())),
    )
    .expect("a PATH");
    let path = path.to_str().expect("a UTF-8 PATH").to_owned();

    // The trace the README reads: the lsp_client example as the editor, through the tap.
    let scratch = Scratch::new("readme");
    std::fs::copy(interop::interop_dir("lsp").join("fixture").join("greet.py"), scratch.path("greet.py"))
        .expect("greet.py");
    let mut editor = tokio::process::Command::new(interop::example("lsp_client"));
    editor.args(["--", "jrpc", "tap", "--out", "trace.jsonl", "--", "pylsp", "--", "greet.py", "9", "24"]);
    editor.current_dir(&scratch.dir).env("PATH", &path);
    let out = support::run(editor, b"").await;
    assert!(out.status.success(), "recording the trace failed: {out:?}");

    for example in examples.iter().filter(|e| e.command.starts_with("jrpc ")) {
        let out = sh(&example.command, &scratch.dir, &path, support::RUN).await;
        if show {
            println!("$ {}\n{}{}", example.command, out.stdout, out.stderr);
        }
        let expected_code = if example.command.contains("pyright-langserver") { 1 } else { 0 };
        assert_eq!(out.code(), Some(expected_code), "`{}`: {out:?}", example.command);
        let real: Vec<String> = out.stdout.lines().chain(out.stderr.lines()).map(normalized).collect();
        // `…` stands for lines the README leaves out.
        for line in example.shown.iter().filter(|l| !l.trim().is_empty() && l.trim() != "…" && !show) {
            assert!(
                real.contains(&normalized(line)),
                "`{}` printed no line like\n{line}\nbut:\n{}{}",
                example.command,
                out.stdout,
                out.stderr
            );
        }
    }
    assert!(scratch.path("trace.html").is_file(), "the HTML page was written");
}

#[test]
fn lines_compare_without_their_numbers_and_messages() {
    assert_eq!(
        normalized(r#"    0.321 S→C ok     #0 initialize (318.5ms) {"jsonrpc":"2.0","id":0,"result":{"capa…"#),
        "# S→C ok #0 initialize (#)"
    );
    assert_eq!(
        normalized("    2.201 S→C ok     #1 textDocument/hover (1.45s) {"),
        "# S→C ok #1 textDocument/hover (#)"
    );
    assert_eq!(normalized("initialize    client   1   318.5ms  1483 B"), "initialize client 1 # # B");
    assert_eq!(normalized("3 of 3 answers the same, 0 differ"), "3 of 3 answers the same, 0 differ");
    assert_eq!(
        normalized("textDocument/publishDiagnostics  server   2   304 B"),
        "textDocument/publishDiagnostics server # # B"
    );
}
