// The macro cannot see through `Result<T>` aliases: the error type must be written out.
type Result<T> = std::result::Result<T, jsonrpc_duplex::RpcError>;

#[jsonrpc_duplex::rpc]
trait Service {
    async fn ping(&self) -> Result<String>;
}

fn main() {}
