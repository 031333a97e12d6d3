//! `jrpc call` against real peers over every transport: the reference peer (stdio), language
//! servers (python-lsp-server, pyright) with the LSP handshake, the ACP SDK's agent, an MCP server
//! on raw lines, the `tcp_server` example (TCP), a raw peer on a Unix socket, and node's `ws`
//! (WebSocket). Exit codes: 0 result, 1 error answer, 2 usage, 3 cannot connect, 4 no answer.

use std::process::Stdio;

use crate::support;
use crate::support::{Scratch, assert_contains, frame, interop, jrpc_command, read_trace, run};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};

fn call(args: &[&str]) -> tokio::process::Command {
    let mut command = jrpc_command();
    command.arg("call").args(args);
    command
}

fn peer() -> String {
    interop::example("conformance_peer").display().to_string()
}

#[tokio::test]
async fn a_result_is_printed_and_exits_0() {
    let out = run(call(&["--spawn", &peer(), "add", r#"{"a":2,"b":40}"#]), b"").await;
    assert_eq!((out.code(), out.stdout.as_str()), (Some(0), "42\n"), "{out:?}");
    let out = run(call(&["--spawn", &peer(), "--compact", "echo", r#"{"z":1,"a":[true, null]}"#]), b"").await;
    assert_eq!(out.stdout, "{\"z\":1,\"a\":[true, null]}\n", "the answer as the server wrote it");
    let out = run(call(&["--spawn", &peer(), "echo", "-"]), br#"{"z":1,"a":[]}"#).await;
    assert_eq!(out.stdout, "{\n  \"z\": 1,\n  \"a\": []\n}\n", "params from stdin, the answer indented in order");
}

#[tokio::test]
async fn an_error_answer_is_printed_and_exits_1() {
    let out = run(call(&["--spawn", &peer(), "fail", r#"{"why":"testing"}"#]), b"").await;
    assert_eq!(out.code(), Some(1), "{out:?}");
    let error: Value = serde_json::from_str(&out.stdout).expect("the error object as JSON");
    assert_eq!(error, json!({"code": -32001, "message": "requested failure", "data": {"why": "testing"}}));
    let out = run(call(&["--spawn", &peer(), "no/such/method"]), b"").await;
    assert_eq!(out.code(), Some(1));
    assert!(out.stdout.contains("-32601"), "{out:?}");
}

#[tokio::test]
async fn no_server_no_answer_and_bad_arguments_have_their_own_codes() {
    let out = run(call(&["--spawn", "/nonexistent/server", "x"]), b"").await;
    assert_eq!(out.code(), Some(3), "{out:?}");
    assert!(out.stderr.contains("cannot start `/nonexistent/server`"), "{}", out.stderr);
    // A port nothing listens on: bind one, learn it, close it.
    let port = std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("a free port").port();
    let out = run(call(&["--tcp", &format!("127.0.0.1:{port}"), "x"]), b"").await;
    assert_eq!(out.code(), Some(3), "{out:?}");

    let out = run(call(&["--spawn", &peer(), "--timeout", "300ms", "slow", r#"{"ms":20000}"#]), b"").await;
    assert_eq!(out.code(), Some(4), "{out:?}");
    assert!(out.stderr.contains("no answer to slow: no answer within 300ms"), "{}", out.stderr);
    let out = run(call(&["--spawn", "sh -c 'exit 5'", "add", "[1,2]"]), b"").await;
    assert_eq!(out.code(), Some(4), "{out:?}");
    assert!(out.stderr.contains("(the server exited with code 5)"), "{}", out.stderr);

    let out = run(call(&["--spawn", &peer(), "add", "5"]), b"").await;
    assert_eq!(out.code(), Some(2));
    assert!(out.stderr.contains("PARAMS must be a JSON object or array"), "{}", out.stderr);
    let out = run(call(&["add"]), b"").await;
    assert_eq!(out.code(), Some(2));
    let out = run(call(&["--spawn", "x", "--tcp", "y", "add"]), b"").await;
    assert_eq!(out.code(), Some(2), "two targets: {out:?}");
}

#[tokio::test]
async fn requests_from_the_server_are_shown_and_answered_by_the_rule() {
    let scratch = Scratch::new("call-rule");
    let answers = scratch.path("answers.json");
    std::fs::write(&answers, r#"{"client/ask": {"result": {"answer": 42}}}"#).expect("answers");
    let params = r#"{"method":"client/ask","params":{"q":"six times seven?"}}"#;
    let out = run(call(&["--spawn", &peer(), "--answer", answers.to_str().unwrap(), "callBack", params]), b"").await;
    assert_eq!(out.code(), Some(0), "{out:?}");
    assert_eq!(serde_json::from_str::<Value>(&out.stdout).expect("json"), json!({"answer": 42}));
    assert_contains(
        &out.stderr,
        &[
            r#"S→C req    #0 client/ask {"jsonrpc":"2.0","id":0,"method":"client/ask","params":{"q":"six times seven?"}}"#,
            r#"C→S ok     #0 client/ask ("#,
            r#") {"jsonrpc":"2.0","id":0,"result":{"answer": 42}}"#,
        ],
    );
    assert!(!out.stderr.contains("callBack"), "our own call is not repeated on stderr: {}", out.stderr);
    // The default rule answers null; `error` answers -32601, which the peer passes back.
    let out = run(call(&["--spawn", &peer(), "callBack", params]), b"").await;
    assert_eq!((out.code(), out.stdout.as_str()), (Some(0), "null\n"));
    let out = run(call(&["--spawn", &peer(), "--answer", "error", "callBack", params]), b"").await;
    assert_eq!(out.code(), Some(1));
    assert!(out.stdout.contains("-32601"), "{out:?}");
    // Notifications from the server are shown too.
    let out = run(call(&["--spawn", &peer(), "notifyMe", r#"{"count":2}"#]), b"").await;
    assert_contains(&out.stderr, &[r#"S→C notif  tick {"jsonrpc":"2.0","method":"tick","params":{"n":2}}"#]);
}

#[tokio::test]
async fn a_notification_is_sent_and_the_session_can_be_traced() {
    let scratch = Scratch::new("call-notify");
    let trace = scratch.path("trace.jsonl");
    let out = run(
        call(&["--spawn", &peer(), "--trace", trace.to_str().unwrap(), "--notify", "record", r#"{"value":7}"#]),
        b"",
    )
    .await;
    assert_eq!((out.code(), out.stdout.as_str()), (Some(0), ""), "{out:?}");
    let records = read_trace(&trace);
    assert_eq!(records[0]["command"], json!([peer()]));
    let sent: Vec<&Value> = records.iter().filter(|r| r["type"] == "message").collect();
    assert_eq!(sent.len(), 1, "{records:?}");
    assert_eq!(sent[0]["message"], json!({"jsonrpc":"2.0","method":"record","params":{"value":7}}));
    assert_eq!((&sent[0]["from"], &sent[0]["framing"]), (&json!("client"), &json!("content-length")));
}

/// The LSP handshake against python-lsp-server: `initialize`, `initialized`, the call,
/// `shutdown`, `exit`, the server exits 0.
#[tokio::test]
async fn the_lsp_profile_talks_to_python_lsp_server() {
    let scratch = Scratch::new("call-pylsp");
    let trace = scratch.path("trace.jsonl");
    let fixture = interop::interop_dir("lsp").join("fixture");
    let uri = format!("file://{}/greet.py", fixture.display());
    let pylsp = interop::pylsp().display().to_string();
    let params = json!({"textDocument": {"uri": uri}}).to_string();
    let mut command = call(&["--profile", "lsp", "--spawn", &pylsp, "--trace", trace.to_str().unwrap()]);
    command.args(["-v", "textDocument/documentSymbol", &params]).current_dir(&fixture);
    let out = run(command, b"").await;
    assert_eq!(out.code(), Some(0), "{out:?}");
    let symbols: Value = serde_json::from_str(&out.stdout).expect("json");
    let names: Vec<&str> = symbols.as_array().expect("symbols").iter().filter_map(|s| s["name"].as_str()).collect();
    assert!(names.contains(&"greet"), "{names:?}");
    assert!(out.stderr.contains("jrpc call: the server exited with code 0"), "{}", out.stderr);
    let methods: Vec<String> = read_trace(&trace)
        .iter()
        .filter(|r| r["from"] == "client" && r["type"] == "message")
        .filter_map(|r| r["message"]["method"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(methods, ["initialize", "initialized", "textDocument/documentSymbol", "shutdown", "exit"]);
}

/// pyright asks for its configuration during the handshake: shown, and answered `null`.
#[tokio::test]
async fn the_lsp_profile_answers_pyrights_requests() {
    let fixture = interop::interop_dir("lsp").join("fixture");
    let server = format!("node {} --stdio", interop::pyright().display());
    let mut command = call(&["--profile", "lsp", "--spawn", &server, "workspace/symbol", r#"{"query":"greet"}"#]);
    command.current_dir(&fixture);
    let out = run(command, b"").await;
    assert_eq!(out.code(), Some(0), "{out:?}");
    assert_contains(
        &out.stderr,
        &[
            "S→C notif  window/logMessage",
            "Pyright language server 1.1.414 starting",
            "S→C req    #0 workspace/configuration",
            r#"C→S ok     #0 workspace/configuration ("#,
            r#") {"jsonrpc":"2.0","id":0,"result":null}"#,
        ],
    );
}

/// The ACP handshake against the official SDK's agent.
#[tokio::test]
async fn the_acp_profile_talks_to_the_sdk_agent() {
    let acp = interop::npm_ready("acp", &["@agentclientprotocol/sdk", "zod"]);
    let scratch = Scratch::new("call-acp");
    let params = json!({"cwd": scratch.dir.display().to_string(), "mcpServers": []}).to_string();
    let mut command = call(&["--profile", "acp", "--spawn", "node sdk_agent.mjs", "session/new", &params]);
    command.current_dir(&acp);
    let out = run(command, b"").await;
    assert_eq!(out.code(), Some(0), "{out:?}");
    let session: Value = serde_json::from_str(&out.stdout).expect("json");
    assert!(session["sessionId"].as_str().is_some_and(|s| !s.is_empty()), "{session}");
    // Without the handshake the SDK refuses.
    let mut command = call(&["--framing", "newline", "--spawn", "node sdk_agent.mjs", "session/new", &params]);
    command.current_dir(&acp);
    let out = run(command, b"").await;
    assert_eq!(out.code(), Some(1), "{out:?}");
}

/// An MCP server on raw lines (Python, no SDK): it checks the handshake's order and asks the
/// client for its roots, which the answer file provides.
const MCP_SERVER: &str = r#"
import json, sys
def send(m):
    sys.stdout.write(json.dumps(m) + "\n")
    sys.stdout.flush()
seen = []
while True:
    line = sys.stdin.readline()
    if not line:
        break
    m = json.loads(line)
    seen.append(m.get("method"))
    if m.get("method") == "initialize":
        ok = m["params"]["protocolVersion"] == "2025-06-18" and m["params"]["clientInfo"]["name"] == "jrpc"
        send({"jsonrpc": "2.0", "id": m["id"], "result": {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
              "serverInfo": {"name": "py-mcp", "version": "1.0"}}} if ok else
             {"jsonrpc": "2.0", "id": m["id"], "error": {"code": -32602, "message": "bad initialize: " + line}})
    elif m.get("method") == "tools/list":
        if seen[:2] != ["initialize", "notifications/initialized"]:
            send({"jsonrpc": "2.0", "id": m["id"], "error": {"code": -32600, "message": "handshake order: %s" % seen}})
            continue
        send({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "listing tools"}})
        send({"jsonrpc": "2.0", "id": "r1", "method": "roots/list"})
        answer = json.loads(sys.stdin.readline())
        send({"jsonrpc": "2.0", "id": m["id"], "result": {"tools": [{"name": "echo", "inputSchema": {"type": "object"}}],
              "rootsSeen": answer.get("result")}})
"#;

#[tokio::test]
async fn the_mcp_profile_does_the_handshake_first() {
    let scratch = Scratch::new("call-mcp");
    let server = scratch.path("server.py");
    std::fs::write(&server, MCP_SERVER).expect("server.py");
    let answers = scratch.path("answers.json");
    std::fs::write(&answers, r#"{"roots/list": {"result": {"roots": [{"uri": "file:///tmp", "name": "tmp"}]}}}"#)
        .expect("answers");
    let spawn = format!("python3 {}", server.display());
    let out =
        run(call(&["--profile", "mcp", "--spawn", &spawn, "--answer", answers.to_str().unwrap(), "tools/list"]), b"")
            .await;
    assert_eq!(out.code(), Some(0), "{out:?}");
    let result: Value = serde_json::from_str(&out.stdout).expect("json");
    assert_eq!(result["tools"][0]["name"], "echo");
    assert_eq!(result["rootsSeen"], json!({"roots": [{"uri": "file:///tmp", "name": "tmp"}]}));
    assert_contains(&out.stderr, &["S→C notif  notifications/message", "S→C req    #\"r1\" roots/list"]);
}

/// The `tcp_server` example over TCP: it asks the client's name as it connects (answered from
/// the file) and pushes every change.
#[tokio::test]
async fn tcp_to_the_key_value_server() {
    let scratch = Scratch::new("call-tcp");
    let answers = scratch.path("answers.json");
    std::fs::write(&answers, r#"{"client/name": {"result": "jrpc-test"}}"#).expect("answers");
    let mut server = tokio::process::Command::new(interop::example("tcp_server"))
        .args(["--addr", "127.0.0.1:0"])
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("tcp_server starts");
    let mut lines = BufReader::new(server.stderr.take().expect("piped")).lines();
    let addr = tokio::time::timeout(support::RUN, async {
        while let Some(line) = lines.next_line().await.expect("stderr") {
            if let Some(addr) = line.split("serving the key-value store on ").nth(1) {
                // "tcp 127.0.0.1:PORT (Ctrl-C to stop)"
                return addr.split_whitespace().nth(1).expect("an address").to_owned();
            }
        }
        panic!("tcp_server ended without saying where it listens");
    })
    .await
    .expect("tcp_server listens in time");
    let answer_file = answers.to_str().unwrap();
    let set = call(&["--tcp", &addr, "--answer", answer_file, "kv/set", r#"{"key":"color","value":"blue"}"#]);
    let out = run(set, b"").await;
    assert_eq!((out.code(), out.stdout.as_str()), (Some(0), "null\n"), "{out:?}");
    assert_contains(
        &out.stderr,
        &[
            "S→C req    #0 client/name",
            r#"C→S ok     #0 client/name ("#,
            r#""result":"jrpc-test"}"#,
            "S→C notif  client/event",
        ],
    );
    let out =
        run(call(&["--tcp", &addr, "--answer", answer_file, "--quiet", "kv/get", r#"{"key":"color"}"#]), b"").await;
    assert_eq!((out.code(), out.stdout.as_str(), out.stderr.as_str()), (Some(0), "\"blue\"\n", ""), "{out:?}");
    let _ = server.kill().await;
}

/// A Unix socket, to a peer on raw bytes that checks the exact frame it gets.
#[cfg(unix)]
#[tokio::test]
async fn unix_socket_to_a_raw_peer() {
    let scratch = Scratch::new("call-unix");
    let path = scratch.path("peer.sock");
    let listener = tokio::net::UnixListener::bind(&path).expect("bind");
    let peer = tokio::spawn(async move {
        let (mut stream, _) = listener.accept().await.expect("accept");
        let expected = frame(r#"{"jsonrpc":"2.0","id":0,"method":"ping","params":{"n":1}}"#);
        let mut got = vec![0u8; expected.len()];
        stream.read_exact(&mut got).await.expect("the request");
        assert_eq!(String::from_utf8_lossy(&got), String::from_utf8_lossy(&expected));
        let mut reply = frame(r#"{"jsonrpc":"2.0","method":"pinged","params":{}}"#);
        reply.extend(frame(r#"{"jsonrpc":"2.0","id":0,"result":{"pong":true}}"#));
        stream.write_all(&reply).await.expect("the answer");
        let mut rest = Vec::new();
        stream.read_to_end(&mut rest).await.expect("EOF");
        rest
    });
    let out = run(call(&["--unix", path.to_str().unwrap(), "ping", r#"{"n":1}"#]), b"").await;
    assert_eq!((out.code(), out.stdout.as_str()), (Some(0), "{\n  \"pong\": true\n}\n"), "{out:?}");
    assert_contains(&out.stderr, &["S→C notif  pinged"]);
    let rest = tokio::time::timeout(support::RUN, peer).await.expect("peer done").expect("peer ok");
    assert!(rest.is_empty(), "nothing after the request: {}", String::from_utf8_lossy(&rest));
}

/// WebSocket, to node's `ws` serving the kv methods by hand; `kv/hello` asks us our name first.
#[cfg(feature = "websocket")]
#[tokio::test]
async fn websocket_to_node_ws() {
    let ws = interop::npm_ready("ws", &["ws"]);
    let scratch = Scratch::new("call-ws");
    let answers = scratch.path("answers.json");
    std::fs::write(&answers, r#"{"watcher/name": {"result": "jrpc"}}"#).expect("answers");
    let mut server = tokio::process::Command::new("node")
        .args(["ws_peer.js", "server"])
        .current_dir(&ws)
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("node ws_peer.js starts");
    let mut lines = BufReader::new(server.stdout.take().expect("piped")).lines();
    let port = tokio::time::timeout(support::RUN, lines.next_line())
        .await
        .expect("the peer listens in time")
        .expect("stdout")
        .and_then(|l| l.strip_prefix("LISTENING ").map(str::to_owned))
        .expect("LISTENING <port>");
    let url = format!("ws://127.0.0.1:{port}/");
    let out = run(call(&["--ws", &url, "--answer", answers.to_str().unwrap(), "kv/hello"]), b"").await;
    assert_eq!((out.code(), out.stdout.as_str()), (Some(0), "\"hello, jrpc (connection 0)\"\n"), "{out:?}");
    assert_contains(&out.stderr, &["S→C req    #\"node-0\" watcher/name", r#"C→S ok     #"node-0" watcher/name ("#]);
    let closed = tokio::time::timeout(support::RUN, async {
        while let Some(line) = lines.next_line().await.expect("stdout") {
            if line.starts_with("CLOSED") {
                return line;
            }
        }
        String::new()
    })
    .await
    .expect("the peer sees the close");
    assert!(closed.starts_with("CLOSED 1000"), "{closed}");
}
