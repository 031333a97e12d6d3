//! Running node peers for the interop tests: `npm ci` once when `node_modules` is missing, the
//! `conformance_peer` example's path (built on demand), bounded waits.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The bound of every single wait in the interop tests.
pub(crate) const STEP: Duration = Duration::from_secs(10);

/// `tests/interop/node`.
pub(crate) fn node_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests").join("interop").join("node")
}

/// Await `fut` for at most [`STEP`].
pub(crate) async fn within<T>(what: &str, fut: impl std::future::Future<Output = T>) -> T {
    match tokio::time::timeout(STEP, fut).await {
        Ok(v) => v,
        Err(_) => panic!("{what}: nothing within {STEP:?}"),
    }
}

/// Run a blocking command with a deadline; `Err` says what went wrong.
fn run_bounded(cmd: &mut std::process::Command, what: &str, limit: Duration) -> Result<(), String> {
    let mut child = cmd.stdin(Stdio::null()).spawn().map_err(|e| format!("{what}: cannot start: {e}"))?;
    let deadline = Instant::now() + limit;
    loop {
        match child.try_wait() {
            Ok(Some(status)) if status.success() => return Ok(()),
            Ok(Some(status)) => return Err(format!("{what} failed ({status})")),
            Ok(None) if Instant::now() >= deadline => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("{what} did not finish within {limit:?}"));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(50)),
            Err(e) => return Err(format!("{what}: waiting failed: {e}")),
        }
    }
}

/// Node is on the `PATH` and `vscode-jsonrpc` is installed (`npm ci` runs once if it is not).
pub(crate) fn node_ready() {
    static READY: OnceLock<Result<(), String>> = OnceLock::new();
    let ready = READY.get_or_init(|| {
        let version = std::process::Command::new("node").arg("--version").output().map_err(|e| {
            format!("the vscode-jsonrpc interop tests need node (>= 18) on the PATH, but it cannot be run: {e}")
        })?;
        if !version.status.success() {
            return Err(format!("`node --version` failed ({})", version.status));
        }
        let dir = node_dir();
        if dir.join("node_modules").join("vscode-jsonrpc").join("package.json").is_file() {
            return Ok(());
        }
        run_bounded(
            std::process::Command::new("npm").args(["ci", "--no-audit", "--no-fund"]).current_dir(&dir),
            &format!("`npm ci` in {}", dir.display()),
            Duration::from_secs(180),
        )
    });
    if let Err(e) = ready {
        panic!("{e}");
    }
}

/// The `conformance_peer` example next to this test binary, built on demand.
pub(crate) fn conformance_peer() -> PathBuf {
    static PEER: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    let peer = PEER.get_or_init(|| {
        let exe = std::env::current_exe().map_err(|e| format!("cannot locate the test binary: {e}"))?;
        // target/<profile>/deps/<test binary>
        let profile_dir = exe.parent().and_then(Path::parent).ok_or("unexpected test binary location")?;
        let path = profile_dir.join("examples").join(format!("conformance_peer{}", std::env::consts::EXE_SUFFIX));
        if path.is_file() {
            return Ok(path);
        }
        let profile = match profile_dir.file_name().and_then(|n| n.to_str()) {
            Some("debug") | None => "dev".to_owned(),
            Some(other) => other.to_owned(),
        };
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        run_bounded(
            std::process::Command::new(cargo)
                .args(["build", "--example", "conformance_peer", "--profile", &profile])
                .current_dir(env!("CARGO_MANIFEST_DIR")),
            "building the conformance_peer example",
            Duration::from_secs(600),
        )?;
        if path.is_file() {
            Ok(path)
        } else {
            Err(format!("the conformance_peer example is not at {}", path.display()))
        }
    });
    match peer {
        Ok(path) => path.clone(),
        Err(e) => panic!("{e}"),
    }
}
