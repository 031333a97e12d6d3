// Argument-level keys are checked too.
#[jsonrpc_duplex::rpc]
trait Service {
    async fn create(&self, #[param(rname = "type")] kind: String);
}

fn main() {}
