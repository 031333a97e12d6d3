//! Setup shared by the interop tests (of the root crate and of `cli/`): third-party peers
//! installed from committed lockfiles when missing (once per test binary), example binaries built
//! on demand, bounded commands.
#![allow(dead_code)]

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// The workspace's root (this file serves the root crate's tests and those of members like `cli/`).
pub(crate) fn workspace_dir() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest.ancestors().find(|dir| dir.join("tests").join("interop").is_dir()).unwrap_or(manifest).to_owned()
}

/// `tests/interop/<name>`.
pub(crate) fn interop_dir(name: &str) -> PathBuf {
    workspace_dir().join("tests").join("interop").join(name)
}

/// `target/<profile>/` of this test binary (which lives in `target/<profile>/deps/`).
pub(crate) fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    exe.parent().and_then(Path::parent).expect("a test binary in target/<profile>/deps").to_owned()
}

/// The bound on one setup step (`npm ci`, a venv, `pip install`, `apt-get`, an example's build).
/// Generous: on a fresh clone with both cores busy (the suite building while it runs), `npm ci`
/// alone took over 180 s here; a step that hangs still fails the test, after this long.
pub(crate) const INSTALL: Duration = Duration::from_secs(900);

/// Run a blocking command with a deadline; `Err` says what went wrong.
pub(crate) fn run_bounded(cmd: &mut std::process::Command, what: &str, limit: Duration) -> Result<(), String> {
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

/// Run `init` once per `key` in this test binary and panic with its error, if any, every time.
/// Each key waits only for itself: two tests installing different peers (an `npm ci`, a venv)
/// run their installs at the same time, the second test of a key waits for the first's.
fn once<T: Clone + Send + Sync + 'static>(key: &str, init: impl FnOnce() -> Result<T, String>) -> T {
    type Cell = Arc<OnceLock<Box<dyn std::any::Any + Send + Sync>>>;
    static CELLS: OnceLock<Mutex<HashMap<String, Cell>>> = OnceLock::new();
    let cell = {
        let mut cells = CELLS.get_or_init(Default::default).lock().unwrap_or_else(|p| p.into_inner());
        cells.entry(key.to_owned()).or_default().clone()
    };
    match cell.get_or_init(|| Box::new(init())).downcast_ref::<Result<T, String>>() {
        Some(Ok(value)) => value.clone(),
        Some(Err(e)) => panic!("{e}"),
        None => panic!("setup step {key:?} used with two result types"),
    }
}

/// Node is on the `PATH` and `tests/interop/<dir>` has `packages` installed: `npm ci` from its
/// committed lockfile runs when one is missing.
pub(crate) fn npm_ready(dir: &str, packages: &[&str]) -> PathBuf {
    npm_ready_at(&interop_dir(dir), packages)
}

/// [`npm_ready`] for a directory anywhere.
pub(crate) fn npm_ready_at(path: &Path, packages: &[&str]) -> PathBuf {
    once(&format!("npm {}", path.display()), || {
        let version = std::process::Command::new("node").arg("--version").output().map_err(|e| {
            format!("the interop tests need node (>= 20) and npm on the PATH, but node cannot be run: {e}")
        })?;
        if !version.status.success() {
            return Err(format!("`node --version` failed ({})", version.status));
        }
        let installed = |name: &str| path.join("node_modules").join(name).join("package.json").is_file();
        if !packages.iter().all(|p| installed(p)) {
            run_bounded(
                std::process::Command::new("npm").args(["ci", "--no-audit", "--no-fund"]).current_dir(path),
                &format!("`npm ci` in {}", path.display()),
                INSTALL,
            )?;
        }
        match packages.iter().find(|p| !installed(p)) {
            Some(missing) => Err(format!("{missing} is not installed in {} after `npm ci`", path.display())),
            None => Ok(path.to_owned()),
        }
    })
}

