// `$/` names the connection handles itself cannot be declared, explicit or derived; the error
// says what to write instead. (Other `$/` names, like LSP's `$/setTrace`, are allowed.)
#[jsonrpc_duplex::rpc]
trait Service {
    #[notification(name = "$/cancelRequest")]
    async fn cancel(&self, id: u64);

    #[notification(name = "$/setTrace")]
    async fn set_trace(&self, value: String);
}

#[jsonrpc_duplex::rpc(namespace = "$/enumerator")]
trait Streams {
    async fn next(&self, token: u64) -> Vec<u64>;
}

fn main() {}
