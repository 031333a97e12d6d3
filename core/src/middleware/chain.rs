//! The chain of layers: how a call enters it (inbound, from the router; outbound, from a
//! handle) and what its end does (run the handler; put the message on the wire).

use std::any::Any;
use std::sync::Arc;

use serde_json::value::RawValue;

use super::{Body, BoxFuture, Call, Kind, Middleware, OutMethod, Outcome, Outgoing};
use crate::connection::{
    CallOptions, Direction, EncodedCall, Error, Handle, Layered, LayeredFuture, PeerInfo, TraceContextPlacement,
};
use crate::handler::{
    BoxFuture as HandlerFuture, Extensions, NotificationFn, NotificationStart, Request, RequestFn, RequestStart,
    Responder, Router,
};
use crate::message::{ErrorObject, Id};

/// The layers of a connection, outermost first.
pub(crate) struct Stack {
    pub(crate) layers: Arc<[Arc<dyn Middleware>]>,
    /// The placements of the [`PropagateLayer`](super::context::PropagateLayer)s among them
    /// (`None`: the profile's), so the reader keeps top-level members only for one that reads them.
    pub(crate) propagate: Vec<Option<TraceContextPlacement>>,
    /// The same layers without the chain, when they can run so (one hook: see
    /// [`hook`](super::hook)), used instead of it.
    pub(crate) alone: Option<Arc<dyn Layered>>,
}

impl Stack {
    /// `router`, answering `-32601` at the end of the layers for requests no route takes (so
    /// that they pass the layers too: a refusal, a count).
    pub(crate) fn with_fallback(router: Router) -> Router {
        if router.has_fallback() {
            return router;
        }
        router.fallback(|request: Request, reply: Responder| async move {
            reply.err(ErrorObject::method_not_found(request.method()));
        })
    }
}

/// The rest of the chain after a layer: the layers inside it, then the handler (inbound) or the
/// wire (outbound). Run it once with [`Next::run`]; dropping it runs nothing (an inbound request
/// is then answered with what the layer returns).
pub struct Next {
    layers: Arc<[Arc<dyn Middleware>]>,
    index: usize,
    end: Option<End>,
}

impl std::fmt::Debug for Next {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Next").field("layers_left", &(self.layers.len() - self.index)).finish_non_exhaustive()
    }
}

enum End {
    InRequest(RequestFn),
    InNotification(NotificationFn),
    OutCall { handle: Handle, options: CallOptions, id: u64 },
    OutNotification(Handle),
}

impl Next {
    fn new(layers: &Arc<[Arc<dyn Middleware>]>, end: End) -> Self {
        Next { layers: layers.clone(), index: 0, end: Some(end) }
    }

    /// Run the rest of the chain on `call`: the next layer, or at the end the handler (an
    /// inbound call; the future resolves once the request is answered, whichever task answers
    /// it) or the wire (an outbound call; it resolves with the peer's answer).
    pub fn run(mut self, call: Call) -> BoxFuture<Outcome> {
        if let Some(layer) = self.layers.get(self.index).cloned() {
            self.index += 1;
            return layer.call(call, self);
        }
        match self.end.take() {
            Some(end) => end.run(call),
            None => Box::pin(std::future::ready(Err(Error::Protocol("the chain was run twice".into())))),
        }
    }
}

impl Drop for Next {
    fn drop(&mut self) {
        // An outbound call a layer refused never reaches the wire: its id is given back.
        if let Some(End::OutCall { handle, id, .. }) = &self.end {
            handle.release_call(*id);
        }
    }
}

impl End {
    fn run(self, call: Call) -> BoxFuture<Outcome> {
        let Call { body, extensions, .. } = call;
        match (self, body) {
            (End::InRequest(handler), Body::InRequest(request)) => {
                let (slot, start) = request.into_start();
                if !extensions.is_empty() {
                    slot.set_extensions(extensions);
                }
                let watched = slot.watch().then(|| slot.clone());
                let running = handler(start(&slot), Responder::inside_layers(slot.clone()));
                Box::pin(async move {
                    running.await;
                    // The handler may have handed its responder to another task: the call is
                    // over once it is answered (most often it is already: no wait).
                    match watched {
                        None => Ok(None),
                        Some(slot) => match slot.watched_answer().await {
                            Ok(Ok(())) => Ok(None),
                            Ok(Err(error)) => Err(Error::Remote(error)),
                            // Dropped unanswered: the outermost answers `-32603` with this.
                            Err(_) => Err(Error::Remote(ErrorObject::internal_error(
                                "the handler dropped the request without answering",
                            ))),
                        },
                    }
                })
            }
            (End::InNotification(handler), Body::InNotification(notification)) => {
                let running = handler(notification.into_start());
                Box::pin(async move {
                    running.await;
                    Ok(None)
                })
            }
            (End::OutCall { handle, options, id }, Body::Out(out)) => Box::pin(async move {
                let call = EncodedCall { id, body: out.body, cancellable: out.cancellable };
                handle.send_call(call, &options).await.map(Some)
            }),
            (End::OutNotification(handle), Body::Out(out)) => {
                Box::pin(async move { handle.send_notification(out.body).await.map(|()| None) })
            }
            // Bodies are made here, each with its end.
            _ => Box::pin(std::future::ready(Err(Error::Protocol("a call reached the wrong end".into())))),
        }
    }
}