/// pyright's language server script (`tests/interop/lsp`), after `npm ci` if needed.
pub(crate) fn pyright() -> PathBuf {
    npm_ready("lsp", &["pyright"]).join("node_modules").join("pyright").join("langserver.index.js")
}

/// The `pylsp` executable of a venv under `target/`, made (or remade) when the pinned
/// requirements (`tests/interop/lsp/requirements.txt`) changed. Needs `python3` with `venv`.
pub(crate) fn pylsp() -> PathBuf {
    once("pylsp venv", || {
        let requirements = interop_dir("lsp").join("requirements.txt");
        let wanted = std::fs::read_to_string(&requirements).map_err(|e| format!("{}: {e}", requirements.display()))?;
        let target = profile_dir().parent().map(Path::to_owned).ok_or("no target directory")?;
        let venv = target.join("interop-lsp").join("pylsp-venv");
        let bin = venv.join(if cfg!(windows) { "Scripts" } else { "bin" });
        let pylsp = bin.join(format!("pylsp{}", std::env::consts::EXE_SUFFIX));
        let marker = venv.join("installed-requirements.txt");
        // A venv moved or copied from elsewhere keeps the old path in its scripts' `#!` line.
        let runnable = std::fs::read(&pylsp).is_ok_and(|script| {
            let first = script.split(|&b| b == b'\n').next().unwrap_or_default();
            first.strip_prefix(b"#!").is_none_or(|interpreter| {
                let interpreter = String::from_utf8_lossy(interpreter);
                Path::new(interpreter.split_whitespace().next().unwrap_or_default()).is_file()
            })
        });
        if runnable && std::fs::read_to_string(&marker).is_ok_and(|had| had == wanted) {
            return Ok(pylsp);
        }
        let _ = std::fs::remove_dir_all(&venv);
        run_bounded(
            std::process::Command::new("python3").arg("-m").arg("venv").arg(&venv),
            "`python3 -m venv` (the pylsp interop tests need python3 with venv on the PATH)",
            INSTALL,
        )?;
        run_bounded(
            std::process::Command::new(bin.join("pip"))
                .args(["install", "--quiet", "--disable-pip-version-check", "--no-input", "-r"])
                .arg(&requirements),
            "`pip install -r tests/interop/lsp/requirements.txt`",
            INSTALL,
        )?;
        std::fs::write(&marker, wanted).map_err(|e| format!("{}: {e}", marker.display()))?;
        if pylsp.is_file() { Ok(pylsp) } else { Err(format!("no {} after pip install", pylsp.display())) }
    })
}

/// Debian's chromium at `/usr/bin/chromium`, installed with `apt-get` when missing (the HTML
/// tests of `cli/` drive it headless). Fails with what to do when it cannot be installed.
pub(crate) fn chromium() -> PathBuf {
    once("chromium", || {
        let path = PathBuf::from("/usr/bin/chromium");
        if path.is_file() {
            return Ok(path);
        }
        let how = "install Debian's chromium (`apt-get install -y chromium`) or run the tests as root on Debian";
        run_bounded(
            std::process::Command::new("apt-get").arg("update").arg("-qq"),
            &format!("`apt-get update` (to install chromium for the HTML tests; {how})"),
            INSTALL,
        )?;
        run_bounded(
            std::process::Command::new("apt-get")
                .args(["install", "-y", "-qq", "--no-install-recommends", "chromium"])
                .env("DEBIAN_FRONTEND", "noninteractive"),
            &format!("`apt-get install chromium` ({how})"),
            INSTALL,
        )?;
        if path.is_file() {
            Ok(path)
        } else {
            Err(format!("no {} after apt-get install chromium; {how}", path.display()))
        }
    })
}

