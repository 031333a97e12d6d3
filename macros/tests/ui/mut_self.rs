// Requests run concurrently: no `&mut self`.
#[jsonrpc_duplex::rpc]
trait Service {
    async fn bump(&mut self) -> u32;
}

fn main() {}
