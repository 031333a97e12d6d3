// Every mistake is reported in one build, each at its own tokens.
#[jsonrpc_duplex::rpc(namespac = "x")]
trait Service {
    fn not_async(&self);
    async fn by_value(self);
    #[method(name = "rpc.x")]
    async fn reserved(&self);
    #[notification(nme = "y")]
    async fn notify(&self) -> u32;
}

fn main() {}
