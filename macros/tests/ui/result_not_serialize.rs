// A result type must be (de)serializable; the errors are at the result type.
struct Opaque;

#[jsonrpc_duplex::rpc]
trait Service {
    async fn run(&self) -> Result<Opaque, jsonrpc_duplex::RpcError>;
}

fn main() {}
