//! MCP Streamable HTTP, revision 2026-07-28: what the server checks of `Mcp-Param-*` headers,
//! the client's retry after a `HeaderMismatch`, multi round-trip requests carried out by the
//! server for a handler, and the byte budget all sessions' POST bodies share. The peers are
//! raw HTTP/1.1 on bytes (`mcp_http::Raw` for the server; a TCP listener answered by hand for
//! the client) and our own client, on loopback, every wait bounded:
//!
//! - `Mcp-Param-*` (the server side): the tool's `x-mcp-header` arguments, learnt from the
//!   `tools/list` answer it sent or declared on the server, are checked against the body:
//!   matching headers (plain, Base64, an integer as `3.0`) pass; a missing, different,
//!   doubled, undecodable or unexpected one is `400` with `-32020` naming the header;
//! - the client after a `HeaderMismatch` (against a hand-written server): it lists the tools
//!   again (every page) and retries the call once with the headers they say; a second
//!   mismatch is the call's error;
//! - multi round-trip requests on the server: a handler's `elicitation/create`,
//!   `sampling/createMessage`, `roots/list` become an `InputRequiredResult` (with a
//!   `requestState` of the transport's), the retry's `inputResponses` go to the waiting
//!   handler and its answer answers the retry (a raw peer, byte by byte, and our client); a
//!   spent, forged or foreign `requestState` is `-32602`; an unanswered input is asked again;
//!   an undeclared capability fails the handler's request at once; a parked request expires
//!   (its handler cancelled, its slot back); at most 8 rounds; what a parked handler says
//!   (log messages, progress) opens the retry's stream, in order, also past `max_backlog`
//!   (the handler waits there until the retry takes it);
//! - sessions whose connections take nothing: their POST bodies together stop at the
//!   server-wide `max_session_bytes` (`503`, `Retry-After: 1`, `Connection: close` past it),
//!   however many sessions there are, and the budget comes back when the messages are taken.
#![cfg(feature = "mcp-http")]

use crate::mcp_http::{JSON_HEADERS, Raw};
use crate::support;

use jsonrpc_duplex::transport::mcp_http::{BoundMcpServer, McpHttpClient, McpHttpServer};
use jsonrpc_duplex::{Connection, ErrorObject, Profile, Router};
use serde_json::{Value, json};
use support::time::within;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;
use tokio::sync::mpsc;

const V: &str = "2026-07-28";

fn request(id: u64, method: &str, mut params: Value) -> Vec<u8> {
    params["_meta"] =
        json!({"io.modelcontextprotocol/protocolVersion": V, "io.modelcontextprotocol/clientCapabilities": {}});
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string().into_bytes()
}

fn modern<'a>(method: &'a str, extra: &[(&'a str, &'a str)]) -> Vec<(&'a str, &'a str)> {
    let mut headers = JSON_HEADERS.to_vec();
    headers.push(("MCP-Protocol-Version", V));
    headers.push(("Mcp-Method", method));
    headers.extend_from_slice(extra);
    headers
}

async fn json_answer(raw: &mut Raw) -> (u16, Value) {
    let head = raw.head().await;
    let body = raw.body().await;
    let value = serde_json::from_slice(&body).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&body)));
    (head.status, value)
}

/// The tool whose arguments are mirrored: `region` (string), `opts.metric` (boolean), `days`
/// (integer).
fn weather() -> Value {
    json!({"name": "weather", "inputSchema": {"type": "object", "properties": {
        "region": {"type": "string", "x-mcp-header": "Region"},
        "opts": {"type": "object", "properties": {"metric": {"type": "boolean", "x-mcp-header": "Metric"}}},
        "days": {"type": "integer", "x-mcp-header": "Days"},
        "query": {"type": "string"}}}})
}

fn tools_router() -> Router {
    Router::new()
        .method("tools/list", |_: Value, _| async { Ok::<_, ErrorObject>(json!({"tools": [weather()]})) })
        .method("tools/call", |params: Value, _| async move {
            Ok::<_, ErrorObject>(json!({"content": [{"type": "text", "text": params["arguments"].to_string()}]}))
        })
}

async fn serve_tools(configure: impl FnOnce(McpHttpServer) -> McpHttpServer) -> BoundMcpServer {
    let server = McpHttpServer::new(|_| Connection::builder().profile(Profile::mcp()).serve(tools_router()));
    within(configure(server).bind("127.0.0.1:0")).await.expect("bind")
}

