//! [`jsonrpsee`](https://docs.rs/jsonrpsee) over its own transport, WebSocket on loopback TCP:
//! an `RpcModule` served by its `Server` (defaults but the connection limit), `WsClient` on the
//! other end. Its server drops notifications unless a middleware takes them, so `tick` is
//! counted by an RPC middleware's `notification` hook. E uses a subscription: it has no flow
//! control (a client that falls behind loses the subscription), so each client's subscription
//! buffer is raised to hold the whole stream.

use std::net::SocketAddr;
use std::sync::Arc;

use jsonrpsee::core::client::{ClientT, SubscriptionClientT};
use jsonrpsee::core::middleware::{Batch, Notification, Request, RpcServiceBuilder, RpcServiceT};
use jsonrpsee::core::{SubscriptionResult, rpc_params};
use jsonrpsee::server::{RpcModule, Server, ServerConfig, ServerHandle};
use jsonrpsee::types::ErrorObjectOwned;
use jsonrpsee_ws_client::{WsClient, WsClientBuilder};

use crate::harness::{Client, Contender, Tally};

/// Counts `tick` notifications, then hands every message on.
#[derive(Clone)]
struct TickCounter<S> {
    service: S,
    tally: Arc<Tally>,
}

impl<S: RpcServiceT + Send + Sync + Clone + 'static> RpcServiceT for TickCounter<S> {
    type MethodResponse = S::MethodResponse;
    type NotificationResponse = S::NotificationResponse;
    type BatchResponse = S::BatchResponse;

    fn call<'a>(&self, req: Request<'a>) -> impl Future<Output = Self::MethodResponse> + Send + 'a {
        self.service.call(req)
    }
    fn batch<'a>(&self, batch: Batch<'a>) -> impl Future<Output = Self::BatchResponse> + Send + 'a {
        self.service.batch(batch)
    }
    fn notification<'a>(&self, n: Notification<'a>) -> impl Future<Output = Self::NotificationResponse> + Send + 'a {
        if n.method_name() == "tick" {
            self.tally.hit();
        }
        self.service.notification(n)
    }
}

/// A jsonrpsee server on loopback and clients of it.
pub struct Jsonrpsee {
    url: String,
    items: usize,
    _server: ServerHandle,
}

impl Jsonrpsee {
    /// Start the server (inside the runtime); clients will buffer up to `stream_items` items.
    pub async fn new(tally: Arc<Tally>, stream_items: usize) -> Self {
        let mut module = RpcModule::new(());
        module
            .register_method("add", |p, _, _| {
                let (a, b): (i64, i64) = p.parse()?;
                Ok::<_, ErrorObjectOwned>(a + b)
            })
            .expect("register");
        module
            .register_method("echo", |p, _, _| {
                let (text,): (String,) = p.parse()?;
                Ok::<_, ErrorObjectOwned>(text)
            })
            .expect("register");
        module
            .register_subscription("numbers", "numbers_item", "numbers_unsub", |p, pending, _, _| async move {
                let (n,): (u64,) = p.parse()?;
                let sink = pending.accept().await?;
                for i in 0..n {
                    sink.send(serde_json::value::to_raw_value(&i)?).await?;
                }
                SubscriptionResult::Ok(())
            })
            .expect("register");
        let middleware =
            RpcServiceBuilder::new().layer_fn(move |service| TickCounter { service, tally: tally.clone() });
        let server = Server::builder()
            .set_config(ServerConfig::builder().max_connections(100_000).build())
            .set_rpc_middleware(middleware)
            .build("127.0.0.1:0".parse::<SocketAddr>().expect("addr"))
            .await
            .expect("bind");
        let addr = server.local_addr().expect("bound");
        Jsonrpsee { url: format!("ws://{addr}"), items: stream_items, _server: server.start(module) }
    }
}

/// A `WsClient`.
pub struct JsonrpseeClient(WsClient);

impl Client for JsonrpseeClient {
    async fn add(&self, a: i64, b: i64) -> i64 {
        self.0.request("add", rpc_params![a, b]).await.expect("add")
    }
    async fn echo(&self, text: &str) -> usize {
        self.0.request::<String, _>("echo", rpc_params![text]).await.expect("echo").len()
    }
    async fn tick(&self, seq: u64) {
        self.0.notification("tick", rpc_params![seq]).await.expect("tick")
    }
    const STREAMS: bool = true;
    async fn stream(&self, n: u64) -> u64 {
        let mut sub = self.0.subscribe::<u64, _>("numbers", rpc_params![n], "numbers_unsub").await.expect("subscribe");
        let mut count = 0;
        while count < n {
            match sub.next().await {
                Some(item) => {
                    assert_eq!(item.expect("an item"), count);
                    count += 1;
                }
                None => break,
            }
        }
        count
    }
}

impl Contender for Jsonrpsee {
    type Client = JsonrpseeClient;
    type Guard = ();

    async fn open(&self) -> (JsonrpseeClient, ()) {
        let client = WsClientBuilder::default()
            .max_buffer_capacity_per_subscription(self.items + 16)
            .build(&self.url)
            .await
            .expect("connect");
        (JsonrpseeClient(client), ())
    }
}
