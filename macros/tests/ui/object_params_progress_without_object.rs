// An object-params method carries its progress token inside the params object: it needs one.
use jsonrpc_duplex::Progress;

#[jsonrpc_duplex::rpc(params = "object")]
trait Service {
    async fn index(&self, progress: Progress<u32>) -> u32;
}

fn main() {}
