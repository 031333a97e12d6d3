//! Features that need a duplex peer, served over plain HTTP (feature `http`): a stream
//! (StreamJsonRpc's enumerator, pulled with `$/enumerator/next` calls the server would have to
//! keep across POSTs) is refused saying why (before: a `-32603` about serialization, or a token
//! no later POST could pull); progress reports are dropped and the call answered. (Calls back
//! to the client: `http::a_handlers_call_back_to_the_client_fails_at_once_saying_why`.)
#![cfg(feature = "http")]

use crate::support;

use std::net::SocketAddr;
use std::time::Duration;

use futures::{Stream, StreamExt};
use jsonrpc_duplex::server::ServerBuilder;
use jsonrpc_duplex::transport::http::serve::HttpServer;
use jsonrpc_duplex::transport::http::server::NO_STREAMS;
use jsonrpc_duplex::{Connection, Progress, rpc};
use serde_json::Value;
use support::time::within;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A session-like service.
#[rpc(namespace = "session")]
pub trait Session {
    /// Three numbers, pulled by the caller.
    #[method(params = "named")]
    fn history(&self) -> impl Stream<Item = u32> + Send;
    /// `steps`, reporting each step.
    #[method(params = "named")]
    async fn long_task(&self, steps: u32, progress: Progress<u32>) -> u32;
}

struct Impl;

impl Session for Impl {
    fn history(&self) -> impl Stream<Item = u32> + Send {
        futures::stream::iter([1, 2, 3])
    }
    async fn long_task(&self, steps: u32, progress: Progress<u32>) -> u32 {
        for step in 1..=steps {
            let _ = progress.report(step).await;
        }
        steps
    }
}

async fn start() -> HttpServer {
    ServerBuilder::new(Connection::builder().serve(SessionServer::new(Impl)))
        .max_connections(16)
        .message_read_timeout(Duration::from_millis(500))
        .bind_http("127.0.0.1:0")
        .await
        .expect("bind")
}

/// POST `body` on a connection of its own; the status and the JSON answer (if any).
async fn post(addr: SocketAddr, body: &str) -> (u16, Option<Value>) {
    let mut stream = within(TcpStream::connect(addr)).await.expect("connect");
    let request = format!(
        "POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    within(stream.write_all(request.as_bytes())).await.expect("write");
    let mut all = Vec::new();
    within(stream.read_to_end(&mut all)).await.expect("read");
    let text = String::from_utf8_lossy(&all).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").expect("a head");
    let status = head.split(' ').nth(1).and_then(|s| s.parse().ok()).expect("a status");
    (status, serde_json::from_str(body).ok())
}

fn error_message(answer: &Value) -> &str {
    answer["error"]["message"].as_str().unwrap_or_else(|| panic!("an error answer: {answer}"))
}

#[tokio::test]
async fn a_stream_over_plain_http_is_refused_saying_why_and_progress_is_dropped() {
    let server = start().await;
    let addr = server.local_addr();
    // One request (served directly).
    let (status, answer) = post(addr, r#"{"jsonrpc":"2.0","id":1,"method":"session/history","params":{}}"#).await;
    let answer = answer.expect("a JSON answer");
    assert_eq!(status, 200);
    assert_eq!(answer["id"], 1);
    assert_eq!(answer["error"]["code"], jsonrpc_duplex::codes::INTERNAL_ERROR, "{answer}");
    assert!(error_message(&answer).contains(NO_STREAMS), "{answer}");
    // In a batch (a short connection of its own): refused the same way, not a token that no
    // later POST could pull.
    let (status, answer) = post(addr, r#"[{"jsonrpc":"2.0","id":2,"method":"session/history","params":{}}]"#).await;
    let answer = answer.expect("a JSON answer");
    assert_eq!(status, 200);
    assert_eq!(answer[0]["id"], 2);
    assert!(error_message(&answer[0]).contains(NO_STREAMS), "{answer}");
    // Progress reports are dropped; the call is answered.
    let (status, answer) =
        post(addr, r#"{"jsonrpc":"2.0","id":3,"method":"session/long_task","params":{"steps":2,"progress":"p"}}"#)
            .await;
    assert_eq!((status, answer.as_ref().map(|a| a["result"].clone())), (200, Some(Value::from(2))), "{answer:?}");

    // Our HTTP client and a generated proxy: the stream's first item is the error, saying why.
    let client = Connection::builder().connect_http(&format!("http://{addr}/")).unwrap();
    let proxy = SessionClient::new(client.handle());
    let first = within(proxy.history().next()).await;
    match first {
        Some(Err(e)) => assert!(e.to_string().contains(NO_STREAMS), "{e}"),
        other => panic!("the refusal, not {other:?}"),
    }
}
