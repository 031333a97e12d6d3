//! Every command line README.md shows is run here, exactly as written.
//!
//! [`the_readme_shows_only_commands_that_run_here`] reads README.md and collects its command
//! lines: each line of a ```` ```sh ```` block (a trailing `# comment` cut off) and each inline
//! code span whose first word, after any `NAME=value`, is a program ([`PROGRAMS`]) or a script
//! path (`dir/name.sh`). Each must appear in the list below, and each entry of the list becomes a
//! test that runs its lines with the very argv the README shows, from the repository's root.
//!
//! To show a new command line in the README, add an entry to the list:
//!
//! ```text
//! name: ["the exact line", "a second line it needs", …] => runner;
//! #[ignore = "why it is slow: .ci/run runs it (--ignored)"]
//! slow_name: ["a line that builds in release mode"] => runner;
//! ```
//!
//! where `runner` is one of the functions at the end of this file: [`to_end`] (each line runs to
//! its end with exit status 0), [`in_ci`] (the line is one of `.ci/run`'s), or one written for
//! the entry (a server driven by its clients, a tool installed first, output checked). An
//! example a line names by its path (`target/debug/examples/NAME`) is built before it runs.
//!
//! Commands that would run for minutes are bounded by environment knobs the README documents,
//! set for every command run here ([`KNOBS`]): benches run at a hundredth of their sizes, the
//! soak and fuzz scripts for a second or two. The argv stays the README's.
//!
//! The lines that build in release mode, install a tool or check every dependency (the benches,
//! the fuzz and soak scripts, `cargo doc`) are `#[ignore]`d with the reason: the README's test
//! command leaves them out, and `.ci/run` runs them with
//! `cargo test --workspace --all-features --test readme_commands -- --ignored`. An entry that
//! takes more than a few seconds on a warm build gets such an attribute before its name.

mod support;

use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};
use support::interop;

