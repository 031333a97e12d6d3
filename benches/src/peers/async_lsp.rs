//! [`async-lsp`](https://docs.rs/async-lsp) on both ends: its `MainLoop` with a bare `Router`
//! (no middleware layers) as server and as client, custom request and notification types, over
//! the same link with Content-Length framing (the only one it speaks).

use std::ops::ControlFlow;
use std::sync::Arc;

use async_lsp::lsp_types::notification::Notification;
use async_lsp::lsp_types::request::Request;
use async_lsp::router::Router;
use async_lsp::{ClientSocket, MainLoop, ResponseError, ServerSocket};
use tokio::task::JoinHandle;
use tokio_util::compat::{TokioAsyncReadCompatExt, TokioAsyncWriteCompatExt};

use crate::harness::{Client, Contender, Io, Link, Tally};

/// `add [a, b]`.
pub enum Add {}
impl Request for Add {
    type Params = (i64, i64);
    type Result = i64;
    const METHOD: &'static str = "add";
}

/// `echo [text]`.
pub enum Echo {}
impl Request for Echo {
    type Params = (String,);
    type Result = String;
    const METHOD: &'static str = "echo";
}

/// `tick [seq]`.
pub enum Tick {}
impl Notification for Tick {
    type Params = (u64,);
    const METHOD: &'static str = "tick";
}

fn run(mainloop: MainLoop<Router<impl Send + 'static>>, io: Io) -> JoinHandle<()> {
    tokio::spawn(async move {
        let (r, w) = tokio::io::split(io);
        // Ends with an error when the peer goes away; that is how a pair closes here.
        let _ = mainloop.run_buffered(r.compat(), w.compat_write()).await;
    })
}

/// The client end: a `ServerSocket` and its main loop.
pub struct AsyncLspClient {
    server: ServerSocket,
    mainloop: JoinHandle<()>,
}

impl Drop for AsyncLspClient {
    fn drop(&mut self) {
        self.mainloop.abort();
    }
}

impl Client for AsyncLspClient {
    async fn add(&self, a: i64, b: i64) -> i64 {
        self.server.request::<Add>((a, b)).await.expect("add")
    }
    async fn echo(&self, text: &str) -> usize {
        // Its requests take their params by value.
        self.server.request::<Echo>((text.to_owned(),)).await.expect("echo").len()
    }
    async fn tick(&self, seq: u64) {
        self.server.notify::<Tick>((seq,)).expect("tick")
    }
}

/// async-lsp on both ends.
pub struct AsyncLsp {
    /// The transport (framing: Content-Length).
    pub link: Link,
    /// Where `tick`s are counted.
    pub tally: Arc<Tally>,
}

impl Contender for AsyncLsp {
    type Client = AsyncLspClient;
    type Guard = JoinHandle<()>;

    async fn open(&self) -> (AsyncLspClient, JoinHandle<()>) {
        let (a, b) = self.link.pair();
        let tally = self.tally.clone();
        let (server_loop, _) = MainLoop::new_server(move |client: ClientSocket| {
            // The state keeps a socket alive: the loop expects its event channel to stay open.
            let mut router = Router::new((tally, client));
            router
                .request::<Add, _>(|_, (a, b)| async move { Ok::<_, ResponseError>(a + b) })
                .request::<Echo, _>(|_, (text,)| async move { Ok::<_, ResponseError>(text) })
                .notification::<Tick>(|(tally, _), _| {
                    tally.hit();
                    ControlFlow::Continue(())
                });
            router
        });
        let server = run(server_loop, b);
        let (client_loop, socket) = MainLoop::new_client(|server: ServerSocket| Router::new(server));
        let mainloop = run(client_loop, a);
        (AsyncLspClient { server: socket, mainloop }, server)
    }
}
