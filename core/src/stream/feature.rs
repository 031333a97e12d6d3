//! Streams as a feature of the connection: their settings in the builder, their state in each
//! connection, plugged in through the connection's seam (it answers `$/enumerator/next` and takes
//! `$/enumerator/abort` for them, binds offered streams to the messages they travel in, and ends
//! them with their calls and with the connection).

use std::borrow::Cow;
use std::sync::Arc;

use serde_json::value::RawValue;

use super::producer::serve_next;
use super::registry::Producers;
use super::{EnumeratorProtocol, StreamSettings, token_param};
use crate::connection::trace::Tracer;
use crate::connection::{Bound, Builder, CloseReason, Extension, Feature, Link, Phase, Start, Take};
use crate::handler::{BoxFuture, Request, Responder};
use crate::message::bind::Target;

/// The settings of streams, in the builder.
#[derive(Clone, Debug, Default)]
pub(crate) struct StreamsFeature {
    settings: StreamSettings,
    /// Shared by every connection it starts.
    protocol: Arc<EnumeratorProtocol>,
    /// The protocol was set one by one (a profile leaves it alone).
    explicit: bool,
    /// Why this builder's connections can offer no stream (their transport cannot carry the
    /// consumer's `next` calls back to them): an offered stream then fails to serialize saying so.
    unavailable: Option<Arc<str>>,
}

impl Feature for StreamsFeature {
    fn start(&self, start: &Start<'_>) -> Arc<dyn Extension> {
        Arc::new(Streams {
            producers: Producers::new(start.limits().max_offered_streams, start.handle().unbound()),
            tracer: start.tracer().clone(),
            settings: self.settings,
            protocol: self.protocol.clone(),
            unavailable: self.unavailable.clone(),
        })
    }
}

/// The streams of one connection.
pub(crate) struct Streams {
    pub(crate) producers: Producers,
    pub(crate) settings: StreamSettings,
    /// The builder's, shared.
    pub(crate) protocol: Arc<EnumeratorProtocol>,
    /// How the connection quotes peer input (for the `next` requests it serves).
    tracer: Tracer,
    /// Why no stream can be offered here (see [`Builder::without_streams`]).
    pub(crate) unavailable: Option<Arc<str>>,
}

impl Extension for Streams {
    fn requests(&self) -> Vec<Cow<'static, str>> {
        vec![self.protocol.next.clone()]
    }

    fn serve(self: Arc<Self>, link: &dyn Link, request: Request, responder: Responder) -> BoxFuture {
        let _ = link;
        serve_next(self.tracer.clone(), self, request, responder)
    }

    fn notifications(&self) -> Vec<Cow<'static, str>> {
        vec![self.protocol.abort.clone()]
    }

    /// `$/enumerator/abort` ends the sequence at once (it bypasses the ordered queue, like a
    /// cancellation).
    fn take(&self, link: &dyn Link, _method: &str, params: Option<&RawValue>) -> Take {
        match token_param(params) {
            Some(token) if self.producers.dispose(token) => {
                tracing::debug!(target: crate::LOG_TARGET, token, "the consumer aborted a stream");
            }
            Some(token) => {
                tracing::debug!(target: crate::LOG_TARGET, token, "abort for a stream that is not live (ignored)");
            }
            None => tracing::warn!(
                target: crate::LOG_TARGET,
                params = %link.quote(&crate::connection::trace::Json(params)),
                "enumerator abort without a usable token (ignored)"
            ),
        }
        Take::Taken
    }

    fn bind(&self, token: u64, target: Target) -> Result<Bound, String> {
        if target == Target::Notification {
            return Err("a stream can only be sent in the params of a request or in a result (not in a \
                        notification: nothing would ever end it)"
                .to_owned());
        }
        if !self.producers.sent(token) {
            // Disposed meanwhile (the connection ended): the peer's `next` will say so.
            return Ok(Bound::Done);
        }
        Ok(match target {
            Target::Request(_) => Bound::ToCall,
            _ => Bound::Done,
        })
    }

    /// A stream passed as an argument is over before its callee's answer is seen.
    fn phase(&self) -> Phase {
        Phase::BeforeAnswer
    }

    fn release(&self, token: u64) {
        if self.producers.dispose(token) {
            tracing::debug!(target: crate::LOG_TARGET, token, "argument stream ended with its call");
        }
    }

    fn closed(&self, _reason: &CloseReason) {
        self.producers.close();
    }

    fn shadows(&self) -> Option<&'static str> {
        Some(
            "the connection serves streams itself (return `impl Stream` from an #[rpc] method, or use \
             `Handle::offer_stream`); remove the route, or set another `EnumeratorProtocol`",
        )
    }
}

impl Builder {
    /// How streams this side offers are paced by default ([`StreamSettings::default`]:
    /// StreamJsonRpc's one item per `next`). Per stream: [`Handle::offer_stream_with`](crate::Handle::offer_stream_with).
    pub fn stream_settings(mut self, settings: StreamSettings) -> Self {
        self.feature_mut::<StreamsFeature>().settings =
            StreamSettings { min_batch_size: settings.min_batch_size.max(1), ..settings };
        self
    }

    /// How the enumerator methods are spelled on the wire ([`EnumeratorProtocol::stream_json_rpc`]
    /// by default).
    pub fn enumerator_protocol(mut self, protocol: EnumeratorProtocol) -> Self {
        let feature = self.feature_mut::<StreamsFeature>();
        feature.protocol = Arc::new(protocol);
        feature.explicit = true;
        self
    }

    /// Connections that can offer no stream, because `why` (their transport cannot carry the
    /// consumer's `next` calls to the connection that offered it: plain HTTP). A stream offered
    /// there fails to serialize with `why` instead of being answered with a token nobody can
    /// pull.
    #[cfg_attr(not(feature = "http"), allow(dead_code))]
    pub(crate) fn without_streams(mut self, why: &str) -> Self {
        self.feature_mut::<StreamsFeature>().unavailable = Some(why.into());
        self
    }

    /// A profile's enumerator spelling, unless it was set one by one.
    pub(crate) fn with_profile_enumerator(mut self, protocol: EnumeratorProtocol) -> Self {
        let feature = self.feature_mut::<StreamsFeature>();
        if !feature.explicit {
            feature.protocol = Arc::new(protocol);
        }
        self
    }
}
