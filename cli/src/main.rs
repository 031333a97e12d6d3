//! `jrpc`: see the conversation between two JSON-RPC programs.
//!
//! - `jrpc tap -- <server…>`: a drop-in wrapper an editor runs instead of its server; bytes pass
//!   through unchanged, every message is recorded to a trace and shown live.
//! - `jrpc show TRACE`: the conversation, a per-method summary, or a self-contained HTML timeline.
//! - `jrpc call (--spawn CMD | --tcp ADDR | --unix PATH | --ws URL) METHOD [PARAMS]`: one request.
//! - `jrpc replay TRACE`: the client's side of a trace against a fresh server, answers compared.
//!
//! Built on `jsonrpc-duplex`'s own framing (tap, show) and connection (call, replay).

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod call;
mod conversation;
mod diff;
mod error;
mod exit;
mod json;
mod recorder;
mod replay;
mod show;
mod signals;
mod tap;
mod target;
mod time;
mod trace;
mod view;
mod words;

/// See the conversation between two JSON-RPC programs: tap it, show it, make a call, replay it.
#[derive(Parser, Debug)]
#[command(name = "jrpc", version, max_term_width = 110)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run a server with its stdin/stdout passing through, recording every message.
    ///
    /// Put `jrpc tap --out trace.jsonl --` in front of the server's command in an editor's
    /// configuration: the bytes pass unchanged both ways, the server's stderr is its own, and the
    /// tap exits the way the server does (its exit code, or the signal that ended it).
    Tap(tap::TapArgs),
    /// Read a trace: the conversation, a per-method summary, or an HTML timeline.
    Show(show::ShowArgs),
    /// Send one request (or notification) to a server and print its answer.
    Call(call::CallArgs),
    /// Send the client's side of a trace to a fresh server and report where its answers differ.
    Replay(replay::ReplayArgs),
}

/// A framing on the command line.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FramingArg {
    /// `Content-Length: N` headers (LSP).
    ContentLength,
    /// One JSON message per line (ACP, MCP).
    Newline,
}

impl From<FramingArg> for jsonrpc_duplex_core::Framing {
    fn from(framing: FramingArg) -> Self {
        match framing {
            FramingArg::ContentLength => jsonrpc_duplex_core::Framing::ContentLength,
            FramingArg::Newline => jsonrpc_duplex_core::Framing::NewlineDelimited,
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let code = match cli.command {
        Command::Tap(args) => tap::run(args),
        Command::Show(args) => show::run(args),
        Command::Call(args) => with_runtime(|| call::run(args)),
        Command::Replay(args) => with_runtime(|| replay::run(args)),
    };
    ExitCode::from(code)
}

/// Run an async command on a runtime of its own; its exit code.
fn with_runtime<F: Future<Output = u8>>(command: impl FnOnce() -> F) -> u8 {
    match tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build() {
        Ok(runtime) => {
            let code = runtime.block_on(command());
            // A server that keeps a pipe open must not keep us waiting for a blocking read.
            runtime.shutdown_timeout(std::time::Duration::from_millis(100));
            code
        }
        Err(e) => {
            eprintln!("jrpc: cannot start the async runtime: {e}");
            exit::CANNOT_CONNECT
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    #[test]
    fn the_command_line_is_consistent() {
        super::Cli::command().debug_assert();
    }
}
