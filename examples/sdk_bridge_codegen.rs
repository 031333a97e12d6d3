//! The build step of `examples/sdk_bridge/`: writes its generated SDKs (Python with its runtime,
//! TypeScript) and its OpenRPC document.
//!
//! ```text
//! cargo run --features openrpc --example sdk_bridge_codegen               # write what changed
//! cargo run --features openrpc --example sdk_bridge_codegen -- --check    # fail if a file is stale
//! ```

#[path = "sdk_bridge/generate.rs"]
mod generate;
#[path = "sdk_bridge/protocol.rs"]
mod protocol;

use std::io::Write;
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
                let _ = writeln!(std::io::stderr(), "sdk_bridge_codegen: {e}");
                failed = true;
            }
        }
    }
    if failed { ExitCode::FAILURE } else { ExitCode::SUCCESS }
}
