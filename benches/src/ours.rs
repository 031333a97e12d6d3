//! jsonrpc-duplex itself, two ways: through `#[rpc]` (generated client and server) and through
//! the raw core API (`Handle::request`/`notify`/`request_stream` against a hand-built `Router`).

use std::sync::Arc;

use futures::{Stream, StreamExt};
use jsonrpc_duplex::server::{Server, ServerBuilder};
use jsonrpc_duplex::transport::PeerAddr;
use jsonrpc_duplex::{
    Builder, CallOptions, Connection, ErrorObject, Framing, Handle, Router, RpcError, StreamSettings, rpc,
};

use crate::harness::{Client, Contender, Io, Link, Tally};

/// The service measured through generated code.
#[rpc]
pub trait Bench {
    /// `a + b`.
    async fn add(&self, a: i64, b: i64) -> Result<i64, RpcError>;
    /// The same text back.
    async fn echo(&self, text: String) -> Result<String, RpcError>;
    /// Count one tick.
    #[notification]
    async fn tick(&self, seq: u64);
    /// `0..n`.
    fn numbers(&self, n: u64) -> impl Stream<Item = u64> + Send;
}

struct Service(Arc<Tally>);

impl Bench for Service {
    async fn add(&self, a: i64, b: i64) -> Result<i64, RpcError> {
        Ok(a + b)
    }
    async fn echo(&self, text: String) -> Result<String, RpcError> {
        Ok(text)
    }
    async fn tick(&self, _seq: u64) {
        self.0.hit()
    }
    fn numbers(&self, n: u64) -> impl Stream<Item = u64> + Send {
        futures::stream::iter(0..n)
    }
}

/// The same four methods on a hand-built core `Router`.
fn core_router(tally: Arc<Tally>) -> Router {
    Router::new()
        .method("add", |(a, b): (i64, i64), _| async move { Ok::<_, ErrorObject>(a + b) })
        .method("echo", |(text,): (String,), _| async move { Ok::<_, ErrorObject>(text) })
        .notification("tick", move |(_seq,): (u64,), _| {
            tally.hit();
            async {}
        })
        .request_raw("numbers", |req, reply| async move {
            match req.decode_params::<(u64,)>() {
                Ok((n,)) => reply.ok(req.peer().offer_stream(futures::stream::iter(0..n))),
                Err(e) => reply.err(e),
            };
        })
}

/// Which API the client and server are written against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Api {
    /// `#[rpc]`: `BenchClient` and `BenchServer`.
    Macro,
    /// `Handle` and `Router`.
    Core,
}

/// Where the pair talks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// A byte link, with a framing.
    Link(Link, Framing),
    /// WebSocket on loopback TCP (feature `websocket`): one shared server, a client per pair.
    WebSocket,
}

/// Streams are pulled in batches with read-ahead (StreamJsonRpc's defaults, one item per
/// `$/enumerator/next`, make E a round-trip benchmark instead).
pub fn stream_settings() -> StreamSettings {
    StreamSettings::new().min_batch_size(1000).max_read_ahead(4000)
}

/// Middleware on both ends of our pairs (the `compare` bench's layer rows).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layers {
    /// None: what every other row measures.
    None,
    /// `middleware::trace::TraceLayer` (a span per call, each side).
    Trace,
    /// `middleware::metrics::MetricsLayer` (counters and a histogram per call, each side).
    Metrics,
    /// A hook that keeps nothing and does nothing ([`NullHook`]): what running any hook costs,
    /// the layer's own work left out (`COMPARE_PROFILE_LAYERS=null`).
    Null,
}

/// A hook with no state, no scope and nothing to do.
pub struct NullHook;

impl jsonrpc_duplex::middleware::Hook for NullHook {
    type State = ();
    fn on_request(&self, _: &jsonrpc_duplex::middleware::CallInfo<'_>) {}
    fn on_response(&self, (): (), _: &jsonrpc_duplex::middleware::Outcome) {}
    const SCOPED: bool = false;
    const TOLD_BY_REF: bool = true;
}

impl Layers {
    fn apply(self, builder: Builder) -> Builder {
        let names = || jsonrpc_duplex::middleware::names::MethodNames::new(BenchServer::<Service>::METHODS);
        match self {
            Layers::None => builder,
            Layers::Trace => builder.layer(jsonrpc_duplex::middleware::trace::TraceLayer::new(names())),
            Layers::Metrics => builder.layer(jsonrpc_duplex::middleware::metrics::MetricsLayer::new(names())),
            Layers::Null => builder.layer(NullHook),
        }
    }
}

/// Which ends of a pair get the [`Layers`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LayerEnds {
    /// Both: a call passes the layer twice (the client's outbound, the server's inbound).
    Both,
    /// The server only (the common production setup: a server watching what it is asked).
    Server,
    /// The client only.
    Client,
}

