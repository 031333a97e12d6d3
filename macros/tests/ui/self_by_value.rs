// The server keeps the service, so a method cannot consume it.
#[jsonrpc_duplex::rpc]
trait Service {
    async fn shutdown(self);
}

fn main() {}
