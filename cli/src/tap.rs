//! `jrpc tap -- <server command…>`: run the server with its stdin and stdout passing through
//! this process byte for byte, and record every message.
//!
//! The forwarding is two OS threads doing blocking `read` → `write` on the raw pipe descriptors
//! (no buffering, no async hop, no parsing in between); each chunk is copied to a third thread
//! after it has been written on, and only that thread frames, parses and writes the trace. So the
//! bytes each side sees are exactly the other's, as soon as they are read, whatever they hold;
//! if the trace cannot keep up, bytes still pass and the trace says what it missed. The server's
//! stderr is its own (shared, or with `--capture-stderr` copied through as it comes); its exit
//! code, or the signal that killed it, becomes the tap's.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::fs::File;
use std::io::{self, IsTerminal, Read, Write};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::time::{Duration, Instant, SystemTime};

use crate::error::CliError;
use crate::recorder::Recorder;
use crate::signals;
use crate::trace::write::TraceWriter;
use crate::trace::{Kind, Record, Side};
use crate::view::{LiveView, Shown, Style};
use crate::{FramingArg, exit};

/// Bytes read but not yet recorded beyond which further bytes pass unrecorded (the trace says
/// so): the conversation never waits for the trace.
const MAX_BACKLOG: usize = 64 * 1024 * 1024;
/// After the server exits, how long its stdout may stay open (held by a process it started)
/// before the tap leaves anyway.
const STDOUT_GRACE: Duration = Duration::from_secs(1);
/// How long the trace may take to be written out once the server has exited.
const TRACE_GRACE: Duration = Duration::from_secs(10);

/// `jrpc tap`: a drop-in wrapper for a server command.
#[derive(clap::Args, Debug)]
pub(crate) struct TapArgs {
    /// Write the trace to FILE (JSON Lines; the format is in the README).
    #[arg(long, short, value_name = "FILE")]
    out: Option<PathBuf>,
    /// Show the conversation as it happens: `stderr`, or a file or terminal (`/dev/pts/3`).
    #[arg(long, value_name = "stderr|FILE")]
    view: Option<String>,
    /// Whole messages in the view (default: cut to $COLUMNS, 160).
    #[arg(long)]
    full: bool,
    /// The framing of both directions (default: detected in each direction).
    #[arg(long, value_enum)]
    framing: Option<FramingArg>,
    /// Record the server's stderr lines too (copied through as they come, instead of the server
    /// writing to this process's stderr itself).
    #[arg(long)]
    capture_stderr: bool,
    /// The server's command line, after `--`.
    #[arg(last = true, required = true, value_name = "SERVER COMMAND")]
    command: Vec<OsString>,
}

/// What the forwarding threads tell the recording thread, numbered in the order it happened:
/// each chunk takes its number when it has been read, before it is passed on, so a side's
/// reaction to a chunk is always numbered after it (the channel alone could deliver a reaction
/// first: the chunk is queued for the recorder only once it has been written on).
struct Numbered {
    seq: u64,
    tapped: Tapped,
}

/// Hands out the numbers of [`Numbered`].
#[derive(Clone)]
struct Sequence(Arc<AtomicU64>);

impl Sequence {
    fn next(&self) -> u64 {
        self.0.fetch_add(1, Ordering::Relaxed)
    }
}

