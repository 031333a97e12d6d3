//! What the connection asks of the middleware installed on it, and nothing more: wrap the
//! router it serves, and take the calls and notifications its handles send. The layers
//! themselves live above the connection (`crate::middleware`), which it does not know.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde_json::value::RawValue;

use super::handle::{CallOptions, EncodedCall, Handle};
use super::{Error, PeerInfo, TraceContextPlacement};
use crate::handler::Router;

pub(crate) type LayeredFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// The middleware of a connection (`None` in its config: none, and nothing is paid).
pub(crate) trait Layered: Send + Sync + 'static {
    /// For the builder that adds a layer to those installed.
    fn as_any(&self) -> &dyn std::any::Any;
    /// Wrap every request and notification handler of the router a connection serves (whose
    /// profile carries trace context at `placement`).
    fn wrap(&self, router: Router, peer: Arc<PeerInfo>, placement: TraceContextPlacement) -> Router;
    /// Whether a layer reads top-level `traceparent` / `tracestate` members under a profile
    /// that carries them at `placement` (the reader keeps them only then).
    fn reads_top_level(&self, placement: TraceContextPlacement) -> bool;
    /// An outbound call, encoded: through the layers, then sent (`Handle::send_call`). `None`:
    /// a layer answered without a result (`null`).
    fn call<'a>(
        &'a self,
        handle: &'a Handle,
        method: &'a str,
        call: EncodedCall,
        options: &'a CallOptions,
    ) -> LayeredFuture<'a, Result<Option<Box<RawValue>>, Error>>;
    /// An outbound notification, encoded: through the layers, then queued (what the layers
    /// give besides an error is dropped).
    fn notify<'a>(
        &'a self,
        handle: &'a Handle,
        method: &'a str,
        body: Vec<u8>,
    ) -> LayeredFuture<'a, Result<Option<Box<RawValue>>, Error>>;
    /// The connection's one layer, when it is a hook: run by the connection itself around an
    /// outbound call (in the call's own future) and an inbound request (its state held by the
    /// dispatcher while it polls the handler, see `sync/baton.rs`), with no future of its own.
    /// [`Layered::wrap`] then leaves the router's request handlers as they are.
    fn watcher(&self) -> Option<&Arc<dyn Watcher>> {
        None
    }
}

/// A hook, as the connection runs it (see [`Layered::watcher`]): its state per call erased
/// into a [`HookState`] (kept inline for the shipped hooks' states).
pub(crate) trait Watcher: crate::handler::SlotHook {
    /// Before an inbound request's handler starts (its parts, not the request: read from
    /// where they are, not from a request just written).
    fn on_inbound(
        &self,
        method: &str,
        id: &crate::message::Id,
        params: Option<&RawValue>,
        peer: &PeerInfo,
    ) -> HookState;
    /// Before an outbound call, encoded, is sent.
    fn on_outbound(&self, handle: &Handle, method: &str, call: &EncodedCall) -> HookState;
    /// How the call ended (the state taken from where it is held, or told there and dropped:
    /// `None` after).
    fn on_response(&self, state: &mut Option<HookState>, outcome: &Result<Option<Box<RawValue>>, Error>);
}

pub(crate) use crate::middleware::state::HookState;
