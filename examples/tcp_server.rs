//! A shared key-value store served to many clients over TCP (or WebSocket with `--websocket`),
//! with `#[rpc]` traits (`examples/kv/protocol.rs`). The server asks each client its name when it
//! connects (a call to the client), and pushes every change, join and leave to all of them.
//!
//! ```text
//! cargo run --example tcp_server                                   # 127.0.0.1:7878, TCP
//! cargo run --example tcp_server --features websocket -- --websocket
//! cargo run --example tcp_client -- --name alice set color blue    # in another terminal
//! ```
//!
//! Options: `--addr HOST:PORT` (loopback by default), `--websocket`, `--max-connections N`.
//! Ctrl-C shuts down gracefully: clients are told, requests in flight finish (5 s at most).
//! Logs go to stderr (`RUST_LOG=debug` for every connection).
//!
//! What a client can make the server hold is bounded: messages of 1 MiB at most, names of 64
//! bytes, keys of 256 bytes and values of 64 KiB (larger ones are refused with `-32602`), a
//! 5-second timeout on the server's own calls to a client, and the server's defaults for the
//! rest (a message must arrive within 30 s once begun; a client that does not read its pushes
//! is disconnected once it lags by twice its 8 MiB outbound buffer, or by that buffer for 10 s).
//! Clients may stay quiet for as long as they like (they watch).

#[path = "kv/protocol.rs"]
mod protocol;

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use jsonrpc_duplex::server::{ServerBuilder, ServerHandle};
use jsonrpc_duplex::{Connection, RpcError};
use protocol::*;
use tokio::sync::watch;

/// Everything the connections share.
#[derive(Default)]
struct State {
    store: Mutex<BTreeMap<String, String>>,
    /// Connection id → the name the client gave.
    names: Mutex<HashMap<u64, String>>,
}

/// The largest message a client may send (and the server send it).
const MAX_MESSAGE: usize = 1024 * 1024;
/// The longest client name taken as given (a longer one is replaced by `guest-N`).
const MAX_NAME: usize = 64;
/// The longest key and value a client may set.
const MAX_KEY: usize = 256;
const MAX_VALUE: usize = 64 * 1024;
/// How long the server waits for a client to answer its own calls.
const CALL_TIMEOUT: Duration = Duration::from_secs(5);

/// Refuse a key or value over its limit (`-32602`, naming it).
fn check_size(what: &str, text: &str, max: usize) -> Result<(), RpcError> {
    if text.len() > max {
        return Err(RpcError::invalid_params(format!("the {what} has {} bytes; at most {max} are taken", text.len())));
    }
    Ok(())
}

/// Tell every client.
fn push(server: &ServerHandle, event: Event) {
    if let Err(e) = server.broadcast(EVENT, serde_json::json!({ "event": event })) {
        tracing::warn!("broadcast failed: {e}");
    }
}

/// One connection's service.
struct Session {
    state: Arc<State>,
    server: ServerHandle,
    /// The client's name, once it has answered.
    name: watch::Receiver<Option<String>>,
}

impl Session {
    /// The client's name: waits for its answer (it is asked when it connects).
    async fn name(&self) -> String {
        let mut name = self.name.clone();
        match tokio::time::timeout(Duration::from_secs(5), name.wait_for(Option::is_some)).await {
            Ok(Ok(name)) => name.clone().unwrap_or_default(),
            _ => "(anonymous)".into(),
        }
    }
}

impl Store for Session {
    async fn set(&self, key: String, value: String) -> Result<Option<String>, RpcError> {
        check_size("key", &key, MAX_KEY)?;
        check_size("value", &value, MAX_VALUE)?;
        let old = self.state.store.lock().unwrap().insert(key.clone(), value.clone());
        push(&self.server, Event::Set { key, value, by: self.name().await });
        Ok(old)
    }

    async fn get(&self, key: String) -> Option<String> {
        self.state.store.lock().unwrap().get(&key).cloned()
    }

    async fn delete(&self, key: String) -> Result<Option<String>, RpcError> {
        let old = self.state.store.lock().unwrap().remove(&key);
        if old.is_some() {
            push(&self.server, Event::Deleted { key, by: self.name().await });
        }
        Ok(old)
    }