/// Declares the list of README command lines ([`COMMANDS`]) and one test per entry.
macro_rules! readme {
    ($($(#[$attr:meta])* $name:ident: [$($line:literal),+ $(,)?] => $runner:path;)+) => {
        /// Every command line the README may show, in the README's words.
        const COMMANDS: &[&str] = &[$($($line,)+)+];
        $(
            #[test]
            $(#[$attr])*
            fn $name() {
                $runner(&[$($line),+]);
            }
        )+
    };
}

readme! {
    demo: ["cargo run --example demo"] => to_end;
    middleware_auth: ["cargo run --example middleware_auth"] => to_end;
    workspace_tests: ["cargo test --workspace --all-features"] => in_ci;
    #[ignore = "checks every dependency to document ours: .ci/run runs it (--ignored)"]
    crate_docs: ["cargo doc --no-deps --open"] => to_end;
    acp_client: ["cargo run --example acp_client -- --deny cargo run --example acp_agent"] => acp_turn;
    lsp_client: ["cargo run --example lsp_client -- pylsp -- tests/interop/lsp/fixture/greet.py 9 24"] => lsp_hover;
    lsp_client_and_server: ["cargo run --example lsp_client -- -- target/debug/examples/lsp_server -- README.md 1 3"] => lsp_against_our_server;
    mcp_client_and_server: [r#"cargo run --example mcp_client -- --call count '{"to":3}' --read demo://readme -- target/debug/examples/mcp_server"#] => mcp_against_our_server;
    mcp_over_http: [
        "cargo run --features mcp-http --example mcp_server -- --http 127.0.0.1:3000",
        r#"cargo run --features mcp-http --example mcp_client -- --call count '{"to":3}' -- http://127.0.0.1:3000/mcp"#,
    ] => mcp_http_server_and_client;
    tcp: [
        "cargo run --example tcp_server",
        "cargo run --example tcp_client -- --name alice set color blue",
    ] => kv_server_and_client;
    #[ignore = "a release build of the benches and their peers: .ci/run runs it (--ignored)"]
    bench_streams: ["cargo bench -p jsonrpc-duplex-benches --bench streams"] => to_end;
    #[ignore = "a release build of the benches and their peers: .ci/run runs it (--ignored)"]
    bench_compare: ["cargo bench -p jsonrpc-duplex-benches --bench compare"] => compare_with_mixed_pairs;
    #[ignore = "a release build of the benches and their peers: .ci/run runs it (--ignored)"]
    bench_calls: ["cargo bench -p jsonrpc-duplex-benches --bench calls"] => to_end;
    #[ignore = "a release build of the benches and their peers: .ci/run runs it (--ignored)"]
    bench_connections: ["cargo bench -p jsonrpc-duplex-benches --bench connections"] => to_end;
    #[ignore = "a release build of the benches and their peers: .ci/run runs it (--ignored)"]
    bench_http: ["cargo bench -p jsonrpc-duplex-benches --bench http"] => to_end;
    #[ignore = "installs cargo-fuzz and builds the targets optimized: .ci/run runs it (--ignored)"]
    fuzz: ["cargo install cargo-fuzz", "fuzz/run.sh 180"] => fuzz_with_cargo_fuzz;
    #[ignore = "a release build of the attack example: .ci/run runs it (--ignored)"]
    mcp_http_attack: ["cargo run --release --features mcp-http --example mcp_http_attack"] => to_end;
    #[ignore = "a release build of the soak example: .ci/run runs it (--ignored)"]
    soak: ["scripts/soak.sh 3"] => to_end;
    #[ignore = "the compare bench in release, relinked in several layouts: .ci/run runs it (--ignored)"]
    layouts: ["scripts/layouts.sh 8 3"] => layouts_summary;
    loom: ["scripts/loom.sh"] => in_ci;
}

/// Environment set for every command run here; the README documents each knob.
const KNOBS: &[(&str, &str)] = &[
    // Every bench at a hundredth of its sizes, one repetition.
    ("BENCH_QUICK", "1"),
    // `fuzz/run.sh SECONDS`: one second per target instead.
    ("FUZZ_SECONDS", "1"),
    // `scripts/soak.sh MINUTES`: two seconds instead.
    ("SOAK_SECONDS", "2"),
    // `cargo doc --no-deps --open` opens the docs with `$BROWSER`: here, nothing opens them.
    ("BROWSER", "true"),
    ("CARGO_TERM_COLOR", "never"),
];

/// First words that make an inline code span a command line.
const PROGRAMS: &[&str] =
    &["cargo", "rustup", "npm", "npx", "node", "python", "python3", "pip", "pip3", "sh", "bash", "git", "make"];

/// The longest a command may take: the first `cargo bench` builds the bench crate and its peer
/// crates in release mode, which takes minutes on two busy cores.
const LIMIT: Duration = Duration::from_secs(20 * 60);

/// The repository's root (every command runs there).
fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn the_readme_shows_only_commands_that_run_here() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let mut shown = command_lines(&readme);
    // The terminal sessions are `jrpc`'s, run by the cli crate's own README test; they must all
    // stand in its section.
    let jrpc = readme.find(JRPC_SECTION).map(|start| {
        let rest = &readme[start + JRPC_SECTION.len()..];
        &readme[start..start + JRPC_SECTION.len() + rest.find("\n## ").unwrap_or(rest.len())]
    });
    let in_sessions = jrpc.map(command_lines).unwrap_or_default();
    shown.retain(|line| match line.strip_prefix("$ ") {
        None => true,
        Some(_) => {
            assert!(
                in_sessions.contains(line),
                "{line:?}: only the jrpc section ({JRPC_SECTION:?}) may show a terminal session; use a `sh` block"
            );
            false
        }
    });
    assert!(shown.len() >= COMMANDS.len(), "the scan found too little: {shown:?}");
    let unrun: Vec<_> = shown.iter().filter(|line| !COMMANDS.contains(&line.as_str())).collect();
    assert!(
        unrun.is_empty(),
        "README.md shows command lines that no test runs (add each to the list in tests/readme_commands.rs, \
         exactly as the README spells it): {unrun:#?}"
    );
    let gone: Vec<_> = COMMANDS.iter().filter(|line| !shown.iter().any(|s| s == *line)).collect();
    assert!(gone.is_empty(), "tests/readme_commands.rs runs lines README.md no longer shows: {gone:#?}");
}

/// The line of `.ci/run` that runs the `#[ignore]`d entries.
const IGNORED_IN_CI: &str = "cargo test --workspace --all-features --test readme_commands -- --ignored";

#[test]
fn ci_runs_the_ignored_lines() {
    in_ci(&[IGNORED_IN_CI]);
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    assert!(readme.contains("-- --ignored"), "README.md says which command lines the test command leaves to CI");
}

#[test]
fn the_scan_finds_blocks_and_spans_and_skips_the_rest() {
    let text = "```sh\ncargo run --example a   # a comment\n\ncargo test\n```\n\
                ```rust\nlet x = `cargo not this`;\n```\n\
                ```console\n$ jrpc show t.jsonl\n0.002 C→S req  initialize\n```\n\
                Run `cargo bench --bench b` or `scripts/x.sh 3`; `RUST_LOG=debug` alone, `Framing::ContentLength`, \
                `--bench c` and `.stdio()` are no commands, but `RUST_LOG=trace cargo run` is, and `cargo\n\
                doc` across two lines.\n";
    assert_eq!(
        command_lines(text),
        [
            "cargo run --example a",
            "cargo test",
            "$ jrpc show t.jsonl",
            "cargo bench --bench b",
            "scripts/x.sh 3",
            "RUST_LOG=trace cargo run",
            "cargo doc"
        ]
    );
}

#[test]
fn words_split_like_a_shell_does_for_simple_commands() {
    assert_eq!(
        split(r#"A=1 cargo run -- --prompt "two words" 'single' plain\ escaped"#),
        Split {
            env: vec![("A".into(), "1".into())],
            argv: ["cargo", "run", "--", "--prompt", "two words", "single", "plain escaped"].map(String::from).to_vec(),
        }
    );
}

// ---------------------------------------------------------------------------------------------
// Finding the command lines
// ---------------------------------------------------------------------------------------------

/// The command lines of a Markdown text, in order (see the module's documentation).
fn command_lines(markdown: &str) -> Vec<String> {
    let mut found = Vec::new();
    // Inside a fenced block: what kind.
    let mut fence: Option<Fence> = None;
    // The text since the last fence: inline spans may run across its lines.
    let mut text = String::new();
    for line in markdown.lines() {
        let trimmed = line.trim_start();
        if let Some(info) = trimmed.strip_prefix("```") {
            fence = match fence {
                Some(_) => None,
                None => {
                    spans(&std::mem::take(&mut text), &mut found);
                    Some(match info.trim() {
                        "sh" | "bash" | "shell" => Fence::Shell,
                        "console" => Fence::Console,
                        _ => Fence::Other,
                    })
                }
            };
            continue;
        }
        match fence {
            Some(Fence::Shell) => {
                let command = line.find(" #").map_or(line, |at| &line[..at]).trim();
                if !command.is_empty() {
                    found.push(command.to_owned());
                }
            }
            // A session: `$ ` lines are commands, the rest is what they printed.
            Some(Fence::Console) => {
                if let Some(command) = line.strip_prefix("$ ") {
                    found.push(format!("$ {}", command.trim()));
                }
            }
            Some(Fence::Other) => {}
            None => {
                text.push_str(line);
                text.push('\n');
            }
        }
    }
    spans(&text, &mut found);
    found
}

/// The kinds of fenced blocks.
#[derive(Clone, Copy)]
enum Fence {
    /// Every line is a command.
    Shell,
    /// A terminal session: `$ command` lines and their output.
    Console,
    /// Not commands (Rust, JSON, …).
    Other,
}

/// The README's section on `jrpc`: `cli/tests/readme.rs` installs the tool and runs every `$ `
/// line of its `console` blocks exactly as written, comparing their output with the README's.
const JRPC_SECTION: &str = "## See the conversation: `jrpc`";

/// The inline code spans of `text` that are command lines (a line break inside one is a space).
fn spans(text: &str, found: &mut Vec<String>) {
    for span in text.split('`').skip(1).step_by(2) {
        let span = span.split_whitespace().collect::<Vec<_>>().join(" ");
        if is_command(&span) {
            found.push(span);
        }
    }
}

/// Whether an inline code span is a command line.
fn is_command(span: &str) -> bool {
    let first = span.split_whitespace().find(|w| !is_assignment(w));
    first.is_some_and(|w| PROGRAMS.contains(&w) || (w.contains('/') && w.ends_with(".sh")))
}

/// `NAME=value`.
fn is_assignment(word: &str) -> bool {
    word.split_once('=')
        .is_some_and(|(name, _)| !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
}

/// A command line's environment assignments and argv.
#[derive(Debug, PartialEq)]
struct Split {
    env: Vec<(String, String)>,
    argv: Vec<String>,
}

/// Split a simple command line as a POSIX shell would (quotes, backslashes); anything a shell
/// would do more with (pipes, redirections, `;`, `&&`, `$`, globs) is refused, so every README
/// command is a simple one.
fn split(line: &str) -> Split {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' => {
                if let Some(w) = word.take() {
                    words.push(w);
                }
            }
            '"' => {
                let w = word.get_or_insert_with(String::new);
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => w.extend(chars.next()),
                        Some('$' | '`') => panic!("{line:?}: no expansions in README commands"),
                        Some(c) => w.push(c),
                        None => panic!("{line:?}: an unclosed quote"),
                    }
                }
            }
            '\'' => {
                let w = word.get_or_insert_with(String::new);
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => w.push(c),
                        None => panic!("{line:?}: an unclosed quote"),
                    }
                }
            }
            '\\' => word.get_or_insert_with(String::new).extend(chars.next()),
            '|' | '&' | ';' | '<' | '>' | '$' | '`' | '*' | '?' | '(' | ')' => {
                panic!("{line:?}: README commands must be simple commands (found {c:?})")
            }
            c => word.get_or_insert_with(String::new).push(c),
        }
    }
    words.extend(word);
    let assignments = words.iter().take_while(|w| is_assignment(w)).count();
    let argv = words.split_off(assignments);
    let env = words.into_iter().filter_map(|w| w.split_once('=').map(|(k, v)| (k.to_owned(), v.to_owned()))).collect();
    Split { env, argv }
}

