//! The inbound seam: requests and notifications from the peer, their answer-once reply handles,
//! and the router from method names to handlers.

mod batch;
mod extensions;
mod host;
mod locals;
mod request;
mod responder;
mod router;

pub(crate) use batch::Batch;
pub(crate) use extensions::EMPTY as EMPTY_EXTENSIONS;
pub use extensions::Extensions;
pub(crate) use host::Host;
pub(crate) use locals::Locals;
pub use request::{
    Notification, NotificationContext, NotificationStart, Request, RequestContext, RequestStart, decode_params,
};
pub use responder::Responder;
pub(crate) use responder::{ReplySlot, SlotHook, in_scope, panic_message, poll_supervised, scoped, tell_hook};
pub(crate) use router::{BoxFuture, NotificationFn, RequestFn, Route};
pub use router::{MethodClash, Router};
