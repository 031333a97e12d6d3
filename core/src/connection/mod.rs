//! The connection: ids, pending calls, dispatch, cancellation and lifecycle over one stream.

mod cancel;
mod close;
mod config;
mod context;
#[cfg_attr(not(feature = "http"), allow(dead_code))]
mod direct;
mod dispatch;
mod drain;
mod error;
mod frames;
mod handle;
mod host;
mod in_flight;
mod lane;
mod layered;
mod lifecycle;
mod link;
mod messages;
mod outbound;
mod peer_info;
mod pending;
pub(crate) mod permits;
mod read_ahead;
mod reader;
pub mod seam;
mod settle;
pub(crate) mod shared;
pub(crate) mod trace;
mod unknown;
mod watchdog;
mod weak;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

pub use close::{ChildExit, CloseKind, CloseReason};
pub use config::{
    CancelProtocol, DEFAULT_EOF_GRACE, DEFAULT_FLUSH_TIMEOUT, DEFAULT_MAX_BATCH_LEN, DEFAULT_MAX_BUFFERED_INBOUND,
    DEFAULT_MAX_BUFFERED_INBOUND_BYTES, DEFAULT_MAX_CONCURRENT_REQUEST_BYTES, DEFAULT_MAX_CONCURRENT_REQUESTS,
    DEFAULT_MAX_OFFERED_STREAMS, DEFAULT_MAX_PENDING_CALLS, DEFAULT_MAX_TRACE_LEN, DEFAULT_OUTBOUND_BUFFER,
    DEFAULT_READ_AHEAD, DEFAULT_READ_AHEAD_BYTES, Direction, Limits, TraceContextPlacement, TraceRedactor,
};
#[cfg(feature = "http")]
pub(crate) use direct::{Direct, Served};
pub use error::Error;
pub(crate) use handle::EncodedCall;
pub use handle::{CallOptions, Handle};
pub(crate) use layered::{Layered, LayeredFuture, Watcher};
pub(crate) use peer_info::UNKNOWN as UNKNOWN_PEER;
pub use peer_info::{PeerAddr, PeerCredentials, PeerInfo};
pub use weak::WeakHandle;

pub(crate) use dispatch::HELD_OVERHEAD;
#[cfg_attr(not(feature = "websocket"), allow(unused_imports))]
pub(crate) use frames::InMessage;
pub(crate) use outbound::SharedRefused;
pub(crate) use reader::EofReason;
pub(crate) use seam::{Bound, Extension, Feature, Features, Link, Phase, Start, Take, registry};
pub(crate) use weak::UnboundCount;

use self::config::Config;
use self::dispatch::{Dispatcher, Lane};
use self::outbound::Outbound;
use self::reader::Reader;
use self::shared::Shared;
use crate::framing::Framing;
use crate::handler::{MethodClash, Router};

/// Configures and starts a [`Connection`].
///
/// A [`Profile`](crate::Profile) sets a protocol's wire conventions in one call (LSP, ACP, MCP, plain
/// JSON-RPC); single settings override its parts.
///
/// ```
/// use jsonrpc_duplex_core::{Connection, Profile, Router};
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let (a, _b) = tokio::io::duplex(64 * 1024);
/// let conn = Connection::builder()
///     .profile(Profile::acp())
///     .max_message_size(16 * 1024 * 1024)
///     .serve(Router::new())
///     .connect_io(a);
/// # drop(conn);
/// # }
/// ```
#[derive(Clone)]
#[must_use = "a builder does nothing until it is used"]
pub struct Builder {
    /// Shared, not copied, by every connection this builder (and its clones) starts: a
    /// `Server`'s connections hold one configuration between them (a setting changed on a
    /// clone copies it first).
    pub(crate) config: Arc<Config>,
    /// Who the peer is, as the transport told (`None`: it said nothing); per connection, so
    /// not in the shared configuration.
    pub(crate) peer: Option<Arc<PeerInfo>>,
    /// Settings given one by one, which a profile leaves alone.
    pub(crate) explicit: config::Explicit,
    /// The features that plug into each connection, with their settings.
    features: seam::Features,
    router: Router,
    /// Services built per connection, once its handle exists ([`Builder::serve_with`]).
    factories: Vec<ServiceFactory>,
}

/// Builds a connection's service from its handle.
type ServiceFactory = Arc<dyn Fn(Handle) -> Router + Send + Sync>;