// ---------------------------------------------------------------------------------------------
// Running them
// ---------------------------------------------------------------------------------------------

/// `line` as a command: its argv, its `NAME=value`s and [`KNOBS`], stdin closed, in its own
/// process group (so that a bounded wait can end all it started). An example a line names by its
/// path (`target/debug/examples/NAME`, say as the server a client spawns) is built first.
fn command(line: &str) -> Command {
    let Split { env, argv } = split(line);
    for name in argv.iter().filter_map(|word| word.strip_prefix("target/debug/examples/")) {
        interop::example(name);
    }
    let (program, args) = argv.split_first().unwrap_or_else(|| panic!("{line:?}: no program"));
    let mut cmd = Command::new(program);
    cmd.args(args).current_dir(root()).stdin(Stdio::null());
    cmd.envs(KNOBS.iter().copied()).envs(env);
    #[cfg(unix)]
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    cmd
}

/// What a finished command printed.
struct Output {
    status: ExitStatus,
    stdout: String,
    stderr: String,
}

impl Output {
    /// Panic unless it exited 0 and its stdout has each of `wanted`.
    fn expect(&self, line: &str, wanted: &[&str]) {
        let missing: Vec<_> = wanted.iter().filter(|w| !self.stdout.contains(**w)).collect();
        assert!(
            self.status.success() && missing.is_empty(),
            "`{line}` failed ({}; missing from stdout: {missing:?})\nstdout:\n{}\nstderr:\n{}",
            self.status,
            tail(&self.stdout),
            tail(&self.stderr)
        );
    }
}

