//! Progress as a feature of the connection: its spelling in the builder, the receivers of the
//! tokens this side issued in each connection, plugged in through the connection's seam (it takes
//! reports for our tokens off the wire before the ordered lane, binds our tokens to the calls
//! they travel in, and ends their receivers once those calls are answered, or the connection
//! ends).

use std::borrow::Cow;
use std::sync::Arc;

use serde_json::value::RawValue;

use super::ProgressProtocol;
use super::registry::{Delivery, Receivers};
use crate::connection::{Bound, Builder, CloseKind, CloseReason, Extension, Feature, Link, Phase, Start, Take};
use crate::message::bind::Target;

/// The settings of progress, in the builder.
#[derive(Clone, Debug, Default)]
pub(crate) struct ProgressFeature {
    /// Shared by every connection it starts.
    protocol: Arc<ProgressProtocol>,
    /// Set one by one: a profile leaves it alone.
    explicit: bool,
}

impl Feature for ProgressFeature {
    fn start(&self, start: &Start<'_>) -> Arc<dyn Extension> {
        Arc::new(ProgressState { receivers: Receivers::new(start.handle().unbound()), protocol: self.protocol.clone() })
    }
}

/// The progress of one connection: how it is spelled, and the receivers of our tokens.
pub(crate) struct ProgressState {
    pub(crate) receivers: Receivers,
    /// The builder's, shared.
    pub(crate) protocol: Arc<ProgressProtocol>,
}

impl Extension for ProgressState {
    fn notifications(&self) -> Vec<Cow<'static, str>> {
        vec![self.protocol.method.clone()]
    }

    /// A report for a token this side issued goes straight to its receiver, held (counted
    /// against the read-ahead) until taken; anything else goes to the router (a token the peer
    /// created, like an LSP server's own `window/workDoneProgress/create`).
    fn take(&self, link: &dyn Link, _method: &str, params: Option<&RawValue>) -> Take {
        if self.receivers.is_empty() {
            return Take::Pass;
        }
        let Some((token, value)) = params.and_then(|p| super::split_params(p, &self.protocol)) else {
            return Take::Pass;
        };
        let Ok(token) = serde_json::from_str::<u64>(token.get()) else { return Take::Pass };
        let value = value.into_owned();
        link.hold_inbound(super::report_bytes(&value));
        match self.receivers.deliver(token, value, |value| link.release_inbound(super::report_bytes(value))) {
            Delivery::Delivered => Take::Held,
            Delivery::NotOurs => Take::Pass,
            Delivery::Full => {
                let max = link.limits().max_buffered_inbound;
                link.close(CloseReason::new(
                    CloseKind::RemoteProtocolViolation,
                    format!("the peer sent more than {max} progress reports for token {token} before they were taken"),
                ));
                Take::Taken
            }
        }
    }

    fn bind(&self, token: u64, target: Target) -> Result<Bound, String> {
        if !self.receivers.sent(token) {
            // Its receiver is gone: nothing to end with the call.
            return Ok(Bound::Done);
        }
        Ok(match target {
            Target::Request(_) => Bound::ToCall,
            _ => {
                tracing::debug!(
                    target: crate::LOG_TARGET,
                    token,
                    "a progress token of ours sent outside a request's params: its receiver will not end with a call"
                );
                Bound::Done
            }
        })
    }

    /// A receiver ends once its call's answer is in the caller's hands.
    fn phase(&self) -> Phase {
        Phase::AfterAnswer
    }

    fn release(&self, token: u64) {
        self.receivers.remove(token);
    }

    fn closed(&self, reason: &CloseReason) {
        self.receivers.close(reason);
    }

    /// Reports for tokens the peer created (an LSP server's own) still reach a route.
    fn shadows(&self) -> Option<&'static str> {
        None
    }
}

impl Builder {
    /// How progress notifications are spelled on the wire ([`ProgressProtocol::lsp`] by default;
    /// a [`Profile`](crate::Profile) sets it too, this overrides it).
    pub fn progress_protocol(mut self, protocol: ProgressProtocol) -> Self {
        let feature = self.feature_mut::<ProgressFeature>();
        feature.protocol = Arc::new(protocol);
        feature.explicit = true;
        self
    }

    /// A profile's progress spelling, unless it was set one by one.
    pub(crate) fn with_profile_progress(mut self, protocol: ProgressProtocol) -> Self {
        let feature = self.feature_mut::<ProgressFeature>();
        if !feature.explicit {
            feature.protocol = Arc::new(protocol);
        }
        self
    }
}
