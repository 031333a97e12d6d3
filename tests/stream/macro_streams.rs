//! `#[rpc]` streaming methods, stream arguments and progress: every shape end to end over an
//! in-memory pair, and the exact frames a generated client and server exchange with a raw peer.

use crate::support;

use futures::{Stream, StreamExt};
use jsonrpc_duplex::{ClientError, Connection, Framing, Progress, RpcError, RpcStream, rpc, transport::memory};
use serde_json::json;
use support::raw_peer;

/// One progress report.
#[derive(serde::Serialize, serde::Deserialize, Debug, PartialEq)]
pub struct Step {
    /// Which step.
    pub step: u32,
}

/// Every streaming shape.
#[rpc(params = "named", rename_all = "camelCase")]
pub trait Numbers {
    /// 1..=n.
    fn count_to(&self, n: u64) -> impl Stream<Item = u64> + Send;
    /// The service's words (the stream borrows the service).
    fn words(&self) -> impl Stream<Item = String> + Send;
    /// Fails before streaming when `q` is empty.
    async fn search(&self, q: String) -> Result<impl Stream<Item = String> + Send, RpcError>;
    /// 1..=n, then an error.
    fn fail_after(&self, n: u64) -> impl Stream<Item = Result<u64, RpcError>> + Send;
    /// The sum of a stream the caller passes.
    async fn sum(&self, numbers: RpcStream<i64>) -> Result<i64, RpcError>;
    /// Reports each step, then answers the number of steps.
    async fn with_progress(&self, steps: u32, progress: Progress<Step>) -> u32;
}

struct Service {
    words: Vec<String>,
}

impl Numbers for Service {
    fn count_to(&self, n: u64) -> impl Stream<Item = u64> + Send {
        futures::stream::iter(1..=n)
    }
    fn words(&self) -> impl Stream<Item = String> + Send {
        futures::stream::iter(self.words.iter().cloned())
    }
    async fn search(&self, q: String) -> Result<impl Stream<Item = String> + Send, RpcError> {
        if q.is_empty() {
            return Err(RpcError::invalid_params("empty query"));
        }
        Ok(futures::stream::iter(self.words.iter().filter(move |w| w.contains(&q)).cloned().collect::<Vec<_>>()))
    }
    fn fail_after(&self, n: u64) -> impl Stream<Item = Result<u64, RpcError>> + Send {
        futures::stream::iter((1..=n).map(Ok).chain([Err(RpcError::new(-32050, "ran out"))]))
    }
    async fn sum(&self, mut numbers: RpcStream<i64>) -> Result<i64, RpcError> {
        let mut total = 0;
        while let Some(n) = numbers.next().await {
            total += n.map_err(RpcError::internal)?;
        }
        Ok(total)
    }
    async fn with_progress(&self, steps: u32, progress: Progress<Step>) -> u32 {
        for step in 1..=steps {
            progress.report(Step { step }).await.expect("report");
        }
        steps
    }
}

fn pair() -> (NumbersClient, Connection, Connection) {
    let words = ["apple", "banana", "cherry"].map(String::from).to_vec();
    let (client, server) =
        memory::pair(Connection::builder(), Connection::builder().serve(NumbersServer::new(Service { words })));
    (NumbersClient::new(client.handle()), client, server)
}

#[tokio::test]
async fn all_the_shapes() {
    let (c, _a, _b) = pair();
    let got: Vec<u64> = c.count_to(3).map(Result::unwrap).collect().await;
    assert_eq!(got, [1, 2, 3]);
    let got: Vec<String> = c.words().map(Result::unwrap).collect().await;
    assert_eq!(got, ["apple", "banana", "cherry"]);
    let got: Vec<String> = c.search("an".into()).map(Result::unwrap).collect().await;
    assert_eq!(got, ["banana"]);
    let got: Vec<_> = c.search(String::new()).collect().await;
    assert!(matches!(got.as_slice(), [Err(ClientError::Method(e))] if e.code == -32602), "{got:?}");
    let got: Vec<_> = c.fail_after(2).collect().await;
    assert!(matches!(got.as_slice(), [Ok(1), Ok(2), Err(ClientError::Method(e))] if e.code == -32050), "{got:?}");
    let total = c.sum(futures::stream::iter(vec![1, 2, 3, 4])).await.unwrap();
    assert_eq!(total, 10);
    let mut steps = Vec::new();
    let n = c.with_progress(3, |s| steps.push(s.step)).await.unwrap();
    assert_eq!((n, steps), (3, vec![1, 2, 3]));
}

