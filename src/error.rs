//! Typed errors of generated methods: the mapping to and from error objects ([`RpcErrorType`]),
//! the default error type ([`RpcError`]) and the error of a typed call ([`ClientError`]).

use std::any::Any;
use std::fmt;
use std::ops::Deref;

use jsonrpc_duplex_core::{CloseReason, Error, ErrorObject, codes};
use serde::Serialize;

/// An error type an `#[rpc]` method may return (`Result<T, E>`): it maps to the error object a
/// server sends, and back from the error object a client receives.
///
/// `from_error_object` gives the object back when it is not one of this type's errors (say a
/// `-32601` from a peer that lacks the method); the client then reports it as
/// [`ClientError::Call`] with [`Error::Remote`] instead of [`ClientError::Method`].
///
/// Write an error enum once with `#[derive(RpcErrorType)]`: each variant says its code and
/// message, the value itself is the `data`, and with the `openrpc` feature the same attributes
/// (and each variant's doc comment) describe the method's errors in OpenRPC documents and
/// TypeScript error classes ([`DescribeErrors`](crate::openrpc::DescribeErrors)):
///
/// ```
/// use jsonrpc_duplex::{ErrorObject, RpcErrorType};
///
/// #[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize, RpcErrorType)]
/// # #[cfg_attr(feature = "openrpc", derive(schemars::JsonSchema))]
/// #[serde(tag = "kind", rename_all = "camelCase")]
/// enum FsError {
///     /// There is no such file.
///     #[rpc_error(code = -32002, message = "file not found", name = "FileNotFound")]
///     NotFound { path: String },
///     /// The user said no.
///     #[rpc_error(code = -32003, message = "permission denied")]
///     Denied,
/// }
///
/// let object = FsError::NotFound { path: "a.txt".into() }.into_error_object();
/// assert_eq!((object.code, object.message.as_str()), (-32002, "file not found"));
/// assert_eq!(object.data_as::<serde_json::Value>().unwrap().unwrap(), serde_json::json!({"kind": "notFound", "path": "a.txt"}));
/// assert_eq!(FsError::from_error_object(object), Ok(FsError::NotFound { path: "a.txt".into() }));
/// // Not one of its errors: the object comes back (so does one whose code is not its variant's).
/// assert!(FsError::from_error_object(ErrorObject::method_not_found("x")).is_err());
/// let mismatched = ErrorObject::new(-32003, "permission denied").with_data(FsError::NotFound { path: "a".into() });
/// assert!(FsError::from_error_object(mismatched).is_err());
/// # #[cfg(feature = "openrpc")] {
/// use jsonrpc_duplex::openrpc::{DescribeErrors, schema_generator};
/// let errors = FsError::describe_errors(&mut schema_generator());
/// assert_eq!((errors[0].name.as_str(), errors[0].code, errors[0].docs.as_str()), ("FileNotFound", -32002, "There is no such file."));
/// assert_eq!((errors[1].name.as_str(), errors[1].message.as_str()), ("Denied", "permission denied"));
/// # }
/// ```
///
/// By hand, the same mapping reads:
///
/// ```
/// use jsonrpc_duplex::{ErrorObject, RpcErrorType};
///
/// #[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize)]
/// enum FsError {
///     NotFound { path: String },
///     Denied,
/// }
///
/// impl RpcErrorType for FsError {
///     fn into_error_object(self) -> ErrorObject {
///         let (code, message) = match &self {
///             FsError::NotFound { .. } => (-32002, "file not found"),
///             FsError::Denied => (-32003, "permission denied"),
///         };
///         ErrorObject::new(code, message).with_data(&self)
///     }
///     fn from_error_object(error: ErrorObject) -> Result<Self, ErrorObject> {
///         match (error.code, error.data_as::<FsError>()) {
///             (-32002 | -32003, Some(Ok(e))) => Ok(e),
///             _ => Err(error),
///         }
///     }
/// }
///
/// let object = FsError::NotFound { path: "a.txt".into() }.into_error_object();
/// assert_eq!(object.code, -32002);
/// assert_eq!(FsError::from_error_object(object), Ok(FsError::NotFound { path: "a.txt".into() }));
/// assert!(FsError::from_error_object(ErrorObject::method_not_found("x")).is_err());
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be the error type of an rpc method",
    label = "the error type of this method",
    note = "implement `jsonrpc_duplex::RpcErrorType` for it (how it maps to and from an error object), \
            or return `jsonrpc_duplex::RpcError`"
)]
pub trait RpcErrorType: Sized {
    /// The error object the server sends for this error.
    fn into_error_object(self) -> ErrorObject;