/// Our contender.
pub struct Ours {
    api: Api,
    transport: Transport,
    tally: Arc<Tally>,
    layers: Layers,
    ends: LayerEnds,
    /// The WebSocket server and its URL.
    ws: Option<(Server, String)>,
}

impl Ours {
    /// A contender (inside the runtime: a WebSocket server starts listening).
    pub async fn new(api: Api, transport: Transport, tally: Arc<Tally>) -> Self {
        let mut ours = Ours { api, transport, tally, layers: Layers::None, ends: LayerEnds::Both, ws: None };
        if transport == Transport::WebSocket {
            let server = ServerBuilder::new(ours.server_builder())
                .max_connections(100_000)
                .bind_websocket("127.0.0.1:0")
                .await
                .expect("bind");
            let addr = server.local_addr().and_then(PeerAddr::socket_addr).expect("a TCP address");
            ours.ws = Some((server, format!("ws://{addr}/")));
        }
        ours
    }

    /// The same contender with middleware on both ends (over a link only).
    pub fn with_layers(mut self, layers: Layers) -> Self {
        self.layers = layers;
        self
    }

    /// The layers on only some ends (both by default).
    pub fn with_layer_ends(mut self, ends: LayerEnds) -> Self {
        self.ends = ends;
        self
    }

    fn layers_at(&self, end: LayerEnds) -> Layers {
        if self.ends == LayerEnds::Both || self.ends == end { self.layers } else { Layers::None }
    }

    fn server_builder(&self) -> Builder {
        let builder = self.layers_at(LayerEnds::Server).apply(Connection::builder().stream_settings(stream_settings()));
        let builder = match self.transport {
            Transport::Link(_, framing) => builder.framing(framing),
            Transport::WebSocket => builder,
        };
        match self.api {
            Api::Macro => builder.serve(BenchServer::new(Service(self.tally.clone()))),
            Api::Core => builder.serve(core_router(self.tally.clone())),
        }
    }
}

/// Our client end, either API.
pub enum OursClient {
    /// Generated.
    Macro(BenchClient, Connection),
    /// Raw.
    Core(Handle, Connection),
}

impl Client for OursClient {
    async fn add(&self, a: i64, b: i64) -> i64 {
        match self {
            OursClient::Macro(c, _) => c.add(a, b).await.expect("add"),
            OursClient::Core(h, _) => h.request("add", (a, b)).await.expect("add"),
        }
    }
    async fn echo(&self, text: &str) -> usize {
        match self {
            // The generated client takes its arguments by value: the copy is part of its cost.
            OursClient::Macro(c, _) => c.echo(text.to_owned()).await.expect("echo").len(),
            OursClient::Core(h, _) => h.request::<String>("echo", (text,)).await.expect("echo").len(),
        }
    }
    async fn tick(&self, seq: u64) {
        match self {
            OursClient::Macro(c, _) => c.tick(seq).await.expect("tick"),
            OursClient::Core(h, _) => h.notify("tick", (seq,)).await.expect("tick"),
        }
    }
    const STREAMS: bool = true;
    async fn stream(&self, n: u64) -> u64 {
        let mut count = 0;
        match self {
            OursClient::Macro(c, _) => {
                let mut items = c.numbers(n);
                while let Some(item) = items.next().await {
                    assert_eq!(item.expect("an item"), count);
                    count += 1;
                }
            }
            OursClient::Core(h, _) => {
                let mut items = h.request_stream::<u64>("numbers", (n,), CallOptions::new());
                while let Some(item) = items.next().await {
                    assert_eq!(item.expect("an item"), count);
                    count += 1;
                }
            }
        }
        count
    }
}

impl Contender for Ours {
    type Client = OursClient;
    /// The server end (None over WebSocket: the shared server holds it).
    type Guard = Option<Connection>;