/// A `tools/call` of `weather` with `arguments` and the extra headers: (status, answer).
async fn call_weather(raw: &mut Raw, id: u64, arguments: Value, params: &[(&str, &str)]) -> (u16, Value) {
    let mut headers = modern("tools/call", &[("Mcp-Name", "weather")]);
    headers.extend_from_slice(params);
    raw.send("POST", &headers, &request(id, "tools/call", json!({"name": "weather", "arguments": arguments}))).await;
    json_answer(raw).await
}

fn assert_mismatch((status, answer): (u16, Value), id: u64, says: &str) {
    assert_eq!((status, answer["error"]["code"].as_i64()), (400, Some(-32020)), "{answer}");
    assert_eq!(answer["id"], id, "{answer}");
    let message = answer["error"]["message"].as_str().unwrap();
    assert!(message.starts_with("Header mismatch: ") && message.contains(says), "{says:?} in {answer}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_param_headers_are_checked_against_the_body_once_the_tool_is_listed() {
    let bound = serve_tools(|s| s).await;
    let mut raw = Raw::connect(bound.local_addr()).await;
    let args = json!({"region": "us-west1", "opts": {"metric": true}, "days": 3, "query": "q"});
    // Before the server has told the tool's annotations, it has nothing to check them by.
    let (status, answer) = call_weather(&mut raw, 1, args.clone(), &[]).await;
    assert_eq!(status, 200, "an unknown tool's headers are not checked: {answer}");

    raw.send("POST", &modern("tools/list", &[]), &request(2, "tools/list", json!({}))).await;
    let (status, listed) = json_answer(&mut raw).await;
    assert_eq!((status, listed["result"]["tools"][0]["name"].as_str()), (200, Some("weather")), "{listed}");

    let all = [("Mcp-Param-Region", "us-west1"), ("Mcp-Param-Metric", "true"), ("Mcp-Param-Days", "3")];
    let (status, answer) = call_weather(&mut raw, 3, args.clone(), &all).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["result"]["content"][0]["text"], args.to_string());
    // Header names are case-insensitive; integers compare as numbers.
    let (status, answer) = call_weather(
        &mut raw,
        4,
        args.clone(),
        &[("mcp-param-region", "us-west1"), ("MCP-PARAM-METRIC", "true"), ("Mcp-Param-Days", "3.0")],
    )
    .await;
    assert_eq!(status, 200, "{answer}");

    // Missing, different, doubled.
    assert_mismatch(call_weather(&mut raw, 5, args.clone(), &all[1..]).await, 5, "no Mcp-Param-Region header");
    let other = [("Mcp-Param-Region", "eu-north1"), all[1], all[2]];
    assert_mismatch(
        call_weather(&mut raw, 6, args.clone(), &other).await,
        6,
        "Mcp-Param-Region header value \"eu-north1\" does not match body value \"us-west1\"",
    );
    let metric = [all[0], ("Mcp-Param-Metric", "false"), all[2]];
    assert_mismatch(call_weather(&mut raw, 7, args.clone(), &metric).await, 7, "Mcp-Param-Metric");
    let days = [all[0], all[1], ("Mcp-Param-Days", "4")];
    assert_mismatch(call_weather(&mut raw, 8, args.clone(), &days).await, 8, "Mcp-Param-Days");
    let doubled = [all[0], all[0], all[1], all[2]];
    assert_mismatch(call_weather(&mut raw, 9, args.clone(), &doubled).await, 9, "more than once");

    // `null` or absent in the body: no header expected, and one given does not match it.
    let sparse = json!({"region": "us-west1", "opts": {"metric": null}});
    let (status, answer) = call_weather(&mut raw, 10, sparse.clone(), &[all[0]]).await;
    assert_eq!(status, 200, "{answer}");
    assert_mismatch(
        call_weather(&mut raw, 11, sparse, &all[..2]).await,
        11,
        "no value to mirror at arguments.opts.metric",
    );

    // Encoded as the revision encodes them: Base64 in its sentinel, decoded before comparing.
    for (id, value, coded) in [
        (12, "Hello, 世界", "=?base64?SGVsbG8sIOS4lueVjA==?="),
        (13, " padded ", "=?base64?IHBhZGRlZCA=?="),
        (14, "line1\nline2", "=?base64?bGluZTEKbGluZTI=?="),
        (15, "=?base64?literal?=", "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="),
    ] {
        let (status, answer) =
            call_weather(&mut raw, id, json!({"region": value}), &[("Mcp-Param-Region", coded)]).await;
        assert_eq!(status, 200, "{value:?}: {answer}");
        assert_eq!(answer["result"]["content"][0]["text"], json!({"region": value}).to_string());
    }
    // The plain text of a value that needs encoding does not match it; neither does bad Base64
    // or a raw byte outside visible ASCII.
    assert_mismatch(
        call_weather(&mut raw, 16, json!({"region": "Hello, 世界"}), &[("Mcp-Param-Region", "SGVsbG8sIOS4lueVjA==")])
            .await,
        16,
        "does not match",
    );
    assert_mismatch(
        call_weather(&mut raw, 17, json!({"region": "x"}), &[("Mcp-Param-Region", "=?base64?eA*?=")]).await,
        17,
        "not a valid header value",
    );
    assert_mismatch(
        call_weather(&mut raw, 18, json!({"region": "é"}), &[("Mcp-Param-Region", "é")]).await,
        18,
        "not a valid header value",
    );
    // A header of an argument that is not mirrored is not looked at.
    let (status, answer) =
        call_weather(&mut raw, 19, json!({"region": "x"}), &[("Mcp-Param-Region", "x"), ("Mcp-Param-Query", "zzz")])
            .await;
    assert_eq!(status, 200, "{answer}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn declared_tools_are_checked_before_any_listing_and_our_client_passes() {
    let bound = serve_tools(|s| s.declare_tools(&json!({"tools": [weather()]}))).await;
    let mut raw = Raw::connect(bound.local_addr()).await;
    assert_mismatch(call_weather(&mut raw, 1, json!({"days": 2}), &[]).await, 1, "no Mcp-Param-Days header");
    let (status, answer) = call_weather(&mut raw, 2, json!({"days": 2}), &[("Mcp-Param-Days", "2")]).await;
    assert_eq!(status, 200, "{answer}");

    // Our client, having listed the tools, sends what the server checks, whatever the text.
    let url = format!("http://{}/mcp", bound.local_addr());
    let conn = McpHttpClient::new(&url).unwrap().stateless().connect(Connection::builder().profile(Profile::mcp()));
    let handle = conn.handle();
    let _: Value = within(handle.request("tools/list", json!({}))).await.expect("tools/list");
    for region in ["us-west1", "Hello, 世界", " padded ", "=?base64?literal?=", "tab\there"] {
        let args = json!({"region": region, "opts": {"metric": false}, "days": -7});
        let answer: Value = within(handle.request("tools/call", json!({"name": "weather", "arguments": args})))
            .await
            .unwrap_or_else(|e| panic!("{region:?}: {e}"));
        assert_eq!(answer["content"][0]["text"], args.to_string());
    }
    conn.close().await;
}

#[test]
#[should_panic(expected = "the tool \"bad\" has an invalid x-mcp-header")]
fn declaring_a_tool_with_an_invalid_annotation_panics() {
    let bad = json!([{"name": "bad", "inputSchema": {"type": "object", "properties": {"x": {"type": "number", "x-mcp-header": "X"}}}}]);
    let _ = McpHttpServer::new(|_| Connection::builder().profile(Profile::mcp())).declare_tools(&bad);
}

/// One POST read by hand: its lowercased headers and its body.
async fn read_post(conn: &mut BufReader<tokio::net::TcpStream>) -> Option<(Vec<(String, String)>, Value)> {
    let mut line = String::new();
    if conn.read_line(&mut line).await.ok()? == 0 {
        return None;
    }
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        conn.read_line(&mut line).await.ok()?;
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        let (n, v) = line.split_once(':')?;
        headers.push((n.trim().to_ascii_lowercase(), v.trim().to_owned()));
    }
    let len: usize = headers.iter().find(|(n, _)| n == "content-length")?.1.parse().ok()?;
    let mut body = vec![0; len];
    conn.read_exact(&mut body).await.ok()?;
    Some((headers, serde_json::from_slice(&body).ok()?))
}

