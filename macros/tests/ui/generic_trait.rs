// The trait cannot be generic either.
#[jsonrpc_duplex::rpc]
trait Service<T> {
    async fn echo(&self, value: String) -> String;
}

fn main() {}
