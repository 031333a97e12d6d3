// A stream return must name its item type and be `Send`; other `impl Trait` returns are refused.
#[allow(unused_imports)]
use futures::Stream;

#[jsonrpc_duplex::rpc]
trait Service {
    fn no_item(&self) -> impl Stream + Send;

    fn not_send(&self) -> impl Stream<Item = u32>;

    async fn not_a_stream(&self) -> impl Iterator<Item = u32> + Send;
}

fn main() {}