/// A hand-written 2026-07-28 server whose `weather` tool mirrors `region`, on two pages of
/// `tools/list` (the tool on the second). A `tools/call` whose `Mcp-Param-Region` is not its
/// region is refused with `HeaderMismatch`; with `stubborn` every call is. Tells the test
/// each POST: (method, its `Mcp-Param-Region`).
async fn mismatch_server(listener: TcpListener, stubborn: bool, seen: mpsc::UnboundedSender<(String, Option<String>)>) {
    loop {
        let Ok((socket, _)) = listener.accept().await else { return };
        let seen = seen.clone();
        tokio::spawn(async move {
            let mut conn = BufReader::new(socket);
            while let Some((headers, body)) = read_post(&mut conn).await {
                let method = body["method"].as_str().unwrap_or_default().to_owned();
                let region = headers.iter().find(|(n, _)| n == "mcp-param-region").map(|(_, v)| v.clone());
                let _ = seen.send((method.clone(), region.clone()));
                let (status, answer) = match method.as_str() {
                    "tools/list" if body["params"]["cursor"].is_null() => {
                        (200, json!({"result": {"tools": [], "nextCursor": "page-2"}}))
                    }
                    "tools/list" => (200, json!({"result": {"tools": [weather()]}})),
                    _ if !stubborn && region.as_deref() == body["params"]["arguments"]["region"].as_str() => {
                        (200, json!({"result": {"content": [], "region": region}}))
                    }
                    _ => (400, json!({"error": {"code": -32020, "message": "Header mismatch: Mcp-Param-Region"}})),
                };
                let mut answer = answer;
                answer["jsonrpc"] = json!("2.0");
                answer["id"] = body["id"].clone();
                let answer = answer.to_string();
                let reason = if status == 200 { "OK" } else { "Bad Request" };
                let response = format!(
                    "HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{answer}",
                    answer.len()
                );
                if conn.get_mut().write_all(response.as_bytes()).await.is_err() {
                    return;
                }
            }
        });
    }
}

