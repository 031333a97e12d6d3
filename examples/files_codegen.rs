//! The build step of `examples/files/`: writes the OpenRPC document and the TypeScript module of
//! its traits (`Files`, which Rust serves; `Editor`, which TypeScript serves).
//!
//! ```text
//! cargo run --features openrpc --example files_codegen               # write what changed
//! cargo run --features openrpc --example files_codegen -- --check    # fail if a file is stale
//! ```
//!
//! A crate of your own does the same in a small binary (`src/bin/codegen.rs`) or, when its
//! traits live in a crate of their own, in a `build.rs` that depends on that crate.

#[path = "files/generate.rs"]
mod generate;
#[path = "files/protocol.rs"]
mod protocol;

use std::process::ExitCode;

use jsonrpc_duplex::openrpc::write_or_check;

fn main() -> ExitCode {
    let check = std::env::args().skip(1).any(|a| a == "--check");
    let mut failed = false;
    for (path, contents) in generate::outputs() {
        match write_or_check(&path, &contents, check) {
            Ok(true) => println!("wrote {}", path.display()),
            Ok(false) => println!("{} is up to date", path.display()),
            Err(e) => {
                eprintln!("files_codegen: {e}");
                failed = true;
            }
        }
    }
    if failed { ExitCode::FAILURE } else { ExitCode::SUCCESS }
}
