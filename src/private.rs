//! What generated code refers to, under one hidden path (`jsonrpc_duplex::__private`) so that
//! users depend on this crate alone. Not a public API: names here may change with the macro.

pub use serde;
pub use serde_json;
pub use serde_json::value::RawValue;

use serde::Serialize;
use serde::de::DeserializeOwned;

pub use jsonrpc_duplex_core::handler::decode_params;
pub use jsonrpc_duplex_core::{
    CallOptions, Error, ErrorObject, Handle, Notification, NotificationContext, Request, RequestContext, Responder,
    Router,
};

pub use crate::context::{FromNotificationContext, FromRequestContext};
pub use crate::error::{ClientError, RpcError, RpcErrorType};
pub use crate::params::ParamsReader;

/// The typed error of a call (a function of its own, so that a missing `RpcErrorType` is
/// reported once, at the method's error type).
pub fn client_result<E: RpcErrorType>(result: Result<Box<RawValue>, Error>) -> Result<Box<RawValue>, ClientError<E>> {
    result.map_err(ClientError::from)
}

/// Decode a call's result (what `Handle::request_with` does; a function of its own, so that a
/// missing `Deserialize` is reported at the method's result type).
pub fn decode_result<R: DeserializeOwned, E>(raw: &RawValue) -> Result<R, ClientError<E>> {
    serde_json::from_str(raw.get()).map_err(ClientError::Deserialize)
}

/// Answer with a result (a function of its own, so that a missing `Serialize` is reported at
/// the method's result type).
pub fn reply_ok<R: Serialize>(reply: Responder, result: R) -> bool {
    reply.ok(result)
}

/// A notification whose params do not decode is dropped (it has no answer to carry the error);
/// say so where people look.
pub fn notification_dropped(method: &str, error: &ErrorObject) {
    tracing::warn!(
        target: jsonrpc_duplex_core::LOG_TARGET,
        %method,
        %error,
        "notification dropped: its params do not decode"
    );
}
