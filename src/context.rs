//! Context arguments: handler arguments that come from the connection, not from `params`.

use jsonrpc_duplex_core::{CancellationToken, Handle, Id, NotificationContext, RequestContext};

/// A value a request handler can take as an argument that is not a param: the request's
/// cancellation token, its id, a handle to call the peer back, or a generated client of the
/// peer's trait (`#[context] editor: EditorClient`).
///
/// Arguments of type `CancellationToken` and `RequestContext` are context arguments by
/// themselves; others are marked `#[context]`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a context argument of a request handler",
    label = "not available from a request's context",
    note = "context arguments are `CancellationToken`, `RequestContext`, `Handle`, `Id` and the client of \
            any #[rpc] trait (`{{Trait}}Client`); remove `#[context]` to make it a param"
)]
pub trait FromRequestContext {
    /// Take the value from the request's context.
    fn from_request_context(cx: &RequestContext) -> Self;
}

/// A value a notification handler can take as an argument that is not a param: a handle to
/// call the peer back, or a generated client of the peer's trait.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a context argument of a notification handler",
    label = "not available from a notification's context",
    note = "notification context arguments are `NotificationContext`, `Handle` and the client of any #[rpc] \
            trait; notifications have no id and cannot be cancelled"
)]
pub trait FromNotificationContext {
    /// Take the value from the notification's context.
    fn from_notification_context(cx: &NotificationContext) -> Self;
}

impl FromRequestContext for CancellationToken {
    fn from_request_context(cx: &RequestContext) -> Self {
        cx.cancellation().clone()
    }
}

impl FromRequestContext for RequestContext {
    fn from_request_context(cx: &RequestContext) -> Self {
        cx.clone()
    }
}

impl FromRequestContext for Id {
    fn from_request_context(cx: &RequestContext) -> Self {
        cx.id().clone()
    }
}

impl FromRequestContext for Handle {
    fn from_request_context(cx: &RequestContext) -> Self {
        cx.peer()
    }
}

impl FromNotificationContext for NotificationContext {
    fn from_notification_context(cx: &NotificationContext) -> Self {
        cx.clone()
    }
}

impl FromNotificationContext for Handle {
    fn from_notification_context(cx: &NotificationContext) -> Self {
        cx.peer()
    }
}
