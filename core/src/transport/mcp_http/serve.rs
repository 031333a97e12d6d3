//! The accept loop of [`McpHttpServer::bind`](super::McpHttpServer::bind): hyper's HTTP/1.1
//! server on each accepted TCP stream.

use std::convert::Infallible;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use http::{Request, Response};
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

/// Most HTTP connections served at once by a bound server; more wait in the listen backlog.
pub const MAX_HTTP_CONNECTIONS: usize = 1024;
/// hyper's bound on the time a request's headers take to arrive.
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// Serve every accepted connection with `handle` (one call per request) until `stop`.
pub(super) async fn accept_loop<H, Fut, B>(listener: TcpListener, handle: H, stop: CancellationToken)
where
    H: Fn(Request<Incoming>) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Response<B>> + Send + 'static,
    B: http_body::Body<Data = bytes::Bytes, Error = Infallible> + Send + 'static,
{
    let permits = Arc::new(tokio::sync::Semaphore::new(MAX_HTTP_CONNECTIONS));
    loop {
        let permit = tokio::select! {
            _ = stop.cancelled() => return,
            permit = permits.clone().acquire_owned() => match permit { Ok(p) => p, Err(_) => return },
        };
        let (stream, _peer) = tokio::select! {
            _ = stop.cancelled() => return,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    tracing::warn!(error = %e, "MCP HTTP accept failed");
                    // EMFILE and the like: give the system a moment rather than spin.
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let _ = stream.set_nodelay(true);
        let handle = handle.clone();
        let stop = stop.clone();
        tokio::spawn(async move {
            let _permit = permit;
            let service = hyper::service::service_fn(move |request: Request<Incoming>| {
                let response = handle(request);
                async move { Ok::<_, Infallible>(response.await) }
            });
            let connection = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(HEADER_READ_TIMEOUT)
                .serve_connection(TokioIo::new(stream), service);
            let mut connection = std::pin::pin!(connection);
            tokio::select! {
                result = connection.as_mut() => {
                    if let Err(e) = result {
                        tracing::debug!(error = %e, "MCP HTTP connection ended with an error");
                    }
                }
                _ = stop.cancelled() => connection.as_mut().graceful_shutdown(),
            }
        });
    }
}
