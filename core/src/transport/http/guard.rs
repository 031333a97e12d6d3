//! The `Origin` and `Host` allow-lists: a defence against DNS rebinding, where a web page on
//! another site makes the browser send requests to a server on the user's machine.
//!
//! By default ([`AllowList::loopback`]) a request is served only if its `Host` (or HTTP/2
//! `:authority`) names the loopback interface (`localhost`, `127.0.0.1`, `[::1]`, any port) and
//! its `Origin`, when it has one, is an `http`/`https` origin on the loopback interface. A
//! request without `Origin` (any program that is not a browser) passes the origin check. A
//! server reachable under other names lists them ([`AllowList::allow_host`],
//! [`AllowList::allow_origin`]); one behind a reverse proxy that checks `Host` itself says so
//! with [`AllowList::any_host`]. A refused request gets `403 Forbidden` naming the header.

use http::request::Parts;
use http::{HeaderMap, StatusCode, header};

use super::Refusal;

/// Which `Host` and `Origin` values a server answers (see the [module docs](self)).
///
/// ```
/// use jsonrpc_duplex_core::transport::http::guard::AllowList;
///
/// let get = |host: &str, origin: Option<&str>| {
///     let mut request = http::Request::builder().uri("/").header("host", host);
///     if let Some(origin) = origin {
///         request = request.header("origin", origin);
///     }
///     request.body(()).unwrap().into_parts().0
/// };
/// let local = AllowList::loopback();
/// assert!(local.check(&get("127.0.0.1:8080", None)).is_ok());
/// assert!(local.check(&get("localhost:8080", Some("http://localhost:3000"))).is_ok());
/// assert!(local.check(&get("evil.example:8080", None)).is_err());
/// assert!(local.check(&get("localhost:8080", Some("https://evil.example"))).is_err());
///
/// // Behind a proxy that checks the host, serving one web app:
/// let public = AllowList::loopback().any_host().allow_origin("https://app.example.com");
/// assert!(public.check(&get("api.example.com", Some("https://app.example.com"))).is_ok());
/// assert!(public.check(&get("api.example.com", Some("https://evil.example"))).is_err());
/// ```
#[derive(Clone, Debug)]
pub struct AllowList {
    any_host: bool,
    any_origin: bool,
    /// Host names (lower case), each with a port or without (any port).
    hosts: Vec<String>,
    /// Origins (lower case, `scheme://host[:port]`).
    origins: Vec<String>,
}

impl Default for AllowList {
    fn default() -> Self {
        AllowList::loopback()
    }
}

/// The loopback names, as they appear in a `Host` header (without the port).
const LOOPBACK: [&str; 3] = ["localhost", "127.0.0.1", "[::1]"];

impl AllowList {
    /// Loopback only: the default.
    pub fn loopback() -> Self {
        AllowList { any_host: false, any_origin: false, hosts: Vec::new(), origins: Vec::new() }
    }

    /// Also answer requests for `host`: a name (`api.example.com`, any port) or a name and a
    /// port (`api.example.com:8443`), as the `Host` header spells it.
    pub fn allow_host(mut self, host: impl Into<String>) -> Self {
        self.hosts.push(host.into().to_ascii_lowercase());
        self
    }

    /// Answer requests for any `Host`: for a server behind a reverse proxy that checks it, or
    /// one that is meant to be reached under any name. (The origin check still applies.)
    pub fn any_host(mut self) -> Self {
        self.any_host = true;
        self
    }

    /// Also answer requests from web pages of `origin` (`https://app.example.com`, with the port
    /// if it is not the scheme's default).
    pub fn allow_origin(mut self, origin: impl Into<String>) -> Self {
        self.origins.push(origin.into().trim_end_matches('/').to_ascii_lowercase());
        self
    }

    /// Answer requests from web pages of any origin (a public API meant for browsers).
    pub fn any_origin(mut self) -> Self {
        self.any_origin = true;
        self
    }

