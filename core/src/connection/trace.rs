//! Raw traffic at TRACE on the target [`WIRE_TARGET`](crate::WIRE_TARGET).

use std::fmt;

use super::Direction;
use super::config::{Config, TraceRedactor};

/// What the wire log and the log lines quoting peer input need of the configuration.
#[derive(Clone)]
pub(crate) struct Tracer {
    max_len: usize,
    redactor: Option<TraceRedactor>,
}

impl Tracer {
    pub(crate) fn new(config: &Config) -> Self {
        Tracer { max_len: config.limits.max_trace_len, redactor: config.redactor.clone() }
    }

    /// Trace a message sent from `Drop`, where no user code may run: the redactor, if any,
    /// runs on a task of its own.
    pub(crate) fn message_later(&self, direction: Direction, body: &[u8]) {
        if !Self::enabled() {
            return;
        }
        if self.redactor.is_none() {
            return self.message(direction, body);
        }
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                let (tracer, body) = (self.clone(), body.to_vec());
                runtime.spawn(async move { tracer.message(direction, &body) });
            }
            Err(_) => {
                tracing::trace!(target: crate::WIRE_TARGET, "--> ({} bytes sent from a drop outside a runtime, not shown: the redactor cannot run)", body.len())
            }
        }
    }

    fn enabled() -> bool {
        tracing::enabled!(target: crate::WIRE_TARGET, tracing::Level::TRACE)
    }

    /// Trace a message read or sent. Inlined, up to the level check: with TRACE off (most
    /// often) each message costs a load and a compare, not two calls (about 35
    /// instructions fewer per message under callgrind).
    #[inline]
    pub(crate) fn message(&self, direction: Direction, body: &[u8]) {
        use tracing::level_filters::{LevelFilter, STATIC_MAX_LEVEL};
        if tracing::Level::TRACE > STATIC_MAX_LEVEL || tracing::Level::TRACE > LevelFilter::current() {
            return;
        }
        self.message_if_enabled(direction, body);
    }

    #[inline(never)]
    fn message_if_enabled(&self, direction: Direction, body: &[u8]) {
        if !Self::enabled() {
            return;
        }
        let text = String::from_utf8_lossy(body);
        let max = self.max_len;
        let shown = match &self.redactor {
            Some(redact) => redact(direction, &text),
            None if text.len() > max => {
                let mut cut = max;
                while !text.is_char_boundary(cut) {
                    cut -= 1;
                }
                format!("{}…({} more bytes)", &text[..cut], text.len() - cut)
            }
            None => text.into_owned(),
        };
        let arrow = match direction {
            Direction::Incoming => "<--",
            Direction::Outgoing => "-->",
        };
        tracing::trace!(target: crate::WIRE_TARGET, "{arrow} {shown}");
    }
}

/// Peer input in a log line: formatted only if the line is logged, cut at the trace limit, then
/// passed through the redactor (see [`Tracer::quote`]).
pub(crate) struct Quoted<'a, T> {
    tracer: &'a Tracer,
    value: T,
}

impl<T: fmt::Display> fmt::Display for Quoted<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (text, more) = crate::quote::bounded(&self.value, self.tracer.max_len);
        match &self.tracer.redactor {
            Some(redact) => f.write_str(&redact(Direction::Incoming, &text))?,
            None => f.write_str(&text)?,
        }
        if more > 0 {
            write!(f, "…({more} more bytes)")?;
        }
        Ok(())
    }
}

impl<T: fmt::Display> fmt::Debug for Quoted<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl Tracer {
    /// `value` (an id, a method name, params, an error that may quote them) as a log field:
    /// the same cut and redactor as the wire log, so a peer cannot write a line of its choosing
    /// or length.
    pub(crate) fn quote<T: fmt::Display>(&self, value: T) -> Quoted<'_, T> {
        Quoted { tracer: self, value }
    }
}

/// Raw JSON as a log field.
pub(crate) struct Json<'a>(pub(crate) Option<&'a serde_json::value::RawValue>);

impl fmt::Display for Json<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(raw) => f.write_str(raw.get()),
            None => f.write_str("(none)"),
        }
    }
}
