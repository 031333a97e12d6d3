// The server decodes owned values.
#[jsonrpc_duplex::rpc]
trait Service {
    async fn open(&self, path: &str) -> bool;
}

fn main() {}
