// A method is a request or a notification, not both.
#[jsonrpc_duplex::rpc]
trait Service {
    #[method]
    #[notification]
    async fn ping(&self);
}

fn main() {}
