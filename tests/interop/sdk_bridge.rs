//! `examples/sdk_bridge/`: one Rust CLI, the SDKs generated for it, and a program per language
//! that drives it (the `openrpc` feature):
//!
//! - the committed SDKs are what the traits generate now (a stale file fails);
//! - the generated Python (the bridge's, and one of `examples/files/` with stream arguments,
//!   object params and aliases) passes `mypy --strict` (mypy pinned in
//!   `tests/interop/sdk/requirements.txt`, installed into a venv under `target/`);
//! - the generated Go package and `examples/sdk_bridge/go/drive` pass `go vet` (Go 1.19, Debian's
//!   golang-go, installed with `apt-get` when missing);
//! - `examples/sdk_bridge/python/drive.py` (on plain `python3`), the Go drive program and the
//!   TypeScript one (`ts/drive.ts`, compiled with `tsc --strict`; on the generated `bridge.ts` and
//!   spawn runtime, whose connection is one of its own behind vscode-jsonrpc's `MessageConnection` interface) each drive the CLI over stdio and over TCP: every event of a turn before its answer, the SDK's tool called and answered, a
//!   stream pulled, a cancel answered `-32800` within 1 s (TypeScript: from a
//!   `CancellationTokenSource`), the typed error with its data, 64-bit integers whole (TypeScript:
//!   exact to 2^53 - 1, an answer beyond refused), `stop()` returning the exit status;
//! - the CLI exits by itself within 2 s when its SDK is SIGKILLed in the middle of a call, over
//!   stdio and over TCP;
//! - the Python runtime against a peer written by hand on raw bytes
//!   (`tests/interop/sdk/runtime_test.py`): bad JSON, unknown methods, bad params, a handler's
//!   exception, cancels (before and while a handler runs), unknown stream tokens, stray and
//!   malformed answers, framing errors, EOF, newline framing;
//! - the Go runtime the same way (`go/bridge/runtime_test.go`, `go test`), and the TypeScript
//!   spawn runtime's frame reader and connection (`ts/drive.ts --mode frames`, `--mode connection`);
//! - `CliTransport`: its arguments, its address line, its end with stdin.
//!
//! Needs `python3` (>= 3.11) with `venv`, `node` (>= 18) and npm, and `go` or root for `apt-get`. Every wait is bounded.
#![cfg(all(feature = "openrpc", unix))]

#[path = "../../examples/files/protocol.rs"]
mod files_protocol;
#[path = "../../examples/sdk_bridge/generate.rs"]
mod generate;
#[path = "../../examples/sdk_bridge/protocol.rs"]
mod protocol;

use crate::support;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use jsonrpc_duplex::openrpc::write_or_check;
use jsonrpc_duplex::{ADDRESS_LINE_PREFIX, CliTransport, python};
use serde_json::Value;
use support::interop;

fn bridge_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples").join("sdk_bridge")
}

fn cli() -> PathBuf {
    interop::example("sdk_bridge")
}

#[test]
fn committed_sdks_are_what_the_traits_generate() {
    for (path, contents) in generate::outputs() {
        write_or_check(&path, &contents, true)
            .unwrap_or_else(|e| panic!("{e} (run `cargo run --features openrpc --example sdk_bridge_codegen`)"));
    }
    let again = generate::outputs();
    assert_eq!(again, generate::outputs(), "rendering is not stable");
}

