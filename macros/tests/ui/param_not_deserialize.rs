// A param type must be (de)serializable; the error is at the argument's type.
struct Opaque;

#[jsonrpc_duplex::rpc]
trait Service {
    async fn run(&self, value: Opaque) -> u32;
}

fn main() {}
