// A notification has no answer to carry a value.
#[jsonrpc_duplex::rpc]
trait Service {
    #[notification(name = "log")]
    async fn log(&self, line: String) -> bool;
}

fn main() {}
