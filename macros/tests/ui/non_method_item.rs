// Associated types and consts have no wire form.
#[jsonrpc_duplex::rpc]
trait Service {
    type Output;
    const VERSION: u32;
    async fn ping(&self) -> String;
}

fn main() {}
