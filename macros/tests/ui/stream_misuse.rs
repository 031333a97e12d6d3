// Where streams and progress may not go.
#[allow(unused_imports)]
use futures::Stream;
#[allow(unused_imports)]
use jsonrpc_duplex::{Progress, RpcError, RpcStream};

#[derive(serde::Serialize, serde::Deserialize)]
struct Query {
    text: String,
}

#[jsonrpc_duplex::rpc]
trait Service {
    // Reports could not reach a caller that already has its answer (the stream's token).
    fn search(&self, query: String, progress: Progress<u32>) -> impl Stream<Item = String> + Send;

    async fn twice(&self, a: Progress<u32>, b: Progress<u32>);

    // The one argument of an "object" method is the params object itself.
    #[method(params = "object")]
    async fn upload(&self, chunks: RpcStream<Vec<u8>>);

    // The client's stream has one error type.
    async fn find(&self, query: Query) -> Result<impl Stream<Item = Result<String, RpcError>> + Send, std::io::Error>;
}

fn main() {}