    /// The error a client recovers from the peer's error object, or the object itself when it
    /// is not one of this type's.
    fn from_error_object(error: ErrorObject) -> Result<Self, ErrorObject>;
}

impl RpcErrorType for ErrorObject {
    fn into_error_object(self) -> ErrorObject {
        self
    }
    fn from_error_object(error: ErrorObject) -> Result<Self, ErrorObject> {
        Ok(error)
    }
}

/// The default error type: any error object (code, message, raw data).
///
/// Anything that implements [`std::error::Error`] converts into it with `?` (as `-32000`, the
/// generic application error, with the error's message and its causes), so a handler can write
/// `std::fs::read_to_string(path)?`. An [`ErrorObject`] converts keeping its code. The failure
/// of a call to a peer (a [`ClientError`] of a generated client with `RpcError` or `ErrorObject`
/// as its error type, or the core [`Error`]) converts into what the peer said, unchanged (code,
/// message, data), or, when the call itself failed, into a code the caller can act on: `-32800`
/// for a cancelled call, `-32001` ([`codes::REQUEST_TIMEOUT`]) for one that timed out, `-32000`
/// for a lost connection (see [`ClientError::into_error_object`]). Build one with a code of your
/// own with [`RpcError::new`]. It reads like an [`ErrorObject`] (it derefs to one).
///
/// It is a type of its own, beside [`ErrorObject`], only so that `?` works on everything: a type
/// that converts from every [`std::error::Error`] cannot be one itself (the conversions would
/// overlap, as for `anyhow::Error`), while the wire type must be one. Keep, inspect and forward
/// error objects as [`ErrorObject`]; return `RpcError` from handlers. Each converts into the other
/// without loss.
///
/// ```
/// use jsonrpc_duplex::{RpcError, codes};
///
/// fn parse(text: &str) -> Result<i64, RpcError> {
///     Ok(text.parse::<i64>()?)
/// }
/// let e = parse("x").unwrap_err();
/// assert_eq!(e.code, codes::SERVER_ERROR);
/// assert_eq!(e.message, "invalid digit found in string");
///
/// let e = RpcError::new(-32050, "quota exceeded").with_data(serde_json::json!({ "retryAfter": 30 }));
/// assert_eq!(e.data.as_ref().unwrap().get(), r#"{"retryAfter":30}"#);
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct RpcError {
    object: ErrorObject,
}

impl RpcError {
    /// An error with a code and a message.
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        RpcError { object: ErrorObject::new(code, message) }
    }

    /// Attach data (see [`ErrorObject::with_data`]).
    #[must_use]
    pub fn with_data(self, data: impl Serialize) -> Self {
        RpcError { object: self.object.with_data(data) }
    }

    /// `-32602`: the params were not what the method needs.
    pub fn invalid_params(detail: impl fmt::Display) -> Self {
        RpcError { object: ErrorObject::invalid_params(detail) }
    }

    /// `-32603`: something failed inside this side.
    pub fn internal(detail: impl fmt::Display) -> Self {
        RpcError { object: ErrorObject::internal_error(detail) }
    }

    /// The error object.
    pub fn into_object(self) -> ErrorObject {
        self.object
    }
}

impl Deref for RpcError {
    type Target = ErrorObject;
    fn deref(&self) -> &ErrorObject {
        &self.object
    }
}

impl fmt::Display for RpcError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.object, f)
    }
}

