// An associated function without `self` has no service to run on.
#[jsonrpc_duplex::rpc]
trait Service {
    async fn version() -> String;
}

fn main() {}
