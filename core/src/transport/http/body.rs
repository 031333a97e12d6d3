//! Reading a request (or response) body within bounds: at most a given number of bytes, refused
//! before anything is allocated for it, and within a time limit.
//!
//! A body with a `Content-Length` over the limit is refused from its header alone (hyper reports
//! the declared length as the body's exact size hint), without reading a byte of it. A chunked
//! body (or one whose length is unknown) is read frame by frame, and refused as soon as the bytes
//! received would pass the limit: at most the limit plus one of hyper's read chunks is ever held.
//! The whole body must arrive within the read timeout, so a peer that trickles bytes cannot hold
//! a request open.

use std::time::Duration;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use http_body::Body;
use http_body_util::BodyExt;

use super::{BoxError, Refusal};

/// The default time a whole body may take to arrive (the server's `body_read_timeout`).
pub const DEFAULT_BODY_READ_TIMEOUT: Duration = Duration::from_secs(30);

/// Why a body was not read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BodyError {
    /// The body is larger than the limit: `declared` is its `Content-Length` when it had one
    /// (then nothing of it was read), `None` when the bytes received passed the limit.
    #[error("the body{} exceeds the limit of {limit} bytes", declared.map(|n| format!(" of {n} bytes")).unwrap_or_default())]
    TooLarge {
        /// The length the body declared, if any.
        declared: Option<u64>,
        /// The limit.
        limit: usize,
    },
    /// The body did not arrive in full within the read timeout.
    #[error("the body did not arrive within {0:?}")]
    Timeout(Duration),
    /// The body could not be read (the peer went away, a malformed chunk).
    #[error("the body could not be read: {0}")]
    Read(BoxError),
}

impl BodyError {
    /// The HTTP answer to a request whose body could not be read: `413 Payload Too Large`,
    /// `408 Request Timeout`, or `400 Bad Request`.
    pub fn refusal(&self) -> Refusal {
        let status = match self {
            BodyError::TooLarge { .. } => http::StatusCode::PAYLOAD_TOO_LARGE,
            BodyError::Timeout(_) => http::StatusCode::REQUEST_TIMEOUT,
            BodyError::Read(_) => http::StatusCode::BAD_REQUEST,
        };
        Refusal::new(status, self.to_string()).closing()
    }
}

/// Read all of `body`, at most `limit` bytes, within `timeout` (`None`: no time limit).
///
/// ```
/// use http_body_util::Full;
/// use jsonrpc_duplex_core::transport::http::body::{BodyError, read_body};
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let body = Full::new(bytes::Bytes::from_static(b"{\"jsonrpc\":\"2.0\"}"));
/// assert_eq!(read_body(body, 1024, None).await.unwrap().len(), 17);
///
/// let large = Full::new(bytes::Bytes::from(vec![b' '; 2048]));
/// assert!(matches!(read_body(large, 1024, None).await, Err(BodyError::TooLarge { declared: Some(2048), .. })));
/// # }
/// ```
pub async fn read_body<B>(body: B, limit: usize, timeout: Option<Duration>) -> Result<Bytes, BodyError>
where
    B: Body,
    B::Error: Into<BoxError>,
{
    let hint = body.size_hint();
    if hint.lower() > limit as u64 {
        return Err(BodyError::TooLarge { declared: Some(hint.exact().unwrap_or(hint.lower())), limit });
    }
    let read = collect(body, limit, hint.exact());
    match timeout {
        Some(timeout) => tokio::time::timeout(timeout, read).await.map_err(|_| BodyError::Timeout(timeout))?,
        None => read.await,
    }
}

async fn collect<B>(body: B, limit: usize, declared: Option<u64>) -> Result<Bytes, BodyError>
where
    B: Body,
    B::Error: Into<BoxError>,
{
    let mut body = std::pin::pin!(body);
    // The common case is one data frame: it is returned as it is, without a copy.
    let mut first: Option<Bytes> = None;
    let mut joined: Option<BytesMut> = None;
    let mut len = 0usize;
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| BodyError::Read(e.into()))?;
        let Ok(data) = frame.into_data() else { continue };
        if !data.has_remaining() {
            continue;
        }
        len = len.saturating_add(data.remaining());
        if len > limit {
            return Err(BodyError::TooLarge { declared: None, limit });
        }
        match (&mut first, &mut joined) {
            (None, None) => first = Some(copy_to_bytes(data)),
            (Some(_), None) => {
                let head = first.take().unwrap_or_default();
                // The declared length is at most the limit here (checked before reading).
                let capacity = declared.map_or(head.len() + data.remaining(), |n| n as usize);
                let mut buf = BytesMut::with_capacity(capacity.min(limit));
                buf.extend_from_slice(&head);
                put(&mut buf, data);
                joined = Some(buf);
            }
            (_, Some(buf)) => put(buf, data),
        }
        // All the declared bytes are in: done, without waiting to be told the body ended (a
        // round through the HTTP connection's task, for nothing: the framing is its business).
        if declared == Some(len as u64) {
            break;
        }
    }
    Ok(match (first, joined) {
        (_, Some(buf)) => buf.freeze(),
        (Some(one), None) => one,
        (None, None) => Bytes::new(),
    })
}

/// A data chunk as `Bytes` (free for hyper's own chunks, which are `Bytes` already).
fn copy_to_bytes<D: Buf>(mut data: D) -> Bytes {
    let n = data.remaining();
    data.copy_to_bytes(n)
}

fn put<D: Buf>(buf: &mut BytesMut, data: D) {
    buf.put(data);
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use futures::stream;
    use http_body::Frame;
    use http_body_util::StreamBody;

    fn chunks(
        parts: Vec<&'static [u8]>,
    ) -> StreamBody<impl futures::Stream<Item = Result<Frame<Bytes>, std::io::Error>>> {
        StreamBody::new(stream::iter(parts.into_iter().map(|p| Ok(Frame::data(Bytes::from_static(p))))))
    }

    #[tokio::test]
    async fn chunked_bodies_are_joined_and_cut_at_the_limit() {
        let body = read_body(chunks(vec![b"ab", b"", b"cd", b"e"]), 5, None).await.unwrap();
        assert_eq!(&body[..], b"abcde");
        let over = read_body(chunks(vec![b"ab", b"cd", b"ef"]), 5, None).await;
        assert!(matches!(over, Err(BodyError::TooLarge { declared: None, limit: 5 })), "{over:?}");
    }

    #[tokio::test(start_paused = true)]
    async fn a_body_that_never_ends_times_out() {
        let endless = StreamBody::new(stream::pending::<Result<Frame<Bytes>, std::io::Error>>());
        let err = read_body(endless, 5, Some(Duration::from_secs(3))).await.unwrap_err();
        assert!(matches!(err, BodyError::Timeout(_)), "{err:?}");
        assert_eq!(err.refusal().status(), http::StatusCode::REQUEST_TIMEOUT);
    }
}
