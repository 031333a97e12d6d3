//! Plain JSON-RPC over HTTP (feature `http`), driven by HTTP/1.1 requests written by hand over a
//! `TcpStream` and read back byte by byte (so a malformed response fails the test), and by our
//! own HTTP client: every status the server answers, batches, notifications, the size limit on
//! `Content-Length` and chunked bodies, a slow body, the `Origin`/`Host` guard, authentication,
//! and a handler's call back to the client.
#![cfg(feature = "http")]

use crate::support;

use std::net::SocketAddr;
use std::time::Duration;

use jsonrpc_duplex::server::ServerBuilder;
use jsonrpc_duplex::transport::http::auth::Authenticated;
use jsonrpc_duplex::transport::http::guard::AllowList;
use jsonrpc_duplex::transport::http::serve::HttpServer;
use jsonrpc_duplex::transport::http::server::{HttpService, NO_CALLS_BACK};
use jsonrpc_duplex::transport::http::{Refusal, client::TRANSPORT_ERROR};
use jsonrpc_duplex::{Connection, Handle, RpcError, rpc};
use serde_json::{Value, json};
use support::time::{eventually, within};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::mpsc;

/// The service under test.
#[rpc]
pub trait Calc {
    /// a + b.
    async fn add(&self, a: i64, b: i64) -> i64;
    /// Handed to the test's channel.
    #[notification]
    async fn note(&self, text: String);
    /// Calls the client back: impossible over plain HTTP.
    async fn ask_back(&self, #[context] peer: Handle) -> Result<String, RpcError>;
    /// Who the authentication hook said the caller is.
    async fn whoami(&self) -> String;
    /// Never answers.
    async fn forever(&self) -> i64;
}

#[derive(Clone)]
struct Calculator {
    notes: mpsc::UnboundedSender<String>,
    user: String,
}

impl Calc for Calculator {
    async fn add(&self, a: i64, b: i64) -> i64 {
        a + b
    }
    async fn note(&self, text: String) {
        let _ = self.notes.send(text);
    }
    async fn ask_back(&self, peer: Handle) -> Result<String, RpcError> {
        Ok(peer.request::<String>("name", ()).await?)
    }
    async fn whoami(&self) -> String {
        self.user.clone()
    }
    async fn forever(&self) -> i64 {
        std::future::pending().await
    }
}

const LIMIT: usize = 4096;

fn calculator() -> (Calculator, mpsc::UnboundedReceiver<String>) {
    let (notes, rx) = mpsc::unbounded_channel();
    (Calculator { notes, user: "nobody".into() }, rx)
}

/// A server of `Calc` with a 4 KiB message size, 500 ms read timeouts and 64 connections, HTTP settings by
/// `configure`.
async fn start(configure: impl FnOnce(HttpService) -> HttpService) -> (HttpServer, mpsc::UnboundedReceiver<String>) {
    let (calc, notes) = calculator();
    let server = ServerBuilder::new(Connection::builder().max_message_size(LIMIT).serve(CalcServer::new(calc)))
        .max_connections(64)
        .message_read_timeout(Duration::from_millis(500))
        .bind_http_with("127.0.0.1:0", configure)
        .await
        .expect("bind");
    (server, notes)
}

/// An HTTP/1.1 response, parsed strictly.
#[derive(Debug)]
struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Reply {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {:?}", self.body_text()))
    }
    fn body_text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// Read one response off `stream`: a status line, headers, then a body of exactly
/// `Content-Length` bytes (our server never answers chunked).
async fn read_reply(stream: &mut TcpStream) -> Reply {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        let n = within(stream.read(&mut byte)).await.expect("read");
        assert_eq!(n, 1, "the server closed before the end of the headers: {:?}", String::from_utf8_lossy(&head));
        head.push(byte[0]);
        assert!(head.len() < 16 * 1024, "headers too long");
    }
    let head = String::from_utf8(head).expect("headers are ASCII");
    let mut lines = head.trim_end().split("\r\n");
    let status_line = lines.next().unwrap();
    let mut parts = status_line.splitn(3, ' ');
    assert_eq!(parts.next(), Some("HTTP/1.1"), "status line {status_line:?}");
    let status: u16 = parts.next().and_then(|s| s.parse().ok()).expect("a status code");
    assert!(parts.next().is_some_and(|r| !r.is_empty()), "a reason phrase: {status_line:?}");
    let headers: Vec<(String, String)> = lines
        .map(|line| {
            let (name, value) = line.split_once(':').unwrap_or_else(|| panic!("malformed header {line:?}"));
            (name.to_owned(), value.trim().to_owned())
        })
        .collect();
    let reply = Reply { status, headers, body: Vec::new() };
    assert!(reply.header("transfer-encoding").is_none(), "unexpected chunked answer");
    let len: usize = reply.header("content-length").expect("Content-Length").parse().expect("a length");
    let mut body = vec![0u8; len];
    within(stream.read_exact(&mut body)).await.expect("the body");
    Reply { body, ..reply }
}