/// One event of the conversation, for the recording thread.
enum Tapped {
    Bytes { from: Side, at: Instant, bytes: Vec<u8> },
    Lost { from: Side, at: Instant, bytes: usize },
    Closed { from: Side, at: Instant },
    Note { from: Side, at: Instant, text: &'static str },
    Stderr { at: Instant, bytes: Vec<u8> },
    Exit { at: Instant, code: Option<i32>, signal: Option<i32> },
}

/// Run the tap; returns only on a failure before the server started (the exit code), otherwise
/// leaves the process the way the server left.
pub(crate) fn run(args: TapArgs) -> u8 {
    let started_wall = SystemTime::now();
    let started = Instant::now();
    let recorder = match open_recorder(&args, started) {
        Ok(recorder) => recorder,
        Err(e) => {
            eprintln!("jrpc tap: {e}");
            return e.exit_code();
        }
    };
    let (recorder, mut child) = match spawn_server(&args, recorder, started_wall) {
        Ok(spawned) => spawned,
        Err(code) => return code,
    };
    // After the spawn, so that the server starts with the signal dispositions we were given.
    let reaped = Arc::new(std::sync::atomic::AtomicBool::new(false));
    #[cfg(unix)]
    if let Err(e) = signals::forward_to(child.id(), reaped.clone()) {
        eprintln!("jrpc tap: signals will not be passed on to the server: {e}");
    }
    let running = match start_threads(&mut child, recorder) {
        Ok(running) => running,
        Err(e) => {
            eprintln!("jrpc tap: {e}");
            let _ = child.kill();
            return e.exit_code();
        }
    };
    let status = match child.wait() {
        Ok(status) => status,
        Err(e) => {
            eprintln!("jrpc tap: waiting for the server failed: {e}");
            std::process::exit(1);
        }
    };
    reaped.store(true, Ordering::Release);
    running.finish(status);
    signals::exit_like(status)
}

/// The recorder of the trace and the live view the arguments ask for.
fn open_recorder(args: &TapArgs, started: Instant) -> Result<Recorder, CliError> {
    let trace = match &args.out {
        Some(path) => {
            Some(TraceWriter::create(path).map_err(|source| CliError::TraceCreate { path: path.clone(), source })?)
        }
        None => None,
    };
    let view = args.view.as_deref().map(|target| open_view(target, args.full)).transpose()?;
    Ok(Recorder::new(started, trace, view, args.framing.map(Into::into)))
}

/// Record the header and start the server with its stdin and stdout piped to us; the exit code
/// when it cannot start (the shell's: 127 not found, 126 cannot run).
fn spawn_server(args: &TapArgs, mut recorder: Recorder, started: SystemTime) -> Result<(Recorder, Child), u8> {
    let Some((program, rest)) = args.command.split_first() else {
        eprintln!("jrpc tap: no server command after `--`");
        return Err(exit::USAGE);
    };
    let command_line: Vec<String> = args.command.iter().map(|a| a.to_string_lossy().into_owned()).collect();
    recorder.record(Record::header(started, Some(command_line)));
    recorder.flush();
    let spawned = Command::new(program)
        .args(rest)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(if args.capture_stderr { Stdio::piped() } else { Stdio::inherit() })
        .spawn();
    match spawned {
        Ok(child) => Ok((recorder, child)),
        Err(e) => {
            eprintln!("jrpc tap: cannot start {:?}: {e}", program.to_string_lossy());
            Err(if e.kind() == io::ErrorKind::NotFound { 127 } else { 126 })
        }
    }
}

/// The threads of a running tap, and how to wind them down.
struct Running {
    to_recorder: ToRecorder,
    /// One message per stream of the server's that closed (stdout, and captured stderr).
    server_done: Receiver<()>,
    server_streams: usize,
    recorded: Receiver<()>,
}

/// Start forwarding both ways (and copying captured stderr), and recording.
fn start_threads(child: &mut Child, recorder: Recorder) -> Result<Running, CliError> {
    let (Some(server_in), Some(server_out)) = (child.stdin.take(), child.stdout.take()) else {
        return Err(CliError::NoPipes);
    };
    let stdin = dup_stdin().map_err(|source| CliError::OwnStream { stream: "stdin", source })?;
    let stdout = dup_stdout().map_err(|source| CliError::OwnStream { stream: "stdout", source })?;
    let (tx, rx) = mpsc::channel();
    let backlog = Arc::new(AtomicUsize::new(0));
    let to_recorder = ToRecorder { tx, seq: Sequence(Arc::new(AtomicU64::new(0))), backlog: backlog.clone() };
    let (recorded_tx, recorded) = mpsc::channel::<()>();
    spawn("jrpc-recorder", move || {
        record(recorder, rx, &backlog);
        let _ = recorded_tx.send(());
    })?;
    let (done, server_done) = mpsc::channel::<()>();
    let pump = to_recorder.clone();
    spawn("jrpc-client-to-server", move || forward(Side::Client, stdin, server_in, &pump))?;
    let (pump, server_out_done) = (to_recorder.clone(), done.clone());
    spawn("jrpc-server-to-client", move || {
        forward(Side::Server, server_out, stdout, &pump);
        let _ = server_out_done.send(());
    })?;
    let mut server_streams = 1;
    if let Some(stderr) = child.stderr.take() {
        let pump = to_recorder.clone();
        spawn("jrpc-stderr", move || {
            copy_stderr(stderr, &pump);
            let _ = done.send(());
        })?;
        server_streams += 1;
    }
    Ok(Running { to_recorder, server_done, server_streams, recorded })
}

impl Running {
    /// The server has exited: let its last output through, record the exit, and wait for the
    /// trace to be written out.
    fn finish(self, status: std::process::ExitStatus) {
        let grace = Instant::now() + STDOUT_GRACE;
        for _ in 0..self.server_streams {
            let _ = self.server_done.recv_timeout(grace.saturating_duration_since(Instant::now()));
        }
        #[cfg(unix)]
        let signal = std::os::unix::process::ExitStatusExt::signal(&status);
        #[cfg(not(unix))]
        let signal = None;
        let seq = self.to_recorder.seq.next();
        self.to_recorder.send(seq, Tapped::Exit { at: Instant::now(), code: status.code(), signal });
        drop(self.to_recorder);
        if self.recorded.recv_timeout(TRACE_GRACE).is_err() {
            eprintln!("jrpc tap: the trace was not written out within {TRACE_GRACE:?}; it may end early");
        }
    }
}

fn open_view(target: &str, full: bool) -> Result<LiveView, CliError> {
    if target == "stderr" || target == "-" {
        return Ok(LiveView::new(Box::new(io::stderr()), Style::stderr(full), Shown::All));
    }
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(target)
        .map_err(|source| CliError::View { target: target.to_owned(), source })?;
    let style = Style::for_output(file.is_terminal(), full);
    Ok(LiveView::new(Box::new(file), style, Shown::All))
}

/// This process's stdin as an unbuffered file (std's `Stdin` reads through a buffer).
fn dup_stdin() -> io::Result<File> {
    #[cfg(unix)]
    {
        use std::os::fd::AsFd;
        Ok(File::from(io::stdin().as_fd().try_clone_to_owned()?))
    }
    #[cfg(windows)]
    {
        use std::os::windows::io::AsHandle;
        Ok(File::from(io::stdin().as_handle().try_clone_to_owned()?))
    }
}

/// This process's stdout as an unbuffered file (std's `Stdout` holds back what follows the last
/// line break, and Content-Length frames do not end in one).
fn dup_stdout() -> io::Result<File> {
    #[cfg(unix)]
    {
        use std::os::fd::AsFd;
        Ok(File::from(io::stdout().as_fd().try_clone_to_owned()?))
    }
    #[cfg(windows)]
    {
        use std::os::windows::io::AsHandle;
        Ok(File::from(io::stdout().as_handle().try_clone_to_owned()?))
    }
}

fn spawn(name: &str, body: impl FnOnce() + Send + 'static) -> Result<(), CliError> {
    std::thread::Builder::new().name(name.into()).spawn(body).map(drop).map_err(CliError::Thread)
}

/// The forwarding threads' way to the recording thread.
#[derive(Clone)]
struct ToRecorder {
    tx: Sender<Numbered>,
    seq: Sequence,
    /// Bytes sent and not yet recorded.
    backlog: Arc<AtomicUsize>,
}

impl ToRecorder {
    fn send(&self, seq: u64, tapped: Tapped) {
        // The recorder is gone only when the tap is leaving anyway.
        let _ = self.tx.send(Numbered { seq, tapped });
    }

