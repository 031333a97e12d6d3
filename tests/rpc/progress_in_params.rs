//! A request's own progress token inside its params object, where the profile puts it (MCP's
//! `_meta.progressToken`, LSP's `workDoneToken`): a `Progress<T>` argument of an `"object"`
//! method is as easy there as anywhere, for the client and the server. The bytes on the wire are
//! checked against a hand-written peer.

use crate::support;

use jsonrpc_duplex::{Builder, Connection, Framing, Profile, Progress, RpcError, rpc};
use serde::{Deserialize, Serialize};
use serde_json::json;
use support::raw_peer::RawPeer;
use support::time::within;

/// MCP's `tools/call` params (the token is not a field: the connection puts it in `_meta`).
#[derive(Debug, Serialize, Deserialize)]
pub struct CallTool {
    /// The tool.
    pub name: String,
    /// Its input.
    pub arguments: serde_json::Value,
}

/// MCP's progress value (beside `progressToken` in `notifications/progress`).
#[derive(Debug, PartialEq, Serialize, Deserialize)]
pub struct Step {
    /// Done so far.
    pub progress: u32,
    /// Out of.
    pub total: u32,
}

/// An MCP server's tools.
#[rpc(params = "object")]
pub trait Tools {
    /// Run a tool, reporting progress on the caller's token.
    #[method(name = "tools/call")]
    async fn call_tool(&self, params: CallTool, progress: Progress<Step>) -> Result<String, RpcError>;
}

struct Runner;

impl Tools for Runner {
    async fn call_tool(&self, params: CallTool, progress: Progress<Step>) -> Result<String, RpcError> {
        for step in 1..=2 {
            progress.report(Step { progress: step, total: 2 }).await?;
        }
        Ok(format!("ran {}", params.name))
    }
}

fn start(builder: Builder, framing: Framing) -> (Connection, RawPeer) {
    let (ours, theirs) = tokio::io::duplex(64 * 1024);
    let conn = builder.connect_io(ours);
    let (r, w) = tokio::io::split(theirs);
    (conn, RawPeer::new(r, w, framing))
}

#[tokio::test]
async fn the_client_puts_its_token_in_meta_and_sees_every_report_before_the_answer() {
    let (conn, mut peer) = start(Connection::builder().profile(Profile::mcp()), Framing::NewlineDelimited);
    let tools = ToolsClient::new(conn.handle());
    let call = tokio::spawn(async move {
        let mut seen = Vec::new();
        let params = CallTool { name: "index".into(), arguments: json!({"path": "."}) };
        let answer = tools.call_tool(params, |step| seen.push(step)).await.map_err(|e| e.to_string());
        (answer, seen)
    });
    peer.expect(json!({
        "jsonrpc":"2.0","id":0,"method":"tools/call",
        "params":{"name":"index","arguments":{"path":"."},"_meta":{"progressToken":0}}
    }))
    .await;
    peer.send(
        r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":0,"progress":1,"total":2}}"#,
    )
    .await;
    peer.send(
        r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":0,"progress":2,"total":2}}"#,
    )
    .await;
    peer.send(r#"{"jsonrpc":"2.0","id":0,"result":"done"}"#).await;
    let (answer, seen) = within(call).await.unwrap();
    assert_eq!(answer, Ok("done".to_owned()));
    assert_eq!(seen, [Step { progress: 1, total: 2 }, Step { progress: 2, total: 2 }]);
}

#[tokio::test]
async fn the_server_reports_on_the_token_it_finds_in_meta() {
    let (_conn, mut peer) =
        start(Connection::builder().profile(Profile::mcp()).serve(ToolsServer::new(Runner)), Framing::NewlineDelimited);
    peer.send(r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"a","arguments":{},"_meta":{"progressToken":"tok"}}}"#)
        .await;
    peer.expect(json!({"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"tok","progress":1,"total":2}}))
        .await;
    peer.expect(json!({"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"tok","progress":2,"total":2}}))
        .await;
    peer.expect(json!({"jsonrpc":"2.0","id":5,"result":"ran a"})).await;

    // Without a token: no reports, just the answer.
    peer.send(r#"{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"b","arguments":{}}}"#).await;
    peer.expect(json!({"jsonrpc":"2.0","id":6,"result":"ran b"})).await;
}

#[tokio::test]
async fn under_lsp_the_token_is_the_work_done_token() {
    let (conn, mut peer) = start(Connection::builder().profile(Profile::lsp()), Framing::ContentLength);
    let tools = ToolsClient::new(conn.handle());
    let call = tokio::spawn(async move {
        let mut seen = Vec::new();
        let params = CallTool { name: "x".into(), arguments: json!(null) };
        let answer = tools.call_tool(params, |step| seen.push(step)).await.map_err(|e| e.to_string());
        (answer, seen)
    });
    peer.expect(
        json!({"jsonrpc":"2.0","id":0,"method":"tools/call","params":{"name":"x","arguments":null,"workDoneToken":0}}),
    )
    .await;
    peer.send(r#"{"jsonrpc":"2.0","method":"$/progress","params":{"token":0,"value":{"progress":1,"total":1}}}"#).await;
    peer.send(r#"{"jsonrpc":"2.0","id":0,"result":"ok"}"#).await;
    let (answer, seen) = within(call).await.unwrap();
    assert_eq!((answer, seen), (Ok("ok".to_owned()), vec![Step { progress: 1, total: 1 }]));

    let (_conn, mut peer) =
        start(Connection::builder().profile(Profile::lsp()).serve(ToolsServer::new(Runner)), Framing::ContentLength);
    peer.send(
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"y","arguments":{},"workDoneToken":"w"}}"#,
    )
    .await;
    peer.expect(json!({"jsonrpc":"2.0","method":"$/progress","params":{"token":"w","value":{"progress":1,"total":2}}}))
        .await;
    peer.expect(json!({"jsonrpc":"2.0","method":"$/progress","params":{"token":"w","value":{"progress":2,"total":2}}}))
        .await;
    peer.expect(json!({"jsonrpc":"2.0","id":1,"result":"ran y"})).await;
}

#[tokio::test]
async fn without_a_place_for_the_token_the_call_fails_saying_what_to_do() {
    let (conn, _peer) = start(Connection::builder(), Framing::ContentLength);
    let tools = ToolsClient::new(conn.handle());
    let error = within(tools.call_tool(CallTool { name: "x".into(), arguments: json!({}) }, |_| {}))
        .await
        .unwrap_err()
        .to_string();
    assert!(error.contains("Profile::mcp()"), "{error}");
}
