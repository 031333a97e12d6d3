//! What can go wrong before or while `jrpc` talks to a server: one typed error for the whole
//! tool, each variant with its message and the exit code it ends the command with.

use std::io;
use std::path::PathBuf;
use std::time::Duration;

use crate::exit;

/// An error of a `jrpc` command (its text is what the user reads after `jrpc CMD: `).
#[derive(Debug, thiserror::Error)]
pub(crate) enum CliError {
    /// `--timeout fast`.
    #[error("{text:?} is not a duration (say 250ms, 2s, 1m)")]
    NotADuration { text: String },
    /// `--timeout 3fortnights`.
    #[error("unknown unit {unit:?} in {text:?} (use us, ms, s, m or h)")]
    UnknownUnit { text: String, unit: String },
    /// `--timeout 1e300`.
    #[error("{text:?}: {source}")]
    DurationRange { text: String, source: std::time::TryFromFloatSecsError },
    /// `--method 'a[b'`.
    #[error("{pattern:?} is not a glob: {source}")]
    Glob { pattern: String, source: glob::PatternError },
    /// `--spawn "node 'x"`.
    #[error("{line:?} is not a command line: an unterminated quote or a trailing backslash")]
    CommandLine { line: String },
    /// `--spawn ""`.
    #[error("an empty command")]
    EmptyCommand,
    /// No `--spawn`, `--tcp`, `--unix` or `--ws`.
    #[error("say where the server is: --spawn, --tcp, --unix or --ws")]
    NoTarget,
    /// A JSON argument (`PARAMS`, `--init`) that could not be read.
    #[error("reading {what} from {from}: {source}")]
    ReadArgument { what: &'static str, from: String, source: io::Error },
    /// A JSON argument that is not JSON.
    #[error("{what} is not JSON: {source}")]
    NotJson { what: &'static str, source: serde_json::Error },
    /// `PARAMS` that is JSON but neither an object nor an array.
    #[error("PARAMS must be a JSON object or array (JSON-RPC allows no other params), not {0}")]
    ParamsNotStructured(String),
    /// `--answer FILE` that cannot be read.
    #[error("--answer {path}: {source} (expected null, error or a JSON file)")]
    AnswerFile { path: String, source: io::Error },
    /// `--answer FILE` that is not a map of answers.
    #[error(
        r#"--answer {path}: {source} (expected {{"method": {{"result": …}} or {{"error": {{"code": …, "message": …}}}}}})"#
    )]
    AnswerJson { path: String, source: serde_json::Error },
    /// `--out`/`--trace FILE` that cannot be created.
    #[error("cannot write the trace {}: {source}", path.display())]
    TraceCreate { path: PathBuf, source: io::Error },
    /// `--view FILE` that cannot be opened.
    #[error("cannot open the view {target}: {source}")]
    View { target: String, source: io::Error },
    /// A trace that cannot be read.
    #[error("{}: {source}", path.display())]
    TraceRead { path: PathBuf, source: io::Error },
    /// A line of a trace that is not a record.
    #[error("{}:{line}: {reason}", path.display())]
    TraceLine { path: PathBuf, line: usize, reason: String },
    /// `show --html FILE` that cannot be written.
    #[error("{}: {source}", path.display())]
    WriteFile { path: PathBuf, source: io::Error },
    /// The HTML page's data could not be encoded.
    #[error("encoding the page's data: {0}")]
    EncodePage(serde_json::Error),
    /// The target needs support this build or platform lacks.
    #[cfg(any(not(unix), not(feature = "websocket")))]
    #[error("{0}")]
    Unsupported(&'static str),
    /// The server's process could not be started.
    #[error("cannot start {target}: {source}")]
    Start { target: String, source: io::Error },
    /// The server's process has no piped stdin or stdout.
    #[error("the server's stdin and stdout pipes were not created")]
    NoPipes,
    /// The socket could not be connected.
    #[error("cannot connect to {target}: {source}")]
    Connect { target: String, source: io::Error },
    /// The WebSocket handshake failed.
    #[cfg(feature = "websocket")]
    #[error("cannot connect to {target}: {source}")]
    WebSocket {
        target: String,
        source: Box<jsonrpc_duplex_core::transport::websocket::tokio_tungstenite::tungstenite::Error>,
    },
    /// No connection within the connect timeout.
    #[error("{target}: no connection within {after:?}")]
    ConnectTimeout { target: String, after: Duration },
    /// This process's stdin or stdout cannot be used (tap).
    #[error("cannot use this process's {stream}: {source}")]
    OwnStream { stream: &'static str, source: io::Error },
    /// A thread could not be started (tap).
    #[error("cannot start a thread: {0}")]
    Thread(io::Error),
    /// The server answered `initialize` with an error.
    #[error("the server refused `initialize`: {code} {message}")]
    InitializeRefused { code: i64, message: String },
    /// `initialize` got no answer.
    #[error("`initialize` failed: {0}")]
    Initialize(jsonrpc_duplex_core::Error),
    /// The handshake's notification could not be sent.
    #[error("`{method}` could not be sent: {source}")]
    Notify { method: &'static str, source: jsonrpc_duplex_core::Error },
}

impl CliError {
    /// The exit code a command ends with on this error (README, "Exit status").
    pub(crate) fn exit_code(&self) -> u8 {
        use CliError::*;
        match self {
            Start { .. }
            | NoPipes
            | Connect { .. }
            | ConnectTimeout { .. }
            | OwnStream { .. }
            | Thread(_)
            | InitializeRefused { .. }
            | Initialize(_)
            | Notify { .. } => exit::CANNOT_CONNECT,
            #[cfg(feature = "websocket")]
            WebSocket { .. } => exit::CANNOT_CONNECT,
            NotADuration { .. }
            | UnknownUnit { .. }
            | DurationRange { .. }
            | Glob { .. }
            | CommandLine { .. }
            | EmptyCommand
            | NoTarget
            | ReadArgument { .. }
            | NotJson { .. }
            | ParamsNotStructured(_)
            | AnswerFile { .. }
            | AnswerJson { .. }
            | TraceCreate { .. }
            | View { .. }
            | TraceRead { .. }
            | TraceLine { .. }
            | WriteFile { .. }
            | EncodePage(_) => exit::USAGE,
            #[cfg(any(not(unix), not(feature = "websocket")))]
            Unsupported(_) => exit::USAGE,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_errors_and_connection_errors_have_their_exit_codes() {
        assert_eq!(CliError::NoTarget.exit_code(), exit::USAGE);
        assert_eq!(CliError::NoPipes.exit_code(), exit::CANNOT_CONNECT);
        let e = CliError::Start { target: "`x`".into(), source: io::Error::from(io::ErrorKind::NotFound) };
        assert_eq!(e.exit_code(), exit::CANNOT_CONNECT);
        assert!(e.to_string().starts_with("cannot start `x`: "), "{e}");
    }
}