    /// A chunk read from `from`, or, when the recorder is too far behind, how long it was.
    fn chunk(&self, seq: u64, from: Side, at: Instant, bytes: &[u8]) {
        let queued = self.backlog.fetch_add(bytes.len(), Ordering::Relaxed) + bytes.len();
        if queued > MAX_BACKLOG {
            self.backlog.fetch_sub(bytes.len(), Ordering::Relaxed);
            self.send(seq, Tapped::Lost { from, at, bytes: bytes.len() });
        } else {
            self.send(seq, Tapped::Bytes { from, at, bytes: bytes.to_vec() });
        }
    }
}

/// Copy `input` to `output` chunk by chunk as it comes, and hand each chunk to the recorder.
///
/// When the reader of `output` goes away: the server's stdout is closed too (it sees the broken
/// pipe it would have seen), while the client's further bytes are read and dropped (the server is
/// gone; the tap leaves when it has exited).
fn forward(from: Side, mut input: impl Read, output: impl Write, to_recorder: &ToRecorder) {
    let mut output = Some(output);
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match input.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        };
        let at = Instant::now();
        let seq = to_recorder.seq.next();
        let delivered = match &mut output {
            Some(out) => out.write_all(&buf[..n]).is_ok(),
            None => true,
        };
        to_recorder.chunk(seq, from, at, &buf[..n]);
        if !delivered {
            output = None;
            let text = match from {
                Side::Client => "the server no longer reads its stdin: what the client sends is dropped",
                Side::Server => "the client no longer reads the server's output",
            };
            to_recorder.send(to_recorder.seq.next(), Tapped::Note { from, at, text });
            if from == Side::Server {
                // Dropping the server's stdout here gives it the broken pipe it would have had.
                return;
            }
        }
    }
    // Numbered before the server can react to it: dropping `output` closes the server's stdin
    // when the client closed its end, and the server may exit at once.
    let (seq, at) = (to_recorder.seq.next(), Instant::now());
    drop(output);
    to_recorder.send(seq, Tapped::Closed { from, at });
}

