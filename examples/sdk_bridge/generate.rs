//! What `sdk_bridge_codegen` writes (and what the tests compare with the committed files): the
//! SDKs of `Session` (served by the CLI) and `Tools` (served by each SDK), in Python, Go and
//! TypeScript, and the OpenRPC document of `Session`.

use std::path::{Path, PathBuf};

use jsonrpc_duplex::openrpc::Document;
use jsonrpc_duplex::{golang, python, typescript};

use super::protocol::{SessionApi, ToolsApi};

/// Each generated file with its contents.
pub(crate) fn outputs() -> Vec<(PathBuf, String)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples").join("sdk_bridge");
    let header = "cargo run --features openrpc --example sdk_bridge_codegen";
    let openrpc =
        Document::new("sdk_bridge", "0.1.0").license("MIT OR Apache-2.0").service::<SessionApi>().to_json_string();
    let python = python::Module::new().header(header).client::<SessionApi>().server::<ToolsApi>().render();
    let go = golang::Module::new("bridge").header(header).client::<SessionApi>().server::<ToolsApi>();
    let typescript = typescript::Module::new().header(header).client::<SessionApi>().server::<ToolsApi>().render();
    vec![
        (dir.join("openrpc.json"), openrpc),
        (dir.join("python").join("bridge.py"), python),
        (dir.join("python").join(format!("{}.py", python::RUNTIME_MODULE)), python::RUNTIME.to_owned()),
        (dir.join("ts").join("bridge.ts"), typescript),
        (dir.join("ts").join(typescript::SPAWN_RUNTIME_FILE), typescript::SPAWN_RUNTIME.to_owned()),
        (dir.join("go").join("bridge").join("bridge.go"), go.render()),
        (dir.join("go").join("bridge").join(golang::RUNTIME_FILE), go.runtime()),
    ]
}
