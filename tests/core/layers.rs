//! The layers of `jsonrpc-duplex-core` import only downward (see `ARCHITECTURE.md`): the wire
//! (`message/`, `framing/`), the inbound seam (`handler/`) and the shared helpers (`util/`,
//! `sync/`) know nothing of the connection; the connection knows nothing of the features that
//! plug into it (`stream/`, `progress/`) nor of the top that puts them together.

use std::path::{Path, PathBuf};

/// The `.rs` files under `core/src/<folder>`.
fn sources(folder: &str) -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    let mut out = Vec::new();
    walk(&Path::new(env!("CARGO_MANIFEST_DIR")).join("core/src").join(folder), &mut out);
    assert!(!out.is_empty(), "no sources under core/src/{folder}");
    out
}

/// Lines of code (not comments) of `folder` that name one of `modules` (`crate::<module>`).
fn imports(folder: &str, modules: &[&str]) -> Vec<String> {
    let mut found = Vec::new();
    for file in sources(folder) {
        let text = std::fs::read_to_string(&file).unwrap();
        for (n, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            for module in modules {
                if code.contains(&format!("crate::{module}")) {
                    found.push(format!("{}:{}: {}", file.display(), n + 1, line.trim()));
                }
            }
        }
    }
    found
}

#[test]
fn the_wire_the_inbound_seam_and_the_helpers_import_nothing_above_them() {
    let above = ["connection", "stream", "progress", "server", "transport", "profile", "features"];
    for folder in ["message", "framing", "handler", "util", "sync"] {
        let found = imports(folder, &above);
        assert!(found.is_empty(), "core/src/{folder} imports from a layer above it:\n{}", found.join("\n"));
    }
}

#[test]
fn the_connection_knows_none_of_the_features_that_plug_into_it() {
    let found = imports("connection", &["stream", "progress", "profile", "features", "server", "transport"]);
    assert!(found.is_empty(), "core/src/connection imports a feature:\n{}", found.join("\n"));
}

#[test]
fn the_check_sees_an_import() {
    // The scan itself: `handler/` names what it implements against, and a comment is no import.
    assert!(!imports("handler", &["message"]).is_empty());
    assert!(imports("sync", &["connection"]).is_empty());
}
