// A misspelt key is reported at the key, with the keys that exist.
#[jsonrpc_duplex::rpc]
trait Service {
    #[method(nmae = "ping")]
    async fn ping(&self) -> String;
}

fn main() {}
