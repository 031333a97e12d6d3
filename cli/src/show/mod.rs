//! `jrpc show TRACE`: the conversation as text (filtered, or followed while it grows), a
//! per-method summary, or a self-contained HTML timeline.

mod html;
mod summary;

use std::collections::HashMap;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::time::Duration;

use crate::conversation::{Conversation, Event, EventKind};
use crate::error::CliError;
use crate::exit;
use crate::trace::read::{Trace, TraceReader};
use crate::view::{self, Style};

/// `jrpc show`.
#[derive(clap::Args, Debug)]
pub(crate) struct ShowArgs {
    /// The trace (from `jrpc tap --out`, or `jrpc call --trace`).
    trace: PathBuf,
    /// Only messages whose method matches GLOB (`textDocument/*`; `*` any characters, `/`
    /// included, `?` one, `[…]` one of a set); an answer has its request's.
    #[arg(long, value_name = "GLOB", value_parser = method_glob)]
    method: Option<glob::Pattern>,
    /// Only error answers (each after its request) and messages that are not JSON-RPC.
    #[arg(long)]
    errors: bool,
    /// Only answers that took longer than DURATION (`100ms`), each after its request.
    #[arg(long, value_name = "DURATION", value_parser = crate::time::parse_duration)]
    slower_than: Option<Duration>,
    /// Keep reading as the trace grows, until the server's exit is recorded (Ctrl-C to stop).
    #[arg(long, short)]
    follow: bool,
    /// A table per method instead: count, errors, latency p50 and p99, bytes.
    #[arg(long, conflicts_with_all = ["follow", "html"])]
    summary: bool,
    /// Write a self-contained HTML page with a timeline of both sides to FILE instead.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["follow", "errors", "slower_than", "method"])]
    html: Option<PathBuf>,
    /// Whole messages (default: lines cut to $COLUMNS, 160).
    #[arg(long)]
    full: bool,
}

/// `--method`'s glob (the `glob` crate's: `*`, `?`, `[…]`, `[!…]`).
fn method_glob(text: &str) -> Result<glob::Pattern, CliError> {
    glob::Pattern::new(text).map_err(|source| CliError::Glob { pattern: text.to_owned(), source })
}

/// A method name is no path: `*` matches `/` too, and a leading `.` is nothing special.
const METHOD_GLOB: glob::MatchOptions =
    glob::MatchOptions { case_sensitive: true, require_literal_separator: false, require_literal_leading_dot: false };

/// Which events the text view shows.
pub(crate) struct Filter {
    method: Option<glob::Pattern>,
    errors: bool,
    slower_than: Option<f64>,
}

impl Filter {
    fn from_args(args: &ShowArgs) -> Filter {
        Filter {
            method: args.method.clone(),
            errors: args.errors,
            slower_than: args.slower_than.map(|d| d.as_secs_f64()),
        }
    }

    /// Whether the event's method passes `--method`.
    pub(crate) fn method_matches(&self, event: &Event) -> bool {
        match (&self.method, &event.method) {
            (None, _) => true,
            (Some(glob), Some(method)) => glob.matches_with(method, METHOD_GLOB),
            (Some(_), None) => false,
        }
    }

    /// Whether an answer is shown with its request (`--errors`, `--slower-than`), or `None` when
    /// neither applies.
    fn answer_matches(&self, event: &Event) -> Option<bool> {
        if !self.errors && self.slower_than.is_none() {
            return None;
        }
        let error = !self.errors || event.kind == EventKind::Error;
        let slow = self.slower_than.is_none_or(|min| event.latency.is_some_and(|l| l > min));
        let answer = matches!(event.kind, EventKind::Result | EventKind::Error);
        Some((answer && error && slow) || (self.errors && event.kind == EventKind::Unparsed))
    }
}

/// Run `show`; the exit code.
pub(crate) fn run(args: ShowArgs) -> u8 {
    let result = if let Some(out) = &args.html {
        Trace::read(&args.trace).and_then(|trace| html::write(&args.trace, &trace, out))
    } else if args.summary {
        Trace::read(&args.trace).map(|trace| summary::print(&trace, &Filter::from_args(&args)))
    } else {
        conversation(&args)
    };
    match result {
        Ok(()) => exit::OK,
        Err(e) => {
            eprintln!("jrpc show: {e}");
            e.exit_code()
        }
    }
}

fn conversation(args: &ShowArgs) -> Result<(), CliError> {
    let path = args.trace.display();
    let unreadable = |source: std::io::Error| CliError::TraceRead { path: args.trace.clone(), source };
    let mut reader = TraceReader::open(&args.trace, args.follow).map_err(unreadable)?;
    let filter = Filter::from_args(args);
    let stdout = std::io::stdout();
    let style = Style::for_output(stdout.is_terminal(), args.full);
    let mut out = stdout.lock();
    let mut conversation = Conversation::new();
    // Requests not answered yet, shown only once an answer that passes the filter comes.
    let mut held: HashMap<usize, Event> = HashMap::new();
    while let Some((line, parsed)) = reader.next_record().map_err(unreadable)? {
        let record = match parsed {
            Ok(record) => record,
            Err(bad) if bad.fatal => {
                return Err(CliError::TraceLine { path: args.trace.clone(), line, reason: bad.error });
            }
            Err(bad) => {
                eprintln!("jrpc show: {path}:{line}: skipped: {}", bad.error);
                continue;
            }
        };
        for event in conversation.feed(&record) {
            if !filter.method_matches(&event) {
                continue;
            }
            let shown = match filter.answer_matches(&event) {
                None => vec![event],
                Some(_) if event.kind == EventKind::Request => {
                    held.insert(event.index, event);
                    continue;
                }
                Some(matches) => {
                    let request = event.request.and_then(|r| held.remove(&r));
                    if !matches {
                        continue;
                    }
                    request.into_iter().chain([event]).collect()
                }
            };
            for event in shown {
                // A closed pipe (`| head`) ends the listing quietly.
                if writeln!(out, "{}", view::line(&event, style)).is_err() {
                    return Ok(());
                }
            }
        }
        if args.follow {
            let _ = out.flush();
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matches(pattern: &str, name: &str) -> bool {
        method_glob(pattern).unwrap().matches_with(name, METHOD_GLOB)
    }

    #[test]
    fn globs_match_method_names() {
        assert!(matches("textDocument/*", "textDocument/hover"));
        assert!(matches("*hover", "textDocument/hover"));
        assert!(matches("*/did*", "textDocument/didOpen"));
        assert!(matches("initialize", "initialize"));
        assert!(!matches("initialize", "initialized"));
        assert!(matches("initialize?", "initialized"));
        assert!(matches("*", ""));
        assert!(!matches("window/*", "textDocument/hover"));
        assert!(matches("a*b*c", "aXbYbZc"));
        assert!(matches("$/*", "$/cancelRequest"));
        assert!(matches("*/did[OC]*", "textDocument/didClose"));
        assert!(matches(".*", ".hidden"));
        assert!(matches!(method_glob("tools/[call"), Err(CliError::Glob { .. })));
    }
}
