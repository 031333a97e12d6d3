// A mistake in one method does not take the trait or the generated types away: code that
// implements the trait and uses its client and server sees the one real error, nothing more.
use jsonrpc_duplex::{Connection, rpc};

#[rpc]
trait Service {
    async fn ping(&self) -> u32;
    async fn add(&self, (a, b): (u32, u32)) -> u32;
}

struct Impl;

impl Service for Impl {
    async fn ping(&self) -> u32 {
        1
    }
    async fn add(&self, (a, b): (u32, u32)) -> u32 {
        a + b
    }
}

async fn use_it(conn: &Connection) -> u32 {
    let _server = Connection::builder().serve(ServiceServer::new(Impl));
    let client = ServiceClient::new(conn.handle());
    client.ping().await.unwrap_or(0)
}

fn main() {
    let _ = use_it;
}
