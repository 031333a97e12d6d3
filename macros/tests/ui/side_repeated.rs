// A side given twice is a mistake (both sides: give neither, or both once).
#[jsonrpc_duplex::rpc(client, client)]
trait A {
    async fn ping(&self);
}

fn main() {}