fn post(body: &str, extra: &str) -> String {
    format!(
        "POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n{extra}Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
}

async fn exchange(addr: SocketAddr, request: &str) -> Reply {
    let mut stream = within(TcpStream::connect(addr)).await.expect("connect");
    within(stream.write_all(request.as_bytes())).await.expect("write");
    read_reply(&mut stream).await
}

#[tokio::test]
async fn a_call_is_answered_as_json_and_the_connection_is_kept_alive() {
    let (server, _notes) = start(|s| s).await;
    let mut stream = TcpStream::connect(server.local_addr()).await.unwrap();
    for (i, (a, b)) in [(40, 2), (1, 2)].into_iter().enumerate() {
        let body = format!(r#"{{"jsonrpc":"2.0","id":{i},"method":"add","params":[{a},{b}]}}"#);
        within(stream.write_all(post(&body, "").as_bytes())).await.unwrap();
        let reply = read_reply(&mut stream).await;
        assert_eq!(reply.status, 200, "{}", reply.body_text());
        assert_eq!(reply.header("content-type"), Some("application/json"));
        assert_eq!(reply.json(), json!({"jsonrpc": "2.0", "id": i, "result": a + b}));
    }
    assert_eq!(server.stats().accepted, 1, "both requests on one connection");
}

#[tokio::test]
async fn a_batch_is_answered_with_an_array_and_notifications_alone_get_202() {
    let (server, mut notes) = start(|s| s).await;
    let batch = r#"[{"jsonrpc":"2.0","id":1,"method":"add","params":[1,1]},
                   {"jsonrpc":"2.0","method":"note","params":["in a batch"]},
                   {"jsonrpc":"2.0","id":"b","method":"add","params":[2,2]}]"#;
    let reply = exchange(server.local_addr(), &post(batch, "")).await;
    assert_eq!(reply.status, 200, "{}", reply.body_text());
    let mut answers = reply.json().as_array().cloned().expect("an array");
    answers.sort_by_key(|a| a["id"].to_string());
    assert_eq!(answers, vec![json!({"jsonrpc":"2.0","id":"b","result":4}), json!({"jsonrpc":"2.0","id":1,"result":2})]);
    assert_eq!(within(notes.recv()).await.as_deref(), Some("in a batch"));

    let reply =
        exchange(server.local_addr(), &post(r#"{"jsonrpc":"2.0","method":"note","params":["alone"]}"#, "")).await;
    assert_eq!(reply.status, 202);
    assert!(reply.body.is_empty(), "{}", reply.body_text());
    assert_eq!(within(notes.recv()).await.as_deref(), Some("alone"));

    let only_notes =
        r#"[{"jsonrpc":"2.0","method":"note","params":["x"]},{"jsonrpc":"2.0","method":"note","params":["y"]}]"#;
    let reply = exchange(server.local_addr(), &post(only_notes, "")).await;
    assert_eq!(reply.status, 202, "{}", reply.body_text());
}

#[tokio::test]
async fn wrong_methods_and_content_types_and_bad_json_get_their_statuses() {
    let (server, _notes) = start(|s| s).await;
    let addr = server.local_addr();

    let reply = exchange(addr, "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").await;
    assert_eq!(reply.status, 405);
    assert_eq!(reply.header("allow"), Some("POST"));

    let body = r#"{"jsonrpc":"2.0","id":1,"method":"add","params":[1,2]}"#;
    let text = format!(
        "POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let reply = exchange(addr, &text).await;
    assert_eq!(reply.status, 415, "{}", reply.body_text());
    assert!(reply.body_text().contains("application/json"), "{}", reply.body_text());
    let bare = format!("POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: {}\r\n\r\n{body}", body.len());
    assert_eq!(exchange(addr, &bare).await.status, 415);
    // With parameters, in any case, it is JSON.
    let charset = post(body, "").replace("application/json", "Application/JSON; charset=utf-8");
    assert_eq!(exchange(addr, &charset).await.status, 200);

    let reply = exchange(addr, &post("{not json", "")).await;
    assert_eq!(reply.status, 400);
    assert_eq!(reply.json()["error"]["code"], -32700);
    assert_eq!(reply.json()["id"], Value::Null);

    let reply = exchange(addr, &post("[]", "")).await;
    assert_eq!(reply.status, 400, "{}", reply.body_text());
    assert_eq!(reply.json()["error"]["code"], -32600);

    // An unknown method is a JSON-RPC answer, not an HTTP error.
    let reply = exchange(addr, &post(r#"{"jsonrpc":"2.0","id":7,"method":"nope"}"#, "")).await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.json()["error"]["code"], -32601);
}

#[tokio::test]
async fn a_body_over_the_limit_is_refused_before_it_is_read() {
    let (server, _notes) = start(|s| s).await;
    // A Content-Length over the limit: refused from the headers alone (no body is ever sent).
    let mut stream = TcpStream::connect(server.local_addr()).await.unwrap();
    let head =
        "POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 1000000000\r\n\r\n";
    stream.write_all(head.as_bytes()).await.unwrap();
    let reply = read_reply(&mut stream).await;
    assert_eq!(reply.status, 413, "{}", reply.body_text());
    assert_eq!(reply.header("connection"), Some("close"));

    // A chunked body: refused as soon as it passes the limit, while the client is still sending
    // (its last chunk never goes out).
    let mut stream = TcpStream::connect(server.local_addr()).await.unwrap();
    let head =
        "POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n";
    stream.write_all(head.as_bytes()).await.unwrap();
    let chunk = format!("400\r\n{}\r\n", " ".repeat(0x400));
    for _ in 0..(LIMIT / 0x400 + 1) {
        stream.write_all(chunk.as_bytes()).await.unwrap();
    }
    let reply = read_reply(&mut stream).await;
    assert_eq!(reply.status, 413, "{}", reply.body_text());
    assert!(reply.body_text().contains("4096"), "{}", reply.body_text());
}

#[tokio::test]
async fn a_slow_body_is_cut_by_the_read_timeout() {
    let (server, _notes) = start(|s| s).await;
    let mut stream = TcpStream::connect(server.local_addr()).await.unwrap();
    let head = "POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"jsonrpc\"";
    stream.write_all(head.as_bytes()).await.unwrap();
    let started = std::time::Instant::now();
    let reply = read_reply(&mut stream).await;
    assert_eq!(reply.status, 408, "{}", reply.body_text());
    assert!(started.elapsed() >= Duration::from_millis(400), "cut after the 500 ms timeout, not before");
    let mut rest = Vec::new();
    within(stream.read_to_end(&mut rest)).await.expect("then the server closes");
}

#[tokio::test]
async fn hosts_and_origins_off_the_allow_list_are_refused() {
    let (server, _notes) = start(|s| s.allow(AllowList::loopback().allow_origin("https://app.example"))).await;
    let addr = server.local_addr();
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"add","params":[1,2]}"#;
    let cases = [
        ("Host: 127.0.0.1", "", 200),
        ("Host: localhost:1234", "Origin: http://localhost:3000\r\n", 200),
        ("Host: localhost", "Origin: https://app.example\r\n", 200),
        ("Host: evil.example", "", 403),
        ("Host: 127.0.0.1", "Origin: https://evil.example\r\n", 403),
        ("Host: 127.0.0.1", "Origin: null\r\n", 403),
    ];
    for (host, origin, status) in cases {
        let request = post(body, origin).replace("Host: 127.0.0.1", host);
        let reply = exchange(addr, &request).await;
        assert_eq!(reply.status, status, "{host} {origin}: {}", reply.body_text());
    }

    // Behind a proxy: any host.
    let (open, _notes) = start(|s| s.allow(AllowList::loopback().any_host())).await;
    let reply = exchange(open.local_addr(), &post(body, "").replace("127.0.0.1", "api.example")).await;
    assert_eq!(reply.status, 200);
}

#[tokio::test]
async fn the_auth_hook_refuses_or_names_the_caller_for_the_handlers() {
    #[derive(Debug)]
    struct User(String);
    let (notes, _rx) = mpsc::unbounded_channel();
    let service = HttpService::new(Connection::builder())
        .authenticate(|parts: &http::request::Parts| {
            let token = parts.headers.get("authorization").and_then(|v| v.to_str().ok()).map(str::to_owned);
            async move {
                match token.as_deref().and_then(|t| t.strip_prefix("Bearer ")) {
                    Some(name) if name.starts_with("user-") => Ok(Authenticated::new(User(name.to_owned()))),
                    _ => Err(Refusal::unauthorized("Bearer", "a bearer token is required")),
                }
            }
        })
        .serve_with(move |request| {
            let user = request.auth.get::<User>().map_or("?".to_owned(), |u| u.0.clone());
            CalcServer::new(Calculator { notes: notes.clone(), user })
        });
    let server = service.bind("127.0.0.1:0", Default::default()).await.unwrap();
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"whoami"}"#;
    let reply = exchange(server.local_addr(), &post(body, "")).await;
    assert_eq!(reply.status, 401);
    assert_eq!(reply.header("www-authenticate"), Some("Bearer"));
    let reply = exchange(server.local_addr(), &post(body, "Authorization: Bearer user-ada\r\n")).await;
    assert_eq!(reply.json()["result"], "user-ada");

    // Our client, with the header.
    let target = jsonrpc_duplex::transport::http::client::HttpTarget::new(&format!("http://{}/", server.local_addr()))
        .unwrap()
        .header(http::header::AUTHORIZATION, http::HeaderValue::from_static("Bearer user-bob"));
    let connection = Connection::builder().connect_http_with(target);
    let client = CalcClient::new(connection.handle());
    assert_eq!(within(client.whoami()).await.unwrap(), "user-bob");
}

#[tokio::test]
async fn a_handlers_call_back_to_the_client_fails_at_once_saying_why() {
    let (server, _notes) = start(|s| s).await;
    let reply = exchange(server.local_addr(), &post(r#"{"jsonrpc":"2.0","id":1,"method":"ask_back"}"#, "")).await;
    assert_eq!(reply.status, 200);
    let message = reply.json()["error"]["message"].as_str().expect("an error").to_owned();
    assert!(message.contains(NO_CALLS_BACK), "{message}");
}

#[tokio::test]
async fn our_client_calls_over_pooled_connections_and_reports_http_errors() {
    let (server, mut notes) = start(|s| s).await;
    let url = format!("http://{}/", server.local_addr());
    // At most 8 requests in flight: at most 8 connections busy at once, reused from the pool.
    let target = jsonrpc_duplex::transport::http::client::HttpTarget::new(&url).unwrap().max_in_flight(8);
    let connection = Connection::builder().connect_http_with(target);
    let calc = CalcClient::new(connection.handle());
    assert_eq!(within(calc.add(40, 2)).await.unwrap(), 42);
    calc.note("over http".into()).await.unwrap();
    assert_eq!(within(notes.recv()).await.as_deref(), Some("over http"));
    // 64 calls at once, 8 in flight at a time on the pool's connections.
    let calls = (0..64).map(|i| calc.add(i, 1));
    let sums = within(futures::future::join_all(calls)).await;
    assert_eq!(sums.into_iter().map(Result::unwrap).collect::<Vec<_>>(), (1..=64).collect::<Vec<_>>());
    let stats = server.stats();
    // (A connection goes back to the pool a moment after its answer is read: a few more than 8
    // may be opened, never one per call.)
    assert!(stats.accepted <= 32 && stats.refused == 0, "connections are reused: {stats:?}");

    // An HTTP error: the status and the body, in the error.
    let refused = Connection::builder().connect_http(&format!("http://{}/", server.local_addr())).unwrap();
    let big = "x".repeat(LIMIT);
    let err = within(refused.handle().request::<Value>("note", [big])).await.unwrap_err();
    let object = err.as_remote().expect("an error object").clone();
    assert_eq!(object.code, TRANSPORT_ERROR);
    assert!(object.message.contains("413"), "{}", object.message);
    let data: Value = serde_json::from_str(object.data.as_ref().expect("data").get()).unwrap();
    assert_eq!(data["status"], 413);

    // Nobody listening: says so.
    let nobody = Connection::builder().connect_http("http://127.0.0.1:9/").unwrap();
    let err = within(nobody.handle().request::<Value>("add", (1, 2))).await.unwrap_err();
    assert!(err.to_string().contains("the HTTP request to http://127.0.0.1:9/ failed"), "{err}");
}

#[tokio::test]
async fn mounted_as_a_tower_service_each_body_is_a_short_connection_with_the_same_rules() {
    use jsonrpc_duplex::transport::http::tower_service::Service;
    use jsonrpc_duplex::transport::http::{FullBody, http_body_util::BodyExt};
    let (calc, mut notes) = calculator();
    let mut service = Connection::builder().serve(CalcServer::new(calc)).into_http_service();
    let request = |body: &'static str| {
        http::Request::post("/rpc")
            .header("host", "localhost")
            .header("content-type", "application/json")
            .body(FullBody::from(body))
            .unwrap()
    };
    let answer = within(service.call(request(r#"{"jsonrpc":"2.0","id":1,"method":"ask_back"}"#))).await.unwrap();
    assert_eq!(answer.status(), 200);
    let body = answer.into_body().collect().await.unwrap().to_bytes();
    let answer: Value = serde_json::from_slice(&body).unwrap();
    assert!(answer["error"]["message"].as_str().unwrap().contains(NO_CALLS_BACK), "{answer}");

    let answer =
        within(service.call(request(r#"{"jsonrpc":"2.0","method":"note","params":["mounted"]}"#))).await.unwrap();
    assert_eq!(answer.status(), 202);
    assert_eq!(within(notes.recv()).await.as_deref(), Some("mounted"));
}

#[tokio::test]
async fn a_handler_over_the_request_timeout_is_cancelled_on_both_paths() {
    let (server, _notes) = start(|s| s.request_timeout(Duration::from_millis(300))).await;
    // One request (the kept connection) and a batch (a short connection).
    let reply = exchange(server.local_addr(), &post(r#"{"jsonrpc":"2.0","id":5,"method":"forever"}"#, "")).await;
    assert_eq!(reply.json()["id"], 5);
    assert_eq!(reply.json()["error"]["code"], -32800, "{}", reply.body_text());
    let reply = exchange(server.local_addr(), &post(r#"[{"jsonrpc":"2.0","id":6,"method":"forever"}]"#, "")).await;
    assert_eq!(reply.json()[0]["id"], 6);
    assert_eq!(reply.json()[0]["error"]["code"], -32800, "{}", reply.body_text());
    // The kept connection was replaced: the next call is served.
    let reply =
        exchange(server.local_addr(), &post(r#"{"jsonrpc":"2.0","id":7,"method":"add","params":[1,2]}"#, "")).await;
    assert_eq!(reply.json()["result"], 3);
}

#[tokio::test]
async fn http2_with_prior_knowledge_is_served_to_hyper_and_to_our_client_on_one_connection() {
    use jsonrpc_duplex::transport::http::http_body_util::{BodyExt, Full};
    use jsonrpc_duplex::transport::http::hyper;
    let (server, mut notes) = start(|s| s).await;
    let addr = server.local_addr();

    // hyper's own HTTP/2 client (not ours): a handshake in cleartext, then two streams at once.
    let stream = within(TcpStream::connect(addr)).await.unwrap();
    let (mut sender, connection) = within(hyper::client::conn::http2::handshake(
        hyper_util::rt::TokioExecutor::new(),
        hyper_util::rt::TokioIo::new(stream),
    ))
    .await
    .expect("an HTTP/2 handshake");
    tokio::spawn(connection);
    let request = |body: &'static str| {
        http::Request::post(format!("http://127.0.0.1:{}/", addr.port()))
            .header("content-type", "application/json")
            .body(Full::new(bytes::Bytes::from_static(body.as_bytes())))
            .unwrap()
    };
    let (one, two) = within(futures::future::join(
        sender.send_request(request(r#"{"jsonrpc":"2.0","id":1,"method":"add","params":[40,2]}"#)),
        sender.send_request(request(r#"[{"jsonrpc":"2.0","id":2,"method":"add","params":[1,2]}]"#)),
    ))
    .await;
    for (response, expected) in [
        (one.unwrap(), json!({"jsonrpc":"2.0","id":1,"result":42})),
        (two.unwrap(), json!([{"jsonrpc":"2.0","id":2,"result":3}])),
    ] {
        assert_eq!(response.version(), http::Version::HTTP_2);
        assert_eq!(response.status(), 200);
        assert_eq!(response.headers()["content-type"], "application/json");
        let body = within(response.into_body().collect()).await.unwrap().to_bytes();
        assert_eq!(serde_json::from_slice::<Value>(&body).unwrap(), expected);
    }
    // The same refusals as over HTTP/1.1.
    let wrong = http::Request::post(format!("http://127.0.0.1:{}/", addr.port()))
        .header("content-type", "text/plain")
        .body(Full::new(bytes::Bytes::from_static(b"{}")))
        .unwrap();
    assert_eq!(within(sender.send_request(wrong)).await.unwrap().status(), 415);
    drop(sender);
    eventually("hyper's connection is closed", || server.stats().live == 0).await;

    // Our client with prior knowledge: 64 calls in flight at once, all streams of one connection.
    let target = jsonrpc_duplex::transport::http::client::HttpTarget::new(&format!("http://{addr}/"))
        .unwrap()
        .http2_prior_knowledge(true);
    let connection = Connection::builder().connect_http_with(target);
    let calc = CalcClient::new(connection.handle());
    calc.note("over h2".into()).await.unwrap();
    assert_eq!(within(notes.recv()).await.as_deref(), Some("over h2"));
    let sums = within(futures::future::join_all((0..64).map(|i| calc.add(i, 1)))).await;
    assert_eq!(sums.into_iter().map(Result::unwrap).collect::<Vec<_>>(), (1..=64).collect::<Vec<_>>());
    assert_eq!(server.stats().accepted, 2, "hyper's connection and one of ours: {:?}", server.stats());
}

/// A server of raw handlers for what the direct path (one request or notification, parsed once
/// and dispatched in the HTTP request's task) must answer as a connection would.
async fn raw_server(builder: jsonrpc_duplex::Builder) -> HttpServer {
    use jsonrpc_duplex::{ErrorObject, Request, Responder, Router};
    let router = Router::new()
        .method("add", |(a, b): (i64, i64), _| async move { Ok::<_, ErrorObject>(a + b) })
        // Its responder goes to another task, which answers.
        .request_raw("elsewhere", |_request: Request, reply: Responder| async move {
            tokio::spawn(async move { reply.ok(7) });
        })
        .request_raw("boom", |_request: Request, reply: Responder| async move {
            let _unanswered = reply;
            panic!("the handler blew up")
        })
        .request_raw("silent", |_request: Request, reply: Responder| async move { drop(reply) });
    ServerBuilder::new(builder.max_message_size(LIMIT).serve(router)).bind_http("127.0.0.1:0").await.expect("bind")
}

#[tokio::test]
async fn single_messages_served_directly_are_answered_as_over_a_connection() {
    let server = raw_server(Connection::builder()).await;
    let addr = server.local_addr();
    let call = |body: &'static str| async move {
        let reply = exchange(addr, &post(body, "")).await;
        (reply.status, reply.json())
    };
    let (status, answer) = call(r#"{"jsonrpc":"2.0","id":"a","method":"elsewhere"}"#).await;
    assert_eq!((status, &answer), (200, &json!({"jsonrpc":"2.0","id":"a","result":7})));
    let (status, answer) = call(r#"{"jsonrpc":"2.0","id":2,"method":"boom"}"#).await;
    assert_eq!((status, answer["id"].clone(), answer["error"]["code"].clone()), (200, json!(2), json!(-32603)));
    assert!(answer["error"]["message"].as_str().unwrap().contains("the handler blew up"), "{answer}");
    let (status, answer) = call(r#"{"jsonrpc":"2.0","id":3,"method":"silent"}"#).await;
    assert_eq!((status, answer["id"].clone(), answer["error"]["code"].clone()), (200, json!(3), json!(-32603)));
    let (status, answer) = call(r#"{"jsonrpc":"2.0","id":4,"method":"nope"}"#).await;
    assert_eq!((status, answer["id"].clone(), answer["error"]["code"].clone()), (200, json!(4), json!(-32601)));
    // Notifications nobody routes, or that the connection takes itself: `202` as ever.
    for body in [
        r#"{"jsonrpc":"2.0","method":"nobody/listens"}"#,
        r#"{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":1}}"#,
    ] {
        let reply = exchange(addr, &post(body, "")).await;
        assert_eq!((reply.status, reply.body.len()), (202, 0), "{body}");
    }
    // A batch of the same (over a connection): the same answers.
    let reply = exchange(
        addr,
        &post(
            r#"[{"jsonrpc":"2.0","id":5,"method":"elsewhere"},{"jsonrpc":"2.0","id":6,"method":"add","params":[1,2]}]"#,
            "",
        ),
    )
    .await;
    let mut answers = reply.json().as_array().cloned().expect("an array");
    answers.sort_by_key(|a| a["id"].as_i64());
    assert_eq!(answers, vec![json!({"jsonrpc":"2.0","id":5,"result":7}), json!({"jsonrpc":"2.0","id":6,"result":3})]);
    // The panic took nothing down.
    let (_, answer) = call(r#"{"jsonrpc":"2.0","id":7,"method":"add","params":[40,2]}"#).await;
    assert_eq!(answer["result"], 42);
}

#[tokio::test]
async fn middleware_layers_run_on_every_http_call() {
    use jsonrpc_duplex::middleware;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    let seen = Arc::new(AtomicUsize::new(0));
    let counted = seen.clone();
    let layer = middleware::from_fn(move |call, next| {
        if call.is_inbound() {
            counted.fetch_add(1, Ordering::SeqCst);
        }
        next.run(call)
    });
    let server = raw_server(Connection::builder().layer(layer)).await;
    let addr = server.local_addr();
    let reply = exchange(addr, &post(r#"{"jsonrpc":"2.0","id":1,"method":"add","params":[1,2]}"#, "")).await;
    assert_eq!(reply.json()["result"], 3);
    let reply = exchange(
        addr,
        &post(
            r#"[{"jsonrpc":"2.0","id":2,"method":"add","params":[2,2]},{"jsonrpc":"2.0","id":3,"method":"elsewhere"}]"#,
            "",
        ),
    )
    .await;
    assert_eq!(reply.json().as_array().map(Vec::len), Some(2));
    assert_eq!(seen.load(Ordering::SeqCst), 3, "the layer saw every inbound call");
}