impl std::fmt::Debug for Builder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Builder")
            .field("profile", &self.config.profile)
            .field("framing", &self.config.framing)
            .field("limits", &self.config.limits)
            .field("idle_timeout", &self.config.idle_timeout)
            .field("message_read_timeout", &self.config.message_read_timeout)
            .field("cancel", &self.config.cancel)
            .field("router", &self.router)
            .field("factories", &self.factories.len())
            .finish()
    }
}

impl Builder {
    /// A builder with these features and nothing else set (see [`seam`]); `Builder::default`
    /// is this with every feature of the crate.
    pub(crate) fn with_features(features: seam::Features) -> Self {
        Builder {
            config: Arc::new(Config::default()),
            peer: None,
            explicit: Default::default(),
            features,
            router: Router::default(),
            factories: Vec::new(),
        }
    }

    /// Plug `feature` into every connection this builder starts (in place of one of its type
    /// set before): its extension takes the requests and notifications it names before the
    /// router, and its state is [`Handle::extension`]. See [`seam`] for what a feature can do and
    /// a whole example.
    ///
    /// A route named like one of the feature's methods would never be called: the connection
    /// refuses it at connect (it closes at once with [`CloseKind::FatalError`] saying why),
    /// unless the extension says it passes some on ([`seam::Extension::shadows`]).
    pub fn feature(mut self, feature: impl seam::Feature) -> Self {
        self.features.put(feature);
        self
    }

    /// The settings of feature `F` (added with its defaults if missing).
    pub(crate) fn feature_mut<F: seam::Feature + Default>(&mut self) -> &mut F {
        self.features.get_mut::<F>()
    }

    /// A profile's framing and cancellation, except those set one by one (its features'
    /// conventions are theirs to apply).
    pub(crate) fn apply_profile(
        mut self,
        name: std::borrow::Cow<'static, str>,
        framing: Framing,
        cancel: CancelProtocol,
    ) -> Self {
        let explicit = self.explicit;
        self.config_mut().apply_profile(name, framing, cancel, explicit);
        self
    }

    /// Where the profile in force carries trace context.
    pub(crate) fn set_trace_context(mut self, placement: TraceContextPlacement) -> Self {
        self.config_mut().trace_context = placement;
        self
    }

    /// The framing on byte-stream transports ([`Framing::ContentLength`] by default; a
    /// [`Profile`](crate::Profile) sets it too, this overrides it).
    pub fn framing(mut self, framing: Framing) -> Self {
        self.config_mut().framing = framing;
        self.explicit.framing = true;
        self
    }

    /// All limits at once (see [`Limits`] for each default and what happens at it).
    pub fn limits(mut self, limits: Limits) -> Self {
        self.config_mut().limits = limits;
        self
    }

    /// The largest message accepted or sent, in bytes (64 MiB by default).
    pub fn max_message_size(mut self, bytes: usize) -> Self {
        self.config_mut().limits.frame.max_message_size = bytes;
        self
    }

    /// How many inbound request handlers may run at once (1024 by default).
    pub fn max_concurrent_requests(mut self, n: usize) -> Self {
        self.config_mut().limits.max_concurrent_requests = n.max(1);
        self
    }

    /// How request cancellation is spelled on the wire ([`CancelProtocol::lsp`] by default; a
    /// [`Profile`](crate::Profile) sets it too, this overrides it).
    pub fn cancel_protocol(mut self, cancel: CancelProtocol) -> Self {
        self.config_mut().cancel = cancel;
        self.explicit.cancel = true;
        self
    }

    /// A timeout for every outbound call that does not set its own (none by default).
    pub fn default_timeout(mut self, timeout: Duration) -> Self {
        self.config_mut().default_timeout = Some(timeout);
        self
    }

    /// After the peer's EOF, how long the handlers of requests already read may still run
    /// before their cancellation tokens fire ([`DEFAULT_EOF_GRACE`], 1 s, by default). What
    /// finishes in time is answered; what does not is cancelled and answered `-32800`.
    /// `Duration::ZERO` cancels them at once. See [`Connection`] for the whole sequence.
    pub fn eof_grace(mut self, grace: Duration) -> Self {
        self.config_mut().eof_grace = grace;
        self
    }

