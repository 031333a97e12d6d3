//! [`tower-lsp-server`](https://docs.rs/tower-lsp-server) as the server, its custom methods
//! (`LspServiceBuilder::custom_method`) for `add`, `echo` and `tick`, default settings (it runs 4
//! requests at once). It has no client side: the client end is the hand-written one, which
//! first does the `initialize` handshake the server insists on.

use std::sync::Arc;

use serde_json::json;
use tokio::task::JoinHandle;
use tower_lsp_server::jsonrpc::Result;
use tower_lsp_server::ls_types::{InitializeParams, InitializeResult};
use tower_lsp_server::{LanguageServer, LspService, Server};

use crate::handwritten::HwClient;
use crate::harness::{Contender, Link, Tally};

struct Backend {
    tally: Arc<Tally>,
}

impl LanguageServer for Backend {
    async fn initialize(&self, _: InitializeParams) -> Result<InitializeResult> {
        Ok(InitializeResult::default())
    }
    async fn shutdown(&self) -> Result<()> {
        Ok(())
    }
}

impl Backend {
    async fn add(&self, (a, b): (i64, i64)) -> Result<i64> {
        Ok(a + b)
    }
    async fn echo(&self, (text,): (String,)) -> Result<String> {
        Ok(text)
    }
    async fn tick(&self, (_seq,): (u64,)) {
        self.tally.hit()
    }
}

/// tower-lsp-server serving, the hand-written client calling.
pub struct TowerLsp {
    /// The transport (framing: Content-Length).
    pub link: Link,
    /// Where `tick`s are counted.
    pub tally: Arc<Tally>,
}

impl Contender for TowerLsp {
    type Client = HwClient;
    type Guard = JoinHandle<()>;

    async fn open(&self) -> (HwClient, JoinHandle<()>) {
        let (a, b) = self.link.pair();
        let tally = self.tally.clone();
        let (service, socket) = LspService::build(move |_client| Backend { tally })
            .custom_method("add", Backend::add)
            .custom_method("echo", Backend::echo)
            .custom_method("tick", Backend::tick)
            .finish();
        let server = tokio::spawn(async move {
            let (r, w) = tokio::io::split(b);
            Server::new(r, w, socket).serve(service).await;
        });
        let client = HwClient::new(a, jsonrpc_duplex::Framing::ContentLength);
        let _: serde_json::Value = client.call("initialize", json!({ "capabilities": {} })).await;
        client.notify("initialized", json!({})).await;
        (client, server)
    }
}
