// `#[derive(RpcErrorType)]`: every variant names its code and message; the error says how.
#[derive(serde::Serialize, serde::Deserialize, jsonrpc_duplex::RpcErrorType)]
enum FsError {
    #[rpc_error(code = -32010, message = "file not found")]
    NotFound { path: String },
    Denied,
    #[rpc_error(code = -32012)]
    Busy,
    #[rpc_error(code = -32013, message = "gone", status = 410)]
    Gone,
}

#[derive(serde::Serialize, serde::Deserialize, jsonrpc_duplex::RpcErrorType)]
struct NotAnEnum {
    message: String,
}

fn main() {}