impl<E> From<E> for RpcError
where
    E: std::error::Error + Send + Sync + 'static,
{
    fn from(error: E) -> Self {
        // What the peer said, or why the call failed, travels on as it was; any other error is a
        // `-32000` with its message.
        let mut error = Some(error);
        let slot = &mut error as &mut dyn Any;
        if let Some(object) = take::<ErrorObject>(slot) {
            return RpcError { object };
        }
        if let Some(failed) = take::<Error>(slot) {
            return RpcError { object: failed.into() };
        }
        if let Some(failed) = take::<ClientError<RpcError>>(slot) {
            return RpcError { object: failed.into_error_object() };
        }
        if let Some(failed) = take::<ClientError<ErrorObject>>(slot) {
            return RpcError { object: failed.into_error_object() };
        }
        // Taken only when it was one of the types above, which all returned.
        let Some(error) = error else { return RpcError::internal("an error taken twice") };
        let mut message = error.to_string();
        let mut source = error.source();
        while let Some(cause) = source {
            message.push_str(": ");
            message.push_str(&cause.to_string());
            source = cause.source();
        }
        RpcError::new(codes::SERVER_ERROR, message)
    }
}

/// `Some(value)` out of `slot` (an `Option<T>`) if it is one.
fn take<T: 'static>(slot: &mut dyn Any) -> Option<T> {
    slot.downcast_mut::<Option<T>>().and_then(Option::take)
}

impl From<RpcError> for ErrorObject {
    fn from(error: RpcError) -> Self {
        error.object
    }
}

impl RpcErrorType for RpcError {
    fn into_error_object(self) -> ErrorObject {
        self.object
    }
    fn from_error_object(error: ErrorObject) -> Result<Self, ErrorObject> {
        Ok(RpcError { object: error })
    }
}

/// Why a typed call did not produce its result: the method's own error, or the failure of the
/// call itself.
///
/// `E` is the method's error type (`Result<T, E>` in the trait; [`RpcError`] for methods that do
/// not declare one and for notifications). Every failure that is not the method's own is a core
/// [`Error`], kept as it is: a lost connection, a cancellation, a timeout, a message over the
/// size limit, params that do not serialize, an answer that does not decode, and an error
/// object from the peer that `E` does not recognise ([`Error::Remote`], say a `-32601` from a
/// peer that lacks the method).
///
/// Match on the two variants, or use the accessors:
///
/// ```
/// use jsonrpc_duplex::{ClientError, Error, ErrorObject, RpcError, codes};
///
/// fn explain(failed: &ClientError) -> String {
///     match failed {
///         ClientError::Method(e) => format!("the peer refused: {}", e.message),
///         ClientError::Call(Error::Cancelled) => "we gave up".to_string(),
///         ClientError::Call(e) => format!("the call failed: {e}"),
///     }
/// }
/// let refused: ClientError = ClientError::Method(RpcError::new(-32050, "quota exceeded"));
/// assert_eq!(explain(&refused), "the peer refused: quota exceeded");
/// let cancelled: ClientError = Error::Cancelled.into();
/// assert!(cancelled.is_cancelled());
/// assert_eq!(cancelled.into_error_object().code, codes::REQUEST_CANCELLED);
/// ```
#[derive(Debug)]
pub enum ClientError<E = RpcError> {
    /// The peer answered with an error object that maps to the method's error type.
    Method(E),
    /// The call failed otherwise (see [`Error`] for each case). An error object from the peer
    /// that does not map to the method's error type is [`Error::Remote`], kept as it came.
    Call(Error),
}

impl<E> ClientError<E> {
    /// The method's own error, when the peer answered with one.
    pub fn method_error(&self) -> Option<&E> {
        match self {
            ClientError::Method(e) => Some(e),
            ClientError::Call(_) => None,
        }
    }

    /// The method's own error, or this error back when it is not one.
    pub fn into_method_error(self) -> Result<E, Self> {
        match self {
            ClientError::Method(e) => Ok(e),
            other => Err(other),
        }
    }

