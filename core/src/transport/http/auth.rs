//! The per-request authentication hook: the request's parts (method, URI, headers) in, a value
//! (who the caller is) or a [`Refusal`] out. It runs after the `Origin`/`Host` check and before
//! the body is read, so a refused caller cannot make the server read or hold its body.
//!
//! The value travels with the request: a service puts it in the request's extensions (as
//! [`Authenticated`]) and hands it to the code that builds the handlers of that request, so
//! handlers read it as plain captured state.

use std::any::Any;
use std::future::Future;
use std::sync::Arc;

use futures::future::BoxFuture;
use http::request::Parts;

use super::Refusal;

/// What an [`Authenticate`] hook found out about a caller: any value of yours (a user, a
/// tenant, the token's claims), or nothing ([`Authenticated::anonymous`]).
#[derive(Clone, Default)]
pub struct Authenticated(Option<Arc<dyn Any + Send + Sync>>);

impl std::fmt::Debug for Authenticated {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() { "Authenticated(..)" } else { "Authenticated(anonymous)" })
    }
}

impl Authenticated {
    /// A caller described by `value`.
    pub fn new<T: Any + Send + Sync>(value: T) -> Self {
        Authenticated(Some(Arc::new(value)))
    }

    /// A caller nothing is known about (what a server without a hook sees).
    pub fn anonymous() -> Self {
        Authenticated(None)
    }

    /// The value, if it is a `T`.
    pub fn get<T: Any>(&self) -> Option<&T> {
        self.0.as_deref().and_then(|v| v.downcast_ref())
    }
}

/// Decides, from a request's method, URI and headers, whether to serve it and who asks.
///
/// Any `Fn(&Parts) -> impl Future<Output = Result<Authenticated, Refusal>>` is one (the future
/// must not borrow the parts: take what it needs from them first). A bearer token check:
///
/// ```
/// use jsonrpc_duplex_core::transport::http::{Refusal, auth::{Authenticate, Authenticated}};
///
/// #[derive(Debug, PartialEq)]
/// struct User(&'static str);
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let hook = |parts: &http::request::Parts| {
///     let token = parts.headers.get("authorization").and_then(|v| v.to_str().ok()).map(str::to_owned);
///     async move {
///         match token.as_deref() {
///             Some("Bearer s3cret") => Ok(Authenticated::new(User("alice"))),
///             _ => Err(Refusal::unauthorized("Bearer", "a valid bearer token is required")),
///         }
///     }
/// };
/// let request = http::Request::builder().header("authorization", "Bearer s3cret").body(()).unwrap();
/// let who = hook.authenticate(&request.into_parts().0).await.unwrap();
/// assert_eq!(who.get::<User>(), Some(&User("alice")));
/// let refused = hook.authenticate(&http::Request::new(()).into_parts().0).await.unwrap_err();
/// assert_eq!(refused.status(), http::StatusCode::UNAUTHORIZED);
/// # }
/// ```
pub trait Authenticate: Send + Sync + 'static {
    /// Serve the request as this caller, or refuse it.
    fn authenticate(&self, parts: &Parts) -> BoxFuture<'static, Result<Authenticated, Refusal>>;
}

impl<F, Fut> Authenticate for F
where
    F: Fn(&Parts) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Authenticated, Refusal>> + Send + 'static,
{
    fn authenticate(&self, parts: &Parts) -> BoxFuture<'static, Result<Authenticated, Refusal>> {
        Box::pin(self(parts))
    }
}

/// A shared hook, as servers keep it.
pub type AuthHook = Arc<dyn Authenticate>;
