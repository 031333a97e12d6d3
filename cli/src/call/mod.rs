//! `jrpc call`: one request (or notification) to a server, its answer on stdout, what the server
//! does meanwhile on stderr, and an exit code that tells a result from an error answer from no
//! answer at all.

mod answer;
mod profile;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use jsonrpc_duplex_core::{CallOptions, Connection, Error};
use serde_json::value::RawValue;

pub(crate) use answer::AnswerRule;
pub(crate) use profile::Profile;

use crate::error::CliError;
use crate::exit;
use crate::recorder::Recorder;
use crate::target::{self, Target, TargetArgs};
use crate::trace::Record;
use crate::trace::write::TraceWriter;
use crate::view::{LiveView, Shown, Style};

/// `jrpc call`.
#[derive(clap::Args, Debug)]
#[command(after_help = "Exit status: 0 a result (or the notification was sent), 1 an error answer, \
2 a bad command line, 3 the server could not be started or reached (or the handshake failed), \
4 no answer (the connection ended or --timeout passed).")]
pub(crate) struct CallArgs {
    #[command(flatten)]
    target: TargetArgs,
    /// Do this protocol's handshake first (and LSP's shutdown after); sets the framing.
    #[arg(long, value_enum, default_value_t = Profile::Plain)]
    profile: Profile,
    /// The `initialize` params of the handshake (JSON, @FILE or -), instead of jrpc's own.
    #[arg(long, value_name = "JSON")]
    init: Option<String>,
    /// Send a notification instead of a request (exit 0 once it is written).
    #[arg(long)]
    notify: bool,
    /// How to answer requests from the server: `null`, `error` (-32601), or a JSON file
    /// `{"method": {"result": …}, "other": {"error": {"code": …, "message": …}}, "*": …}`.
    #[arg(long, value_name = "null|error|FILE", default_value = "null")]
    answer: String,
    /// How long to wait for each answer (`500ms`, `30s`, `2m`).
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = crate::time::parse_duration)]
    timeout: Duration,
    /// Show the whole conversation on stderr (default: what the server starts, and our answers).
    #[arg(long, short, conflicts_with = "quiet")]
    verbose: bool,
    /// Show nothing on stderr but failures.
    #[arg(long, short)]
    quiet: bool,
    /// Print the answer exactly as it came, on one line (default: indented).
    #[arg(long)]
    compact: bool,
    /// The method to call.
    method: String,
    /// Its params: JSON (an object or an array), @FILE, or - for stdin.
    params: Option<String>,
}

/// Run `call`; the exit code.
pub(crate) async fn run(args: CallArgs) -> u8 {
    match prepare(&args) {
        Ok(prepared) => call(args, prepared).await,
        Err(e) => {
            eprintln!("jrpc call: {e}");
            e.exit_code()
        }
    }
}

struct Prepared {
    target: Target,
    params: Option<Box<RawValue>>,
    init: Option<Box<RawValue>>,
    rule: AnswerRule,
}

fn prepare(args: &CallArgs) -> Result<Prepared, CliError> {
    let target = args.target.target()?.ok_or(CliError::NoTarget)?;
    let params = args.params.as_deref().map(|p| crate::json::argument(p, "PARAMS")).transpose()?;
    if let Some(params) = &params
        && !params.get().starts_with(['{', '['])
    {
        return Err(CliError::ParamsNotStructured(params.get().to_owned()));
    }
    let init = args.init.as_deref().map(|i| crate::json::argument(i, "--init")).transpose()?;
    Ok(Prepared { target, params, init, rule: AnswerRule::parse(&args.answer)? })
}

/// The recorder of a `call` or `replay`: a trace when asked for, the live view on stderr.
pub(crate) fn recorder(trace: Option<&PathBuf>, target: &Target, shown: Option<Shown>) -> Result<Recorder, CliError> {
    let writer = trace
        .map(|path| TraceWriter::create(path).map_err(|source| CliError::TraceCreate { path: path.clone(), source }))
        .transpose()?;
    let view = shown.map(|shown| LiveView::new(Box::new(std::io::stderr()), Style::stderr(false), shown));
    // The framing is the connection's; it is detected here only to be written in the records.
    let mut recorder = Recorder::new(Instant::now(), writer, view, None);
    recorder.record(Record::header(SystemTime::now(), target.command()));
    Ok(recorder)
}

async fn call(args: CallArgs, prepared: Prepared) -> u8 {
    let Prepared { target, params, init, rule } = prepared;
    let shown = match (args.quiet, args.verbose) {
        (true, _) => None,
        (_, true) => Some(Shown::All),
        _ => Some(Shown::PeerInitiated),
    };
    let recorder = match recorder(args.target.trace.as_ref(), &target, shown) {
        Ok(recorder) => Arc::new(Mutex::new(recorder)),
        Err(e) => {
            eprintln!("jrpc call: {e}");
            return e.exit_code();
        }
    };
    let framing = args.target.framing.map(Into::into).unwrap_or(args.profile.framing());
    let builder = Connection::builder().framing(framing).cancel_protocol(args.profile.cancel()).serve(rule.router());
    let mut session = match target::connect(&target, builder, recorder).await {
        Ok(session) => session,
        Err(e) => {
            eprintln!("jrpc call: {e}");
            return e.exit_code();
        }
    };
    let peer = session.conn.handle();
    if let Err(e) = args.profile.open(&peer, init, args.timeout).await {
        let exit = session.server_exit().await.map(|e| format!(" ({e})")).unwrap_or_default();
        eprintln!("jrpc call: the {:?} handshake with {} failed: {e}{exit}", args.profile, target.describe());
        session.finish().await;
        return exit::CANNOT_CONNECT;
    }
    let code = if args.notify {
        match peer.notify(&args.method, &params).await {
            Ok(()) => exit::OK,
            Err(e) => {
                eprintln!("jrpc call: the notification was not sent: {e}");
                exit::NO_ANSWER
            }
        }
    } else {
        let outcome = peer.request_raw(&args.method, &params, CallOptions::new().timeout(args.timeout)).await;
        match outcome {
            Ok(result) => {
                print_json(result.get(), args.compact);
                exit::OK
            }
            Err(Error::Remote(error)) => {
                match serde_json::to_string(&error) {
                    Ok(json) => print_json(&json, args.compact),
                    Err(_) => println!("{} {}", error.code, error.message),
                }
                exit::ANSWERED_ERROR
            }
            Err(e) => {
                let exit = session.server_exit().await.map(|e| format!(" ({e})")).unwrap_or_default();
                eprintln!("jrpc call: no answer to {}: {e}{exit}", args.method);
                exit::NO_ANSWER
            }
        }
    };
    if !peer.is_closed() {
        args.profile.close(&peer, args.timeout).await;
    }
    let (_, exit) = session.finish().await;
    if let Some(exit) = exit
        && args.verbose
    {
        eprintln!("jrpc call: {exit}");
    }
    code
}

fn print_json(json: &str, compact: bool) {
    if compact {
        println!("{json}");
    } else {
        println!("{}", crate::json::pretty(json));
    }
}