    /// The failure of the call, when it was not the method's own error.
    pub fn call_error(&self) -> Option<&Error> {
        match self {
            ClientError::Method(_) => None,
            ClientError::Call(e) => Some(e),
        }
    }

    /// The peer's error object, when it did not map to the method's error type.
    pub fn remote(&self) -> Option<&ErrorObject> {
        self.call_error().and_then(Error::as_remote)
    }

    /// Why the connection ended, when that is why the call failed ([`Error::ConnectionLost`]).
    pub fn connection_lost(&self) -> Option<&CloseReason> {
        match self {
            ClientError::Call(Error::ConnectionLost(reason)) => Some(reason),
            _ => None,
        }
    }

    /// Whether the call was cancelled by its token ([`Error::Cancelled`]).
    pub fn is_cancelled(&self) -> bool {
        matches!(self, ClientError::Call(Error::Cancelled))
    }

    /// Whether the call gave up waiting for its answer ([`Error::Timeout`]).
    pub fn is_timeout(&self) -> bool {
        matches!(self, ClientError::Call(Error::Timeout(_)))
    }
}

impl<E: RpcErrorType> ClientError<E> {
    /// The error object a handler answers with when this call, made on behalf of its request,
    /// failed: the peer's error object unchanged (code, message, data); `-32800` for a cancelled
    /// call; `-32001` ([`codes::REQUEST_TIMEOUT`]) for one that timed out; `-32000` for a lost
    /// connection; `-32603` when this side could not encode the call or decode its answer (the
    /// conversion of [`Error`] into an [`ErrorObject`]).
    ///
    /// `?` does this by itself in a handler that returns [`RpcError`] (for the default error
    /// types) or [`ErrorObject`]; with a typed error of your own, write
    /// `.map_err(ClientError::into_error_object)?` or implement `From` for it.
    ///
    /// ```
    /// use jsonrpc_duplex::{ClientError, Error, ErrorObject, RpcError, codes};
    ///
    /// let peer = ErrorObject::new(-32002, "no such file").with_data(serde_json::json!({"path": "a.txt"}));
    /// let failed: ClientError = ClientError::Method(RpcError::from(peer.clone()));
    /// assert_eq!(RpcError::from(failed).into_object(), peer);
    /// let cancelled: ClientError = ClientError::Call(Error::Cancelled);
    /// assert_eq!(cancelled.into_error_object().code, codes::REQUEST_CANCELLED);
    /// ```
    pub fn into_error_object(self) -> ErrorObject {
        match self {
            ClientError::Method(e) => e.into_error_object(),
            ClientError::Call(e) => e.into(),
        }
    }
}

impl<E: RpcErrorType> From<ClientError<E>> for ErrorObject {
    fn from(error: ClientError<E>) -> Self {
        error.into_error_object()
    }
}

/// An error object from the peer becomes the method's error when `E` recognises it
/// ([`RpcErrorType::from_error_object`]); every other failure stays a [`ClientError::Call`].
impl<E: RpcErrorType> From<Error> for ClientError<E> {
    fn from(error: Error) -> Self {
        match error {
            Error::Remote(object) => match E::from_error_object(object) {
                Ok(e) => ClientError::Method(e),
                Err(object) => ClientError::Call(Error::Remote(object)),
            },
            other => ClientError::Call(other),
        }
    }
}

impl<E: fmt::Display> fmt::Display for ClientError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClientError::Method(e) => write!(f, "the peer answered with an error: {e}"),
            ClientError::Call(e) => fmt::Display::fmt(e, f),
        }
    }
}

/// A [`ClientError::Call`] is transparent (its message and source are the [`Error`]'s); a
/// [`ClientError::Method`]'s message includes the method's error, so it has no source (the
/// error type need not implement [`std::error::Error`], and a chain would repeat it).
impl<E: fmt::Debug + fmt::Display> std::error::Error for ClientError<E> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ClientError::Method(_) => None,
            ClientError::Call(e) => e.source(),
        }
    }
}