    /// When the connection ends, how long the peer may take to read what is still queued
    /// (the last answers) once the handlers are done or cancelled, before the write side is shut
    /// regardless ([`DEFAULT_FLUSH_TIMEOUT`], 2 s, by default). A peer that never reads its
    /// output cannot keep this side alive longer than this. See [`Connection`].
    pub fn flush_timeout(mut self, timeout: Duration) -> Self {
        self.config_mut().flush_timeout = timeout;
        self
    }

    /// Close the connection when the peer has sent nothing for `timeout` while nothing is in
    /// flight: no call of ours awaits its answer, no request of its is queued or running
    /// ([`CloseKind::LocallyClosed`], naming the timeout). Never sooner than `timeout` after
    /// the last message, and at most an eighth of it later: the timer runs in eighths of it,
    /// so that a pause in the peer's input costs no reading of the clock. Off (`None`) by
    /// default; a [`Server`](crate::server::Server)'s connections use
    /// [`ServerBuilder::idle_timeout`](crate::server::ServerBuilder::idle_timeout) instead.
    pub fn idle_timeout(mut self, timeout: impl Into<Option<Duration>>) -> Self {
        self.config_mut().idle_timeout = timeout.into();
        self
    }

    /// Close the connection when a message takes longer than `timeout` to arrive once its first
    /// bytes have ([`CloseKind::RemoteProtocolViolation`], naming the timeout): a peer that
    /// trickles bytes cannot hold the connection. Off (`None`) by default; a
    /// [`Server`](crate::server::Server)'s connections use
    /// [`ServerBuilder::message_read_timeout`](crate::server::ServerBuilder::message_read_timeout)
    /// instead. On a message transport that cannot tell (a channel of your own), only the idle
    /// timeout applies.
    pub fn message_read_timeout(mut self, timeout: impl Into<Option<Duration>>) -> Self {
        self.config_mut().message_read_timeout = timeout.into();
        self
    }

    /// Rewrite messages before they are logged at TRACE on [`WIRE_TARGET`](crate::WIRE_TARGET)
    /// (by default they are logged whole up to [`Limits::max_trace_len`] bytes).
    pub fn trace_redactor(mut self, redact: impl Fn(Direction, &str) -> String + Send + Sync + 'static) -> Self {
        self.config_mut().redactor = Some(Arc::new(redact));
        self
    }

    /// Serve a router (or a generated dispatcher). May be called several times to merge services.
    ///
    /// # Panics
    /// If two services register the same method name; [`Builder::try_serve`] returns the clash instead.
    pub fn serve(self, service: impl Into<Router>) -> Self {
        match self.try_serve(service) {
            Ok(b) => b,
            Err(clash) => panic!("{clash} (while adding a service to a connection)"),
        }
    }

    /// Serve a service built for this connection from its [`Handle`]: per-connection state that
    /// can call the peer back. The factory runs once per connection, when it starts, before any
    /// message is read (for a builder cloned for many connections, once for each). May be
    /// combined with [`Builder::serve`] and called several times; a method-name clash found
    /// when the connection starts closes it at once ([`CloseKind::FatalError`], naming the
    /// method).
    ///
    /// ```
    /// use jsonrpc_duplex_core::{Connection, ErrorObject, Handle, Router};
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let (a, b) = tokio::io::duplex(64 * 1024);
    /// let _server = Connection::builder()
    ///     .serve_with(|peer: Handle| {
    ///         // State of this connection only; `peer` calls this connection's client.
    ///         Router::new().method("who_are_you", move |(): (), _ctx| {
    ///             let peer = peer.clone();
    ///             // A failed call passes on what the peer answered (or -32800 / -32001).
    ///             async move { Ok::<_, ErrorObject>(peer.request::<String>("name", ()).await?) }
    ///         })
    ///     })
    ///     .connect_io(a);
    /// let client = Connection::builder()
    ///     .serve(Router::new().method("name", |(): (), _ctx| async { Ok::<_, ErrorObject>("client-1") }))
    ///     .connect_io(b);
    /// let name: String = client.handle().request("who_are_you", ()).await?;
    /// assert_eq!(name, "client-1");
    /// # Ok(()) }
    /// ```
    pub fn serve_with<F, S>(mut self, factory: F) -> Self
    where
        F: Fn(Handle) -> S + Send + Sync + 'static,
        S: Into<Router>,
    {
        self.factories.push(Arc::new(move |handle| factory(handle).into()));
        self
    }

