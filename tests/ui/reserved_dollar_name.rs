// `$/` names belong to the protocol (cancellation, progress), explicit or derived.
#[jsonrpc_duplex::rpc]
trait Service {
    #[notification(name = "$/cancelRequest")]
    async fn cancel(&self, id: u64);
}

#[jsonrpc_duplex::rpc(namespace = "$")]
trait Progress {
    #[notification]
    async fn progress(&self, token: String);
}

fn main() {}
