//! HTTP (feature `http`, on hyper 1): plain JSON-RPC over HTTP, and the pieces any HTTP service
//! of this crate is built from.
//!
//! - [`body`]: reading a body within a size limit (checked before allocating, `Content-Length`
//!   or chunked) and a read timeout;
//! - [`guard`]: the `Origin`/`Host` allow-lists (loopback by default; DNS rebinding);
//! - [`auth`]: the per-request authentication hook whose result the handlers read;
//! - [`serve`]: the hyper server loop (HTTP/1.1 with keep-alive and HTTP/2, a header read
//!   timeout, a connection limit, graceful shutdown), for any `tower` service;
//! - [`Refusal`]: an HTTP error answer (status, a text that says why, headers).

pub mod auth;
pub mod body;
pub(crate) mod budget;
pub mod client;
mod coalesce;
pub mod guard;
pub mod serve;
pub mod server;

use bytes::Bytes;
use http::{HeaderName, HeaderValue, Response, StatusCode, header};
use http_body_util::Full;

pub use hyper;
pub use {http, http_body, http_body_util, tower_service};

/// The error type bodies and services report (what hyper and tower use).
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// An HTTP answer that refuses a request: a status, a plain-text body saying why, and any
/// headers (say `WWW-Authenticate`, `Allow`).
///
/// ```
/// use jsonrpc_duplex_core::transport::http::Refusal;
///
/// let refusal = Refusal::new(http::StatusCode::FORBIDDEN, "not from here");
/// let response = refusal.into_response::<jsonrpc_duplex_core::transport::http::FullBody>();
/// assert_eq!(response.status(), 403);
/// assert_eq!(response.headers()["content-type"], "text/plain; charset=utf-8");
/// ```
#[derive(Clone, Debug)]
pub struct Refusal {
    status: StatusCode,
    message: String,
    headers: Vec<(HeaderName, HeaderValue)>,
    close: bool,
}

impl Refusal {
    /// Refuse with `status`, saying why in `message`.
    pub fn new(status: StatusCode, message: impl Into<String>) -> Self {
        Refusal { status, message: message.into(), headers: Vec::new(), close: false }
    }

    /// `401 Unauthorized` with a `WWW-Authenticate` challenge for `scheme` (`"Bearer"`).
    pub fn unauthorized(scheme: &str, message: impl Into<String>) -> Self {
        let challenge = HeaderValue::from_str(scheme).unwrap_or_else(|_| HeaderValue::from_static("Bearer"));
        Refusal::new(StatusCode::UNAUTHORIZED, message).with_header(header::WWW_AUTHENTICATE, challenge)
    }

    /// Add a header to the answer.
    pub fn with_header(mut self, name: HeaderName, value: HeaderValue) -> Self {
        self.headers.push((name, value));
        self
    }

    /// Close the connection after the answer (`Connection: close`): for a request whose body
    /// was not read to its end.
    pub fn closing(mut self) -> Self {
        self.close = true;
        self
    }

    /// The status.
    pub fn status(&self) -> StatusCode {
        self.status
    }

    /// Why, for people.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The HTTP answer.
    pub fn into_response<B: From<Bytes>>(self) -> Response<B> {
        let mut response = Response::new(B::from(Bytes::from(self.message + "\n")));
        *response.status_mut() = self.status;
        let headers = response.headers_mut();
        headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain; charset=utf-8"));
        if self.close {
            headers.insert(header::CONNECTION, HeaderValue::from_static("close"));
        }
        for (name, value) in self.headers {
            headers.append(name, value);
        }
        response
    }
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.status, self.message)
    }
}

impl std::error::Error for Refusal {}

/// A whole body in memory: what the JSON-RPC service answers with.
pub type FullBody = Full<Bytes>;