/// The server's stderr, copied through to ours unchanged and recorded line by line.
fn copy_stderr(mut stderr: impl Read, to_recorder: &ToRecorder) {
    let mut ours = io::stderr();
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        match stderr.read(&mut buf) {
            Ok(0) => return,
            Ok(n) => {
                let at = Instant::now();
                let seq = to_recorder.seq.next();
                let _ = ours.write_all(&buf[..n]);
                to_recorder.send(seq, Tapped::Stderr { at, bytes: buf[..n].to_vec() });
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => return,
        }
    }
}

/// The recording thread: frames, parses and writes, in the order things happened, until the
/// server's exit is recorded; flushes the trace whenever it has caught up.
fn record(mut recorder: Recorder, rx: Receiver<Numbered>, backlog: &AtomicUsize) {
    let mut stderr_line = Vec::new();
    // Events that came before an earlier-numbered one (its thread has yet to send it).
    let mut early: BTreeMap<u64, Tapped> = BTreeMap::new();
    let mut next = 0;
    while let Ok(first) = rx.recv() {
        for Numbered { seq, tapped } in std::iter::once(first).chain(std::iter::from_fn(|| rx.try_recv().ok())) {
            early.insert(seq, tapped);
        }
        while let Some(tapped) = early.remove(&next) {
            next += 1;
            match tapped {
                Tapped::Bytes { from, at, bytes } => {
                    recorder.bytes(from, at, &bytes);
                    backlog.fetch_sub(bytes.len(), Ordering::Relaxed);
                }
                Tapped::Lost { from, at, bytes } => recorder.lost(from, at, bytes),
                Tapped::Closed { from, at } => recorder.end_of_stream(from, at),
                Tapped::Note { from, at, text } => recorder.record(Record::note(recorder.time(at), Some(from), text)),
                Tapped::Stderr { at, bytes } => {
                    stderr_line.extend_from_slice(&bytes);
                    while let Some(end) = stderr_line.iter().position(|&b| b == b'\n') {
                        let line: Vec<u8> = stderr_line.drain(..=end).collect();
                        recorder.record(stderr_record(recorder.time(at), &line));
                    }
                }
                Tapped::Exit { at, code, signal } => {
                    if !stderr_line.is_empty() {
                        let line = std::mem::take(&mut stderr_line);
                        recorder.record(stderr_record(recorder.time(at), &line));
                    }
                    let t = recorder.time(at);
                    recorder.record(Record { kind: Kind::Exit, t: Some(t), code, signal, ..Record::default() });
                    recorder.flush();
                    return;
                }
            }
        }
        recorder.flush();
    }
}

fn stderr_record(t: f64, line: &[u8]) -> Record {
    let text = String::from_utf8_lossy(line);
    let text = text.trim_end_matches(['\n', '\r']).to_owned();
    Record { kind: Kind::Stderr, t: Some(t), from: Some(Side::Server), text: Some(text), ..Record::default() }
}