/// The end of a long output.
fn tail(text: &str) -> &str {
    let start = text.len().saturating_sub(6000);
    let start = (start..text.len()).find(|&i| text.is_char_boundary(i)).unwrap_or(text.len());
    &text[start..]
}

/// Everything `reader` yields, on a thread of its own (so that no pipe ever fills).
fn collect(mut reader: impl Read + Send + 'static) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = reader.read_to_end(&mut bytes);
        String::from_utf8_lossy(&bytes).into_owned()
    })
}

/// Run `cmd` (from [`command`]) to its end, within [`LIMIT`]. Its time goes to stderr past the
/// test harness's capture (`.ci/run`'s log says what each line took, waits for cargo's build
/// lock included).
fn run(line: &str, mut cmd: Command) -> Output {
    let start = Instant::now();
    let mut child =
        cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap_or_else(|e| panic!("`{line}`: {e}"));
    let stdout = collect(child.stdout.take().unwrap());
    let stderr = collect(child.stderr.take().unwrap());
    let status = wait_within(&mut child, LIMIT).unwrap_or_else(|| panic!("`{line}` did not finish within {LIMIT:?}"));
    let _ = writeln!(std::io::stderr(), "[readme] {} s: {line}", start.elapsed().as_secs());
    Output { status, stdout: stdout.join().unwrap(), stderr: stderr.join().unwrap() }
}

