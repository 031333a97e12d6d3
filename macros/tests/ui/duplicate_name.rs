// Two methods may not share a wire name, whether written out or derived.
#[jsonrpc_duplex::rpc]
trait Service {
    #[method(name = "fs/read")]
    async fn read(&self, path: String) -> String;
    #[method(name = "fs/read")]
    async fn read_again(&self, path: String) -> String;
    #[method(name = "write")]
    async fn save(&self, path: String);
    async fn write(&self, path: String);
}

fn main() {}
