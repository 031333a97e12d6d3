//! The three params styles on the wire: what a generated client sends (exact frames) and what a
//! generated server accepts (arrays and objects, left-out options, no params at all).

use crate::support;

use jsonrpc_duplex::{Connection, Framing, rpc};
use serde::{Deserialize, Serialize};
use support::raw_peer::{RawPeer, pair};
use support::time::within;

/// The params object of `calc/sum`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SumRequest {
    /// The terms.
    pub terms: Vec<i64>,
}

/// The result of `calc/sum`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SumResponse {
    /// The sum.
    pub total: i64,
}

/// Arithmetic, one method per params style.
#[rpc]
pub trait Calc {
    /// `minuend - subtrahend`, params by position (the default).
    async fn subtract(&self, minuend: i64, subtrahend: i64) -> i64;

    /// Division by name; `type` is a keyword in Rust, so the argument is renamed.
    #[method(params = "named")]
    async fn divide(&self, dividend: f64, divisor: f64, #[param(rename = "type")] kind: Option<String>) -> f64;

    /// The params object is the DTO itself.
    #[method(name = "calc/sum", params = "object")]
    async fn sum(&self, request: SumRequest) -> SumResponse;

    /// No params.
    async fn ping(&self) -> String;

    /// A trailing option the caller may leave out.
    async fn greet(&self, name: String, greeting: Option<String>) -> String;

    /// A notification by position.
    #[notification]
    async fn log(&self, line: String, level: u8);
}

struct Calculator;

impl Calc for Calculator {
    async fn subtract(&self, minuend: i64, subtrahend: i64) -> i64 {
        minuend - subtrahend
    }
    async fn divide(&self, dividend: f64, divisor: f64, kind: Option<String>) -> f64 {
        match kind.as_deref() {
            Some("floor") => (dividend / divisor).floor(),
            _ => dividend / divisor,
        }
    }
    async fn sum(&self, request: SumRequest) -> SumResponse {
        SumResponse { total: request.terms.iter().sum() }
    }
    async fn ping(&self) -> String {
        "pong".into()
    }
    async fn greet(&self, name: String, greeting: Option<String>) -> String {
        format!("{}, {name}", greeting.as_deref().unwrap_or("hello"))
    }
    async fn log(&self, _line: String, _level: u8) {}
}

fn client() -> (Connection, CalcClient, RawPeer) {
    let (conn, peer) = pair(Connection::builder(), Framing::ContentLength);
    let client = CalcClient::new(conn.handle());
    (conn, client, peer)
}

fn server() -> (Connection, RawPeer) {
    pair(Connection::builder().serve(CalcServer::new(Calculator)), Framing::ContentLength)
}

// ---- what the client sends ----

#[tokio::test]
async fn positional_params_are_sent_as_an_array() {
    let (_conn, client, mut peer) = client();
    let call = tokio::spawn(async move { client.subtract(42, 23).await });
    assert_eq!(peer.recv_text().await, r#"{"jsonrpc":"2.0","id":0,"method":"subtract","params":[42,23]}"#);
    peer.send(r#"{"jsonrpc":"2.0","id":0,"result":19}"#).await;
    assert_eq!(within(call).await.unwrap().unwrap(), 19);
}

#[tokio::test]
async fn named_params_are_sent_as_an_object_with_renamed_keys_and_none_left_out() {
    let (_conn, client, mut peer) = client();
    let c = client.clone();
    let call = tokio::spawn(async move { c.divide(7.0, 2.0, Some("floor".into())).await });
    assert_eq!(
        peer.recv_text().await,
        r#"{"jsonrpc":"2.0","id":0,"method":"divide","params":{"dividend":7.0,"divisor":2.0,"type":"floor"}}"#
    );
    peer.send(r#"{"jsonrpc":"2.0","id":0,"result":3.0}"#).await;
    assert_eq!(within(call).await.unwrap().unwrap(), 3.0);

    let call = tokio::spawn(async move { client.divide(7.0, 2.0, None).await });
    assert_eq!(
        peer.recv_text().await,
        r#"{"jsonrpc":"2.0","id":1,"method":"divide","params":{"dividend":7.0,"divisor":2.0}}"#
    );
    peer.send(r#"{"jsonrpc":"2.0","id":1,"result":3.5}"#).await;
    assert_eq!(within(call).await.unwrap().unwrap(), 3.5);
}

#[tokio::test]
async fn an_object_method_sends_the_dto_as_the_params() {
    let (_conn, client, mut peer) = client();
    let call = tokio::spawn(async move { client.sum(SumRequest { terms: vec![1, 2, 3] }).await });
    assert_eq!(peer.recv_text().await, r#"{"jsonrpc":"2.0","id":0,"method":"calc/sum","params":{"terms":[1,2,3]}}"#);
    peer.send(r#"{"jsonrpc":"2.0","id":0,"result":{"total":6}}"#).await;
    assert_eq!(within(call).await.unwrap().unwrap(), SumResponse { total: 6 });
}

#[tokio::test]
async fn a_method_without_arguments_sends_no_params_member() {
    let (_conn, client, mut peer) = client();
    let call = tokio::spawn(async move { client.ping().await });
    assert_eq!(peer.recv_text().await, r#"{"jsonrpc":"2.0","id":0,"method":"ping"}"#);
    peer.send(r#"{"jsonrpc":"2.0","id":0,"result":"pong"}"#).await;
    assert_eq!(within(call).await.unwrap().unwrap(), "pong");
}

#[tokio::test]
async fn positional_options_are_sent_as_null() {
    let (_conn, client, mut peer) = client();
    let call = tokio::spawn(async move { client.greet("ann".into(), None).await });
    assert_eq!(peer.recv_text().await, r#"{"jsonrpc":"2.0","id":0,"method":"greet","params":["ann",null]}"#);
    peer.send(r#"{"jsonrpc":"2.0","id":0,"result":"hello, ann"}"#).await;
    within(call).await.unwrap().unwrap();
}

#[tokio::test]
async fn a_notification_is_sent_without_an_id_and_returns_once_queued() {
    let (_conn, client, peer) = client();
    within(client.log("started".into(), 3)).await.unwrap();
    assert_eq!(peer.recv_text().await, r#"{"jsonrpc":"2.0","method":"log","params":["started",3]}"#);
}

// ---- what the server accepts ----

#[tokio::test]
async fn a_positional_method_accepts_an_array_and_an_object() {
    let (_conn, mut peer) = server();
    assert_eq!(
        peer.call(r#"{"jsonrpc":"2.0","id":1,"method":"subtract","params":[42,23]}"#).await,
        r#"{"jsonrpc":"2.0","id":1,"result":19}"#
    );
    assert_eq!(
        peer.call(r#"{"jsonrpc":"2.0","id":2,"method":"subtract","params":{"subtrahend":23,"minuend":42}}"#).await,
        r#"{"jsonrpc":"2.0","id":2,"result":19}"#
    );
}

#[tokio::test]
async fn a_named_method_accepts_an_object_and_an_array() {
    let (_conn, mut peer) = server();
    assert_eq!(
        peer.call(r#"{"jsonrpc":"2.0","id":1,"method":"divide","params":{"divisor":2,"dividend":7,"type":"floor"}}"#)
            .await,
        r#"{"jsonrpc":"2.0","id":1,"result":3.0}"#
    );
    assert_eq!(
        peer.call(r#"{"jsonrpc":"2.0","id":2,"method":"divide","params":[7,2]}"#).await,
        r#"{"jsonrpc":"2.0","id":2,"result":3.5}"#
    );
}

#[tokio::test]
async fn trailing_options_may_be_left_out() {
    let (_conn, mut peer) = server();
    for params in [r#"["ann"]"#, r#"{"name":"ann"}"#, r#"["ann",null]"#] {
        let answer = peer.call(&format!(r#"{{"jsonrpc":"2.0","id":1,"method":"greet","params":{params}}}"#)).await;
        assert_eq!(answer, r#"{"jsonrpc":"2.0","id":1,"result":"hello, ann"}"#, "params {params}");
    }
    assert_eq!(
        peer.call(r#"{"jsonrpc":"2.0","id":2,"method":"greet","params":["ann","hi"]}"#).await,
        r#"{"jsonrpc":"2.0","id":2,"result":"hi, ann"}"#
    );
}

#[tokio::test]
async fn a_method_without_arguments_accepts_no_params_an_empty_array_and_an_empty_object() {
    let (_conn, mut peer) = server();
    for params in ["", r#","params":[]"#, r#","params":{}"#, r#","params":null"#] {
        let answer = peer.call(&format!(r#"{{"jsonrpc":"2.0","id":1,"method":"ping"{params}}}"#)).await;
        assert_eq!(answer, r#"{"jsonrpc":"2.0","id":1,"result":"pong"}"#, "params {params:?}");
    }
    let answer = peer.recv_after(r#"{"jsonrpc":"2.0","id":2,"method":"ping","params":[1]}"#).await;
    assert_eq!(answer["error"]["code"], -32602);
}

#[tokio::test]
async fn an_object_method_decodes_the_params_into_the_dto() {
    let (_conn, mut peer) = server();
    assert_eq!(
        peer.call(r#"{"jsonrpc":"2.0","id":1,"method":"calc/sum","params":{"terms":[4,5]}}"#).await,
        r#"{"jsonrpc":"2.0","id":1,"result":{"total":9}}"#
    );
    let answer = peer.recv_after(r#"{"jsonrpc":"2.0","id":2,"method":"calc/sum","params":{"terms":"x"}}"#).await;
    assert_eq!(answer["error"]["code"], -32602);
}

#[tokio::test]
async fn params_that_do_not_fit_are_answered_invalid_params_naming_the_argument() {
    let (_conn, mut peer) = server();
    let answer = peer.recv_after(r#"{"jsonrpc":"2.0","id":1,"method":"subtract","params":[42]}"#).await;
    assert_eq!(answer["error"]["code"], -32602);
    assert_eq!(answer["error"]["message"], "Invalid params: missing param `subtrahend`");

    let answer = peer.recv_after(r#"{"jsonrpc":"2.0","id":2,"method":"subtract","params":[42,"x"]}"#).await;
    assert_eq!(answer["error"]["code"], -32602);
    let message = answer["error"]["message"].as_str().unwrap();
    assert!(message.starts_with("Invalid params: param `subtrahend`: invalid type"), "{message}");

    let answer = peer.recv_after(r#"{"jsonrpc":"2.0","id":3,"method":"subtract","params":[1,2,3]}"#).await;
    assert_eq!(answer["error"]["message"], "Invalid params: expected at most 2 params, got 3");

    // A scalar is not valid JSON-RPC params at all: the connection refuses it before dispatch.
    let answer = peer.recv_after(r#"{"jsonrpc":"2.0","id":4,"method":"subtract","params":7}"#).await;
    assert_eq!(answer["error"]["code"], -32600);
}

#[tokio::test]
async fn a_client_and_a_server_agree_on_every_style() {
    let (a, b) = tokio::io::duplex(1 << 16);
    let _server = Connection::builder().serve(CalcServer::new(Calculator)).connect_io(a);
    let conn = Connection::builder().connect_io(b);
    let calc = CalcClient::new(conn.handle());
    within(async {
        assert_eq!(calc.subtract(5, 3).await.unwrap(), 2);
        assert_eq!(calc.divide(9.0, 2.0, Some("floor".into())).await.unwrap(), 4.0);
        assert_eq!(calc.divide(9.0, 2.0, None).await.unwrap(), 4.5);
        assert_eq!(calc.sum(SumRequest { terms: vec![1, 1] }).await.unwrap(), SumResponse { total: 2 });
        assert_eq!(calc.ping().await.unwrap(), "pong");
        assert_eq!(calc.greet("bo".into(), Some("hey".into())).await.unwrap(), "hey, bo");
        calc.log("done".into(), 1).await.unwrap();
    })
    .await;
}

trait RecvAfter {
    async fn recv_after(&mut self, json: &str) -> serde_json::Value;
}

impl RecvAfter for RawPeer {
    async fn recv_after(&mut self, json: &str) -> serde_json::Value {
        self.send(json).await;
        self.recv().await
    }
}

/// A protocol whose every method takes one params object (MCP's style), with methods that take
/// none: MCP's `ping`, LSP's `shutdown`.
#[rpc(params = "object")]
pub trait ObjectStyle {
    /// No params: absent params, `{}` (with members such as MCP's `_meta`), `[]` or `null`.
    async fn ping(&self) -> String;
    /// No params, and nothing to answer but `null`.
    async fn shutdown(&self);
    /// One params object.
    #[method(name = "calc/sum")]
    async fn sum(&self, request: SumRequest) -> SumResponse;
}

struct ObjectService;

impl ObjectStyle for ObjectService {
    async fn ping(&self) -> String {
        "pong".into()
    }
    async fn shutdown(&self) {}
    async fn sum(&self, request: SumRequest) -> SumResponse {
        SumResponse { total: request.terms.iter().sum() }
    }
}

#[tokio::test]
async fn an_object_method_without_params_sends_none_and_accepts_absent_or_empty_params() {
    let (_conn, mut peer) =
        pair(Connection::builder().serve(ObjectStyleServer::new(ObjectService)), Framing::ContentLength);
    for params in
        ["", r#","params":{}"#, r#","params":{"_meta":{"progressToken":1}}"#, r#","params":[]"#, r#","params":null"#]
    {
        let answer = peer.call(&format!(r#"{{"jsonrpc":"2.0","id":1,"method":"ping"{params}}}"#)).await;
        assert_eq!(answer, r#"{"jsonrpc":"2.0","id":1,"result":"pong"}"#, "params {params:?}");
        let answer = peer.call(&format!(r#"{{"jsonrpc":"2.0","id":2,"method":"shutdown"{params}}}"#)).await;
        assert_eq!(answer, r#"{"jsonrpc":"2.0","id":2,"result":null}"#, "params {params:?}");
    }
    let answer = peer.recv_after(r#"{"jsonrpc":"2.0","id":3,"method":"ping","params":[1]}"#).await;
    assert_eq!(answer["error"]["code"], -32602);

    let (_conn, mut peer) = pair(Connection::builder(), Framing::ContentLength);
    let client = ObjectStyleClient::new(_conn.handle());
    let call = tokio::spawn(async move { (client.ping().await, client.shutdown().await) });
    assert_eq!(peer.recv_text().await, r#"{"jsonrpc":"2.0","id":0,"method":"ping"}"#);
    peer.send(r#"{"jsonrpc":"2.0","id":0,"result":"pong"}"#).await;
    assert_eq!(peer.recv_text().await, r#"{"jsonrpc":"2.0","id":1,"method":"shutdown"}"#);
    peer.send(r#"{"jsonrpc":"2.0","id":1,"result":null}"#).await;
    let (ping, shutdown) = within(call).await.unwrap();
    assert_eq!(ping.unwrap(), "pong");
    shutdown.unwrap();
    // In the OpenRPC document: by-name, without params.
    #[cfg(feature = "openrpc")]
    {
        let doc = jsonrpc_duplex::openrpc::Document::new("object", "1.0.0").service::<ObjectStyleApi>().to_value();
        let ping = doc["methods"].as_array().unwrap().iter().find(|m| m["name"] == "ping").unwrap();
        assert_eq!(ping["params"], serde_json::json!([]));
        assert_eq!(ping["paramStructure"], "by-name");
    }
}