/// The child's exit status, or `None` (and it and its process group killed) after `limit`.
fn wait_within(child: &mut Child, limit: Duration) -> Option<ExitStatus> {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return Some(status);
        }
        if Instant::now() >= deadline {
            signal_group(child, "KILL");
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The `PATH` with `dir` first.
fn path_with(dir: &Path) -> std::ffi::OsString {
    let rest = std::env::var_os("PATH").unwrap_or_default();
    std::env::join_paths(std::iter::once(dir.to_owned()).chain(std::env::split_paths(&rest))).unwrap()
}

/// Send `signal` to the child's whole process group (what a terminal's Ctrl-C does for INT).
fn signal_group(child: &Child, signal: &str) {
    if cfg!(unix) {
        let _ = Command::new("kill").args([&format!("-{signal}"), "--", &format!("-{}", child.id())]).status();
    }
}

// ---------------------------------------------------------------------------------------------
// Runners
// ---------------------------------------------------------------------------------------------

/// Each line runs to its end and exits 0.
fn to_end(lines: &[&str]) {
    for line in lines {
        run(line, command(line)).expect(line, &[]);
    }
}

/// `scripts/layouts.sh`: its summary names each row of ours it read back from every layout's runs.
/// With `COMPARE_MODES` set as well (the README's other way to run it), so that row A's modes
/// go through the bench's table and the summary's reading of it too.
fn layouts_summary(lines: &[&str]) {
    for line in lines {
        let mut cmd = command(line);
        cmd.env("COMPARE_MODES", "1");
        let wanted =
            ["| A sequential: calls/s | ours #[rpc] |", "| A: share of calls slow | ours #[rpc] |", "| 8 × 3 |"];
        run(line, cmd).expect(line, &wanted);
    }
}

/// The compare bench, with its mixed pairs (`COMPARE_MIXED`) in the link tables: each table
/// heads and runs them beside ours and the loop.
fn compare_with_mixed_pairs(lines: &[&str]) {
    for line in lines {
        let mut cmd = command(line);
        cmd.env("COMPARE_MIXED", "1");
        let wanted = ["| hand-written | loop client, our server | our client, loop server |", "Mixed pairs:"];
        run(line, cmd).expect(line, &wanted);
    }
}

/// The line is one of `.ci/run`'s, as written or behind its `step` timer: CI runs it.
fn in_ci(lines: &[&str]) {
    let ci = std::fs::read_to_string(root().join(".ci/run")).unwrap();
    for line in lines {
        let runs = |l: &str| {
            let l = l.trim();
            l == *line || l.strip_prefix("step ") == Some(line)
        };
        assert!(ci.lines().any(runs), "`{line}` is not a line of .ci/run:\n{ci}");
    }
}

/// An ACP turn against the example agent, to its stop reason.
fn acp_turn(lines: &[&str]) {
    for line in lines {
        // The agent reads README.md (the default prompt) and asks to write a summary: denied.
        run(line, command(line)).expect(line, &["stop reason"]);
    }
}

/// The LSP client against pylsp (from the pinned venv the LSP interop test uses, put first on
/// the `PATH`), to a hover over `greet`.
fn lsp_hover(lines: &[&str]) {
    let pylsp = interop::pylsp();
    let path = path_with(pylsp.parent().unwrap());
    for line in lines {
        let mut cmd = command(line);
        cmd.env("PATH", &path);
        run(line, cmd)
            .expect(line, &["client ◂ hover:", "greet(name: str) -> str", "exited by itself (exit status: 0)"]);
    }
}

/// The LSP client against the `lsp_server` example, to a hover, and the server's clean exit.
fn lsp_against_our_server(lines: &[&str]) {
    for line in lines {
        // The hover over the title's first word counts it in the note.
        let wanted = ["client ◂ hover:", "**jsonrpc**", "exited by itself (exit status: 0)"];
        run(line, command(line)).expect(line, &wanted);
    }
}

/// The MCP client against the `mcp_server` example: a tool call with progress, a resource.
fn mcp_against_our_server(lines: &[&str]) {
    for line in lines {
        let wanted = [
            "client ◂ server jsonrpc-duplex-mcp-server",
            "tools: add, greet, count, list_roots",
            "progress 3/3 counted to 3",
            "client ◂ count: counted to 3",
            "client ◂ demo://readme (text/markdown): # jsonrpc-duplex MCP demo",
        ];
        run(line, command(line)).expect(line, &wanted);
    }
}

/// The MCP server over HTTP (the first line) in the background until it says where it listens,
/// the client line against it, then Ctrl-C for the server, which shuts down cleanly.
fn mcp_http_server_and_client(lines: &[&str]) {
    let (server_line, clients) = lines.split_first().unwrap();
    let mut server = command(server_line).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let stderr = collect(server.stderr.take().unwrap());
    let (tx, rx) = mpsc::channel();
    let stdout = BufReader::new(server.stdout.take().unwrap());
    std::thread::spawn(move || {
        for line in stdout.lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    match rx.recv_timeout(LIMIT) {
        Ok(line) if line.starts_with("listening on http://127.0.0.1:3000/mcp") => {}
        other => {
            signal_group(&server, "KILL");
            panic!("`{server_line}` did not say it listens ({other:?}):\n{}", tail(&stderr.join().unwrap()));
        }
    }
    for line in clients {
        let wanted =
            ["client ◂ server jsonrpc-duplex-mcp-server", "progress 3/3 counted to 3", "client ◂ count: counted to 3"];
        run(line, command(line)).expect(line, &wanted);
    }
    signal_group(&server, "INT");
    let status = wait_within(&mut server, Duration::from_secs(30));
    assert!(status.is_some_and(|s| s.success()), "`{server_line}` did not shut down cleanly on Ctrl-C ({status:?})");
}

/// The key-value server (the first line) in the background, each client line against it, then
/// Ctrl-C for the server, which shuts down cleanly.
fn kv_server_and_client(lines: &[&str]) {
    let (server_line, clients) = lines.split_first().unwrap();
    let mut server = command(server_line).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let stdout = collect(server.stdout.take().unwrap());
    // Its stderr, line by line, until it says it is serving.
    let (tx, rx) = mpsc::channel();
    let stderr = BufReader::new(server.stderr.take().unwrap());
    std::thread::spawn(move || {
        for line in stderr.lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let mut seen = String::new();
    let deadline = Instant::now() + LIMIT;
    loop {
        match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(line) if line.contains("serving the key-value store") => break,
            Ok(line) => seen += &format!("{line}\n"),
            Err(_) => {
                signal_group(&server, "KILL");
                panic!("`{server_line}` never said it was serving:\n{}", tail(&seen));
            }
        }
    }
    for line in clients {
        run(line, command(line)).expect(line, &["color = blue"]);
    }
    signal_group(&server, "INT");
    let status = wait_within(&mut server, Duration::from_secs(30));
    let rest: String = rx.try_iter().map(|l| l + "\n").collect();
    let out = stdout.join().unwrap();
    assert!(
        status.is_some_and(|s| s.success()),
        "`{server_line}` did not shut down cleanly on Ctrl-C ({status:?})\nstdout:\n{out}\nstderr:\n{seen}{rest}"
    );
}

/// `cargo install cargo-fuzz` (through `CARGO_INSTALL_ROOT`, into `jsonrpc-duplex-readme-tools`
/// in the machine's temporary directory, unless it is there already), then the fuzz script with
/// it on the `PATH`. Kept outside the checkout: `.ci/run` starts from a clean one, and building
/// the tool again on every run took 75 to 125 s of its 30 minutes; a fresh machine builds it once.
fn fuzz_with_cargo_fuzz(lines: &[&str]) {
    let (install, runs) = lines.split_first().unwrap();
    let tools = std::env::temp_dir().join("jsonrpc-duplex-readme-tools");
    let bin = tools.join("bin");
    if !bin.join(format!("cargo-fuzz{}", std::env::consts::EXE_SUFFIX)).is_file() {
        let mut cmd = command(install);
        cmd.env("CARGO_INSTALL_ROOT", &tools);
        run(install, cmd).expect(install, &[]);
    }
    let path = path_with(&bin);
    for line in runs {
        let mut cmd = command(line);
        cmd.env("PATH", &path);
        run(line, cmd).expect(line, &["frame_content_length:", "frame_newline:", "parse_message:", "connection:"]);
    }
}
