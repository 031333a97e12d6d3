//! Plain JSON-RPC over HTTP against an implementation we did not write: jsonrpsee 0.26's HTTP
//! client calling our server (`ServerBuilder::bind_http`), and our HTTP client
//! (`Builder::connect_http`) calling jsonrpsee's HTTP server. It lives in the benches crate,
//! where the peer crates are (never in the library's dependencies).

use std::net::SocketAddr;
use std::time::Duration;

use jsonrpc_duplex::server::Server;
use jsonrpc_duplex::transport::http::client::TRANSPORT_ERROR;
use jsonrpc_duplex::{Connection, ErrorObject, Router};
use jsonrpsee::core::client::{BatchResponse, ClientT};
use jsonrpsee::core::params::BatchRequestBuilder;
use jsonrpsee::rpc_params;
use jsonrpsee::server::{RpcModule, Server as JServer, ServerConfig};
use jsonrpsee::types::ErrorObjectOwned;
use jsonrpsee_http_client::HttpClientBuilder;
use tokio::sync::mpsc;

/// A bound for every wait: a hang fails the test in seconds.
const WAIT: Duration = Duration::from_secs(10);

async fn within<F: std::future::Future>(f: F) -> F::Output {
    tokio::time::timeout(WAIT, f).await.expect("timed out")
}

#[tokio::test]
async fn jsonrpsees_http_client_calls_our_server() {
    let (notes, mut noted) = mpsc::unbounded_channel::<String>();
    let router = Router::new()
        .method("add", |(a, b): (i64, i64), _| async move { Ok::<_, ErrorObject>(a + b) })
        .method("fail", |(): (), _| async move { Err::<(), _>(ErrorObject::new(-32042, "as asked")) })
        .notification("note", move |(text,): (String,), _| {
            let notes = notes.clone();
            async move {
                let _ = notes.send(text);
            }
        });
    let server = Server::builder().serve(router).bind_http("127.0.0.1:0").await.unwrap();
    let client = HttpClientBuilder::default().build(format!("http://{}", server.local_addr())).unwrap();

    let sum: i64 = within(client.request("add", rpc_params![40, 2])).await.unwrap();
    assert_eq!(sum, 42);

    let err = within(client.request::<(), _>("fail", rpc_params![])).await.unwrap_err();
    let jsonrpsee::core::ClientError::Call(object) = err else { panic!("{err:?}") };
    assert_eq!((object.code(), object.message()), (-32042, "as asked"));
    let err = within(client.request::<(), _>("nope", rpc_params![])).await.unwrap_err();
    assert!(matches!(&err, jsonrpsee::core::ClientError::Call(o) if o.code() == -32601), "{err:?}");

    within(client.notification("note", rpc_params!["from jsonrpsee"])).await.unwrap();
    assert_eq!(within(noted.recv()).await.as_deref(), Some("from jsonrpsee"));

    let mut batch = BatchRequestBuilder::new();
    for i in 0..10 {
        batch.insert("add", rpc_params![i, 100]).unwrap();
    }
    let answers: BatchResponse<i64> = within(client.batch_request(batch)).await.unwrap();
    assert_eq!(answers.num_successful_calls(), 10);
    let sums: Vec<i64> = answers.into_ok().unwrap().collect();
    assert_eq!(sums, (100..110).collect::<Vec<_>>());

    // Many at once, on its pool.
    let calls = (0..64).map(|i| client.request::<i64, _>("add", rpc_params![i, 1]));
    let sums = within(futures::future::join_all(calls)).await;
    assert_eq!(sums.into_iter().map(Result::unwrap).collect::<Vec<_>>(), (1..=64).collect::<Vec<_>>());
    server.shutdown(Duration::from_secs(1)).await;
}

async fn jsonrpsee_server() -> (SocketAddr, jsonrpsee::server::ServerHandle, mpsc::UnboundedReceiver<String>) {
    let (notes, noted) = mpsc::unbounded_channel::<String>();
    let mut module = RpcModule::new(notes);
    module
        .register_method("add", |p, _, _| {
            let (a, b): (i64, i64) = p.parse()?;
            Ok::<_, ErrorObjectOwned>(a + b)
        })
        .unwrap();
    module
        .register_method("fail", |_, _, _| Err::<(), _>(ErrorObjectOwned::owned(-32042, "as asked", Some("why"))))
        .unwrap();
    module
        .register_async_method("slow", |_, _, _| async move {
            tokio::time::sleep(Duration::from_secs(30)).await;
            Ok::<_, ErrorObjectOwned>(0)
        })
        .unwrap();
    // jsonrpsee answers a notification's POST with an empty 200 and runs nothing for it; a
    // method with an answer that says it ran is what the test can watch.
    module
        .register_method("note", |p, notes, _| {
            let (text,): (String,) = p.parse()?;
            let _ = notes.send(text);
            Ok::<_, ErrorObjectOwned>(())
        })
        .unwrap();
    let server =
        JServer::builder().set_config(ServerConfig::builder().http_only().build()).build("127.0.0.1:0").await.unwrap();
    let addr = server.local_addr().unwrap();
    (addr, server.start(module), noted)
}

#[tokio::test]
async fn our_http_client_calls_jsonrpsees_server() {
    let (addr, handle, mut noted) = jsonrpsee_server().await;
    let connection = Connection::builder().connect_http(&format!("http://{addr}")).unwrap();
    let peer = connection.handle();
    assert_eq!(within(peer.request::<i64>("add", (40, 2))).await.unwrap(), 42);

    let err = within(peer.request::<()>("fail", ())).await.unwrap_err();
    let object = err.as_remote().expect("its error object");
    assert_eq!((object.code, object.message.as_str()), (-32042, "as asked"));
    let err = within(peer.request::<()>("nope", ())).await.unwrap_err();
    assert_eq!(err.as_remote().map(|o| o.code), Some(-32601));

    assert_eq!(within(peer.request::<()>("note", ["from us"])).await.unwrap(), ());
    assert_eq!(within(noted.recv()).await.as_deref(), Some("from us"));

    let calls = (0..64).map(|i| peer.request::<i64>("add", (i, 1)));
    let sums = within(futures::future::join_all(calls)).await;
    assert_eq!(sums.into_iter().map(Result::unwrap).collect::<Vec<_>>(), (1..=64).collect::<Vec<_>>());

    // A call with a timeout abandons its POST on time.
    let started = std::time::Instant::now();
    let options = jsonrpc_duplex::CallOptions::new().timeout(Duration::from_millis(200));
    let err = within(peer.request_with::<i64>("slow", (), options)).await.unwrap_err();
    assert!(matches!(err, jsonrpc_duplex::Error::Timeout(_)), "{err:?}");
    assert!(started.elapsed() < Duration::from_secs(5));

    // jsonrpsee's own HTTP refusal (a body over its limit), as our client reports it.
    let big = "x".repeat(11 * 1024 * 1024);
    let err = within(peer.request::<()>("note", [big])).await.unwrap_err();
    let object = err.as_remote().expect("an error object");
    assert_eq!(object.code, TRANSPORT_ERROR, "{object:?}");
    assert!(object.message.contains("413"), "{}", object.message);

    handle.stop().unwrap();
    within(handle.stopped()).await;
}
