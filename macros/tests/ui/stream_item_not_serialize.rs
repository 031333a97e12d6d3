// A stream's items travel as JSON: the compiler says so at the item type.
use futures::Stream;

struct Opaque;

#[jsonrpc_duplex::rpc]
trait Service {
    fn items(&self) -> impl Stream<Item = Opaque> + Send;
}

fn main() {}
