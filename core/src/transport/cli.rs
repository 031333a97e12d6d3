//! A CLI that an SDK spawns: its one peer on stdio by default, or on TCP with `--port N` /
//! `--listen ADDR` (an address line on stdout says where), ended when stdin ends either way.

use std::io::{self, Write};

use tokio::sync::oneshot;

use crate::{Builder, CloseReason};

/// What a CLI on this crate prints on stdout, followed by `host:port` and a newline, once it
/// listens on TCP; the generated SDKs' `spawn(.., transport="tcp")` read it.
pub const ADDRESS_LINE_PREFIX: &str = "jsonrpc-duplex listening on ";

/// How a CLI serves its one peer (the SDK that spawned it), from its command line.
///
/// | argument | transport |
/// |---|---|
/// | none | stdin and stdout |
/// | `--port N` (`--port=N`) | TCP on `127.0.0.1:N` (`0`: any free port) |
/// | `--listen ADDR` (`--listen=ADDR`) | TCP on `ADDR` (`127.0.0.1:0`, `[::1]:7000`, …) |
///
/// Either way the CLI has no idle timeout (its one peer may think for as long as it likes)
/// and ends when its stdin ends: the SDK that spawned it holds the other end of the pipe, so
/// when the SDK goes (however it goes: `stop()`, an exception, SIGKILL), the CLI goes too.
///
/// ```no_run
/// use jsonrpc_duplex_core::{CliTransport, Connection, ErrorObject, Router};
/// #[tokio::main]
/// async fn main() -> std::io::Result<()> {
///     let (transport, _rest) = CliTransport::from_args(std::env::args().skip(1))?;
///     let router = Router::new().method("ping", |(): (), _ctx| async { Ok::<_, ErrorObject>("pong") });
///     transport.serve(Connection::builder().serve(router)).await?;
///     Ok(())
/// }
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum CliTransport {
    /// This process's stdin and stdout.
    Stdio,
    /// A TCP listener at this address, for one peer.
    Tcp(String),
}

impl CliTransport {
    /// The transport the arguments ask for, and the other arguments (for the CLI's own use).
    /// An error names a `--port` / `--listen` without a valid value.
    pub fn from_args<I, S>(args: I) -> io::Result<(CliTransport, Vec<String>)>
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let mut transport = CliTransport::Stdio;
        let mut rest = Vec::new();
        let mut args = args.into_iter().map(Into::into);
        let bad = |what: String| io::Error::new(io::ErrorKind::InvalidInput, what);
        while let Some(arg) = args.next() {
            let (flag, inline) = match arg.split_once('=') {
                Some((flag, value)) if flag == "--port" || flag == "--listen" => {
                    (flag.to_owned(), Some(value.to_owned()))
                }
                _ => (arg.clone(), None),
            };
            if flag != "--port" && flag != "--listen" {
                rest.push(arg);
                continue;
            }
            let value = match inline.or_else(|| args.next()) {
                Some(value) if !value.is_empty() => value,
                _ => return Err(bad(format!("{flag} needs a value (--port 7000, --listen 127.0.0.1:0)"))),
            };
            transport = if flag == "--port" {
                let port: u16 =
                    value.parse().map_err(|_| bad(format!("--port {value:?}: not a port number (0 to 65535)")))?;
                CliTransport::Tcp(format!("127.0.0.1:{port}"))
            } else {
                CliTransport::Tcp(value)
            };
        }
        Ok((transport, rest))
    }

    /// Serve the one peer with `builder` (its idle timeout turned off) until it goes or stdin
    /// ends: on TCP, first print the address line ([`ADDRESS_LINE_PREFIX`] `host:port`) on
    /// stdout. The connection's close reason, or `None` when stdin ended before a peer
    /// connected. Must be called inside a tokio runtime with I/O enabled.
    pub async fn serve(self, builder: Builder) -> io::Result<Option<CloseReason>> {
        let builder = builder.idle_timeout(None);
        match self {
            CliTransport::Stdio => {
                let conn = builder.stdio();
                conn.closed().await;
                Ok(Some(conn.close().await))
            }
            CliTransport::Tcp(addr) => {
                let listener = super::tcp::bind(addr.as_str()).await?;
                let local = listener.local_addr()?;
                let mut stdout = io::stdout().lock();
                writeln!(stdout, "{ADDRESS_LINE_PREFIX}{local}")?;
                stdout.flush()?;
                drop(stdout);
                let mut stdin_ended = stdin_end();
                let stream = tokio::select! {
                    accepted = listener.accept() => accepted?.0,
                    _ = &mut stdin_ended => return Ok(None),
                };
                drop(listener);
                let conn = builder.tcp(stream);
                tokio::select! {
                    _ = conn.closed() => {}
                    _ = stdin_ended => {}
                }
                Ok(Some(conn.close().await))
            }
        }
    }
}

/// Resolves when this process's stdin ends (read by a plain thread that the runtime does not
/// wait for, so that returning from `main` still exits).
fn stdin_end() -> oneshot::Receiver<()> {
    let (tx, rx) = oneshot::channel();
    let spawned = std::thread::Builder::new().name("jsonrpc-duplex-stdin-watch".into()).spawn(move || {
        let mut buf = [0u8; 4096];
        let mut stdin = io::stdin().lock();
        loop {
            match io::Read::read(&mut stdin, &mut buf) {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
        let _ = tx.send(());
    });
    if let Err(e) = spawned {
        tracing::warn!("cannot watch stdin for its end: {e}");
    }
    rx
}
