//! Raw traffic at TRACE on the target [`WIRE_TARGET`](crate::WIRE_TARGET).

use super::Direction;
use super::config::{Config, TraceRedactor};
use super::shared::Shared;

/// What the wire log needs of the configuration (the writer has no [`Shared`] at hand).
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

    pub(crate) fn message(&self, direction: Direction, body: &[u8]) {
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

pub(crate) fn message(shared: &Shared, direction: Direction, body: &[u8]) {
    shared.outbound.tracer.message(direction, body);
}
