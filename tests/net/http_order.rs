//! Our HTTP client keeps the order of what it sends where order matters: a notification (or a
//! batch) is a fence that earlier notifications and every later message respect, while calls
//! stay in flight together. Checked against a server written by hand over `TcpStream` (HTTP/1.1
//! parsed here, not by hyper) that records the order in which messages arrive and holds each
//! answer back, so that a message sent before an earlier notification was answered is seen.
#![cfg(feature = "http")]

use crate::support;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use jsonrpc_duplex::Connection;
use jsonrpc_duplex::transport::http::client::HttpTarget;
use serde_json::Value;
use support::time::within;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;

/// How long the server holds a notification's answer, watching for a message that arrives in
/// the meantime (which only a client that does not wait for the answer can send).
const HOLD: Duration = Duration::from_millis(400);

#[derive(Default)]
struct Log {
    /// What arrived, in order: the `params[0]` of each message.
    arrived: Vec<String>,
    /// Messages that arrived while an earlier notification was not answered yet.
    overtaking: Vec<String>,
    /// Notifications arrived and not answered yet.
    unanswered: usize,
    /// Calls arrived and not answered yet.
    calls_waiting: usize,
}

struct Recorder {
    log: Mutex<Log>,
    arrival: Notify,
    /// How many calls must be waiting together before any of them is answered.
    calls_together: usize,
}

/// Read one HTTP/1.1 request's body (`None` at EOF).
async fn read_request(stream: &mut TcpStream, buf: &mut Vec<u8>) -> Option<Vec<u8>> {
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8(buf[..end].to_vec()).expect("ASCII headers");
            assert!(head.starts_with("POST / HTTP/1.1\r\n"), "{head}");
            let len: usize = head
                .split("\r\n")
                .find_map(|line| {
                    let (name, value) = line.split_once(':')?;
                    name.eq_ignore_ascii_case("content-length").then(|| value.trim().parse().ok())?
                })
                .expect("Content-Length");
            if buf.len() >= end + 4 + len {
                let body = buf[end + 4..end + 4 + len].to_vec();
                buf.drain(..end + 4 + len);
                return Some(body);
            }
        }
        let mut chunk = [0u8; 4096];
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

async fn serve_connection(mut stream: TcpStream, recorder: Arc<Recorder>) {
    let mut buf = Vec::new();
    while let Some(body) = read_request(&mut stream, &mut buf).await {
        let message: Value = serde_json::from_slice(&body).expect("JSON");
        let label = message["params"][0].as_str().expect("a label").to_owned();
        let is_call = message.get("id").is_some();
        {
            let mut log = recorder.log.lock().unwrap();
            if log.unanswered > 0 {
                log.overtaking.push(label.clone());
            }
            log.arrived.push(label.clone());
            if is_call {
                log.calls_waiting += 1;
            } else {
                log.unanswered += 1;
            }
        }
        recorder.arrival.notify_waiters();
        let response = if is_call {
            // Answered once `calls_together` calls are waiting at once: calls are concurrent.
            within(async {
                loop {
                    let arrived = recorder.arrival.notified();
                    if recorder.log.lock().unwrap().calls_waiting >= recorder.calls_together {
                        break;
                    }
                    arrived.await;
                }
            })
            .await;
            let answer = format!(r#"{{"jsonrpc":"2.0","id":{},"result":"{label}"}}"#, message["id"]);
            format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{answer}",
                answer.len()
            )
        } else {
            // Held for a while: a client that sends on meanwhile is caught (`overtaking`).
            let _ = tokio::time::timeout(HOLD, recorder.arrival.notified()).await;
            recorder.log.lock().unwrap().unanswered -= 1;
            "HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\n\r\n".to_owned()
        };
        if stream.write_all(response.as_bytes()).await.is_err() {
            return;
        }
    }
}

async fn recording_server(calls_together: usize) -> (SocketAddr, Arc<Recorder>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().unwrap();
    let recorder = Arc::new(Recorder { log: Mutex::default(), arrival: Notify::new(), calls_together });
    let serving = recorder.clone();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            tokio::spawn(serve_connection(stream, serving.clone()));
        }
    });
    (addr, recorder)
}

#[tokio::test]
async fn notifications_and_the_calls_after_them_arrive_in_the_order_sent() {
    let (addr, recorder) = recording_server(2).await;
    let connection = Connection::builder().connect_http_with(HttpTarget::new(&format!("http://{addr}/")).unwrap());
    let handle = connection.handle();
    // Sent at once, none awaited before the next is sent: two notifications, then two calls.
    within(handle.notify("note", ["n1"])).await.unwrap();
    within(handle.notify("note", ["n2"])).await.unwrap();
    let (c3, c4) = within(futures::future::join(
        handle.request::<String>("echo", ["c3"]),
        handle.request::<String>("echo", ["c4"]),
    ))
    .await;
    // Both calls were waiting at the server together (it answers neither before): concurrent.
    assert_eq!((c3.unwrap().as_str(), c4.unwrap().as_str()), ("c3", "c4"));
    let log = recorder.log.lock().unwrap();
    assert_eq!(&log.arrived[..2], ["n1", "n2"], "{:?}", log.arrived);
    assert_eq!(log.arrived.len(), 4, "{:?}", log.arrived);
    assert!(log.overtaking.is_empty(), "sent before an earlier notification was answered: {:?}", log.overtaking);
}

#[tokio::test]
async fn a_notification_between_calls_is_a_fence_for_the_calls_after_it() {
    let (addr, recorder) = recording_server(1).await;
    let connection = Connection::builder().connect_http_with(HttpTarget::new(&format!("http://{addr}/")).unwrap());
    let handle = connection.handle();
    let first = handle.request::<String>("echo", ["c1"]);
    let notified = handle.notify("note", ["n2"]);
    let last = handle.request::<String>("echo", ["c3"]);
    let (first, notified, last) = within(futures::future::join3(first, notified, last)).await;
    assert_eq!(first.unwrap(), "c1");
    notified.unwrap();
    assert_eq!(last.unwrap(), "c3");
    let log = recorder.log.lock().unwrap();
    let at = |label: &str| log.arrived.iter().position(|l| l == label).unwrap();
    assert!(at("n2") < at("c3"), "{:?}", log.arrived);
    assert!(log.overtaking.is_empty(), "sent before an earlier notification was answered: {:?}", log.overtaking);
}
