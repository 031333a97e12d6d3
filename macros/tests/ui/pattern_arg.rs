// Arguments name the params on the wire: no patterns.
#[jsonrpc_duplex::rpc]
trait Service {
    async fn add(&self, (a, b): (i64, i64)) -> i64;
}

fn main() {}