    /// Install the middleware of every connection started from this builder
    /// (`crate::middleware` builds it; see [`Builder::layer`]).
    pub(crate) fn set_layered(mut self, layered: Arc<dyn Layered>) -> Self {
        let config = self.config_mut();
        config.watcher = layered.watcher().cloned();
        config.layered = Some(layered);
        self
    }

    /// The middleware installed so far.
    pub(crate) fn layered(&self) -> Option<&Arc<dyn Layered>> {
        self.config.layered.as_ref()
    }

    /// Who the peer is, for middleware ([`Call::peer`](crate::middleware::Call::peer)). The TCP
    /// and Unix transports set it themselves (address; path and credentials); a transport of
    /// your own (or a test) sets it here.
    pub fn peer_info(mut self, peer: PeerInfo) -> Self {
        self.peer = Some(Arc::new(peer));
        self
    }

    /// The configuration, to change it: copied first if another builder (or a connection)
    /// shares it.
    fn config_mut(&mut self) -> &mut Config {
        Arc::make_mut(&mut self.config)
    }

    /// The framing this builder is configured with.
    #[cfg_attr(not(any(feature = "tcp", feature = "unix")), allow(dead_code))]
    pub(crate) fn framing_setting(&self) -> Framing {
        self.config.framing
    }

    /// The framing limits this builder is configured with.
    #[cfg_attr(not(any(feature = "tcp", feature = "unix")), allow(dead_code))]
    pub(crate) fn frame_limits(&self) -> crate::framing::FrameLimits {
        self.config.limits.frame
    }

    /// Serve a router, reporting a method-name clash with what is already served.
    pub fn try_serve(mut self, service: impl Into<Router>) -> Result<Self, MethodClash> {
        self.router = std::mem::take(&mut self.router).try_merge(service.into())?;
        Ok(self)
    }

    /// Start over a reader and a writer (e.g. the two halves of a pipe or socket).
    ///
    /// Must be called inside a tokio runtime: the connection's tasks are spawned on it.
    pub fn connect<R, W>(self, reader: R, writer: W) -> Connection
    where
        R: AsyncRead + Send + Unpin + 'static,
        W: AsyncWrite + Send + Unpin + 'static,
    {
        self.start(reader, writer, None).0
    }

    /// Start over one bidirectional stream (split internally).
    ///
    /// A tokio `TcpStream` or `UnixStream` is split into its owned halves, which read and write
    /// without a lock between them; any other stream through `tokio::io::split`, which locks it
    /// for each read and each write. (`Builder::tcp` and `Builder::unix` split the same way, and
    /// also record the peer's address, linger at the end and, for TCP, set `TCP_NODELAY`.)
    pub fn connect_io<T>(self, io: T) -> Connection
    where
        T: AsyncRead + AsyncWrite + Send + 'static,
    {
        #[cfg(feature = "tcp")]
        let io = match crate::util::downcast::<tokio::net::TcpStream, T>(io) {
            Ok(stream) => {
                let (r, w) = stream.into_split();
                return self.connect(r, w);
            }
            Err(io) => io,
        };
        #[cfg(all(unix, feature = "unix"))]
        let io = match crate::util::downcast::<tokio::net::UnixStream, T>(io) {
            Ok(stream) => {
                let (r, w) = stream.into_split();
                return self.connect(r, w);
            }
            Err(io) => io,
        };
        let (r, w) = tokio::io::split(io);
        self.connect(r, w)
    }

    pub(crate) fn start<R, W>(self, reader: R, writer: W, eof_reason: Option<EofReason>) -> (Connection, Arc<Shared>)
    where
        R: AsyncRead + Send + Unpin + 'static,
        W: AsyncWrite + Send + Unpin + 'static,
    {
        let read_codec = self.config.framing.codec(self.config.limits.frame);
        let write_codec = self.config.framing.codec(self.config.limits.frame);
        let queue_codec = self.config.framing.codec(self.config.limits.frame);
        let frames = frames::ByteFrames::new(reader, read_codec);
        let pump: Box<dyn outbound::Pump> = Box::new(outbound::ByteWriter::new(writer, write_codec));
        self.start_with(frames, eof_reason, Some(queue_codec), move |_| pump)
    }

