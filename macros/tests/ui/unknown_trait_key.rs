// Trait-level keys are checked too.
#[jsonrpc_duplex::rpc(namespce = "fs")]
trait Service {
    async fn ping(&self) -> String;
}

fn main() {}
