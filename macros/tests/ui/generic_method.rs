// The wire carries concrete types.
#[jsonrpc_duplex::rpc]
trait Service {
    async fn echo<T: serde::Serialize>(&self, value: T) -> T;
}

fn main() {}
