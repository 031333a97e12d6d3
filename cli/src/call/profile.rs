//! Protocol profiles for `call`: the framing and cancellation a protocol uses, the handshake it
//! needs before any other request, and its goodbye.

use crate::error::CliError;
use std::time::Duration;

use jsonrpc_duplex_core::names::lifecycle;
use jsonrpc_duplex_core::{CallOptions, CancelProtocol, Error, Framing, Handle};
use serde_json::json;
use serde_json::value::RawValue;

/// A protocol whose handshake `call` does first.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq, Default)]
pub(crate) enum Profile {
    /// No handshake; content-length framing, LSP's cancellation.
    #[default]
    Plain,
    /// `initialize` then `initialized`; `shutdown` and `exit` at the end. Content-length.
    Lsp,
    /// `initialize` then `notifications/initialized` (protocol 2025-06-18). Newline.
    Mcp,
    /// `initialize` (protocol version 1). Newline.
    Acp,
}

impl Profile {
    /// The protocol's wire conventions, as the core spells them.
    pub(crate) fn wire(self) -> jsonrpc_duplex_core::Profile {
        match self {
            Profile::Plain => jsonrpc_duplex_core::Profile::json_rpc(),
            Profile::Lsp => jsonrpc_duplex_core::Profile::lsp(),
            Profile::Mcp => jsonrpc_duplex_core::Profile::mcp(),
            Profile::Acp => jsonrpc_duplex_core::Profile::acp(),
        }
    }

    /// The protocol's framing.
    pub(crate) fn framing(self) -> Framing {
        self.wire().framing
    }

    /// How the protocol spells cancellation.
    pub(crate) fn cancel(self) -> CancelProtocol {
        self.wire().cancel
    }

    /// The `initialize` params this tool sends by default.
    fn default_init(self) -> Option<serde_json::Value> {
        let client_info = json!({ "name": "jrpc", "version": env!("CARGO_PKG_VERSION") });
        match self {
            Profile::Plain => None,
            Profile::Lsp => {
                let cwd = std::env::current_dir().unwrap_or_default();
                let uri = file_uri(&cwd);
                let name = cwd.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
                Some(json!({
                    "processId": std::process::id(),
                    "clientInfo": client_info,
                    "rootUri": uri,
                    "workspaceFolders": [{ "uri": uri, "name": name }],
                    "capabilities": {
                        "workspace": { "configuration": true, "workspaceFolders": true },
                        "textDocument": {
                            "hover": { "contentFormat": ["markdown", "plaintext"] },
                            "synchronization": { "didSave": true }
                        },
                        "window": { "workDoneProgress": true }
                    }
                }))
            }
            Profile::Mcp => Some(json!({
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": client_info
            })),
            Profile::Acp => Some(json!({
                "protocolVersion": 1,
                "clientCapabilities": { "fs": { "readTextFile": false, "writeTextFile": false }, "terminal": false },
                "clientInfo": client_info
            })),
        }
    }

    /// Do the handshake (with `init` as the `initialize` params, or the defaults); the
    /// server's `initialize` result, or why the handshake failed.
    pub(crate) async fn open(
        self,
        peer: &Handle,
        init: Option<Box<RawValue>>,
        timeout: Duration,
    ) -> Result<Option<Box<RawValue>>, CliError> {
        let Some(default) = self.default_init() else { return Ok(None) };
        let options = CallOptions::new().timeout(timeout);
        let result = match &init {
            Some(init) => peer.request_raw(lifecycle::INITIALIZE, init, options).await,
            None => peer.request_raw(lifecycle::INITIALIZE, &default, options).await,
        }
        .map_err(|e| match e {
            Error::Remote(error) => {
                CliError::InitializeRefused { code: error.code, message: error.message.to_string() }
            }
            other => CliError::Initialize(other),
        })?;
        let initialized = match self {
            Profile::Lsp => Some(lifecycle::LSP_INITIALIZED),
            Profile::Mcp => Some(lifecycle::MCP_INITIALIZED),
            Profile::Acp | Profile::Plain => None,
        };
        if let Some(method) = initialized {
            peer.notify(method, json!({})).await.map_err(|source| CliError::Notify { method, source })?;
        }
        Ok(Some(result))
    }

    /// Say goodbye the protocol's way (LSP: `shutdown`, then `exit`); failures are the server's
    /// business, the call is done.
    pub(crate) async fn close(self, peer: &Handle, timeout: Duration) {
        if self == Profile::Lsp {
            let options = CallOptions::new().timeout(timeout);
            if peer.request_raw(lifecycle::LSP_SHUTDOWN, &(), options).await.is_ok() {
                let _ = peer.notify(lifecycle::LSP_EXIT, ()).await;
            }
        }
    }
}

/// `file:///path` for an absolute path (percent-encoding what a URI cannot hold).
fn file_uri(path: &std::path::Path) -> String {
    let mut uri = String::from("file://");
    for byte in path.to_string_lossy().bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'/' | b'-' | b'_' | b'.' | b'~' => uri.push(byte as char),
            other => uri.push_str(&format!("%{other:02X}")),
        }
    }
    uri
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_uris_are_percent_encoded() {
        assert_eq!(file_uri(std::path::Path::new("/tmp/a b/ç")), "file:///tmp/a%20b/%C3%A7");
    }
}
