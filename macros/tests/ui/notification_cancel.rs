// Only requests can be cancelled.
#[jsonrpc_duplex::rpc]
trait Service {
    #[notification(name = "log")]
    async fn log(&self, line: String, cancel: jsonrpc_duplex::CancellationToken);
}

fn main() {}
