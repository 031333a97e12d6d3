//! The conversation as lines of text: one line per message, answers with their request's method
//! and latency, errors, cancellations and progress marked. Used live (`tap --view`, `call`) and
//! by `show`.

use std::io::{self, IsTerminal, Write};

use crate::conversation::{Conversation, Event, EventKind};
use crate::time::format_latency;
use crate::trace::{Record, Side};

/// How lines look.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Style {
    /// ANSI colors (errors red, answers green, the rest dim).
    pub(crate) color: bool,
    /// Cut each line to this many characters (`None`: whole messages).
    pub(crate) width: Option<usize>,
}

/// The default width of a line when messages are cut.
pub(crate) const DEFAULT_WIDTH: usize = 160;

impl Style {
    /// Colors when `out` is a terminal and `NO_COLOR` is not set; `full` keeps whole messages.
    pub(crate) fn for_output(is_terminal: bool, full: bool) -> Style {
        let width = std::env::var("COLUMNS").ok().and_then(|c| c.parse().ok()).unwrap_or(DEFAULT_WIDTH);
        Style {
            color: is_terminal && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()),
            width: (!full).then_some(width.max(60)),
        }
    }

    /// The style for stderr.
    pub(crate) fn stderr(full: bool) -> Style {
        Style::for_output(io::stderr().is_terminal(), full)
    }
}

const RED: &str = "\x1b[31m";
const GREEN: &str = "\x1b[32m";
const YELLOW: &str = "\x1b[33m";
const DIM: &str = "\x1b[2m";
const BOLD: &str = "\x1b[1m";
const RESET: &str = "\x1b[0m";

/// One event as one line (no line end).
pub(crate) fn line(event: &Event, style: Style) -> String {
    let arrow = event.from.map_or("   ", Side::arrow);
    let (tag, color) = match event.kind {
        EventKind::Request => ("req", BOLD),
        EventKind::Notification => ("notif", ""),
        EventKind::Result => ("ok", GREEN),
        EventKind::Error => ("ERROR", RED),
        EventKind::Unparsed => ("JUNK", YELLOW),
        EventKind::Stderr => ("stderr", DIM),
        EventKind::Note => ("note", DIM),
        EventKind::Exit => ("exit", YELLOW),
    };
    let mut head = format!("{:>9.3} {arrow} {tag:<6}", event.t);
    if let Some(id) = &event.id {
        head.push_str(&format!(" #{id}"));
    }
    if let Some(method) = &event.method {
        head.push(' ');
        head.push_str(method);
    }
    if let Some(latency) = event.latency {
        head.push_str(&format!(" ({})", format_latency(latency)));
    }
    if event.cancelled && matches!(event.kind, EventKind::Result | EventKind::Error) {
        head.push_str(" [cancelled]");
    }
    if let Some(error) = &event.error {
        head.push_str(&format!(" {} {:?}", error.code, error.message));
    }
    let body = match event.kind {
        EventKind::Unparsed => format!("{} bytes: {:?}", event.size, event.text),
        EventKind::Error => String::new(),
        _ => event.text.clone(),
    };
    let note = event.note.as_ref().map(|n| format!("  [{n}]")).unwrap_or_default();
    // The note and the head are kept whole; the body gives way.
    let mut body = if body.is_empty() { body } else { format!(" {body}") };
    if let Some(width) = style.width {
        let room = width.saturating_sub(head.chars().count() + note.chars().count());
        if body.chars().count() > room {
            body = body.chars().take(room.saturating_sub(1)).collect::<String>() + "…";
        }
    }
    if style.color && !color.is_empty() {
        format!("{color}{head}{RESET}{body}{DIM}{note}{RESET}")
    } else {
        format!("{head}{body}{note}")
    }
}

/// Which events a live view shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Shown {
    /// Everything.
    All,
    /// What the other side starts (its requests and notifications), our answers to it, and
    /// anything unparsable or on stderr: what `call` shows around its own call.
    PeerInitiated,
}

impl Shown {
    fn shows(self, event: &Event) -> bool {
        match self {
            Shown::All => true,
            Shown::PeerInitiated => match event.kind {
                EventKind::Request | EventKind::Notification => event.from == Some(Side::Server),
                EventKind::Result | EventKind::Error => event.from == Some(Side::Client),
                // Streams closing is how every call ends; failures are reported by `call` itself.
                EventKind::Note => false,
                _ => true,
            },
        }
    }
}

/// Records in, lines out, as they happen.
pub(crate) struct LiveView {
    conversation: Conversation,
    out: Box<dyn Write + Send>,
    style: Style,
    shown: Shown,
}

impl LiveView {
    /// A view writing to `out`.
    pub(crate) fn new(out: Box<dyn Write + Send>, style: Style, shown: Shown) -> Self {
        LiveView { conversation: Conversation::new(), out, style, shown }
    }

    /// Show a record's events (a failed write is ignored: the view is a convenience, the
    /// conversation must not suffer from it).
    pub(crate) fn record(&mut self, record: &Record) {
        for event in self.conversation.feed(record) {
            if self.shown.shows(&event) {
                let _ = writeln!(self.out, "{}", line(&event, self.style));
            }
        }
        let _ = self.out.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conversation::ErrorSummary;

    fn event(kind: EventKind) -> Event {
        Event {
            index: 0,
            t: 1.5,
            from: Some(Side::Server),
            kind,
            id: Some("3".into()),
            method: Some("textDocument/hover".into()),
            latency: Some(0.0123),
            request: Some(0),
            error: None,
            cancelled: false,
            note: None,
            text: r#"{"jsonrpc":"2.0","id":3,"result":{"contents":"a long hover text"}}"#.into(),
            size: 64,
        }
    }

    const PLAIN: Style = Style { color: false, width: None };

    #[test]
    fn an_answer_shows_its_method_and_latency() {
        assert_eq!(
            line(&event(EventKind::Result), PLAIN),
            r#"    1.500 S→C ok     #3 textDocument/hover (12.3ms) {"jsonrpc":"2.0","id":3,"result":{"contents":"a long hover text"}}"#
        );
    }

    #[test]
    fn an_error_shows_code_message_and_cancellation() {
        let mut e = event(EventKind::Error);
        e.error = Some(ErrorSummary { code: -32800, message: "Request cancelled".into() });
        e.cancelled = true;
        assert_eq!(
            line(&e, PLAIN),
            r#"    1.500 S→C ERROR  #3 textDocument/hover (12.3ms) [cancelled] -32800 "Request cancelled""#
        );
    }

    #[test]
    fn long_messages_are_cut_to_the_width_but_notes_are_kept() {
        let mut e = event(EventKind::Notification);
        e.id = None;
        e.latency = None;
        e.method = Some("$/progress".into());
        e.note = Some("progress of #1 x: report".into());
        let text = line(&e, Style { color: false, width: Some(80) });
        assert_eq!(text.chars().count(), 80, "{text}");
        assert!(text.ends_with("…  [progress of #1 x: report]"), "{text}");
    }
}
