//! Request cancellation (`$/cancelRequest`, MCP's `notifications/cancelled`) as an extension of
//! the connection: it takes the peer's cancellations off the wire before the ordered lane, through
//! the same seam as the features ([`Link::cancel_request`]), and goes first, so that no feature
//! can take a cancellation's name from it.

use std::borrow::Cow;

use serde_json::value::RawValue;

use super::CancelProtocol;
use super::seam::{Cancelled, Extension, Link, Take};
use super::trace::Json;
use crate::message::Id;

/// The longest cancellation reason kept from the peer, in bytes.
const MAX_CANCEL_REASON: usize = 1024;

/// The peer's cancellations, as the connection's [`CancelProtocol`] spells them.
pub(crate) struct Cancellation {
    method: Cow<'static, str>,
    id_member: Cow<'static, str>,
}

impl Cancellation {
    pub(crate) fn new(protocol: &CancelProtocol) -> Self {
        Cancellation { method: protocol.method.clone(), id_member: protocol.id_member.clone() }
    }
}

impl Extension for Cancellation {
    fn notifications(&self) -> Vec<Cow<'static, str>> {
        vec![self.method.clone()]
    }

    fn take(&self, link: &dyn Link, _method: &str, params: Option<&RawValue>) -> Take {
        let Some((id, reason)) = params.and_then(|p| cancel_target(p, &self.id_member)) else {
            tracing::warn!(
                target: crate::LOG_TARGET,
                params = %link.quote(&Json(params)),
                "cancellation without a usable id (ignored)"
            );
            return Take::Taken;
        };
        // Quoted before the reason moves to the handler (only when the line is written).
        let debug = tracing::enabled!(target: crate::LOG_TARGET, tracing::Level::DEBUG);
        let quoted = debug.then(|| (link.quote(&id), link.quote(&reason.as_deref().unwrap_or(""))));
        match link.cancel_request(&id, reason) {
            Cancelled::Forbidden => {
                tracing::warn!(target: crate::LOG_TARGET, %id, "cancellation of a request the protocol forbids cancelling (ignored)");
            }
            Cancelled::Cancelled | Cancelled::NotInFlight if !debug => {}
            Cancelled::Cancelled => {
                let (id, reason) = quoted.unwrap_or_default();
                tracing::debug!(target: crate::LOG_TARGET, %id, %reason, "peer cancelled request");
            }
            Cancelled::NotInFlight => {
                let (id, _) = quoted.unwrap_or_default();
                tracing::debug!(target: crate::LOG_TARGET, %id, "cancellation for a request not in flight (ignored)")
            }
        }
        Take::Taken
    }

    /// `shadowed_route` says why a route named like the cancellation is refused, in more words.
    fn shadows(&self) -> Option<&'static str> {
        None
    }
}

/// The request id in cancel params, `{"<member>": id}` or `[id]`, spelled as it came, and the
/// `"reason"` member of the object form if it is a string (MCP), cut at [`MAX_CANCEL_REASON`]
/// bytes (it is kept while the request runs).
fn cancel_target(params: &RawValue, member: &str) -> Option<(Id, Option<String>)> {
    let text = params.get();
    if text.starts_with('[') {
        let (id,): (&RawValue,) = serde_json::from_str(text).ok()?;
        return Some((Id::from_raw(id)?, None));
    }
    let id = Id::from_raw(crate::message::member(params, member)?)?;
    let reason = crate::message::member(params, "reason")
        .and_then(|r| serde_json::from_str::<String>(r.get()).ok())
        .map(|mut reason| {
            if reason.len() > MAX_CANCEL_REASON {
                let mut cut = MAX_CANCEL_REASON;
                while !reason.is_char_boundary(cut) {
                    cut -= 1;
                }
                reason.truncate(cut);
            }
            reason
        });
    Some((id, reason))
}