async fn next_seen(seen: &mut mpsc::UnboundedReceiver<(String, Option<String>)>) -> (String, Option<String>) {
    within(seen.recv()).await.expect("a POST")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_header_mismatch_the_client_lists_the_tools_and_retries_once() {
    for stubborn in [false, true] {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        let (tx, mut seen) = mpsc::unbounded_channel();
        let server = tokio::spawn(mismatch_server(listener, stubborn, tx));
        let conn = McpHttpClient::new(&url).unwrap().stateless().connect(Connection::builder().profile(Profile::mcp()));
        // The call goes without the header: the client has not seen the tool listed.
        let handle = conn.handle();
        let call =
            handle.request::<Value>("tools/call", json!({"name": "weather", "arguments": {"region": "us-west1"}}));
        let answer = within(call).await;
        let region = Some("us-west1".to_owned());
        assert_eq!(next_seen(&mut seen).await, ("tools/call".into(), None));
        assert_eq!(next_seen(&mut seen).await, ("tools/list".into(), None));
        assert_eq!(next_seen(&mut seen).await, ("tools/list".into(), None), "the second page");
        assert_eq!(next_seen(&mut seen).await, ("tools/call".into(), region.clone()), "retried with the header");
        if stubborn {
            let error = answer.expect_err("a second mismatch fails the call");
            assert!(error.to_string().contains("Header mismatch"), "{error}");
        } else {
            assert_eq!(answer.expect("answered")["region"], "us-west1");
            // Learnt: the next call has the header from the start.
            let again =
                handle.request::<Value>("tools/call", json!({"name": "weather", "arguments": {"region": "eu"}}));
            assert_eq!(within(again).await.expect("answered")["region"], "eu");
            assert_eq!(next_seen(&mut seen).await, ("tools/call".into(), Some("eu".into())));
        }
        assert!(seen.try_recv().is_err(), "nothing more was sent (stubborn: {stubborn})");
        conn.close().await;
        server.abort();
    }
}

/// Dropped with the handler that holds it: tells the test.
struct OnDrop(Option<mpsc::UnboundedSender<()>>);

impl Drop for OnDrop {
    fn drop(&mut self) {
        if let Some(tx) = self.0.take() {
            let _ = tx.send(());
        }
    }
}

/// Lets the `early` tool answer (one permit).
static EARLY: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(0);

/// Lets the `chatty` tool speak (one permit a call); it gives one back when it has.
static CHATTY: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(0);
static SAID: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(0);

fn asking_router(dropped: mpsc::UnboundedSender<()>) -> Router {
    Router::new().method("tools/call", move |params: Value, ctx: jsonrpc_duplex::RequestContext| {
        let guard = OnDrop(Some(dropped.clone()));
        async move {
            let _guard = guard;
            let peer = ctx.peer();
            let text = match params["name"].as_str().unwrap_or_default() {
                // Two rounds: the user, then the roots.
                "ask" => {
                    let who: Value = peer
                        .request(
                            "elicitation/create",
                            json!({"mode": "form", "message": "name?", "requestedSchema": {"type": "object"}}),
                        )
                        .await
                        .map_err(ErrorObject::internal_error)?;
                    let roots: Value =
                        peer.request("roots/list", json!({})).await.map_err(ErrorObject::internal_error)?;
                    json!({"who": who, "roots": roots}).to_string()
                }
                // Asks until it is refused.
                "loop" => {
                    let mut n = 0;
                    loop {
                        match peer.request::<Value>("elicitation/create", json!({"message": n.to_string()})).await {
                            Ok(_) => n += 1,
                            Err(e) => break format!("{n} answers, then: {e}"),
                        }
                    }
                }
                // Asks (from a task of its own), then answers without waiting for it.
                "early" => {
                    let asker = peer.clone();
                    tokio::spawn(async move { asker.request::<Value>("elicitation/create", json!({})).await });
                    EARLY.acquire().await.map_err(ErrorObject::internal_error)?.forget();
                    "done without it".to_owned()
                }
                // Asks (from a task of its own), then, once the test lets it (the client is to
                // retry), says `n` things (a log message of `size` bytes each, and progress),
                // tells the test, and answers with the client's answer.
                "chatty" => {
                    let asker = peer.clone();
                    let asked = tokio::spawn(async move {
                        asker.request::<Value>("elicitation/create", json!({"message": "ok?"})).await
                    });
                    CHATTY.acquire().await.map_err(ErrorObject::internal_error)?.forget();
                    let data = "x".repeat(params["size"].as_u64().unwrap_or(1) as usize);
                    let token = params["_meta"]["progressToken"].clone();
                    for n in 0..params["n"].as_u64().unwrap_or(1) {
                        peer.notify("notifications/message", json!({"level": "info", "data": data}))
                            .await
                            .map_err(ErrorObject::internal_error)?;
                        peer.notify("notifications/progress", json!({"progressToken": token, "progress": n}))
                            .await
                            .map_err(ErrorObject::internal_error)?;
                    }
                    SAID.add_permits(1);
                    let answer =
                        asked.await.map_err(ErrorObject::internal_error)?.map_err(ErrorObject::internal_error)?;
                    answer.to_string()
                }
                "sample" => match peer.request::<Value>("sampling/createMessage", json!({"maxTokens": 1})).await {
                    Ok(answer) => answer.to_string(),
                    Err(e) => format!("refused: {e}"),
                },
                other => return Err(ErrorObject::invalid_params(format!("unknown tool {other}"))),
            };
            Ok(json!({"content": [{"type": "text", "text": text}]}))
        }
    })
}

async fn serve_asking(
    configure: impl FnOnce(McpHttpServer) -> McpHttpServer,
) -> (BoundMcpServer, mpsc::UnboundedReceiver<()>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let server =
        McpHttpServer::new(move |_| Connection::builder().profile(Profile::mcp()).serve(asking_router(tx.clone())));
    (within(configure(server).bind("127.0.0.1:0")).await.expect("bind"), rx)
}

/// A 2026-07-28 `tools/call` of `tool` declaring `capabilities`, with what a retry adds.
fn ask_body(id: u64, tool: &str, capabilities: Value, retry: Option<(&str, Value)>) -> Vec<u8> {
    let mut params = json!({"name": tool, "_meta": {"io.modelcontextprotocol/protocolVersion": V,
        "io.modelcontextprotocol/clientCapabilities": capabilities}});
    if let Some((state, responses)) = retry {
        params["requestState"] = json!(state);
        params["inputResponses"] = responses;
    }
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}).to_string().into_bytes()
}

