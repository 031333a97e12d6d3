//! The `middleware_auth` example's layer over real sockets: a Unix peer is let in or refused by
//! its credentials, a TCP peer by its address, always before the handler runs; and the example
//! program itself, run as a user would.

use crate::support;

#[path = "../../examples/middleware_auth/auth.rs"]
mod auth_layer;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use jsonrpc_duplex::transport::Listener;
use jsonrpc_duplex::{Connection, ErrorObject, RequestContext, Router};

use auth_layer::{Allow, Identity};
use support::time::within;

fn my_uid() -> u32 {
    std::os::unix::fs::MetadataExt::uid(&std::fs::metadata("/proc/self").unwrap())
}

/// A server for one peer on `listener` with `allow`; `ran` counts handler runs.
fn serve_one<L: Listener>(mut listener: L, allow: Allow, ran: &Arc<AtomicUsize>) -> tokio::task::JoinHandle<()> {
    let ran = ran.clone();
    tokio::spawn(async move {
        let builder = Connection::builder().layer(allow).serve(Router::new().method(
            "whoami",
            move |(): (), ctx: RequestContext| {
                ran.fetch_add(1, Ordering::SeqCst);
                async move { Ok::<_, ErrorObject>(format!("{:?}", ctx.extensions().get::<Identity>())) }
            },
        ));
        let (conn, _) = listener.accept_connection(builder).await.unwrap();
        conn.closed().await;
    })
}

async fn whoami_unix(allow: Allow) -> (Result<String, jsonrpc_duplex::Error>, usize) {
    let path = support::host::socket_path(&format!("auth-{}", allow.uids.first().copied().unwrap_or(0)));
    let ran = Arc::new(AtomicUsize::new(0));
    let server = serve_one(tokio::net::UnixListener::bind(&path).unwrap(), allow, &ran);
    let client = Connection::builder().connect_unix(&path).await.unwrap();
    let answer = within(client.handle().request::<String>("whoami", ())).await;
    client.close().await;
    within(server).await.unwrap();
    (answer, ran.load(Ordering::SeqCst))
}

async fn whoami_tcp(allow: Allow) -> (Result<String, jsonrpc_duplex::Error>, usize) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let ran = Arc::new(AtomicUsize::new(0));
    let server = serve_one(listener, allow, &ran);
    let client = Connection::builder().connect_tcp(addr).await.unwrap();
    let answer = within(client.handle().request::<String>("whoami", ())).await;
    client.close().await;
    within(server).await.unwrap();
    (answer, ran.load(Ordering::SeqCst))
}

#[tokio::test]
async fn a_unix_peer_is_let_in_by_its_credentials_and_refused_otherwise() {
    let uid = my_uid();
    let (answer, ran) = whoami_unix(Allow { uids: vec![uid], loopback: false }).await;
    assert_eq!(answer.unwrap(), format!("Some(User({uid}))"));
    assert_eq!(ran, 1);
    let (answer, ran) = whoami_unix(Allow { uids: vec![uid.wrapping_add(1)], loopback: true }).await;
    let error = answer.unwrap_err();
    let error = error.as_remote().expect("refused by the server");
    assert_eq!(error.code, -32003);
    assert!(error.message.contains("may not call whoami"), "{}", error.message);
    assert_eq!(ran, 0, "the handler ran for a refused peer");
}

#[tokio::test]
async fn a_tcp_peer_is_let_in_or_refused_by_its_address() {
    let (answer, ran) = whoami_tcp(Allow { uids: vec![], loopback: true }).await;
    assert_eq!((answer.unwrap().as_str(), ran), ("Some(Loopback)", 1));
    let (answer, ran) = whoami_tcp(Allow { uids: vec![my_uid()], loopback: false }).await;
    let error = answer.unwrap_err();
    let error = error.as_remote().expect("refused by the server");
    assert_eq!(error.code, -32003);
    assert!(error.message.starts_with("127.0.0.1:"), "{}", error.message);
    assert_eq!(ran, 0, "the handler ran for a refused peer");
}

#[tokio::test]
async fn the_example_program_lets_the_unix_peer_in_and_refuses_the_tcp_one() {
    let binary = support::interop::example("middleware_auth");
    let run = tokio::process::Command::new(binary).kill_on_drop(true).output();
    let out = tokio::time::timeout(Duration::from_secs(60), run).await.expect("the example ends").unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}{}", String::from_utf8_lossy(&out.stderr));
    assert!(text.contains("unix: Ok(\"Some(User("), "{text}");
    assert!(text.contains("tcp: refused: the peer answered with an error: 127.0.0.1:"), "{text}");
}