    async fn list(&self) -> BTreeMap<String, String> {
        self.state.store.lock().unwrap().clone()
    }

    async fn who(&self) -> Vec<String> {
        let mut names: Vec<String> = self.state.names.lock().unwrap().values().cloned().collect();
        names.sort();
        names
    }
}

struct Options {
    addr: String,
    websocket: bool,
    max_connections: usize,
}

fn options() -> Result<Options, String> {
    let mut o = Options { addr: DEFAULT_ADDR.into(), websocket: false, max_connections: 1000 };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--addr" => o.addr = args.next().ok_or("--addr needs HOST:PORT")?,
            "--websocket" => o.websocket = true,
            "--max-connections" => {
                o.max_connections =
                    args.next().and_then(|n| n.parse().ok()).ok_or("--max-connections needs a number")?
            }
            "-h" | "--help" => {
                return Err("usage: tcp_server [--addr HOST:PORT] [--websocket] [--max-connections N]".into());
            }
            other => return Err(format!("unknown argument {other:?} (see --help)")),
        }
    }
    Ok(o)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info,jsonrpc_duplex=info".into()),
        )
        .init();
    let options = options()?;
    let state = Arc::new(State::default());

    let factory_state = state.clone();
    let connection = Connection::builder().max_message_size(MAX_MESSAGE).default_timeout(CALL_TIMEOUT);
    let builder = ServerBuilder::new(connection)
        .max_connections(options.max_connections)
        // Watchers listen quietly; the message read timeout still cuts a client that trickles.
        .idle_timeout(None);
    let builder = builder.serve_with(move |peer| {
        // Runs as each client connects, before its first message is read.
        let (id, handle, server, state) =
            (peer.id(), peer.handle().clone(), peer.server().clone(), factory_state.clone());
        tracing::info!(id, addr = %peer.addr(), "client connected");
        let (name_tx, name_rx) = watch::channel(None);
        tokio::spawn(async move {
            // A call to the client: who are you?
            // The name is pushed to every client: bounded in size (the call in time, through
            // the connection's default timeout).
            let name = match WatcherClient::new(handle.clone()).name().await {
                Ok(name) if name.len() <= MAX_NAME && !name.chars().any(char::is_control) => name,
                Ok(name) => {
                    tracing::warn!(id, bytes = name.len(), "the client's name is too long or not printable");
                    format!("guest-{id}")
                }
                Err(e) => {
                    tracing::warn!(id, "the client did not say its name: {e}");
                    format!("guest-{id}")
                }
            };
            state.names.lock().unwrap().insert(id, name.clone());
            name_tx.send_replace(Some(name.clone()));
            push(&server, Event::Joined { name: name.clone() });
            let reason = handle.closed().await;
            state.names.lock().unwrap().remove(&id);
            tracing::info!(id, %name, %reason, "client left");
            push(&server, Event::Left { name });
        });
        StoreServer::new(Session { state: factory_state.clone(), server: peer.server().clone(), name: name_rx })
    });

    let server = if options.websocket {
        #[cfg(feature = "websocket")]
        {
            builder.bind_websocket(&options.addr).await?
        }
        #[cfg(not(feature = "websocket"))]
        return Err("--websocket needs the `websocket` feature: cargo run --example tcp_server --features websocket -- --websocket".into());
    } else {
        builder.bind_tcp(&options.addr).await?
    };
    let scheme = if options.websocket { "ws://" } else { "tcp " };
    let addr = server.local_addr().map(ToString::to_string).unwrap_or_default();
    eprintln!("serving the key-value store on {scheme}{addr} (Ctrl-C to stop)");

    tokio::signal::ctrl_c().await?;
    eprintln!("shutting down: telling {} client(s)", server.peers().len());
    push(&server.handle(), Event::ShuttingDown);
    let report = server.shutdown(Duration::from_secs(5)).await;
    eprintln!(
        "stopped after {:?}: {} connection(s) closed, {} request(s) cut short; {} accepted, {} refused in all",
        report.elapsed, report.closed_connections, report.unfinished, report.stats.accepted, report.stats.refused
    );
    Ok(())
}
