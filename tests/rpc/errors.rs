//! Typed errors: a method's own error type round-trips through the error object; an object that
//! is not one of its errors is kept raw; every other failure of a call has its own variant.

use crate::support;

use std::time::Duration;

use jsonrpc_duplex::{
    CallOptions, CancellationToken, ClientError, CloseKind, Connection, Error, ErrorObject, Framing, RpcError,
    RpcErrorType, rpc,
};
use serde::{Deserialize, Serialize};
use support::raw_peer::pair;
use support::time::within;

/// The error of the file methods: each kind has its own code, and its fields travel as `data`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum FsError {
    /// No such file.
    NotFound {
        /// The path asked for.
        path: String,
    },
    /// Not allowed.
    Denied,
}

impl RpcErrorType for FsError {
    fn into_error_object(self) -> ErrorObject {
        let (code, message) = match self {
            FsError::NotFound { .. } => (-32002, "file not found"),
            FsError::Denied => (-32003, "permission denied"),
        };
        ErrorObject::new(code, message).with_data(&self)
    }
    fn from_error_object(error: ErrorObject) -> Result<Self, ErrorObject> {
        match (error.code, error.data_as::<FsError>()) {
            (-32002 | -32003, Some(Ok(e))) => Ok(e),
            _ => Err(error),
        }
    }
}

/// A request naming a path.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PathRequest {
    /// The path.
    pub path: String,
}

/// A value whose serialization fails.
#[derive(Debug)]
pub struct Faulty;

impl Serialize for Faulty {
    fn serialize<S: serde::Serializer>(&self, _: S) -> Result<S::Ok, S::Error> {
        Err(serde::ser::Error::custom("Faulty refuses to be serialized"))
    }
}

impl<'de> Deserialize<'de> for Faulty {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        serde::de::IgnoredAny::deserialize(d).map(|_| Faulty)
    }
}

/// Files, ACP style.
#[rpc(params = "object")]
pub trait Fs {
    /// A typed error.
    #[method(name = "fs/read_text_file")]
    async fn read_text_file(&self, request: PathRequest) -> Result<String, FsError>;

    /// The default error type.
    #[method(name = "fs/size")]
    async fn size(&self, request: PathRequest) -> Result<u64, RpcError>;

    /// Never answers.
    #[method(name = "fs/watch")]
    async fn watch(&self, request: PathRequest) -> String;

    /// Takes a param that cannot be serialized.
    #[method(name = "fs/store", params = "positional")]
    async fn store(&self, value: Faulty);
}

/// The files. `watches`, when set, hears `"started"` when a watch's handler starts and
/// `"dropped"` when it is dropped (it never answers by itself).
#[derive(Default)]
struct Disk {
    watches: Option<tokio::sync::mpsc::UnboundedSender<&'static str>>,
}

/// Sends `"dropped"` when a watch's handler is dropped.
struct WatchEnds(Option<tokio::sync::mpsc::UnboundedSender<&'static str>>);

impl Drop for WatchEnds {
    fn drop(&mut self) {
        if let Some(tx) = &self.0 {
            let _ = tx.send("dropped");
        }
    }
}

impl Fs for Disk {
    async fn read_text_file(&self, request: PathRequest) -> Result<String, FsError> {
        match request.path.as_str() {
            "/etc/shadow" => Err(FsError::Denied),
            "a.txt" => Ok("alpha".into()),
            other => Err(FsError::NotFound { path: other.into() }),
        }
    }
    async fn size(&self, request: PathRequest) -> Result<u64, RpcError> {
        let n: u64 = request.path.parse()?;
        Ok(n)
    }
    async fn watch(&self, _request: PathRequest) -> String {
        let _ends = WatchEnds(self.watches.clone());
        if let Some(tx) = &self.watches {
            let _ = tx.send("started");
        }
        std::future::pending().await
    }
    async fn store(&self, _value: Faulty) {}
}

fn path(p: &str) -> PathRequest {
    PathRequest { path: p.into() }
}

fn connected() -> (Connection, Connection, FsClient) {
    connected_to(Disk::default())
}

fn connected_to(disk: Disk) -> (Connection, Connection, FsClient) {
    let (server, client) = jsonrpc_duplex::transport::memory::pair(
        Connection::builder().serve(FsServer::new(disk)),
        Connection::builder(),
    );
    let fs = FsClient::new(client.handle());
    (server, client, fs)
}

#[tokio::test]
async fn a_typed_error_travels_as_code_message_and_data() {
    let (_conn, mut peer) = pair(Connection::builder().serve(FsServer::new(Disk::default())), Framing::ContentLength);
    let answer = peer.call(r#"{"jsonrpc":"2.0","id":1,"method":"fs/read_text_file","params":{"path":"b.txt"}}"#).await;
    assert_eq!(
        answer,
        r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32002,"message":"file not found","data":{"kind":"notFound","path":"b.txt"}}}"#
    );
}