    /// Check a request's headers: `Err` is the `403` to answer.
    pub fn check(&self, parts: &Parts) -> Result<(), Refusal> {
        self.check_host(parts)?;
        self.check_origin(&parts.headers)
    }

    fn check_host(&self, parts: &Parts) -> Result<(), Refusal> {
        if self.any_host {
            return Ok(());
        }
        let host = match parts.headers.get(header::HOST) {
            Some(value) => value.to_str().ok(),
            None => parts.uri.authority().map(|a| a.as_str()),
        };
        let Some(host) = host else {
            return Err(Refusal::new(StatusCode::FORBIDDEN, "the request names no host (no Host header)"));
        };
        // Compared without case and without a lowered copy (the listed names are lowered
        // already): this runs for every request.
        let (name, _port) = split_port(host);
        let listed = LOOPBACK.iter().any(|l| l.eq_ignore_ascii_case(name))
            || self.hosts.iter().any(|h| h.eq_ignore_ascii_case(host) || h.eq_ignore_ascii_case(name));
        if listed {
            Ok(())
        } else {
            let host = host.to_ascii_lowercase();
            Err(Refusal::new(
                StatusCode::FORBIDDEN,
                format!("the host {host:?} is not allowed (only loopback names and the server's allow-list are)"),
            ))
        }
    }

    fn check_origin(&self, headers: &HeaderMap) -> Result<(), Refusal> {
        let Some(origin) = headers.get(header::ORIGIN) else {
            return Ok(());
        };
        if self.any_origin {
            return Ok(());
        }
        let origin = origin.to_str().unwrap_or("").to_ascii_lowercase();
        let loopback = ["http://", "https://"].iter().any(|scheme| {
            origin.strip_prefix(scheme).is_some_and(|authority| LOOPBACK.contains(&split_port(authority).0))
        });
        if loopback || self.origins.contains(&origin) {
            Ok(())
        } else {
            Err(Refusal::new(
                StatusCode::FORBIDDEN,
                format!("the origin {origin:?} is not allowed (only loopback origins and the server's allow-list are)"),
            ))
        }
    }
}

/// `host:port` → (`host`, `Some(port)`); `[::1]:80` → (`[::1]`, `Some("80")`).
fn split_port(authority: &str) -> (&str, Option<&str>) {
    if authority.starts_with('[') {
        return match authority.find(']') {
            Some(end) => {
                let port = authority[end + 1..].strip_prefix(':');
                (&authority[..=end], port)
            }
            None => (authority, None),
        };
    }
    match authority.rsplit_once(':') {
        Some((name, port)) => (name, Some(port)),
        None => (authority, None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_are_split_from_names() {
        assert_eq!(split_port("[::1]:8080"), ("[::1]", Some("8080")));
        assert_eq!(split_port("[::1]"), ("[::1]", None));
        assert_eq!(split_port("localhost"), ("localhost", None));
        assert_eq!(split_port("a.example:1"), ("a.example", Some("1")));
    }

    #[test]
    fn a_listed_host_with_a_port_matches_that_port_only() {
        let list = AllowList::loopback().allow_host("api.example:8443");
        let parts = |host: &str| http::Request::builder().header("host", host).body(()).unwrap().into_parts().0;
        assert!(list.check(&parts("api.example:8443")).is_ok());
        assert!(list.check(&parts("API.example:8443")).is_ok());
        assert!(list.check(&parts("api.example:9000")).is_err());
        assert!(list.check(&parts("localhost.evil.example")).is_err());
    }

    #[test]
    fn a_null_or_lookalike_origin_is_refused() {
        let list = AllowList::loopback();
        for origin in ["null", "http://localhost.evil.example", "file://", "http://127.0.0.1.evil:80"] {
            let parts = http::Request::builder().header("host", "localhost").header("origin", origin).body(()).unwrap();
            assert!(list.check(&parts.into_parts().0).is_err(), "{origin}");
        }
    }
}