/// Where the method's text (inside its quotes; `None` when it has an escape) and the params'
/// JSON (`None`: no params member) lie in an encoded request or notification (see
/// `message::encode`), found without allocating: the head is checked piece by piece against
/// what the encoder writes.
pub(crate) fn head_offsets(body: &[u8], id: Option<u64>) -> (Option<std::ops::Range<usize>>, Option<usize>) {
    let Some((method, escaped)) = method_offsets(body, id) else { return (None, None) };
    let params = body[method.end + 1..].strip_prefix(b",\"params\":").map(|rest| body.len() - rest.len());
    ((!escaped).then_some(method), params)
}

/// The method's text inside its quotes, and whether it has an escape.
fn method_offsets(body: &[u8], id: Option<u64>) -> Option<(std::ops::Range<usize>, bool)> {
    let mut rest = body.strip_prefix(b"{\"jsonrpc\":\"2.0\"")?;
    if let Some(id) = id {
        rest = rest.strip_prefix(b",\"id\":")?;
        let mut digits = [0u8; 20];
        let mut n = id;
        let mut at = digits.len();
        loop {
            at -= 1;
            digits[at] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        rest = rest.strip_prefix(&digits[at..])?;
    }
    rest = rest.strip_prefix(b",\"method\":\"")?;
    let start = body.len() - rest.len();
    // The method's JSON string: its end is the first quote no backslash escapes.
    let (mut i, mut escaped) = (0, false);
    loop {
        match rest.get(i)? {
            b'\\' => {
                escaped = true;
                i += 2;
            }
            b'"' => break,
            _ => i += 1,
        }
    }
    Some((start..start + i, escaped))
}

/// Where the params' JSON starts (see [`head_offsets`]).
#[cfg(test)]
fn params_offset(body: &[u8], id: Option<u64>) -> Option<usize> {
    head_offsets(body, id).1
}

fn wrap_request(
    layers: Arc<[Arc<dyn Middleware>]>,
    peer: Arc<PeerInfo>,
    placement: TraceContextPlacement,
    handler: RequestFn,
) -> RequestFn {
    Arc::new(move |request: RequestStart<'_>, responder: Responder| -> HandlerFuture {
        let call = Call {
            direction: Direction::Incoming,
            kind: Kind::Request,
            body: Body::InRequest(request.into_request()),
            peer: Some(peer.clone()),
            extensions: Extensions::new(),
            placement,
        };
        let outcome = Next::new(&layers, End::InRequest(handler.clone())).run(call);
        Box::pin(async move {
            // Answered already when the handler ran; otherwise a layer answers.
            match outcome.await {
                Ok(Some(result)) => responder.ok(result),
                Ok(None) => responder.ok(()),
                Err(error) => responder.err(ErrorObject::from(error)),
            };
        })
    })
}

fn wrap_notification(
    layers: Arc<[Arc<dyn Middleware>]>,
    peer: Arc<PeerInfo>,
    placement: TraceContextPlacement,
    handler: NotificationFn,
) -> NotificationFn {
    Arc::new(move |notification: NotificationStart<'_>| -> HandlerFuture {
        let method = tracing::enabled!(target: crate::LOG_TARGET, tracing::Level::DEBUG)
            .then(|| notification.method().to_owned());
        let call = Call {
            direction: Direction::Incoming,
            kind: Kind::Notification,
            body: Body::InNotification(notification.into_notification()),
            peer: Some(peer.clone()),
            extensions: Extensions::new(),
            placement,
        };
        let outcome = Next::new(&layers, End::InNotification(handler.clone())).run(call);
        Box::pin(async move {
            if let Err(error) = outcome.await {
                tracing::debug!(target: crate::LOG_TARGET, method = ?method, %error, "a layer dropped a notification");
            }
        })
    })
}

impl Layered for Stack {
    fn as_any(&self) -> &dyn Any {
        self
    }

    fn reads_top_level(&self, placement: TraceContextPlacement) -> bool {
        self.propagate.iter().any(|p| p.unwrap_or(placement) == TraceContextPlacement::TopLevel)
    }

