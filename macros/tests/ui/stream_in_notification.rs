// A notification has no answer: nothing would carry a returned stream, end an argument stream or
// end progress reports.
#[allow(unused_imports)]
use futures::Stream;
#[allow(unused_imports)]
use jsonrpc_duplex::{Progress, RpcStream};

#[jsonrpc_duplex::rpc]
trait Service {
    #[notification]
    fn watch(&self) -> impl Stream<Item = u32> + Send;

    #[notification]
    async fn upload(&self, chunks: RpcStream<Vec<u8>>);

    #[notification]
    async fn work(&self, progress: Progress<u32>);
}

fn main() {}
