//! What the inbound seam needs of the connection that read a request, and nothing more: where
//! answers go, how requests in flight are found, how cancellation flows. The connection
//! implements [`Host`]; this layer knows nothing else of it.

use std::any::Any;
use std::fmt;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::ReplySlot;
use crate::message::bind::Binder;

/// The connection, as the inbound seam sees it. It is also the [`Binder`] of the answers it
/// sends (streams in a result bind themselves to it).
pub(crate) trait Host: Binder + Any + Send + Sync {
    /// Enter `slot` in the map of requests in flight under its id (a cancellation, a reused id
    /// or a progress report must find it).
    fn enter(&self, slot: &Arc<ReplySlot>);
    /// Take `slot` out of that map (it is answered), if it is the one under its id.
    fn leave(&self, slot: &ReplySlot);
    /// Whether `slot` is the request in flight under its id (not answered, not replaced).
    fn in_flight(&self, slot: &Arc<ReplySlot>) -> bool;
    /// The parent of every request's cancellation token.
    fn handlers(&self) -> &CancellationToken;
    /// The connection has cancelled its handlers (it ended).
    fn handlers_cancelled(&self) -> bool;
    /// Whether the protocol answers a request its peer cancelled (LSP, ACP) or not (MCP).
    fn answers_cancelled(&self) -> bool;
    /// The largest message sent or accepted, in bytes.
    fn max_message_size(&self) -> usize;
    /// Queue an encoded answer: written by the caller's task when nobody writes, or, `later`,
    /// left to the writer task (an answer given from `Drop` does no I/O).
    fn send_answer(&self, body: Vec<u8>, later: bool);
    /// Peer input made fit for a log line (cut, redacted).
    fn quote(&self, value: &dyn fmt::Display) -> String;
    /// A handle to call the peer back, as given to the handler of the lane's message `lane`
    /// (if any): what a request's or notification's `peer()` is.
    fn handle(self: Arc<Self>, lane: Option<u64>) -> crate::Handle;
    /// What the connection keeps for its handlers (an `#[rpc]` service's `Arc`, see
    /// [`super::Locals`]).
    fn locals(&self) -> &super::Locals;
}