/// An example binary next to this test binary (`target/<profile>/examples/`), built on demand
/// when this test binary was built alone (`cargo test --test …`; `cargo test` builds examples).
pub(crate) fn example(name: &str) -> PathBuf {
    once(&format!("example {name}"), || {
        let profile_dir = profile_dir();
        let path = profile_dir.join("examples").join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
        if path.is_file() {
            return Ok(path);
        }
        let profile = match profile_dir.file_name().and_then(|n| n.to_str()) {
            Some("debug") | None => "dev".to_owned(),
            Some(other) => other.to_owned(),
        };
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let mut build = std::process::Command::new(cargo);
        build.args(["build", "-p", "jsonrpc-duplex", "--example", name, "--profile", &profile]);
        run_bounded(build.current_dir(workspace_dir()), &format!("building the {name} example"), INSTALL)
            .map_err(|e| format!("{e}; build it with `cargo build --example {name}`"))?;
        if path.is_file() { Ok(path) } else { Err(format!("the {name} example is not at {}", path.display())) }
    })
}

/// The `bin/` directory of a venv under `target/interop-<name>/venv` with the pinned
/// `requirements` installed, made (or remade) when they changed. Needs `python3` with `venv`.
pub(crate) fn python_venv(name: &str, requirements: &Path) -> PathBuf {
    once(&format!("python venv {name}"), || {
        let wanted = std::fs::read_to_string(requirements).map_err(|e| format!("{}: {e}", requirements.display()))?;
        let target = profile_dir().parent().map(Path::to_owned).ok_or("no target directory")?;
        let venv = target.join(format!("interop-{name}")).join("venv");
        let bin = venv.join(if cfg!(windows) { "Scripts" } else { "bin" });
        let marker = venv.join("installed-requirements.txt");
        let python = bin.join(format!("python{}", std::env::consts::EXE_SUFFIX));
        // A venv's scripts (mypy, pylsp) name its interpreter by absolute path: a target dir
        // copied or restored elsewhere keeps a venv whose scripts cannot start. The marker
        // records where the venv was made, so such a venv is made again.
        let stamp = format!("{}\n{wanted}", venv.display());
        if python.exists() && std::fs::read_to_string(&marker).is_ok_and(|had| had == stamp) {
            return Ok(bin);
        }
        let _ = std::fs::remove_dir_all(&venv);
        run_bounded(
            std::process::Command::new("python3").arg("-m").arg("venv").arg(&venv),
            "`python3 -m venv` (the SDK tests need python3 with venv on the PATH)",
            INSTALL,
        )?;
        run_bounded(
            std::process::Command::new(bin.join("pip"))
                .args(["install", "--quiet", "--disable-pip-version-check", "--no-input", "-r"])
                .arg(requirements),
            &format!("`pip install -r {}`", requirements.display()),
            INSTALL,
        )?;
        std::fs::write(&marker, stamp).map_err(|e| format!("{}: {e}", marker.display()))?;
        Ok(bin)
    })
}

/// `go` (Debian's golang-go, Go 1.19 or later), installed with `apt-get` when missing.
pub(crate) fn go() -> PathBuf {
    once("go", || {
        let found =
            |path: &Path| std::process::Command::new(path).arg("version").output().is_ok_and(|o| o.status.success());
        for candidate in ["go", "/usr/bin/go", "/usr/lib/go/bin/go"] {
            if found(Path::new(candidate)) {
                return Ok(PathBuf::from(candidate));
            }
        }
        let how = "install Go (`apt-get install -y golang-go`) or run the tests as root on Debian";
        run_bounded(
            std::process::Command::new("apt-get").arg("update").arg("-qq"),
            &format!("`apt-get update` (to install golang-go for the Go SDK tests; {how})"),
            INSTALL,
        )?;
        run_bounded(
            std::process::Command::new("apt-get")
                .args(["install", "-y", "-qq", "--no-install-recommends", "golang-go"])
                .env("DEBIAN_FRONTEND", "noninteractive"),
            &format!("`apt-get install golang-go` ({how})"),
            INSTALL,
        )?;
        let go = PathBuf::from("/usr/bin/go");
        if found(&go) {
            Ok(go)
        } else {
            Err(format!("no runnable {} after apt-get install golang-go; {how}", go.display()))
        }
    })
}