#[tokio::test]
async fn a_typed_error_round_trips_into_the_clients_error_type() {
    let (_server, _client, fs) = connected();
    within(async {
        assert_eq!(fs.read_text_file(path("a.txt")).await.unwrap(), "alpha");
        match fs.read_text_file(path("b.txt")).await {
            Err(ClientError::Method(FsError::NotFound { path })) => assert_eq!(path, "b.txt"),
            other => panic!("expected NotFound, got {other:?}"),
        }
        let denied = fs.read_text_file(path("/etc/shadow")).await.unwrap_err();
        assert_eq!(denied.method_error(), Some(&FsError::Denied));
    })
    .await;
}

#[tokio::test]
async fn an_error_object_that_is_not_one_of_the_types_errors_is_kept_raw() {
    let (conn, mut peer) = pair(Connection::builder(), Framing::ContentLength);
    let fs = FsClient::new(conn.handle());
    let f = fs.clone();
    let call = tokio::spawn(async move { f.read_text_file(path("a.txt")).await });
    peer.recv_text().await;
    peer.send(r#"{"jsonrpc":"2.0","id":0,"error":{"code":-32601,"message":"Method not found","data":{"x":1}}}"#).await;
    match within(call).await.unwrap() {
        Err(ClientError::Call(Error::Remote(e))) => {
            assert_eq!(e.code, -32601);
            assert_eq!(e.message, "Method not found");
            assert_eq!(e.data.as_ref().map(|d| d.get()), Some(r#"{"x":1}"#));
        }
        other => panic!("expected a raw error object, got {other:?}"),
    }

    // The right code with data that does not decode is not an `FsError` either.
    let call = tokio::spawn(async move { fs.read_text_file(path("a.txt")).await });
    peer.recv_text().await;
    peer.send(r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32002,"message":"gone"}}"#).await;
    let e = within(call).await.unwrap().unwrap_err();
    assert_eq!(e.remote().map(|e| e.code), Some(-32002));
}

#[tokio::test]
async fn the_default_error_type_carries_any_error_as_a_server_error() {
    let (_server, _client, fs) = connected();
    within(async {
        assert_eq!(fs.size(path("12")).await.unwrap(), 12);
        match fs.size(path("twelve")).await {
            Err(ClientError::Method(e)) => {
                assert_eq!(e.code, jsonrpc_duplex::codes::SERVER_ERROR);
                assert_eq!(e.message, "invalid digit found in string");
            }
            other => panic!("expected a server error, got {other:?}"),
        }
    })
    .await;
}

#[tokio::test]
async fn a_lost_connection_says_why() {
    let (conn, mut peer) = pair(Connection::builder(), Framing::ContentLength);
    let fs = FsClient::new(conn.handle());
    let call = tokio::spawn(async move { fs.read_text_file(path("a.txt")).await });
    tokio::task::yield_now().await;
    peer.close_write().await;
    match within(call).await.unwrap() {
        Err(ClientError::Call(Error::ConnectionLost(reason))) => assert_eq!(reason.kind, CloseKind::RemoteClosed),
        other => panic!("expected ConnectionLost, got {other:?}"),
    }
}

#[tokio::test]
async fn a_timeout_from_the_options_fails_the_call_and_cancels_it_on_the_peer() {
    let (conn, peer) = pair(Connection::builder(), Framing::ContentLength);
    let fs = FsClient::new(conn.handle());
    let call = tokio::spawn(async move {
        fs.with_options(CallOptions::new().timeout(Duration::from_millis(50))).watch(path("a.txt")).await
    });
    assert_eq!(peer.recv_text().await, r#"{"jsonrpc":"2.0","id":0,"method":"fs/watch","params":{"path":"a.txt"}}"#);
    assert!(
        matches!(within(call).await.unwrap(), Err(ClientError::Call(Error::Timeout(t))) if t == Duration::from_millis(50))
    );
    assert_eq!(peer.recv_text().await, r#"{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":0}}"#);
}

#[tokio::test]
async fn a_cancellation_token_from_the_options_cancels_the_call() {
    let (tx, mut watches) = tokio::sync::mpsc::unbounded_channel();
    let (_server, _client, fs) = connected_to(Disk { watches: Some(tx) });
    let token = CancellationToken::new();
    let watching = fs.with_options(CallOptions::new().cancel(token.clone()));
    let call = tokio::spawn(async move { watching.watch(path("a.txt")).await });
    // The request reached the server and its handler runs: only then is the token cancelled.
    assert_eq!(within(watches.recv()).await, Some("started"));
    token.cancel();
    // The server's handler is dropped and the request answered -32800, which the client reports as `Cancelled`.
    assert!(matches!(within(call).await.unwrap(), Err(ClientError::Call(Error::Cancelled))));
    assert_eq!(within(watches.recv()).await, Some("dropped"));
    // Calls without the options are unaffected.
    within(fs.read_text_file(path("a.txt"))).await.unwrap();
}

#[tokio::test]
async fn a_result_that_does_not_decode_is_a_deserialize_error() {
    let (conn, mut peer) = pair(Connection::builder(), Framing::ContentLength);
    let fs = FsClient::new(conn.handle());
    let call = tokio::spawn(async move { fs.read_text_file(path("a.txt")).await });
    peer.recv_text().await;
    peer.send(r#"{"jsonrpc":"2.0","id":0,"result":42}"#).await;
    assert!(matches!(within(call).await.unwrap(), Err(ClientError::Call(Error::Deserialize(_)))));
}

#[tokio::test]
async fn params_that_do_not_serialize_are_a_serialize_error() {
    let (_server, _client, fs) = connected();
    let e = within(fs.store(Faulty)).await.unwrap_err();
    assert!(matches!(e, ClientError::Call(Error::Serialize(_))), "{e:?}");
    assert!(e.to_string().contains("Faulty refuses to be serialized"), "{e}");
}

#[tokio::test]
async fn a_message_over_the_size_limit_is_refused_before_sending() {
    let (conn, _peer) = pair(Connection::builder().max_message_size(64), Framing::ContentLength);
    let fs = FsClient::new(conn.handle());
    let e = within(fs.read_text_file(path(&"x".repeat(100)))).await.unwrap_err();
    assert!(matches!(e, ClientError::Call(Error::MessageTooLarge { limit: 64, .. })), "{e:?}");
}

#[test]
fn client_errors_are_std_errors_and_convert_into_the_default_error_type() {
    fn takes_std_error(_: &dyn std::error::Error) {}
    let e: ClientError<FsError> = ClientError::Call(Error::Remote(ErrorObject::method_not_found("x")));
    takes_std_error(&ClientError::<RpcError>::Call(Error::Cancelled));
    assert_eq!(e.remote().map(|o| o.code), Some(-32601));
    // A call that failed by itself becomes a code the caller can act on.
    let forwarded: RpcError = ClientError::<RpcError>::Call(Error::Cancelled).into();
    assert_eq!((forwarded.code, forwarded.message.as_str()), (-32800, "Request cancelled"));
    let forwarded: RpcError = ClientError::<RpcError>::Call(Error::Timeout(std::time::Duration::from_secs(1))).into();
    assert_eq!(forwarded.code, -32001);
    // The peer's own error object passes through unchanged.
    let peer = ErrorObject::new(-32050, "quota").with_data(serde_json::json!({"retryAfter": 3}));
    let forwarded: RpcError = ClientError::<RpcError>::Method(RpcError::from(peer.clone())).into();
    assert_eq!(forwarded.into_object(), peer);
    // An `ErrorObject` keeps its code when it becomes an `RpcError`.
    let kept: RpcError = ErrorObject::invalid_params("no").into();
    assert_eq!(kept.code, -32602);
}
