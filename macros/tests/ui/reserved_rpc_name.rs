// `rpc.` names belong to JSON-RPC itself.
#[jsonrpc_duplex::rpc]
trait Service {
    #[method(name = "rpc.discover")]
    async fn discover(&self) -> String;
}

fn main() {}
