// `#[rpc(client)]` generates no server, `#[rpc(server)]` no client.
#[jsonrpc_duplex::rpc(client)]
pub trait Remote {
    async fn ping(&self);
}

#[jsonrpc_duplex::rpc(server)]
pub trait Local {
    async fn ping(&self);
}

struct Me;
impl Local for Me {
    async fn ping(&self) {}
}

fn main() {
    let _ = RemoteServer::new(Me);
    let _ = LocalClient::new;
}
