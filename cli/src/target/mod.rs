//! Where `call` and `replay` find their server (`--spawn`, `--tcp`, `--unix`, `--ws`), and the
//! connection to it: the library's own [`Connection`] over a transport whose bytes (or messages)
//! are recorded as they are read and written.

use std::io;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, ready};
use std::time::{Duration, Instant};

use jsonrpc_duplex_core::{Builder, CloseReason, Connection};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

#[cfg(feature = "websocket")]
mod websocket;

use crate::FramingArg;
use crate::error::CliError;
use crate::recorder::Recorder;
use crate::trace::Side;

/// How long connecting (or a WebSocket handshake) may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// After the connection is closed, how long a spawned server may take to exit before it is
/// killed.
const EXIT_GRACE: Duration = Duration::from_secs(2);

/// The server to talk to.
#[derive(clap::Args, Debug, Clone)]
pub(crate) struct TargetArgs {
    /// Start the server and talk over its stdin/stdout: a command line, split the way a shell
    /// splits words (quotes, backslashes; no variables or globs).
    #[arg(long, value_name = "CMD", conflicts_with_all = ["tcp", "unix", "ws"])]
    pub(crate) spawn: Option<String>,
    /// Connect over TCP.
    #[arg(long, value_name = "HOST:PORT", conflicts_with_all = ["unix", "ws"])]
    pub(crate) tcp: Option<String>,
    /// Connect to a Unix domain socket.
    #[arg(long, value_name = "PATH", conflicts_with = "ws")]
    pub(crate) unix: Option<PathBuf>,
    /// Connect to a WebSocket server (`ws://host:port/path`; one message per text frame).
    #[arg(long, value_name = "URL")]
    pub(crate) ws: Option<String>,
    /// The framing on stdio, TCP and Unix sockets (default: the profile's; content-length
    /// without a profile).
    #[arg(long, value_enum)]
    pub(crate) framing: Option<FramingArg>,
    /// Also record the session to FILE, a trace like `tap` writes.
    #[arg(long, value_name = "FILE")]
    pub(crate) trace: Option<PathBuf>,
}

/// A chosen target.
#[derive(Clone, Debug)]
pub(crate) enum Target {
    /// A command line to start.
    Spawn(Vec<String>),
    /// `host:port`.
    Tcp(String),
    /// A socket path.
    Unix(PathBuf),
    /// A WebSocket URL.
    Ws(String),
}

impl TargetArgs {
    /// The target named on the command line, if any.
    pub(crate) fn target(&self) -> Result<Option<Target>, CliError> {
        Ok(match (&self.spawn, &self.tcp, &self.unix, &self.ws) {
            (Some(cmd), ..) => Some(Target::Spawn(crate::words::split_command(cmd)?)),
            (_, Some(addr), ..) => Some(Target::Tcp(addr.clone())),
            (_, _, Some(path), _) => Some(Target::Unix(path.clone())),
            (.., Some(url)) => Some(Target::Ws(url.clone())),
            _ => None,
        })
    }
}

impl Target {
    /// How the target reads in messages (`` `pylsp` ``, `tcp 127.0.0.1:7878`).
    pub(crate) fn describe(&self) -> String {
        match self {
            Target::Spawn(words) => format!("`{}`", words.join(" ")),
            Target::Tcp(addr) => format!("tcp {addr}"),
            Target::Unix(path) => format!("unix {}", path.display()),
            Target::Ws(url) => url.clone(),
        }
    }

    /// The command line, for a trace's header.
    pub(crate) fn command(&self) -> Option<Vec<String>> {
        match self {
            Target::Spawn(words) => Some(words.clone()),
            _ => None,
        }
    }
}

/// The recorder shared by a connection's two directions.
pub(crate) type SharedRecorder = Arc<Mutex<Recorder>>;

fn lock(recorder: &SharedRecorder) -> MutexGuard<'_, Recorder> {
    // A panic while recording poisons nothing the next record depends on.
    recorder.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A connection to the target, and the process behind it when we started one.
pub(crate) struct Session {
    /// The connection.
    pub(crate) conn: Connection,
    child: Option<tokio::process::Child>,
    recorder: SharedRecorder,
}

