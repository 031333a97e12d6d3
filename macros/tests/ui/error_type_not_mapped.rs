// A method's error type must map to and from an error object; the error is at that type.
#[jsonrpc_duplex::rpc]
trait Service {
    async fn run(&self, command: String) -> Result<u32, String>;
}

fn main() {}
