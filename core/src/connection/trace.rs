//! Raw traffic at TRACE on the target [`WIRE_TARGET`](crate::WIRE_TARGET).

use super::Direction;
use super::shared::Shared;

pub(crate) fn message(shared: &Shared, direction: Direction, body: &[u8]) {
    if !tracing::enabled!(target: crate::WIRE_TARGET, tracing::Level::TRACE) {
        return;
    }
    let text = String::from_utf8_lossy(body);
    let max = shared.config.limits.max_trace_len;
    let shown = match &shared.config.redactor {
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
