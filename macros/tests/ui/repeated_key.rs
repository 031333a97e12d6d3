// A key given twice is reported at the second one.
#[jsonrpc_duplex::rpc(params = "named", params = "object")]
trait Service {
    #[method(name = "a", name = "b")]
    async fn ping(&self) -> String;
}

fn main() {}
