// The trait survives a mistake in one of its methods, so an implementation is still checked
// against it in the same build: here `ping` returns the wrong type.
use jsonrpc_duplex::rpc;

#[rpc]
trait Service {
    async fn ping(&self) -> u32;
    async fn add(&self, (a, b): (u32, u32)) -> u32;
}

struct Impl;

impl Service for Impl {
    async fn ping(&self) -> String {
        "pong".into()
    }
    async fn add(&self, (a, b): (u32, u32)) -> u32 {
        a + b
    }
}

fn main() {}
