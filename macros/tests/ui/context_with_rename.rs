// A context argument is not on the wire, so it has no wire name.
#[jsonrpc_duplex::rpc]
trait Service {
    async fn wait(&self, #[param(rename = "token")] cancel: jsonrpc_duplex::CancellationToken);
}

fn main() {}