#[tokio::test]
async fn the_generated_client_sends_tokens_where_streams_and_progress_go() {
    let (conn, mut peer) = raw_peer::pair(Connection::builder(), Framing::NewlineDelimited);
    let client = NumbersClient::new(conn.handle());

    // A streaming call: lazy, then the request, then `next`s echoing the token.
    let mut counted = client.count_to(2);
    peer.expect_silence(std::time::Duration::from_millis(50)).await;
    let first = tokio::spawn(async move { (counted.next().await, counted) });
    peer.expect(json!({"jsonrpc":"2.0","id":0,"method":"countTo","params":{"n":2}})).await;
    peer.send_json(json!({"jsonrpc":"2.0","id":0,"result":{"token":9,"values":[1]}})).await;
    let (first, counted) = support::time::within(first).await.unwrap();
    assert_eq!(first.unwrap().unwrap(), 1);
    drop(counted);
    peer.expect(json!({"jsonrpc":"2.0","method":"$/enumerator/abort","params":[9]})).await;

    // A stream argument: its enumerable object in the params; the peer pulls it.
    let sum = tokio::spawn({
        let client = client.clone();
        async move { client.sum(futures::stream::iter(vec![5, 6])).await }
    });
    peer.expect(json!({"jsonrpc":"2.0","id":1,"method":"sum","params":{"numbers":{"token":1}}})).await;
    peer.send_json(json!({"jsonrpc":"2.0","id":"n1","method":"$/enumerator/next","params":[1]})).await;
    peer.expect(json!({"jsonrpc":"2.0","id":"n1","result":{"values":[5],"finished":false}})).await;
    peer.send_json(json!({"jsonrpc":"2.0","id":1,"result":5})).await;
    assert_eq!(support::time::within(sum).await.unwrap().unwrap(), 5);

    // A progress argument: a token in its place; reports reach the callback before the answer.
    let work = tokio::spawn({
        let client = client.clone();
        async move {
            let mut steps = Vec::new();
            let n = client.with_progress(2, |s| steps.push(s.step)).await;
            (n, steps)
        }
    });
    peer.expect(json!({"jsonrpc":"2.0","id":2,"method":"withProgress","params":{"steps":2,"progress":0}})).await;
    peer.send_json(json!({"jsonrpc":"2.0","method":"$/progress","params":{"token":0,"value":{"step":1}}})).await;
    peer.send_json(json!({"jsonrpc":"2.0","method":"$/progress","params":[0,{"step":2}]})).await;
    peer.send_json(json!({"jsonrpc":"2.0","id":2,"result":2})).await;
    let (n, steps) = support::time::within(work).await.unwrap();
    assert_eq!((n.unwrap(), steps), (2, vec![1, 2]));
}

#[tokio::test]
async fn the_generated_server_answers_with_a_token_and_serves_next() {
    let words = vec!["a".to_owned(), "b".to_owned()];
    let builder = Connection::builder().serve(NumbersServer::new(Service { words }));
    let (_conn, mut peer) = raw_peer::pair(builder, Framing::NewlineDelimited);
    peer.send_json(json!({"jsonrpc":"2.0","id":1,"method":"words"})).await;
    peer.expect(json!({"jsonrpc":"2.0","id":1,"result":{"token":1}})).await;
    peer.send_json(json!({"jsonrpc":"2.0","id":2,"method":"$/enumerator/next","params":[1]})).await;
    peer.expect(json!({"jsonrpc":"2.0","id":2,"result":{"values":["a"],"finished":false}})).await;
    // A method that fails before it has a stream answers with its error.
    peer.send_json(json!({"jsonrpc":"2.0","id":3,"method":"search","params":{"q":""}})).await;
    let (id, code, message) = peer.recv_error().await;
    assert_eq!((id, code, message.as_str()), (json!(3), -32602, "Invalid params: empty query"));
    // The caller's progress token, reported on before the answer.
    peer.send_json(json!({"jsonrpc":"2.0","id":4,"method":"withProgress","params":{"steps":1,"progress":"p"}})).await;
    peer.expect(json!({"jsonrpc":"2.0","method":"$/progress","params":{"token":"p","value":{"step":1}}})).await;
    peer.expect(json!({"jsonrpc":"2.0","id":4,"result":1})).await;
    // A stream argument is pulled from the caller.
    peer.send_json(json!({"jsonrpc":"2.0","id":5,"method":"sum","params":[{"token":"s","values":[1,2]}]})).await;
    peer.expect(json!({"jsonrpc":"2.0","id":0,"method":"$/enumerator/next","params":["s"]})).await;
    peer.send_json(json!({"jsonrpc":"2.0","id":0,"result":{"values":[3],"finished":true}})).await;
    peer.expect(json!({"jsonrpc":"2.0","id":5,"result":6})).await;
}
