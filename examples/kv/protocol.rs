//! The protocol of the `tcp_server` / `tcp_client` examples: a shared key-value store whose
//! clients are told about every change. Each side serves one trait and calls the other's.

// Each example uses part of this module.
#![allow(dead_code, unreachable_pub)]

use std::collections::BTreeMap;

use jsonrpc_duplex::{RpcError, rpc};
use serde::{Deserialize, Serialize};

/// What the server offers.
#[rpc(namespace = "kv", params = "named")]
pub trait Store {
    /// Set `key` to `value`; every connected client is told. Returns the previous value.
    async fn set(&self, key: String, value: String) -> Result<Option<String>, RpcError>;

    /// The value of `key`.
    async fn get(&self, key: String) -> Option<String>;

    /// Remove `key`; every connected client is told. Returns the value it had.
    async fn delete(&self, key: String) -> Result<Option<String>, RpcError>;

    /// Every key and value.
    async fn list(&self) -> BTreeMap<String, String>;

    /// The names of the connected clients.
    async fn who(&self) -> Vec<String>;
}

/// What each client offers the server: its name, and a place to push events.
#[rpc(namespace = "client", params = "named")]
pub trait Watcher {
    /// The client's name (the server asks when the client connects).
    async fn name(&self) -> String;

    /// Something happened on the server.
    #[notification]
    async fn event(&self, event: Event);
}

/// What the server pushes.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Event {
    /// A key was set.
    Set {
        /// The key.
        key: String,
        /// Its new value.
        value: String,
        /// Who set it.
        by: String,
    },
    /// A key was removed.
    Deleted {
        /// The key.
        key: String,
        /// Who removed it.
        by: String,
    },
    /// A client connected.
    Joined {
        /// Its name.
        name: String,
    },
    /// A client left.
    Left {
        /// Its name.
        name: String,
    },
    /// The server is going away.
    ShuttingDown,
}

/// The default address: loopback only.
pub const DEFAULT_ADDR: &str = "127.0.0.1:7878";

/// The wire name of [`Watcher::event`], for broadcasts (params by name: `{"event": …}`).
pub const EVENT: &str = "client/event";
