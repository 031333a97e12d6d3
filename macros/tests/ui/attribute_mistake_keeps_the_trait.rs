// Mistakes in the attributes do not take the trait or the generated types away either: the
// expansion goes on with the defaults, and each mistake is reported once, with nothing else.
use jsonrpc_duplex::{Connection, rpc};

#[rpc(namespac = "svc")]
trait Service {
    #[method(nmae = "ping")]
    async fn ping(&self) -> u32;
}

struct Impl;

impl Service for Impl {
    async fn ping(&self) -> u32 {
        1
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
