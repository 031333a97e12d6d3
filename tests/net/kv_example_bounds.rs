//! The `tcp_server` example bounds what a client can make it hold and push to everyone: a name
//! over 64 bytes is not taken (nor broadcast), a value over 64 KiB is refused, a message over
//! 1 MiB ends the connection. Run against the example binary, over TCP, by a raw-byte client.

use crate::support;

use std::process::Stdio;

use jsonrpc_duplex::Framing;
use serde_json::{Value, json};
use support::interop;
use support::raw_peer::RawPeer;
use support::time::within;
use tokio::io::{AsyncBufReadExt, BufReader};

/// Start the example on a free port; its address.
async fn start() -> (tokio::process::Child, String) {
    let mut child = tokio::process::Command::new(interop::example("tcp_server"))
        .args(["--addr", "127.0.0.1:0"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("the tcp_server example starts");
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let addr = within(async {
        while let Some(line) = lines.next_line().await.unwrap() {
            if let Some(addr) = line.strip_prefix("serving the key-value store on tcp ") {
                return addr.split_whitespace().next().unwrap().to_owned();
            }
        }
        panic!("the example ended without saying where it serves");
    })
    .await;
    // Keep draining its log so it never blocks on a full pipe.
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    (child, addr)
}

/// The next frame that answers request `id` (skipping the pushes).
async fn answer(peer: &RawPeer, id: u64) -> Value {
    loop {
        let message = peer.recv().await;
        if message["id"] == json!(id) && message.get("method").is_none() {
            return message;
        }
    }
}

#[tokio::test]
async fn the_example_server_bounds_names_values_and_messages() {
    let (_child, addr) = start().await;
    let socket = tokio::net::TcpStream::connect(&addr).await.unwrap();
    let (r, w) = socket.into_split();
    let mut peer = RawPeer::new(r, w, Framing::ContentLength);
    // The server asks our name: 100 KB of it is not taken.
    let ask = peer.recv().await;
    assert_eq!(ask["method"], "client/name", "{ask}");
    peer.send_json(json!({"jsonrpc":"2.0","id":ask["id"],"result":"n".repeat(100_000)})).await;
    peer.send_json(json!({"jsonrpc":"2.0","id":1,"method":"kv/who"})).await;
    let who = answer(&peer, 1).await;
    // Until the name is settled the list may be empty; ask again once the join was pushed.
    let names = if who["result"] == json!([]) {
        loop {
            let message = peer.recv().await;
            if message["method"] == "client/event" {
                break;
            }
        }
        peer.send_json(json!({"jsonrpc":"2.0","id":2,"method":"kv/who"})).await;
        answer(&peer, 2).await
    } else {
        who
    };
    let names = names["result"].as_array().unwrap_or_else(|| panic!("{names}")).clone();
    assert_eq!(names.len(), 1, "{names:?}");
    assert!(names[0].as_str().unwrap().starts_with("guest-"), "{names:?}");

    // A value over 64 KiB is refused, naming the limit; one within it is taken.
    peer.send_json(json!({"jsonrpc":"2.0","id":3,"method":"kv/set","params":{"key":"k","value":"v".repeat(100_000)}}))
        .await;
    let refused = answer(&peer, 3).await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    assert!(refused["error"]["message"].as_str().unwrap().contains("65536"), "{refused}");
    peer.send_json(json!({"jsonrpc":"2.0","id":4,"method":"kv/set","params":{"key":"k","value":"small"}})).await;
    assert_eq!(answer(&peer, 4).await["result"], Value::Null);

    // A message over 1 MiB ends the connection (refused before it is read).
    peer.send(format!(r#"{{"jsonrpc":"2.0","id":5,"method":"kv/get","params":{{"key":"{}"}}}}"#, "k".repeat(2 << 20)))
        .await;
    // Only pushes (its own leaving, say) may come before the end.
    within(async {
        while !(peer.saw_eof() && peer.buffered().is_empty()) {
            if peer.buffered().is_empty() {
                tokio::time::sleep(std::time::Duration::from_millis(5)).await;
                continue;
            }
            let message = peer.recv().await;
            assert_eq!(message["method"], "client/event", "{message}");
        }
    })
    .await;
}