    fn watcher(&self) -> Option<&Arc<dyn crate::connection::Watcher>> {
        self.alone.as_ref()?.watcher()
    }

    fn wrap(&self, router: Router, peer: Arc<PeerInfo>, placement: TraceContextPlacement) -> Router {
        if let Some(alone) = &self.alone {
            return alone.wrap(router, peer, placement);
        }
        let router = Self::with_fallback(router);
        let (layers, at) = (self.layers.clone(), peer.clone());
        let router = router.map_requests(move |handler| wrap_request(layers.clone(), at.clone(), placement, handler));
        let layers = self.layers.clone();
        router.map_notifications(move |handler| wrap_notification(layers.clone(), peer.clone(), placement, handler))
    }

    fn call<'a>(
        &'a self,
        handle: &'a Handle,
        method: &'a str,
        call: EncodedCall,
        options: &'a CallOptions,
    ) -> LayeredFuture<'a, Result<Option<Box<RawValue>>, Error>> {
        if let Some(alone) = &self.alone {
            return alone.call(handle, method, call, options);
        }
        let (method_at, params_at) = head_offsets(&call.body, Some(call.id));
        let id = call.id;
        let out = Outgoing {
            method: method_at.map_or_else(|| OutMethod::Owned(method.to_owned()), OutMethod::In),
            id: Some((id, Id::from(id))),
            body: call.body,
            params_at,
            cancellable: call.cancellable,
        };
        let call = Call {
            direction: Direction::Outgoing,
            kind: Kind::Request,
            body: Body::Out(out),
            peer: handle.peer_shared(),
            extensions: Extensions::new(),
            placement: handle.trace_placement(),
        };
        let end = End::OutCall { handle: handle.clone(), options: options.clone(), id };
        Next::new(&self.layers, end).run(call)
    }

    fn notify<'a>(
        &'a self,
        handle: &'a Handle,
        method: &'a str,
        body: Vec<u8>,
    ) -> LayeredFuture<'a, Result<Option<Box<RawValue>>, Error>> {
        if let Some(alone) = &self.alone {
            return alone.notify(handle, method, body);
        }
        let (method_at, params_at) = head_offsets(&body, None);
        let method = method_at.map_or_else(|| OutMethod::Owned(method.to_owned()), OutMethod::In);
        let out = Outgoing { method, id: None, body, params_at, cancellable: false };
        let call = Call {
            direction: Direction::Outgoing,
            kind: Kind::Notification,
            body: Body::Out(out),
            peer: handle.peer_shared(),
            extensions: Extensions::new(),
            placement: handle.trace_placement(),
        };
        Next::new(&self.layers, End::OutNotification(handle.clone())).run(call)
    }
}

#[cfg(test)]
mod tests {
    use super::{head_offsets, params_offset};

    #[test]
    fn the_method_is_read_in_place_unless_escaped() {
        let mut buf = Vec::new();
        crate::message::encode_request(&mut buf, 12, "tools/call", &[1], crate::message::bind::UNBOUND).unwrap();
        let (method, params) = head_offsets(&buf, Some(12));
        assert_eq!(&buf[method.unwrap()], b"tools/call");
        assert_eq!(&buf[params.unwrap()..buf.len() - 1], b"[1]");
        buf.clear();
        crate::message::encode_notification(&mut buf, "a\"b", &(), crate::message::bind::UNBOUND).unwrap();
        assert_eq!(head_offsets(&buf, None), (None, None), "escaped: the caller copies it");
        assert_eq!(head_offsets(b"{\"jsonrpc\":\"2.0\",\"method\":\"n\"}", Some(1)), (None, None), "not this id");
    }

    #[test]
    fn the_params_are_found_in_what_the_encoder_wrote() {
        let mut buf = Vec::new();
        crate::message::encode_request(&mut buf, 7, "a/\"b", &[1, 2], crate::message::bind::UNBOUND).unwrap();
        let at = params_offset(&buf, Some(7)).unwrap();
        assert_eq!(&buf[at..buf.len() - 1], b"[1,2]");
        buf.clear();
        crate::message::encode_notification(&mut buf, "n", &(), crate::message::bind::UNBOUND).unwrap();
        assert_eq!(params_offset(&buf, None), None);
        for (id, method) in [(0, "a"), (18446744073709551615, "x\\\"y\\\\"), (10, "é/\u{1}")] {
            buf.clear();
            crate::message::encode_request(
                &mut buf,
                id,
                method,
                &serde_json::json!({"k": "\\\""}),
                crate::message::bind::UNBOUND,
            )
            .unwrap();
            let at = params_offset(&buf, Some(id)).unwrap();
            assert_eq!(&buf[at..buf.len() - 1], br#"{"k":"\\\""}"#, "{method:?}");
        }
    }
}
