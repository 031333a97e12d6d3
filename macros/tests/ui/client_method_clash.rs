// `new` would clash with the generated client's constructor.
#[jsonrpc_duplex::rpc]
trait Service {
    async fn new(&self, name: String) -> u64;
}

fn main() {}
