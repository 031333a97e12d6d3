// Values outside the vocabulary are reported with the ones that exist.
#[jsonrpc_duplex::rpc(rename_all = "camel", separator = "")]
trait Service {
    #[method(params = "array")]
    async fn ping(&self) -> String;
}

fn main() {}
