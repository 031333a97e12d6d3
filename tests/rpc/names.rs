//! Method names: explicit names, aliases for old names, and names derived from the Rust name
//! with a namespace, a separator and a rename convention.

use crate::support;

use jsonrpc_duplex::{Connection, Framing, rpc};
use support::raw_peer::pair;
use support::time::within;

/// ACP-style: explicit names, and an alias for a name an older peer still sends.
#[rpc]
pub trait Sessions {
    /// Start a session.
    #[method(name = "session/new", aliases = ["session/create", "newSession"])]
    async fn new_session(&self, cwd: String) -> String;

    /// The Rust name is the wire name when none is given.
    async fn list_sessions(&self) -> Vec<String>;
}

/// LSP-style: a namespace with `/` (the default separator) and camelCase names.
#[rpc(namespace = "textDocument", rename_all = "camelCase")]
pub trait TextDocument {
    /// `textDocument/didOpen`.
    #[notification]
    async fn did_open(&self, uri: String);

    /// `textDocument/documentSymbol`.
    async fn document_symbol(&self, uri: String) -> Vec<String>;

    /// An explicit name is used as written: the namespace does not apply.
    #[method(name = "workspace/symbol")]
    async fn workspace_symbol(&self, query: String) -> Vec<String>;
}

/// A dotted namespace, PascalCase names and camelCase argument keys (StreamJsonRpc style).
#[rpc(namespace = "fs", separator = ".", rename_all = "PascalCase", rename_all_params = "camelCase", params = "named")]
pub trait Files {
    /// `fs.ReadTextFile {"filePath": ..}`.
    async fn read_text_file(&self, file_path: String, r#type: Option<String>) -> String;
}

struct Impl;

impl Sessions for Impl {
    async fn new_session(&self, cwd: String) -> String {
        format!("session in {cwd}")
    }
    async fn list_sessions(&self) -> Vec<String> {
        vec!["s1".into()]
    }
}

impl TextDocument for Impl {
    async fn did_open(&self, _uri: String) {}
    async fn document_symbol(&self, uri: String) -> Vec<String> {
        vec![uri]
    }
    async fn workspace_symbol(&self, query: String) -> Vec<String> {
        vec![query]
    }
}

impl Files for Impl {
    async fn read_text_file(&self, file_path: String, kind: Option<String>) -> String {
        format!("{file_path}:{}", kind.unwrap_or_default())
    }
}

#[test]
fn each_server_lists_its_wire_names_aliases_included() {
    assert_eq!(SessionsServer::<Impl>::METHODS, ["session/new", "session/create", "newSession", "list_sessions"]);
    assert_eq!(
        TextDocumentServer::<Impl>::METHODS,
        ["textDocument/didOpen", "textDocument/documentSymbol", "workspace/symbol"]
    );
    assert_eq!(FilesServer::<Impl>::METHODS, ["fs.ReadTextFile"]);
}

#[tokio::test]
async fn the_client_sends_the_derived_and_explicit_names() {
    let (conn, mut peer) = pair(Connection::builder(), Framing::ContentLength);
    let docs = TextDocumentClient::new(conn.handle());
    within(docs.did_open("file:///a.rs".into())).await.unwrap();
    assert_eq!(
        peer.recv_text().await,
        r#"{"jsonrpc":"2.0","method":"textDocument/didOpen","params":["file:///a.rs"]}"#
    );

    let d = docs.clone();
    let call = tokio::spawn(async move { d.document_symbol("file:///a.rs".into()).await });
    assert_eq!(
        peer.recv_text().await,
        r#"{"jsonrpc":"2.0","id":0,"method":"textDocument/documentSymbol","params":["file:///a.rs"]}"#
    );
    peer.send(r#"{"jsonrpc":"2.0","id":0,"result":[]}"#).await;
    within(call).await.unwrap().unwrap();

    let call = tokio::spawn(async move { docs.workspace_symbol("main".into()).await });
    assert_eq!(peer.recv_text().await, r#"{"jsonrpc":"2.0","id":1,"method":"workspace/symbol","params":["main"]}"#);
    peer.send(r#"{"jsonrpc":"2.0","id":1,"result":[]}"#).await;
    within(call).await.unwrap().unwrap();

    let files = FilesClient::new(conn.handle());
    let call = tokio::spawn(async move { files.read_text_file("a.txt".into(), Some("utf8".into())).await });
    assert_eq!(
        peer.recv_text().await,
        r#"{"jsonrpc":"2.0","id":2,"method":"fs.ReadTextFile","params":{"filePath":"a.txt","type":"utf8"}}"#
    );
    peer.send(r#"{"jsonrpc":"2.0","id":2,"result":"x"}"#).await;
    within(call).await.unwrap().unwrap();
}

#[tokio::test]
async fn the_server_answers_the_name_and_every_alias() {
    let (_conn, mut peer) = pair(Connection::builder().serve(SessionsServer::new(Impl)), Framing::ContentLength);
    for (id, name) in ["session/new", "session/create", "newSession"].iter().enumerate() {
        let answer = peer.call(&format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"{name}","params":["/tmp"]}}"#)).await;
        assert_eq!(answer, format!(r#"{{"jsonrpc":"2.0","id":{id},"result":"session in /tmp"}}"#));
    }
    // The Rust name of a method with an explicit name is not a wire name.
    let answer = peer.call(r#"{"jsonrpc":"2.0","id":9,"method":"new_session","params":["/tmp"]}"#).await;
    assert_eq!(answer, r#"{"jsonrpc":"2.0","id":9,"error":{"code":-32601,"message":"Method not found: new_session"}}"#);
}

#[tokio::test]
async fn the_server_reads_renamed_argument_keys() {
    let (_conn, mut peer) = pair(Connection::builder().serve(FilesServer::new(Impl)), Framing::ContentLength);
    let answer = peer
        .call(r#"{"jsonrpc":"2.0","id":1,"method":"fs.ReadTextFile","params":{"filePath":"a.txt","type":"x"}}"#)
        .await;
    assert_eq!(answer, r#"{"jsonrpc":"2.0","id":1,"result":"a.txt:x"}"#);
}

/// A method that is compiled out takes its client method and its route with it.
#[rpc]
pub trait Gated {
    /// Always there.
    async fn present(&self) -> u32;
    /// Compiled out (it names a type that does not exist).
    #[cfg(any())]
    async fn absent(&self, x: DoesNotExist) -> u32;
}

impl Gated for Impl {
    async fn present(&self) -> u32 {
        1
    }
}

#[tokio::test]
async fn cfg_on_a_method_applies_to_its_client_method_and_route() {
    let (_conn, mut peer) = pair(Connection::builder().serve(GatedServer::new(Impl)), Framing::ContentLength);
    assert_eq!(
        peer.call(r#"{"jsonrpc":"2.0","id":1,"method":"present"}"#).await,
        r#"{"jsonrpc":"2.0","id":1,"result":1}"#
    );
    let answer = peer.call(r#"{"jsonrpc":"2.0","id":2,"method":"absent"}"#).await;
    assert!(answer.contains("-32601"), "{answer}");
}