    /// Start over any stream of inbound frames and any writer: the byte-stream transports (a
    /// [`FrameCodec`](crate::framing::FrameCodec) on each side) and the message-oriented ones
    /// ([`Builder::connect_messages`], `codec` `None`) share everything else. `pump` makes the
    /// writer (it may need the connection's state).
    pub(crate) fn start_with(
        self,
        frames: impl frames::FrameSource,
        eof_reason: Option<EofReason>,
        codec: Option<crate::framing::FrameCodec>,
        pump: impl FnOnce(&Arc<Shared>) -> Box<dyn outbound::Pump>,
    ) -> (Connection, Arc<Shared>) {
        let (connection, shared, _) = self.start_driven(frames, eof_reason, codec, pump, false);
        (connection, shared)
    }

    /// [`Builder::start_with`], with the reader handed back instead of spawned when `driven`:
    /// the transport polls it from its own task (a message it hands over is then dispatched
    /// by that task, no hop to a reader task and back). It counts as one of the connection's
    /// tasks while it lives.
    pub(crate) fn start_driven(
        self,
        frames: impl frames::FrameSource,
        eof_reason: Option<EofReason>,
        codec: Option<crate::framing::FrameCodec>,
        pump: impl FnOnce(&Arc<Shared>) -> Box<dyn outbound::Pump>,
        driven: bool,
    ) -> (Connection, Arc<Shared>, Option<futures::future::BoxFuture<'static, ()>>) {
        let Builder { config, peer, explicit: _, features, mut router, factories } = self;
        let tracer = trace::Tracer::new(&config);
        // The connection's own cancellation goes first: no feature takes its name.
        let cancellation: Arc<dyn Extension> = Arc::new(cancel::Cancellation::new(&config.cancel));
        let unknown: Arc<dyn Extension> = Arc::new(unknown::UnknownNotifications::new(tracer.clone()));
        // The connection's own request permits, made only when no feature admits (below).
        let (max_requests, max_request_bytes) =
            (config.limits.max_concurrent_requests, config.limits.max_concurrent_request_bytes);
        // The features keep a weak handle of the connection they start in.
        let shared = Arc::new_cyclic(|me| {
            let me = WeakHandle::new(me.clone());
            let seam = seam::Seam::new([cancellation, unknown], &features, &config.limits, &tracer, &me);
            let outbound = Outbound::new(config.limits.outbound_buffer, tracer, codec);
            Shared::new(config, peer, outbound, seam)
        });
        // Before anything can be queued.
        shared.outbound.install(pump(&shared));
        let tracker = TaskTracker::new();
        // The writer task starts when it is first handed a turn, or when the connection ends:
        // an idle connection whose callers wrote everything themselves has none.
        let writer_of = Arc::downgrade(&shared);
        let runtime = tokio::runtime::Handle::current();
        let writer_tracker = tracker.clone();
        shared.outbound.set_writer_start(Box::new(move || {
            if let Some(shared) = writer_of.upgrade() {
                runtime.spawn(drain::run_writer(drain::Drain::new(shared, writer_tracker)));
            }
        }));
        let handle = Handle::new(shared.clone());
        for factory in factories {
            let made = factory(handle.clone());
            match std::mem::take(&mut router).try_merge(made) {
                Ok(merged) => router = merged,
                Err(clash) => {
                    shared.close(CloseReason::new(CloseKind::FatalError, format!("{clash} (in Builder::serve_with)")));
                    break;
                }
            }
        }
        // Asked before the routers are wrapped: an extension that admits may wrap its routes
        // knowing that it does (the server's drain gate counts there, not per handler future).
        // A feature's admission replaces the connection's own permits, which are then never
        // made (a server's connection keeps no second, unused set).
        let (admission, own) = match shared.seam.admission() {
            Some(admission) => (admission, None),
            None => {
                let own = Arc::new(permits::Permits::new(max_requests, max_request_bytes));
                let admission: Arc<dyn seam::Admission> = own.clone();
                (admission, Some(own))
            }
        };
        // The features' wrappers (the server's drain gate), inside the middleware: what the
        // gate refuses, the layers see.
        router = match shared.seam.router(router) {
            Ok(router) => router,
            Err(reason) => {
                shared.close(reason);
                Router::default()
            }
        };
        let mut hook = None;
        if let Some(layered) = &shared.config.layered {
            let peer = shared.peer.clone().unwrap_or_else(|| Arc::new(PeerInfo::new()));
            // A lone hook is run by the dispatcher around each request (see `Layered::watcher`).
            hook = shared.config.watcher.as_ref().map(|watcher| (watcher.clone(), peer.clone()));
            router = layered.wrap(router, peer, shared.config.trace_context);
        }
        if let Some(refused) = shadowed_route(&router, &shared) {
            tracing::error!(target: crate::LOG_TARGET, "{refused}");
            shared.close(CloseReason::new(CloseKind::FatalError, refused));
        }
        let dispatcher = Dispatcher { shared: shared.clone(), router, tracker: tracker.clone(), admission, own, hook };
        // The dispatcher task starts at the lane's first hand-off (see `Lane::offer`).
        let lane = Arc::new(Lane::new(dispatcher));
        let keeps_trace = shared.config.keeps_trace_members();
        let reader = Reader { shared: shared.clone(), lane, hold: Default::default(), keeps_trace };
        let reader = tracker.track_future(reader.run(frames, eof_reason));
        let reader = if driven {
            Some(Box::pin(reader) as futures::future::BoxFuture<'static, ()>)
        } else {
            // Tracked already: what `tracker.spawn` would do.
            tokio::spawn(reader);
            None
        };
        (Connection { handle, transport_done: None, detached: false }, shared, reader)
    }
}

/// A route the connection would never call, because it takes that method itself: why, and what
/// to do instead.
fn shadowed_route(router: &Router, shared: &Shared) -> Option<String> {
    let config = &shared.config;
    let profile = config.profile_name();
    let cancel = &config.cancel.method;
    if router.contains(cancel) {
        return Some(format!(
            "the route {cancel:?} would never be called: under the {profile} profile the connection handles \
             cancellation itself (a handler's `CancellationToken` fires, and the request is answered or dropped as \
             the protocol says); remove the route, or set another `CancelProtocol` if this method means something else"
        ));
    }
    let (method, why) = shared.seam.shadowing(|name| router.contains(name))?;
    Some(format!("the route {method:?} would never be called: {why}"))
}

/// One JSON-RPC connection: both sides may call, notify and answer.
///
/// The `Connection` owns the connection's life: dropping it (or [`Connection::close`]) ends it,
/// after flushing what was already queued; [`Connection::closed`] and
/// [`Connection::is_closed`] watch for the end. Calls, notifications, streams and progress go
/// through its [`Handle`] ([`Connection::handle`]): a cheap clone that other tasks, handlers
/// and generated clients keep, and that does not keep the connection open.
///
/// # How a connection ends
///
/// **The peer's EOF** (it closed its sending side between messages; a child process exited):
///
/// 1. Our calls still waiting for an answer fail at once with
///    [`Error::ConnectionLost`] ([`CloseKind::RemoteClosed`]); [`Connection::closed`] resolves.
/// 2. Requests and notifications already read are still dispatched, in order, and the requests
///    among them answered as their handlers finish (`printf '<request>' | server` gets its
///    answer).
/// 3. The **EOF grace** ([`Builder::eof_grace`], 1 s by default): handlers still running when it
///    is over see their cancellation tokens fire; they are dropped and their requests answered
///    `-32800`, as are requests not started yet (under every [`CancelProtocol`]: only a request
///    the peer itself cancelled may go unanswered). A peer that has stopped sending can no longer
///    cancel anything, so nothing runs on for it.
/// 4. The **flush**: what is queued (those last answers) is written, within the
///    **flush timeout** ([`Builder::flush_timeout`], 2 s by default): a peer that never reads
///    its input cannot keep this side alive.
/// 5. The write side is shut down (a pipe's peer sees EOF, a socket lingers until the peer has
///    read); [`Connection::close`] returns.
///
/// **A local close** ([`Connection::close`], [`Handle::close`], dropping the `Connection`):
/// pending calls fail, handlers are cancelled at once (step 3 without the grace), then steps 4
/// and 5. **A broken stream or a fatal protocol error**: the same, and what cannot be written
/// is dropped.
///
/// A process serving over [`Builder::stdio`] exits when `main` returns, whatever the peer does
/// with the pipes (see there). Over [`Builder::spawn_child`] the child's stdin is closed at
/// step 5, and [`Connection::close`] / [`Connection::closed`] also wait for the child to exit
/// (or be killed after [`ChildOptions::exit_grace`](crate::transport::ChildOptions)); the
/// reason then says which ([`CloseReason::child`]).
///
/// ```
/// use jsonrpc_duplex_core::{Connection, ErrorObject, Router};
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let (a, b) = tokio::io::duplex(64 * 1024);
/// let server = Connection::builder()
///     .serve(Router::new().method("greet", |(name,): (String,), _ctx| async move {
///         Ok::<_, ErrorObject>(format!("hello, {name}"))
///     }))
///     .connect_io(a);
/// let client = Connection::builder().connect_io(b);
/// let text: String = client.handle().request("greet", ["world"]).await?;
/// assert_eq!(text, "hello, world");
/// client.close().await;
/// let reason = server.closed().await;
/// assert_eq!(reason.kind, jsonrpc_duplex_core::CloseKind::RemoteClosed);
/// # Ok(()) }
/// ```
#[must_use = "dropping a Connection closes it"]
pub struct Connection {
    handle: Handle,
    /// Fires when the transport's own end is over (a child process has exited or been killed).
    transport_done: Option<CancellationToken>,
    /// Handed over to [`Connection::detach`]: dropping it closes nothing.
    detached: bool,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection").field("handle", &self.handle).finish()
    }
}

