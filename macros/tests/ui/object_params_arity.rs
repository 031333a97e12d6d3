// An object-params method takes exactly one argument: the params object.
#[jsonrpc_duplex::rpc(params = "object")]
trait Service {
    async fn add(&self, a: i64, b: i64) -> i64;
}

fn main() {}
