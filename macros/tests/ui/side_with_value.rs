// `client` and `server` are bare flags.
#[jsonrpc_duplex::rpc(client = true)]
trait A {
    async fn ping(&self);
}

#[jsonrpc_duplex::rpc(server("yes"))]
trait B {
    async fn ping(&self);
}

fn main() {}
