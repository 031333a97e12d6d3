// The attribute goes on a trait.
#[jsonrpc_duplex::rpc]
struct Service;

fn main() {}