    async fn open(&self) -> (OursClient, Option<Connection>) {
        match self.transport {
            Transport::Link(link, framing) => {
                let (a, b) = link.pair();
                let server = self.server_end(b);
                (self.client_end(a, framing), Some(server))
            }
            Transport::WebSocket => {
                let (_, url) = self.ws.as_ref().expect("a WebSocket server");
                let client = Connection::builder().connect_websocket(url.as_str()).await.expect("connect");
                (self.client_of(client), None)
            }
        }
    }
}

impl Ours {
    /// Our server end on `io` (over a link).
    fn server_end(&self, io: Io) -> Connection {
        connect_end(self.server_builder(), io)
    }

    /// Our client end on `io` (over a link), in `framing`.
    fn client_end(&self, io: Io, framing: Framing) -> OursClient {
        self.client_of(connect_end(self.layers_at(LayerEnds::Client).apply(Connection::builder()).framing(framing), io))
    }

    fn client_of(&self, client: Connection) -> OursClient {
        match self.api {
            Api::Macro => OursClient::Macro(BenchClient::new(client.handle()), client),
            Api::Core => OursClient::Core(client.handle(), client),
        }
    }
}

/// Which end of a [`Mixed`] pair is the hand-written loop's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoopEnd {
    /// The loop's client calls our server.
    Client,
    /// Our client calls the loop's server.
    Server,
}

/// One end ours, the other the hand-written loop's (`COMPARE_MIXED=1`): which end of a pair
/// a difference to the loop comes from. Both speak plain JSON-RPC 2.0 in the same framing, so
/// each talks to the other as to its own kind.
pub struct Mixed {
    ours: Ours,
    link: Link,
    framing: Framing,
    loop_end: LoopEnd,
    tally: Arc<Tally>,
}

impl Mixed {
    /// A mixed pair over `link` in `framing`, ours through `api`.
    pub async fn new(api: Api, link: Link, framing: Framing, loop_end: LoopEnd, tally: Arc<Tally>) -> Self {
        let ours = Ours::new(api, Transport::Link(link, framing), tally.clone()).await;
        Mixed { ours, link, framing, loop_end, tally }
    }
}

/// A [`Mixed`] pair's client end: the loop's or ours.
pub enum MixedClient {
    /// The loop's client (our server is the pair's guard).
    Loop(crate::handwritten::HwClient),
    /// Ours.
    Ours(OursClient),
}

impl Client for MixedClient {
    async fn add(&self, a: i64, b: i64) -> i64 {
        match self {
            MixedClient::Loop(c) => c.add(a, b).await,
            MixedClient::Ours(c) => c.add(a, b).await,
        }
    }
    async fn echo(&self, text: &str) -> usize {
        match self {
            MixedClient::Loop(c) => c.echo(text).await,
            MixedClient::Ours(c) => c.echo(text).await,
        }
    }
    async fn tick(&self, seq: u64) {
        match self {
            MixedClient::Loop(c) => c.tick(seq).await,
            MixedClient::Ours(c) => c.tick(seq).await,
        }
    }
}

/// A [`Mixed`] pair's server end: our connection, or the loop's server task.
pub enum MixedServer {
    /// Ours.
    Ours(Connection),
    /// The loop's (it ends when the client's end of the link closes).
    Loop(tokio::task::JoinHandle<()>),
}

impl Contender for Mixed {
    type Client = MixedClient;
    type Guard = MixedServer;

    async fn open(&self) -> (MixedClient, MixedServer) {
        let (a, b) = self.link.pair();
        match self.loop_end {
            LoopEnd::Client => {
                let server = self.ours.server_end(b);
                (MixedClient::Loop(crate::handwritten::HwClient::new(a, self.framing)), MixedServer::Ours(server))
            }
            LoopEnd::Server => {
                let server = tokio::spawn(crate::handwritten::serve(b, self.framing, self.tally.clone()));
                (MixedClient::Ours(self.ours.client_end(a, self.framing)), MixedServer::Loop(server))
            }
        }
    }
}

/// One end of a link, connected as a user connects it: the stream itself (not the harness's
/// enum around it), so that the connection knows it (it skips the flush of a stream that has
/// none to do).
fn connect_end(builder: jsonrpc_duplex::Builder, io: Io) -> Connection {
    match io {
        Io::Duplex(stream) => builder.connect_io(stream),
        Io::Unix(stream) => builder.connect_io(stream),
        Io::Tcp(stream) => builder.connect_io(stream),
    }
}
