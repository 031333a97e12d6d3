// `#[context]` takes only what the connection can give; the error is at the argument's type.
#[jsonrpc_duplex::rpc]
trait Service {
    async fn run(&self, #[context] config: String) -> u32;
}

fn main() {}
