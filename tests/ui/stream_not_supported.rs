// Streaming methods are a later feature: say so rather than "must be async".
#[jsonrpc_duplex::rpc]
trait Service {
    fn search(&self, query: String) -> impl futures::Stream<Item = String> + Send;
}

fn main() {}
