// An alias may not repeat another method's name.
#[jsonrpc_duplex::rpc]
trait Service {
    #[method(name = "fs/read")]
    async fn read(&self, path: String) -> String;
    #[method(name = "fs/read_file", aliases = ["fs/read"])]
    async fn read_file(&self, path: String) -> String;
}

fn main() {}
