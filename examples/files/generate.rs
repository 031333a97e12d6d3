//! What the `files_codegen` example writes (and what the tests compare with the committed files):
//! the OpenRPC document of `Files` and the TypeScript module of `Files` and `Editor`.

use std::path::{Path, PathBuf};

use jsonrpc_duplex::openrpc::Document;
use jsonrpc_duplex::typescript::Module;

use super::protocol::{EditorApi, FilesApi};

/// Each generated file with its contents.
pub(crate) fn outputs() -> [(PathBuf, String); 2] {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples").join("files");
    // What the Rust side serves, for OpenRPC tools (and `rpc.discover`).
    let openrpc = Document::new("files", "0.1.0").license("MIT OR Apache-2.0").service::<FilesApi>().to_json_string();
    // A client of `Files` (served by Rust), and `Editor` to implement (Rust calls it back).
    let typescript = Module::new()
        .header("cargo run --features openrpc --example files_codegen")
        .client::<FilesApi>()
        .server::<EditorApi>()
        .render();
    [(dir.join("openrpc.json"), openrpc), (dir.join("ts").join("files.ts"), typescript)]
}
