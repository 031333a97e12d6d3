//! The vscode-jsonrpc peers (`tests/interop/node`) and the `conformance_peer` example, for the
//! interop tests; needs `mod interop` (support/interop.rs) at the test's root.
#![allow(dead_code)]

use std::path::PathBuf;
use std::time::Duration;

/// The bound of every single wait in the interop tests.
pub(crate) const STEP: Duration = Duration::from_secs(10);

/// `tests/interop/node`, with `vscode-jsonrpc` installed.
pub(crate) fn node_dir() -> PathBuf {
    crate::interop::interop_dir("node")
}

/// Node is on the `PATH` and `vscode-jsonrpc` is installed (`npm ci` runs once if it is not).
pub(crate) fn node_ready() {
    crate::interop::npm_ready("node", &["vscode-jsonrpc"]);
}

/// The `conformance_peer` example, built on demand.
pub(crate) fn conformance_peer() -> PathBuf {
    crate::interop::example("conformance_peer")
}

/// Await `fut` for at most [`STEP`].
pub(crate) async fn within<T>(what: &str, fut: impl std::future::Future<Output = T>) -> T {
    match tokio::time::timeout(STEP, fut).await {
        Ok(v) => v,
        Err(_) => panic!("{what}: nothing within {STEP:?}"),
    }
}
