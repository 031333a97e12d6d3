// MCP's cancellation is the connection's too (under `Profile::mcp()`), like `$/cancelRequest`
// and ACP's `$/cancel_request`: a trait cannot declare it.
#[jsonrpc_duplex::rpc]
trait Tools {
    #[notification(name = "notifications/cancelled")]
    async fn cancelled(&self, request_id: u64, reason: Option<String>);

    #[notification(name = "$/cancel_request")]
    async fn cancel_acp(&self, request_id: u64);

    // Other notifications under `notifications/` are the trait's.
    #[notification(name = "notifications/initialized")]
    async fn initialized(&self);
}

fn main() {}