async fn ask(raw: &mut Raw, id: u64, tool: &str, retry: Option<(&str, Value)>) -> (u16, Value) {
    let body = ask_body(id, tool, json!({"elicitation": {}, "roots": {}}), retry);
    raw.send("POST", &modern("tools/call", &[("Mcp-Name", tool)]), &body).await;
    json_answer(raw).await
}

/// POST once the ended requests' slots are back (a request's slot comes back when its
/// connection task lets go of it, after its handler ended): none is alive.
async fn admitted(bound: &BoundMcpServer, raw: &mut Raw, tool: &str, body: Vec<u8>) -> (u16, Value) {
    support::time::eventually("the ended requests' slots came back", || bound.server().stateless_count() == 0).await;
    raw.send("POST", &modern("tools/call", &[("Mcp-Name", tool)]), &body).await;
    json_answer(raw).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handlers_requests_to_the_client_become_input_required_results_and_resume() {
    let (bound, mut dropped) = serve_asking(|s| s.max_sessions(1)).await;
    let mut raw = Raw::connect(bound.local_addr()).await;
    let (status, first) = ask(&mut raw, 1, "ask", None).await;
    assert_eq!(status, 200, "{first}");
    let state1 = first["result"]["requestState"].as_str().unwrap().to_owned();
    assert!(state1.starts_with("jsonrpc-duplex-input-") && state1.len() > 40, "{first}");
    assert_eq!(
        first,
        json!({"jsonrpc": "2.0", "id": 1, "result": {"resultType": "input_required", "requestState": state1,
            "inputRequests": {"elicitation-1": {"method": "elicitation/create",
                "params": {"mode": "form", "message": "name?", "requestedSchema": {"type": "object"}}}}}})
    );
    // The parked request holds its slot: the one the bound allows.
    raw.send("POST", &modern("tools/call", &[("Mcp-Name", "sample")]), &ask_body(9, "sample", json!({}), None)).await;
    assert_eq!(json_answer(&mut raw).await.0, 503, "max_sessions counts the parked request");

    // The retry, answering; without an answer for an input, it is asked again.
    let (status, again) = ask(&mut raw, 2, "ask", Some((&state1, json!({"other": {}})))).await;
    assert_eq!(status, 200, "{again}");
    assert_eq!(again["id"], 2);
    assert_eq!(again["result"]["inputRequests"]["elicitation-1"]["method"], "elicitation/create", "{again}");
    let state2 = again["result"]["requestState"].as_str().unwrap().to_owned();
    assert_ne!(state2, state1, "a fresh state each round");
    // A spent state, a made-up one: refused, saying why.
    for (id, state) in [(3, state1.as_str()), (4, "jsonrpc-duplex-input-forged")] {
        let (status, refused) = ask(&mut raw, id, "ask", Some((state, json!({})))).await;
        assert_eq!((status, refused["error"]["code"].as_i64(), refused["id"].as_u64()), (400, Some(-32602), Some(id)));
        assert!(refused["error"]["message"].as_str().unwrap().contains("unknown or expired"), "{refused}");
    }
    let who = json!({"action": "accept", "content": {"name": "octocat"}});
    let (status, third) = ask(&mut raw, 5, "ask", Some((&state2, json!({"elicitation-1": who})))).await;
    assert_eq!(status, 200, "{third}");
    let state3 = third["result"]["requestState"].as_str().unwrap().to_owned();
    assert_eq!(third["result"]["inputRequests"], json!({"roots-2": {"method": "roots/list", "params": {}}}), "{third}");
    let roots = json!({"roots": [{"uri": "file:///w"}]});
    let (status, last) = ask(&mut raw, 6, "ask", Some((&state3, json!({"roots-2": roots})))).await;
    assert_eq!(status, 200, "{last}");
    let text = json!({"who": who, "roots": roots}).to_string();
    assert_eq!(
        last,
        json!({"jsonrpc": "2.0", "id": 6, "result": {"content": [{"type": "text", "text": text}], "resultType": "complete"}})
    );
    within(dropped.recv()).await.expect("the handler finished");

    // A state presented for another tool is spent and the request it named ends.
    let (_, first) = ask(&mut raw, 7, "ask", None).await;
    let state = first["result"]["requestState"].as_str().unwrap().to_owned();
    let body = ask_body(8, "loop", json!({"elicitation": {}}), Some((&state, json!({}))));
    raw.send("POST", &modern("tools/call", &[("Mcp-Name", "loop")]), &body).await;
    let (status, refused) = json_answer(&mut raw).await;
    assert_eq!((status, refused["error"]["code"].as_i64()), (400, Some(-32602)), "{refused}");
    assert!(refused["error"]["message"].as_str().unwrap().contains("another request"), "{refused}");
    within(dropped.recv()).await.expect("the parked handler was cancelled");

    // A capability the client did not declare: the handler's request fails at once.
    let (status, answer) = admitted(&bound, &mut raw, "sample", ask_body(10, "sample", json!({}), None)).await;
    assert_eq!(status, 200, "the slot came back: {answer}");
    let text = answer["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.starts_with("refused: ") && text.contains("\"sampling\" capability"), "{answer}");
    within(dropped.recv()).await.expect("the sampling handler finished");

    // Answered while the client was to retry: the retry gets that answer (kept for it, or,
    // had the retry come first, on the retry's stream: the same either way).
    let (_, first) =
        admitted(&bound, &mut raw, "early", ask_body(11, "early", json!({"elicitation": {}, "roots": {}}), None)).await;
    assert_eq!(first["result"]["resultType"], "input_required", "{first}");
    let state = first["result"]["requestState"].as_str().unwrap().to_owned();
    EARLY.add_permits(1);
    within(dropped.recv()).await.expect("the handler answered");
    let answered = json!({"elicitation-1": {"action": "decline"}});
    let (status, last) = ask(&mut raw, 12, "early", Some((&state, answered))).await;
    assert_eq!(status, 200, "{last}");
    assert_eq!(
        (last["id"].as_u64(), last["result"]["content"][0]["text"].as_str()),
        (Some(12), Some("done without it"))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_parked_request_expires_and_our_client_gets_through_the_rounds() {
    let (bound, mut dropped) = serve_asking(|s| s.input_timeout(std::time::Duration::from_millis(300))).await;
    let mut raw = Raw::connect(bound.local_addr()).await;
    let (_, first) = ask(&mut raw, 1, "ask", None).await;
    let state = first["result"]["requestState"].as_str().unwrap().to_owned();
    within(dropped.recv()).await.expect("not retried within the input timeout: the handler is cancelled");
    let (status, refused) = ask(&mut raw, 2, "ask", Some((&state, json!({})))).await;
    assert_eq!((status, refused["error"]["code"].as_i64()), (400, Some(-32602)), "{refused}");

    // Our client answers each round from its own handlers, and sees only the final answer.
    let url = format!("http://{}/mcp", bound.local_addr());
    let handlers = Router::new()
        .method("elicitation/create", |_: Value, _| async {
            Ok::<_, ErrorObject>(json!({"action": "accept", "content": {"name": "o"}}))
        })
        .method("roots/list", |_: Value, _| async { Ok::<_, ErrorObject>(json!({"roots": []})) });
    let conn = McpHttpClient::new(&url)
        .unwrap()
        .client_capabilities(json!({"elicitation": {}, "roots": {}}))
        .connect(Connection::builder().profile(Profile::mcp()).serve(handlers));
    let handle = conn.handle();
    let answer: Value = within(handle.request("tools/call", json!({"name": "ask"}))).await.expect("answered");
    assert_eq!(
        answer["content"][0]["text"],
        json!({"who": {"action": "accept", "content": {"name": "o"}}, "roots": {"roots": []}}).to_string()
    );
    // A handler that never stops asking gets 8 rounds, then its request fails.
    let answer: Value = within(handle.request("tools/call", json!({"name": "loop"}))).await.expect("answered");
    let text = answer["content"][0]["text"].as_str().unwrap();
    assert!(text.starts_with("8 answers, then: ") && text.contains("8 times"), "{answer}");
    conn.close().await;
}

/// Sessions whose connections do not take their messages (their handlers block): the POSTs
/// to each stop at its own inbound budget, and all of them together at the server's
/// `max_session_bytes`, past which they are refused `503` (not waiting, not read). Driven
/// through the `tower` service on paused time, so "stopped" is exact (nothing runnable).
#[tokio::test(start_paused = true)]
async fn all_sessions_posted_bytes_stop_at_the_server_wide_budget() {
    const SIZE: usize = 256 * 1024;
    const SESSIONS: usize = 8;
    const POSTS: usize = 24;
    // Each stopped session holds about one body queued: eight of them want twice this.
    const BUDGET: usize = 1024 * 1024;
    let (server, gate) = crate::mcp_http::gated_heavy_server(|s| s.max_session_bytes(BUDGET));
    let mut sessions = Vec::new();
    for _ in 0..SESSIONS {
        sessions.push(crate::mcp_http::service_session(&server).await);
    }
    let (tx, mut done) = mpsc::unbounded_channel();
    for (s, session) in sessions.iter().enumerate() {
        for i in 0..POSTS {
            let data = "x".repeat(SIZE);
            let body = json!({"jsonrpc": "2.0", "method": "heavy", "params": {"s": s, "i": i, "data": data}})
                .to_string()
                .into_bytes();
            let (server, tx, request) =
                (server.clone(), tx.clone(), crate::mcp_http::service_post(Some(session), body));
            tokio::spawn(async move {
                let response = server.handle(request).await;
                let retry = response.headers().get("retry-after").map(|v| v.to_str().unwrap().to_owned());
                let close = response.headers().get("connection").map(|v| v.to_str().unwrap().to_owned());
                let _ = tx.send((response.status().as_u16(), retry, close));
            });
        }
    }
    drop(tx);
    support::time::quiescent().await;
    assert!(server.session_bytes() <= BUDGET, "{} bytes held across the sessions", server.session_bytes());
    assert!(server.session_bytes() > BUDGET / 2, "the budget is what stopped them: {}", server.session_bytes());
    // Answered so far: those queued (`202`) and those refused; the rest wait for their
    // session's own budget, unread.
    let (accepted, refused);
    let count =
        |(status, retry, close): (u16, Option<String>, Option<String>), counts: &mut (usize, usize)| match status {
            202 => counts.0 += 1,
            503 => {
                assert_eq!((retry.as_deref(), close.as_deref()), (Some("1"), Some("close")));
                counts.1 += 1;
            }
            other => panic!("status {other}"),
        };
    let mut counts = (0, 0);
    while let Ok(answer) = done.try_recv() {
        count(answer, &mut counts);
    }
    let refused_first = counts.1;
    gate.add_permits(SESSIONS * POSTS);
    while let Some(answer) = within(done.recv()).await {
        count(answer, &mut counts);
    }
    (accepted, refused) = counts;
    assert!(refused_first > 0, "past the budget POSTs are refused, not queued ({accepted} queued)");
    assert_eq!(accepted + refused, SESSIONS * POSTS);
    assert_eq!(server.session_bytes(), 0, "every byte given back");
}

/// A `chatty` call parked for the client's input, whose handler then says `n` things of
/// `size` bytes: the retry (a raw peer) gets them on its stream, in order, before the answer.
async fn parked_notifications_reach_the_retry(
    configure: impl FnOnce(McpHttpServer) -> McpHttpServer,
    n: u64,
    size: u64,
    wait_said: bool,
) {
    let (bound, mut dropped) = serve_asking(configure).await;
    let mut raw = Raw::connect(bound.local_addr()).await;
    let mut body: Value = serde_json::from_slice(&ask_body(1, "chatty", json!({"elicitation": {}}), None)).unwrap();
    body["params"]["n"] = json!(n);
    body["params"]["size"] = json!(size);
    body["params"]["_meta"]["progressToken"] = json!("p");
    raw.send("POST", &modern("tools/call", &[("Mcp-Name", "chatty")]), body.to_string().as_bytes()).await;
    let (status, first) = json_answer(&mut raw).await;
    assert_eq!((status, first["result"]["resultType"].as_str()), (200, Some("input_required")), "{first}");
    let state = first["result"]["requestState"].as_str().unwrap().to_owned();
    // The handler speaks while the client is away (the first answer is read: the request is parked).
    CHATTY.add_permits(1);
    if wait_said {
        within(SAID.acquire()).await.unwrap().forget();
    }
    let mut retry = body.clone();
    retry["id"] = json!(2);
    retry["params"]["requestState"] = json!(state);
    retry["params"]["inputResponses"] = json!({"elicitation-1": {"action": "accept", "content": {"ok": true}}});
    raw.send("POST", &modern("tools/call", &[("Mcp-Name", "chatty")]), retry.to_string().as_bytes()).await;
    let head = raw.head().await;
    assert_eq!((head.status, head.header("content-type")), (200, Some("text/event-stream")));
    let mut pending = String::new();
    let events = raw.events(&mut pending, |_| false).await;
    let data = "x".repeat(size as usize);
    let mut expected: Vec<Value> = (0..n)
        .flat_map(|k| {
            [
                json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": data}}),
                json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": "p", "progress": k}}),
            ]
        })
        .collect();
    let text = json!({"action": "accept", "content": {"ok": true}}).to_string();
    expected.push(json!({"jsonrpc": "2.0", "id": 2, "result": {"content": [{"type": "text", "text": text}], "resultType": "complete"}}));
    let got: Vec<Value> = events.iter().map(|(_, d)| serde_json::from_str(d).unwrap()).collect();
    assert_eq!(got.len(), expected.len(), "{got:?}");
    assert_eq!(got, expected);
    if !wait_said {
        within(SAID.acquire()).await.unwrap().forget();
    }
    within(dropped.recv()).await.expect("the handler finished");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_parked_handlers_notifications_go_out_on_the_retrys_stream() {
    parked_notifications_reach_the_retry(|s| s, 1, 5, true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_parked_handlers_notifications_stop_at_the_backlog_and_all_reach_the_retry() {
    // 64 KiB said against a 4 KiB backlog: the handler waits (it cannot finish saying it
    // before the retry takes some), and nothing is lost.
    parked_notifications_reach_the_retry(|s| s.max_backlog(4096), 64, 1024, false).await;
}