impl Connection {
    /// Configure a connection.
    pub fn builder() -> Builder {
        Builder::default()
    }

    /// A handle for calls, notifications, streams and progress (a clone: cheap, and it does not
    /// keep the connection open).
    #[must_use]
    pub fn handle(&self) -> Handle {
        self.handle.clone()
    }

    /// Resolves with the reason once the connection has ended (over a child process: once the
    /// child has exited or been killed too, the reason saying which, see [`CloseReason::child`]).
    pub fn closed(&self) -> impl Future<Output = CloseReason> + Send + 'static {
        let shared = self.handle.shared.clone();
        let transport_done = self.transport_done.clone();
        async move {
            let reason = shared.closed().await;
            match transport_done {
                Some(done) => {
                    done.cancelled().await;
                    shared.close_reason().unwrap_or(reason)
                }
                None => reason,
            }
        }
    }

    /// Whether the connection has ended (or is ending); [`Connection::closed`] says why.
    #[must_use]
    pub fn is_closed(&self) -> bool {
        self.handle.is_closed()
    }

    /// Close from this side and wait until queued messages are flushed and the write side is shut.
    ///
    /// If the connection has ended already (say the peer closed its side), this waits for the
    /// same flush: after the peer's EOF that includes the answers to requests already read.
    ///
    /// Over a child process this also waits for the child to exit (it sees EOF on its stdin), or
    /// to be killed once its grace period is over, so that it is reaped before this returns.
    pub async fn close(self) -> CloseReason {
        self.handle.close();
        // The writer is done and has dropped the stream (`Lifecycle::finish`).
        self.handle.shared.lifecycle.finished().cancelled().await;
        if let Some(transport_done) = &self.transport_done {
            transport_done.cancelled().await;
        }
        self.handle.shared.closed().await
    }

    /// Let the connection run on without this `Connection` (and without a task to hold it):
    /// it ends as any connection does (the peer's EOF, a broken stream, a timeout,
    /// [`Handle::close`]), not because this was dropped. `keep` is held until the connection
    /// has finished (its writer done, the write side shut) and dropped then, at once if it has
    /// already; its `Drop` is the connection's end for whoever detached it. The transport's own
    /// end ([`Connection::set_transport_done`]) is not waited for.
    ///
    /// `keep` must not hold the connection's [`Handle`] (it would keep the connection's state
    /// alive past its end).
    #[cfg_attr(not(any(feature = "tcp", feature = "unix", feature = "websocket")), allow(dead_code))]
    pub(crate) fn detach(mut self, keep: Box<dyn Send>) {
        self.detached = true;
        self.handle.shared.keep_until_finished(keep);
    }

    /// Make [`Connection::close`] also wait for the transport's own end.
    #[cfg_attr(not(feature = "process"), allow(dead_code))]
    pub(crate) fn set_transport_done(&mut self, token: CancellationToken) {
        self.transport_done = Some(token);
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        if self.detached {
            return;
        }
        self.handle.shared.close(CloseReason::new(CloseKind::LocallyClosed, "the Connection was dropped"));
    }
}