/// Connect `builder` to `target`, recording both directions into `recorder`.
pub(crate) async fn connect(target: &Target, builder: Builder, recorder: SharedRecorder) -> Result<Session, CliError> {
    let bounded = |_| CliError::ConnectTimeout { target: target.describe(), after: CONNECT_TIMEOUT };
    let refused = |source| CliError::Connect { target: target.describe(), source };
    match target {
        Target::Spawn(words) => {
            let (program, args) = words.split_first().ok_or(CliError::EmptyCommand)?;
            let mut child = tokio::process::Command::new(program)
                .args(args)
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .kill_on_drop(true)
                .spawn()
                .map_err(|source| CliError::Start { target: target.describe(), source })?;
            let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
                return Err(CliError::NoPipes);
            };
            let conn = builder.connect(
                Observed::new(stdout, Side::Server, recorder.clone()),
                Observed::new(stdin, Side::Client, recorder.clone()),
            );
            Ok(Session { conn, child: Some(child), recorder })
        }
        Target::Tcp(addr) => {
            let stream = tokio::time::timeout(CONNECT_TIMEOUT, tokio::net::TcpStream::connect(addr.as_str()))
                .await
                .map_err(bounded)?
                .map_err(refused)?;
            let _ = stream.set_nodelay(true);
            let (read, write) = stream.into_split();
            Ok(observed_stream(builder, read, write, recorder))
        }
        #[cfg(unix)]
        Target::Unix(path) => {
            let stream = tokio::time::timeout(CONNECT_TIMEOUT, tokio::net::UnixStream::connect(path))
                .await
                .map_err(bounded)?
                .map_err(refused)?;
            let (read, write) = stream.into_split();
            Ok(observed_stream(builder, read, write, recorder))
        }
        #[cfg(not(unix))]
        Target::Unix(_) => Err(CliError::Unsupported("--unix: Unix domain sockets are not available on this platform")),
        #[cfg(feature = "websocket")]
        Target::Ws(url) => {
            let conn = tokio::time::timeout(CONNECT_TIMEOUT, websocket::connect(url, builder, recorder.clone()))
                .await
                .map_err(bounded)??;
            Ok(Session { conn, child: None, recorder })
        }
        #[cfg(not(feature = "websocket"))]
        Target::Ws(_) => Err(CliError::Unsupported(
            "--ws: this jrpc was built without WebSocket support (build it with `--features websocket`)",
        )),
    }
}

fn observed_stream(
    builder: Builder,
    read: impl AsyncRead + Send + Unpin + 'static,
    write: impl AsyncWrite + Send + Unpin + 'static,
    recorder: SharedRecorder,
) -> Session {
    let conn = builder.connect(
        Observed::new(read, Side::Server, recorder.clone()),
        Observed::new(write, Side::Client, recorder.clone()),
    );
    Session { conn, child: None, recorder }
}

impl Session {
    /// Close the connection (flushing what is queued, then closing our side of the stream) and,
    /// for a spawned server, wait for it to exit (killing it after a grace period). Returns how
    /// the server ended, when we started it.
    pub(crate) async fn finish(mut self) -> (CloseReason, Option<String>) {
        let reason = self.conn.close().await;
        let exit = match self.child.take() {
            Some(child) => Some(wait_for_exit(child).await),
            None => None,
        };
        lock(&self.recorder).flush();
        (reason, exit)
    }

    /// How a spawned server ended, if it has (after the connection broke, say).
    pub(crate) async fn server_exit(&mut self) -> Option<String> {
        let child = self.child.as_mut()?;
        match tokio::time::timeout(Duration::from_millis(500), child.wait()).await {
            Ok(Ok(status)) => Some(describe_status(status)),
            _ => None,
        }
    }
}

async fn wait_for_exit(mut child: tokio::process::Child) -> String {
    match tokio::time::timeout(EXIT_GRACE, child.wait()).await {
        Ok(Ok(status)) => describe_status(status),
        Ok(Err(e)) => format!("waiting for the server failed: {e}"),
        Err(_) => {
            let _ = child.kill().await;
            format!("the server did not exit within {EXIT_GRACE:?} of its stdin closing, and was killed")
        }
    }
}

fn describe_status(status: std::process::ExitStatus) -> String {
    #[cfg(unix)]
    if let Some(signal) = std::os::unix::process::ExitStatusExt::signal(&status) {
        return format!("the server was killed by signal {signal}{}", crate::signals::name(signal));
    }
    match status.code() {
        Some(code) => format!("the server exited with code {code}"),
        None => format!("the server exited ({status})"),
    }
}

/// A transport half whose bytes are recorded as they pass.
struct Observed<T> {
    inner: T,
    side: Side,
    recorder: SharedRecorder,
    ended: bool,
}

impl<T> Observed<T> {
    fn new(inner: T, side: Side, recorder: SharedRecorder) -> Self {
        Observed { inner, side, recorder, ended: false }
    }

    fn saw(&mut self, bytes: &[u8]) {
        let mut recorder = lock(&self.recorder);
        if bytes.is_empty() {
            if !std::mem::replace(&mut self.ended, true) {
                recorder.end_of_stream(self.side, Instant::now());
            }
        } else {
            recorder.bytes(self.side, Instant::now(), bytes);
        }
        recorder.flush();
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for Observed<T> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        ready!(Pin::new(&mut self.inner).poll_read(cx, buf))?;
        let new = buf.filled()[before..].to_vec();
        if buf.remaining() > 0 || !new.is_empty() {
            self.saw(&new);
        }
        Poll::Ready(Ok(()))
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Observed<T> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let n = ready!(Pin::new(&mut self.inner).poll_write(cx, buf))?;
        if n > 0 {
            self.saw(&buf[..n]);
        }
        Poll::Ready(Ok(n))
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        ready!(Pin::new(&mut self.inner).poll_shutdown(cx))?;
        self.saw(&[]);
        Poll::Ready(Ok(()))
    }
}
