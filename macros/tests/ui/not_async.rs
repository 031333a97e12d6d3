// A method must be `async fn`.
#[jsonrpc_duplex::rpc]
trait Service {
    fn ping(&self) -> u32;
}

fn main() {}
