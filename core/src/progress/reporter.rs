//! The callee's side: report progress on the caller's token.

use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};
use serde_json::value::RawValue;

use super::{ProgressProtocol, ProgressState, ProgressToken};
use crate::connection::{Error, Handle};
use crate::handler::{ReplySlot, RequestContext};
use crate::message::bind::Binder;
use crate::message::encode_notification;

/// Reports progress on a caller's token with `$/progress` notifications (StreamJsonRpc's
/// `IProgress<T>`, LSP's work-done and partial-result progress).
///
/// Made for a request ([`Progress::for_request`]), it goes quiet once that request is answered, so
/// every report it sends reaches the peer before the answer; without a token (the caller sent
/// `null` or nothing) it does nothing. Cloning it is cheap; clones report on the same token.
/// See [`ProgressReceiver`](super::ProgressReceiver) for a full example.
pub struct Progress<T> {
    inner: Option<Arc<Reporter>>,
    _values: PhantomData<fn(T)>,
}

struct Reporter {
    handle: Handle,
    token: ProgressToken,
    /// The request this reports for: reports stop once it is answered.
    call: Option<Arc<ReplySlot>>,
}

impl<T> Clone for Progress<T> {
    fn clone(&self) -> Self {
        Progress { inner: self.inner.clone(), _values: PhantomData }
    }
}

impl<T> Default for Progress<T> {
    fn default() -> Self {
        Self::none()
    }
}

impl<T> fmt::Debug for Progress<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Progress").field("token", &self.token()).field("active", &self.is_active()).finish()
    }
}

impl<T> Progress<T> {
    /// A reporter that reports nothing (the caller wants no progress).
    pub fn none() -> Self {
        Progress { inner: None, _values: PhantomData }
    }

    /// Report on `token` through `handle`, with no request to go quiet after (say a token this
    /// side created itself, like an LSP server's `window/workDoneProgress/create`).
    pub fn new(handle: &Handle, token: ProgressToken) -> Self {
        Progress { inner: Some(Arc::new(Reporter { handle: handle.clone(), token, call: None })), _values: PhantomData }
    }

    /// Report on the token the caller sent with this request (`None`: it sent none). The reporter
    /// goes quiet once the request is answered.
    pub fn for_request(cx: &RequestContext, token: Option<ProgressToken>) -> Self {
        let Some(token) = token else { return Self::none() };
        // Its reports are ordered before its answer through the map of requests in flight.
        cx.slot().register();
        match cx.slot().in_flight() {
            true => Progress {
                inner: Some(Arc::new(Reporter { handle: cx.peer(), token, call: Some(cx.slot().clone()) })),
                _values: PhantomData,
            },
            // Answered already (or a notification routed to a request handler).
            false => Self::none(),
        }
    }

    /// The caller's token, if it sent one.
    pub fn token(&self) -> Option<&ProgressToken> {
        self.inner.as_ref().map(|r| &r.token)
    }

    /// Whether reports still go out: there is a token, and the request is not answered yet.
    pub fn is_active(&self) -> bool {
        match &self.inner {
            None => false,
            Some(r) => match &r.call {
                None => !r.handle.is_closed(),
                Some(slot) => slot.in_flight(),
            },
        }
    }
}

impl<T: Serialize> Progress<T> {
    /// Send one report, in order with everything else this side sends (so before the answer of
    /// the request it belongs to). Without a token, or once the request is answered, this does
    /// nothing. Waits while the peer is not reading what was sent already.
    pub async fn report(&self, value: T) -> Result<(), Error> {
        let Some(r) = &self.inner else { return Ok(()) };
        let handle = &r.handle;
        let buf = encode(&handle.builtin::<ProgressState>().protocol, &r.token, &value, handle.binder())?;
        let limit = handle.limits().frame.max_message_size;
        if buf.len() > limit {
            return Err(Error::MessageTooLarge { size: buf.len(), limit });
        }
        match &r.call {
            None => handle.send_notification(buf).await,
            // In order before the request's answer, or not at all once it is answered.
            Some(slot) => handle.send_before_answer(slot, buf).await,
        }
    }
}

/// `{"jsonrpc":"2.0","method":"$/progress","params":{"token":t,"value":v}}` (or MCP's flat shape).
fn encode<T: Serialize>(
    protocol: &ProgressProtocol,
    token: &ProgressToken,
    value: &T,
    binder: &dyn Binder,
) -> Result<Vec<u8>, Error> {
    let mut buf = crate::util::bufpool::take(96);
    match &protocol.value_member {
        Some(value_member) => {
            let params = Named { protocol, value_member, token, value };
            encode_notification(&mut buf, &protocol.method, &params, binder).map_err(Error::Serialize)?;
        }
        None => {
            let value = serde_json::to_string(value).map_err(Error::Serialize)?;
            let Some(rest) = value.strip_prefix('{') else {
                return Err(Error::Serialize(<serde_json::Error as serde::ser::Error>::custom(
                    "with the value's members beside the token, a progress value must serialize to an object",
                )));
            };
            let mut params = String::with_capacity(value.len() + 32);
            params.push('{');
            params.push_str(&serde_json::to_string(protocol.token_member.as_ref()).map_err(Error::Serialize)?);
            params.push(':');
            params.push_str(&serde_json::to_string(token).map_err(Error::Serialize)?);
            if rest.trim_start() != "}" {
                params.push(',');
            }
            params.push_str(rest);
            let params = RawValue::from_string(params).map_err(Error::Serialize)?;
            encode_notification(&mut buf, &protocol.method, &params, binder).map_err(Error::Serialize)?;
        }
    }
    Ok(buf)
}

struct Named<'a, T> {
    protocol: &'a ProgressProtocol,
    value_member: &'a str,
    token: &'a ProgressToken,
    value: &'a T,
}

impl<T: Serialize> Serialize for Named<'_, T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(2))?;
        map.serialize_entry(self.protocol.token_member.as_ref(), self.token)?;
        map.serialize_entry(self.value_member, self.value)?;
        map.end()
    }
}
