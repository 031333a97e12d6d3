//! A client of the `tcp_server` example's key-value store, over TCP (or WebSocket with
//! `--websocket`). It answers the server's question (its name) and prints what the server pushes.
//!
//! ```text
//! cargo run --example tcp_client -- --name alice set color blue
//! cargo run --example tcp_client -- get color
//! cargo run --example tcp_client -- --name bob watch               # print changes until Ctrl-C
//! cargo run --example tcp_client -- --name carol                   # interactive: one command a line
//! cargo run --example tcp_client --features websocket -- --websocket list
//! ```
//!
//! Commands: `set KEY VALUE`, `get KEY`, `del KEY`, `list`, `who`, `watch`.
//! Options: `--addr HOST:PORT` (127.0.0.1:7878 by default), `--websocket`, `--name NAME`.

#[path = "kv/protocol.rs"]
mod protocol;

use jsonrpc_duplex::Connection;
use protocol::*;
use tokio::io::{AsyncBufReadExt, BufReader};

/// This client's side of the protocol.
struct Me {
    name: String,
}

impl Watcher for Me {
    async fn name(&self) -> String {
        self.name.clone()
    }

    async fn event(&self, event: Event) {
        match event {
            Event::Set { key, value, by } => println!("* {by} set {key} = {value}"),
            Event::Deleted { key, by } => println!("* {by} deleted {key}"),
            Event::Joined { name } => println!("* {name} joined"),
            Event::Left { name } => println!("* {name} left"),
            Event::ShuttingDown => println!("* the server is shutting down"),
        }
    }
}

/// Run one command; `Ok(false)` for `watch` (keep running).
async fn run(store: &StoreClient, words: &[String]) -> Result<bool, String> {
    let words: Vec<&str> = words.iter().map(String::as_str).collect();
    let e = |e: jsonrpc_duplex::ClientError<_>| e.to_string();
    match words.as_slice() {
        ["set", key, value @ ..] if !value.is_empty() => {
            match store.set(key.to_string(), value.join(" ")).await.map_err(e)? {
                Some(old) => println!("{key} = {} (was {old})", value.join(" ")),
                None => println!("{key} = {}", value.join(" ")),
            }
        }
        ["get", key] => match store.get(key.to_string()).await.map_err(e)? {
            Some(value) => println!("{key} = {value}"),
            None => println!("{key} is not set"),
        },
        ["del", key] => match store.delete(key.to_string()).await.map_err(e)? {
            Some(old) => println!("deleted {key} (was {old})"),
            None => println!("{key} was not set"),
        },
        ["list"] => {
            for (key, value) in store.list().await.map_err(e)? {
                println!("{key} = {value}");
            }
        }
        ["who"] => println!("connected: {}", store.who().await.map_err(e)?.join(", ")),
        ["watch"] => return Ok(false),
        [] => {}
        _ => {
            return Err(format!(
                "unknown command {:?}: set KEY VALUE | get KEY | del KEY | list | who | watch",
                words.join(" ")
            ));
        }
    }
    Ok(true)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut addr = DEFAULT_ADDR.to_string();
    let mut websocket = false;
    let mut name = format!("client-{}", std::process::id());
    let mut command = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--addr" => addr = args.next().ok_or("--addr needs HOST:PORT")?,
            "--websocket" => websocket = true,
            "--name" => name = args.next().ok_or("--name needs a name")?,
            _ => command.push(arg),
        }
    }

    let builder = Connection::builder().serve(WatcherServer::new(Me { name }));
    let conn = if websocket {
        #[cfg(feature = "websocket")]
        {
            builder.connect_websocket(format!("ws://{addr}/")).await?
        }
        #[cfg(not(feature = "websocket"))]
        return Err("--websocket needs the `websocket` feature: cargo run --example tcp_client --features websocket -- --websocket".into());
    } else {
        builder.connect_tcp(&addr).await?
    };
    let store = StoreClient::new(conn.handle());

    if !command.is_empty() {
        if run(&store, &command).await? {
            conn.close().await;
            return Ok(());
        }
        // `watch`: print pushes until the server goes away or Ctrl-C.
        tokio::select! {
            reason = conn.closed() => eprintln!("connection closed: {reason}"),
            _ = tokio::signal::ctrl_c() => {}
        }
        return Ok(());
    }

    eprintln!("connected to {addr}; commands: set KEY VALUE | get KEY | del KEY | list | who (Ctrl-D to quit)");
    let mut lines = BufReader::new(tokio::io::stdin()).lines();
    loop {
        tokio::select! {
            line = lines.next_line() => match line? {
                Some(line) => {
                    let words: Vec<String> = line.split_whitespace().map(str::to_owned).collect();
                    if let Err(e) = run(&store, &words).await {
                        eprintln!("{e}");
                    }
                }
                None => break,
            },
            reason = conn.closed() => {
                eprintln!("connection closed: {reason}");
                return Ok(());
            }
        }
    }
    conn.close().await;
    Ok(())
}