#[test]
fn generated_python_passes_mypy_strict() {
    let bin = interop::python_venv("sdk", &interop::interop_dir("sdk").join("requirements.txt"));
    // A second module, generated here: the file service's client and the editor to serve.
    let dir = interop::profile_dir().join("sdk-python-files");
    std::fs::create_dir_all(&dir).expect("a directory for the generated module");
    let files =
        python::Module::new().client::<files_protocol::FilesApi>().server::<files_protocol::EditorApi>().render();
    std::fs::write(dir.join("files.py"), files).expect("files.py written");
    std::fs::write(dir.join(format!("{}.py", python::RUNTIME_MODULE)), python::RUNTIME).expect("runtime written");
    let cache = interop::profile_dir().join("sdk-mypy-cache");
    for (what, target) in [("the bridge's SDK and drive.py", bridge_dir().join("python")), ("files.py", dir)] {
        let out = Command::new(bin.join("mypy"))
            .args(["--strict", "--no-error-summary", "--cache-dir"])
            .arg(&cache)
            .arg(".")
            .current_dir(&target)
            .stdin(Stdio::null())
            .output()
            .expect("mypy runs");
        assert!(
            out.status.success(),
            "mypy --strict on {what} failed:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// The README's Python, TypeScript and Go blocks are the lines between the markers of
/// `examples/sdk_bridge/`'s `python/readme_snippet.py`, `ts/readme.ts` and `go/readme/readme.go`,
/// which the checks here type-check with the generated SDKs as a user's program would
/// (`mypy --strict` on the Python directory, `tsc --strict` on the TypeScript project, `go vet`
/// on the Go module): what a user copies from the README builds.
#[test]
fn the_readme_sdk_blocks_are_the_type_checked_ones() {
    let readme = support::readme::text();
    for (fence, file, indent, comment) in [
        ("```python", "python/readme_snippet.py", "    ", "#"),
        ("```ts", "ts/readme.ts", "  ", "//"),
        ("```go", "go/readme/readme.go", "\t", "//"),
    ] {
        let blocks = support::readme::blocks(&readme, fence);
        assert_eq!(blocks.len(), 1, "README.md has {} {fence} blocks, this test checks one", blocks.len());
        let text = std::fs::read_to_string(bridge_dir().join(file)).expect("the checked file");
        let here = support::readme::marked(&text, comment, indent);
        assert_eq!(here.len(), 1, "{file} has {} marked blocks, this test checks one", here.len());
        assert_eq!(blocks[0], here[0], "README.md's {fence} block differs from the one {file} checks");
    }
}

/// A language's drive program.
#[derive(Clone, Copy, Debug)]
enum Lang {
    Python,
    Go,
    TypeScript,
}

/// The TypeScript program, compiled once (`tsc --strict`, after `npm ci` when needed).
fn ts_drive() -> PathBuf {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BUILT
        .get_or_init(|| {
            let dir = bridge_dir().join("ts");
            interop::npm_ready_at(&dir, &["vscode-jsonrpc", "typescript", "@types/node"]);
            let tsc = dir.join("node_modules").join("typescript").join("bin").join("tsc");
            let run = Command::new("node")
                .arg(tsc)
                .args(["-p", "."])
                .current_dir(&dir)
                .stdin(Stdio::null())
                .output()
                .expect("node runs");
            assert!(
                run.status.success(),
                "tsc -p examples/sdk_bridge/ts failed:\n{}{}",
                String::from_utf8_lossy(&run.stdout),
                String::from_utf8_lossy(&run.stderr)
            );
            dir.join("out").join("drive.js")
        })
        .clone()
}

/// The Go program, built once (after `go vet`) into `target/`.
fn go_drive() -> PathBuf {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BUILT
        .get_or_init(|| {
            let go = interop::go();
            let dir = bridge_dir().join("go");
            let out = interop::profile_dir().join("sdk-bridge-go-drive");
            for args in [vec!["vet", "./..."], vec!["build", "-o", out.to_str().expect("a UTF-8 path"), "./drive"]] {
                let run =
                    Command::new(&go).args(&args).current_dir(&dir).stdin(Stdio::null()).output().expect("go runs");
                assert!(
                    run.status.success(),
                    "go {args:?} failed:\n{}{}",
                    String::from_utf8_lossy(&run.stdout),
                    String::from_utf8_lossy(&run.stderr)
                );
            }
            out
        })
        .clone()
}

#[test]
fn generated_go_for_the_files_example_passes_go_vet() {
    // Stream arguments, object params, aliases, progress and an enum: what the bridge lacks.
    let go = interop::go();
    let dir = interop::profile_dir().join("sdk-go-files");
    let package = dir.join("files");
    std::fs::create_dir_all(&package).expect("a directory for the generated package");
    std::fs::write(dir.join("go.mod"), "module filesexample\n\ngo 1.19\n").expect("go.mod written");
    let module = jsonrpc_duplex::golang::Module::new("files")
        .client::<files_protocol::FilesApi>()
        .server::<files_protocol::EditorApi>();
    std::fs::write(package.join("files.go"), module.render()).expect("files.go written");
    std::fs::write(package.join(jsonrpc_duplex::golang::RUNTIME_FILE), module.runtime()).expect("runtime written");
    let run =
        Command::new(&go).args(["vet", "./..."]).current_dir(&dir).stdin(Stdio::null()).output().expect("go runs");
    assert!(
        run.status.success(),
        "go vet on the files example's package failed:\n{}{}",
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr)
    );
}

/// The command that runs `lang`'s drive program with `args`, the CLI last.
fn drive_command(lang: Lang, args: &[&str]) -> Command {
    match lang {
        Lang::Python => {
            let mut cmd = Command::new("python3");
            cmd.arg("drive.py").arg(cli()).args(args).current_dir(bridge_dir().join("python"));
            cmd
        }
        Lang::TypeScript => {
            let mut cmd = Command::new("node");
            cmd.arg(ts_drive()).arg(cli()).args(args);
            cmd
        }
        Lang::Go => {
            let mut cmd = Command::new(go_drive());
            // Go's flags come before the CLI.
            for pair in args.chunks(2) {
                cmd.arg(pair[0].replacen("--", "-", 1));
                cmd.args(&pair[1..]);
            }
            cmd.arg(cli());
            cmd
        }
    }
}

/// Run `lang`'s drive program with `args`; its one JSON line.
fn drive(lang: Lang, args: &[&str]) -> Value {
    let mut child = drive_command(lang, args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python3 runs (the SDK tests need python3 >= 3.11 on the PATH)");
    let deadline = Instant::now() + Duration::from_secs(60);
    while child.try_wait().expect("wait").is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("{lang:?} drive {args:?} did not finish within 60 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().expect("output");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout.lines().last().unwrap_or_default();
    serde_json::from_str(line).unwrap_or_else(|e| {
        panic!("{lang:?} drive {args:?} printed {stdout:?} ({e}); stderr:\n{}", String::from_utf8_lossy(&out.stderr))
    })
}

fn assert_checks(report: &Value) {
    assert_eq!(report["ok"], true, "{report}");
    let checks: Vec<&str> = report["checks"].as_array().expect("checks").iter().filter_map(Value::as_str).collect();
    for wanted in ["ping", "turn:", "history:", "cancel:", "task cancel", "typed error", "64-bit", "stop:"] {
        assert!(checks.iter().any(|c| c.starts_with(wanted)), "no check {wanted:?} in {checks:?}");
    }
}

#[test]
fn python_program_drives_the_cli_over_stdio() {
    assert_checks(&drive(Lang::Python, &["--transport", "stdio"]));
}

#[test]
fn python_program_drives_the_cli_over_stdio_with_newline_framing() {
    assert_checks(&drive(Lang::Python, &["--transport", "stdio", "--framing", "newline"]));
}

#[test]
fn python_program_drives_the_cli_over_tcp() {
    assert_checks(&drive(Lang::Python, &["--transport", "tcp"]));
}

#[test]
fn typescript_program_drives_the_cli_over_stdio() {
    assert_checks(&drive(Lang::TypeScript, &["--transport", "stdio"]));
}

#[test]
fn typescript_program_drives_the_cli_over_tcp() {
    assert_checks(&drive(Lang::TypeScript, &["--transport", "tcp"]));
}

#[test]
fn go_program_drives_the_cli_over_stdio() {
    assert_checks(&drive(Lang::Go, &["--transport", "stdio"]));
}

#[test]
fn go_program_drives_the_cli_over_tcp_with_newline_framing() {
    assert_checks(&drive(Lang::Go, &["--transport", "tcp", "--framing", "newline"]));
}

#[test]
fn go_program_drives_the_cli_over_tcp() {
    assert_checks(&drive(Lang::Go, &["--transport", "tcp"]));
}

/// Whether process `pid` has exited (gone, or a zombie waiting for its new parent to reap it).
fn exited(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        // `pid (comm) S ...`: the state follows the last `)`.
        Ok(stat) => stat.rsplit_once(')').is_some_and(|(_, rest)| rest.trim_start().starts_with(['Z', 'X'])),
    }
}

fn cli_exits_when_its_sdk_is_killed(lang: Lang, transport: &str) {
    let mut sdk = drive_command(lang, &["--mode", "hang", "--transport", transport])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("python3 runs");
    let stdout = sdk.stdout.take().expect("stdout");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut next = || {
        let line = rx.recv_timeout(Duration::from_secs(60));
        if line.is_err() {
            let _ = sdk.kill();
        }
        serde_json::from_str::<Value>(&line.expect("a line from the drive program within 60 s")).expect("JSON")
    };
    let pid = next()["cli_pid"].as_u64().expect("the CLI's pid") as u32;
    assert_eq!(next()["in_call"], true);
    assert!(!exited(pid), "the CLI is gone before its SDK is killed");
    sdk.kill().expect("SIGKILL the SDK");
    sdk.wait().expect("the SDK reaped");
    let killed = Instant::now();
    while !exited(pid) {
        assert!(
            killed.elapsed() < Duration::from_secs(2),
            "the CLI ({lang:?}, {transport}) is still running 2 s after its SDK was SIGKILLed mid-call"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn cli_exits_within_2s_when_its_python_sdk_is_sigkilled_mid_call_over_stdio() {
    cli_exits_when_its_sdk_is_killed(Lang::Python, "stdio");
}

#[test]
fn cli_exits_within_2s_when_its_python_sdk_is_sigkilled_mid_call_over_tcp() {
    cli_exits_when_its_sdk_is_killed(Lang::Python, "tcp");
}

#[test]
fn cli_exits_within_2s_when_its_typescript_sdk_is_sigkilled_mid_call_over_stdio() {
    cli_exits_when_its_sdk_is_killed(Lang::TypeScript, "stdio");
}

#[test]
fn cli_exits_within_2s_when_its_typescript_sdk_is_sigkilled_mid_call_over_tcp() {
    cli_exits_when_its_sdk_is_killed(Lang::TypeScript, "tcp");
}

#[test]
fn cli_exits_within_2s_when_its_go_sdk_is_sigkilled_mid_call_over_stdio() {
    cli_exits_when_its_sdk_is_killed(Lang::Go, "stdio");
}

#[test]
fn cli_exits_within_2s_when_its_go_sdk_is_sigkilled_mid_call_over_tcp() {
    cli_exits_when_its_sdk_is_killed(Lang::Go, "tcp");
}

#[test]
fn python_runtime_answers_bad_input_from_a_raw_peer() {
    // Both readers a Peer takes: the PushReader `spawn` and `connect` use, and asyncio's own.
    for reader in [None, Some("streams")] {
        let script = interop::interop_dir("sdk").join("runtime_test.py");
        let out = Command::new("python3")
            .arg(&script)
            .arg(bridge_dir().join("python"))
            .args(reader)
            .stdin(Stdio::null())
            .output()
            .expect("python3 runs");
        let stdout = String::from_utf8_lossy(&out.stdout);
        let report: Value = serde_json::from_str(stdout.lines().last().unwrap_or_default())
            .unwrap_or_else(|e| panic!("{stdout:?} ({e}); stderr:\n{}", String::from_utf8_lossy(&out.stderr)));
        assert_eq!(report["ok"], true, "{reader:?}: {report}\n{}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(report["checks"].as_array().map(Vec::len), Some(12), "{report}");
    }
}

#[test]
fn typescript_spawn_runtime_reports_bad_frames_from_a_raw_peer() {
    // The spawn runtime's own reader: no or a bad Content-Length, an oversized header block or
    // message end the connection with a clear error and fail the pending call; a body that is
    // not JSON is reported and skipped; a chunk of several frames is delivered in order.
    let report = drive(Lang::TypeScript, &["--mode", "frames"]);
    assert_eq!(report["ok"], true, "{report}");
    assert_eq!(report["checks"].as_array().map(Vec::len), Some(7), "{report}");
}

#[test]
fn typescript_spawn_connection_answers_a_raw_peer() {
    // The spawn runtime's own MessageConnection against a peer written by hand on a socket:
    // params spread as vscode-jsonrpc spreads them, its error answers, `$/cancelRequest` both
    // ways, progress and unhandled notifications, a stray answer reported, typed RequestTypes,
    // trace, dispose failing the calls still waiting, and a failed write (to a CLI that closed
    // its stdin) rejecting every call still waiting with `MessageWriteError`.
    let report = drive(Lang::TypeScript, &["--mode", "connection"]);
    assert_eq!(report["ok"], true, "{report}");
    assert_eq!(report["checks"].as_array().map(Vec::len), Some(10), "{report}");
}

#[test]
fn go_runtime_answers_bad_input_from_a_raw_peer() {
    // `examples/sdk_bridge/go/bridge/runtime_test.go`, on net.Pipe.
    let go = interop::go();
    let run = Command::new(&go)
        .args(["test", "-count=1", "./bridge/"])
        .current_dir(bridge_dir().join("go"))
        .stdin(Stdio::null())
        .output()
        .expect("go runs");
    assert!(
        run.status.success(),
        "go test ./bridge/ failed:\n{}{}",
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr)
    );
}

#[test]
fn cli_transport_reads_its_arguments() {
    let parse = |args: &[&str]| CliTransport::from_args(args.iter().copied());
    assert_eq!(parse(&[]).expect("no args"), (CliTransport::Stdio, vec![]));
    assert_eq!(
        parse(&["--port", "7000", "x"]).expect("--port"),
        (CliTransport::Tcp("127.0.0.1:7000".into()), vec!["x".to_owned()])
    );
    assert_eq!(parse(&["--listen=[::1]:0"]).expect("--listen=").0, CliTransport::Tcp("[::1]:0".into()));
    for bad in [&["--port"][..], &["--port", "seventy"], &["--port", "70000"], &["--listen="]] {
        let e = parse(bad).expect_err("a bad value");
        assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput, "{bad:?}");
        assert!(e.to_string().contains("--"), "{e}");
    }
}

#[test]
fn cli_on_tcp_prints_its_address_and_ends_with_stdin() {
    let mut child = Command::new(cli())
        .args(["--listen", "127.0.0.1:0"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("the CLI starts");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout")).read_line(&mut line).expect("the address line");
    let addr = line.trim().strip_prefix(ADDRESS_LINE_PREFIX).unwrap_or_else(|| panic!("{line:?}"));
    // It answers there (a hand-written client: one Content-Length frame each way).
    let mut socket = std::net::TcpStream::connect(addr).expect("connect to the address line's address");
    socket.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
    let body = br#"{"jsonrpc":"2.0","id":1,"method":"session/ping"}"#;
    socket.write_all(format!("Content-Length: {}\r\n\r\n", body.len()).as_bytes()).expect("write");
    socket.write_all(body).expect("write");
    let mut answer = Vec::new();
    let mut buf = [0u8; 256];
    while !answer.ends_with(b"}") {
        let n = std::io::Read::read(&mut socket, &mut buf).expect("the answer");
        assert!(n > 0, "the CLI closed without answering");
        answer.extend_from_slice(&buf[..n]);
    }
    assert!(String::from_utf8_lossy(&answer).ends_with(r#"{"jsonrpc":"2.0","id":1,"result":"pong"}"#));
    drop(child.stdin.take());
    let closed = Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            assert!(status.success(), "{status}");
            break;
        }
        assert!(closed.elapsed() < Duration::from_secs(2), "the CLI still runs 2 s after its stdin closed");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Each SDK's `ping` p50 over 1,000 calls and its full-turn p50 over 200 turns, next to the same
/// client written by hand on the language's raw pipes or socket (Content-Length), over stdio and
/// over TCP. The two clients run at once and alternate call by call; each figure is the median
/// of `SDK_BENCH_RUNS` runs (5 by default), the percentage the median of the runs' ratios.
/// Numbers only, no assertion on them (a shared machine is noisy):
/// `cargo test --release --features openrpc --test interop -- sdk_bridge::latency --ignored --nocapture`.
#[test]
#[ignore = "a measurement: run it on a quiet machine"]
fn latency_of_each_sdk_next_to_a_hand_written_client() {
    let runs: usize = std::env::var("SDK_BENCH_RUNS").ok().and_then(|n| n.parse().ok()).unwrap_or(5).max(1);
    let median = |mut values: Vec<f64>| {
        values.sort_by(f64::total_cmp);
        values[values.len() / 2]
    };
    println!("| SDK | transport | ping p50 | by hand | ± | turn p50 | by hand | ± | turn CPU ± |");
    println!("|---|---|---|---|---|---|---|---|---|");
    for lang in [Lang::Python, Lang::Go, Lang::TypeScript] {
        for transport in ["stdio", "tcp"] {
            let reports: Vec<Value> = (0..runs)
                .map(|_| {
                    drive(lang, &["--mode", "bench", "--transport", transport, "--pings", "1000", "--turns", "200"])
                })
                .collect();
            let of = |key: &str| -> Vec<f64> { reports.iter().map(|r| r[key].as_f64().unwrap_or(f64::NAN)).collect() };
            let ratio = |a: &str, b: &str| -> f64 {
                median(of(a).iter().zip(of(b)).map(|(x, y)| (x / y - 1.0) * 100.0).collect())
            };
            // The drive program's own CPU per turn, next to the hand-written client's (Python's
            // reports it: on a loaded machine the wall clock also counts the waits for a core).
            let cpu = ratio("turn_cpu_us", "raw_turn_cpu_us");
            let cpu = if cpu.is_nan() { "n/a".to_owned() } else { format!("{cpu:+.1}%") };
            println!(
                "| {lang:?} | {transport} | {:.1} µs | {:.1} µs | {:+.0}% | {:.1} µs | {:.1} µs | {:+.0}% | {cpu} |",
                median(of("ping_p50_us")),
                median(of("raw_ping_p50_us")),
                ratio("ping_p50_us", "raw_ping_p50_us"),
                median(of("turn_p50_us")),
                median(of("raw_turn_p50_us")),
                ratio("turn_p50_us", "raw_turn_p50_us"),
            );
        }
    }
}
