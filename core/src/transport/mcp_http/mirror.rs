//! Revision 2026-07-28's mirrored headers, both sides: the values of `Mcp-Name` and
//! `Mcp-Param-{Name}` (plain, or `=?base64?…?=`), a tool's `x-mcp-header` annotations, and the
//! server's check of a `tools/call`'s `Mcp-Param-*` headers against its arguments.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use http::HeaderMap;
use serde_json::Value;

/// A tool argument mirrored into a header: `Mcp-Param-{name}`, and the chain of `properties`
/// keys leading to it in the arguments.
pub(super) type Mirrored = (String, Vec<String>);

/// The largest integer a mirrored argument may be (JavaScript's safe range).
const SAFE: i64 = (1 << 53) - 1;

/// A tool's `x-mcp-header` annotations, checked as revision 2026-07-28 says: a non-empty
/// header token, unique (case-insensitively), on an `integer`, `string` or `boolean`
/// property reached by `properties` keys alone. `Err` says why the tool is not usable.
pub(super) fn mirrored_params(schema: &Value) -> Result<Vec<Mirrored>, String> {
    fn reachable(schema: &Value, path: &mut Vec<String>, out: &mut Vec<(String, Vec<String>, Value)>) {
        let Some(properties) = schema.get("properties").and_then(Value::as_object) else { return };
        for (key, property) in properties {
            path.push(key.clone());
            if let Some(name) = property.get("x-mcp-header") {
                out.push((name.as_str().unwrap_or_default().to_owned(), path.clone(), property.clone()));
            }
            reachable(property, path, out);
            path.pop();
        }
    }
    fn annotations(value: &Value) -> usize {
        match value {
            Value::Object(map) => {
                map.iter().map(|(k, v)| usize::from(k == "x-mcp-header" && !v.is_object()) + annotations(v)).sum()
            }
            Value::Array(items) => items.iter().map(annotations).sum(),
            _ => 0,
        }
    }
    let mut found = Vec::new();
    reachable(schema, &mut Vec::new(), &mut found);
    if found.len() != annotations(schema) {
        return Err("an x-mcp-header is not on a property reached through `properties` alone".into());
    }
    let mut seen = std::collections::HashSet::new();
    let mut mirrored = Vec::new();
    for (name, path, property) in found {
        let token = |b: u8| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b);
        if name.is_empty() || !name.bytes().all(token) {
            return Err(format!("x-mcp-header {name:?} is not a header name token"));
        }
        if !seen.insert(name.to_ascii_lowercase()) {
            return Err(format!("x-mcp-header {name:?} is given twice"));
        }
        let kind = property.get("type").and_then(Value::as_str);
        if !matches!(kind, Some("integer" | "string" | "boolean")) {
            return Err(format!(
                "x-mcp-header {name:?} is on a property of type {kind:?} (integer, string or boolean only)"
            ));
        }
        mirrored.push((name, path));
    }
    Ok(mirrored)
}

/// The text a mirrored argument's header carries (before encoding): a string as it is, a
/// boolean `true`/`false`, an integer (also `42.0`) in JavaScript's safe range in decimal;
/// nothing for anything else (`null`, other numbers, arrays, objects: no header).
fn mirror_text(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) => match n.as_i64() {
            Some(i) if (-SAFE..=SAFE).contains(&i) => Some(i.to_string()),
            Some(_) => None,
            None => n.as_f64().filter(|f| f.fract() == 0.0 && f.abs() <= SAFE as f64).map(|f| (f as i64).to_string()),
        },
        _ => None,
    }
}

/// The value at a mirrored argument's path in the arguments.
fn argument<'a>(arguments: Option<&'a Value>, path: &[String]) -> Option<&'a Value> {
    path.iter().try_fold(arguments?, |v, key| v.get(key))
}

/// The `Mcp-Param-*` headers of a `tools/call`: each mirrored argument present and not `null`.
pub(super) fn param_headers(mirrored: &[Mirrored], arguments: Option<&Value>) -> Vec<(String, String)> {
    mirrored
        .iter()
        .filter_map(|(name, path)| {
            let text = mirror_text(argument(arguments, path)?)?;
            Some((format!("mcp-param-{}", name.to_ascii_lowercase()), text))
        })
        .collect()
}

/// A value for a mirrored header (`Mcp-Name`, `Mcp-Param-*`): as it is when it is plain
/// visible ASCII with no space at either end, else `=?base64?…?=` (so is a plain value that
/// looks like that).
pub(super) fn header_value_for(value: &str) -> String {
    let visible = value.bytes().all(|b| (0x20..0x7f).contains(&b));
    let padded = value.starts_with(' ') || value.ends_with(' ');
    let sentinel = value.starts_with("=?base64?") && value.ends_with("?=");
    let plain = visible && !padded && !sentinel;
    if plain { value.to_owned() } else { format!("=?base64?{}?=", super::base64::encode(value.as_bytes())) }
}

/// A mirrored header's value: plain visible ASCII (and spaces, tabs), or `=?base64?…?=` of
/// UTF-8; `None` for anything else (invalid characters, bad Base64, not UTF-8).
pub(super) fn decode_header_value(raw: &[u8]) -> Option<String> {
    if let Some(inner) = raw.strip_prefix(b"=?base64?").and_then(|r| r.strip_suffix(b"?=")) {
        return String::from_utf8(super::base64::decode(inner)?).ok();
    }
    raw.iter().all(|b| (0x20..0x7f).contains(b) || *b == b'\t').then(|| String::from_utf8_lossy(raw).into_owned())
}

/// Check a `tools/call`'s `Mcp-Param-*` headers against its arguments, for the tool's
/// mirrored arguments (2026-07-28's server validation): a value in the body needs its header,
/// decoded equal to it (integers compared as numbers); no value (absent, `null`) needs no
/// header, and one given anyway does not match. Headers of arguments not mirrored are not
/// looked at. `Err` says what does not match.
pub(super) fn check_params(
    mirrored: &[Mirrored],
    arguments: Option<&Value>,
    headers: &HeaderMap,
) -> Result<(), String> {
    for (name, path) in mirrored {
        let key = format!("mcp-param-{}", name.to_ascii_lowercase());
        let mut given = headers.get_all(key.as_str()).iter();
        let header = given.next();
        if given.next().is_some() {
            return Err(format!("Mcp-Param-{name} is given more than once"));
        }
        let body = argument(arguments, path);
        let expected = body.and_then(mirror_text);
        let at = path.join(".");
        match (header, expected) {
            (None, None) => {}
            (None, Some(_)) => return Err(format!("no Mcp-Param-{name} header, but the body has arguments.{at}")),
            (Some(_), None) => {
                return Err(format!(
                    "Mcp-Param-{name} is given, but the body has no value to mirror at arguments.{at}"
                ));
            }
            (Some(header), Some(expected)) => {
                let Some(text) = decode_header_value(header.as_bytes()) else {
                    return Err(format!("Mcp-Param-{name} is not a valid header value"));
                };
                let same = match body {
                    Some(Value::Number(n)) => text.parse::<f64>().ok().zip(n.as_f64()).is_some_and(|(h, b)| h == b),
                    _ => text == expected,
                };
                if !same {
                    return Err(format!(
                        "Mcp-Param-{name} header value {text:?} does not match body value {expected:?}"
                    ));
                }
            }
        }
    }
    Ok(())
}

/// Most tools whose annotations a server keeps (learnt or declared); past it a new tool's are
/// not kept (its headers are then not checked).
pub(super) const MAX_TOOLS: usize = 4096;

/// A server's knowledge of its tools' mirrored arguments, by tool name: from the `tools/list`
/// answers it sends and from [`McpHttpServer::declare_tools`](super::McpHttpServer::declare_tools).
#[derive(Default)]
pub(super) struct ToolHeaders(Mutex<HashMap<String, Arc<[Mirrored]>>>);

impl ToolHeaders {
    /// Learn the tools of a `tools/list` result (or its `tools` array): a tool with valid
    /// annotations has them kept (none: forgotten); one with invalid annotations is forgotten
    /// and named in the answer, with why.
    pub(super) fn learn(&self, tools: &Value) -> Vec<(String, String)> {
        let tools = tools.get("tools").unwrap_or(tools);
        let Some(tools) = tools.as_array() else { return Vec::new() };
        let mut map = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let mut invalid = Vec::new();
        for tool in tools {
            let Some(name) = tool.get("name").and_then(Value::as_str) else { continue };
            match mirrored_params(tool.get("inputSchema").unwrap_or(&Value::Null)) {
                Ok(mirrored) if mirrored.is_empty() => {
                    map.remove(name);
                }
                Ok(mirrored) => {
                    if map.len() < MAX_TOOLS || map.contains_key(name) {
                        map.insert(name.to_owned(), mirrored.into());
                    } else {
                        tracing::warn!(tool = %name, "MCP server: too many tools to keep their x-mcp-header annotations");
                    }
                }
                Err(why) => {
                    map.remove(name);
                    invalid.push((name.to_owned(), why));
                }
            }
        }
        invalid
    }

    /// The mirrored arguments of `tool`, if it has any we know of.
    pub(super) fn get(&self, tool: &str) -> Option<Arc<[Mirrored]>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).get(tool).cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (n, v) in pairs {
            map.append(http::HeaderName::from_bytes(n.as_bytes()).unwrap(), http::HeaderValue::from_str(v).unwrap());
        }
        map
    }

    #[test]
    fn the_server_check_follows_the_revisions_table() {
        let mirrored = vec![("Region".to_owned(), vec!["region".to_owned()]), ("Days".into(), vec!["days".into()])];
        let args = json!({"region": "us-west1", "days": 3});
        let ok = |h: &[(&str, &str)], a: &Value| check_params(&mirrored, Some(a), &headers(h));
        assert_eq!(ok(&[("mcp-param-region", "us-west1"), ("mcp-param-days", "3")], &args), Ok(()));
        assert_eq!(ok(&[("mcp-param-region", "us-west1"), ("mcp-param-days", "3.0")], &args), Ok(()), "numeric");
        assert!(ok(&[("mcp-param-days", "3")], &args).unwrap_err().contains("no Mcp-Param-Region"));
        assert!(ok(&[("mcp-param-region", "eu"), ("mcp-param-days", "3")], &args).unwrap_err().contains("\"eu\""));
        // null and absent: no header expected, and one given does not match.
        assert_eq!(ok(&[], &json!({"region": null})), Ok(()));
        assert!(ok(&[("mcp-param-days", "3")], &json!({})).unwrap_err().contains("no value"));
        let twice = [("mcp-param-region", "us-west1"), ("mcp-param-region", "us-west1"), ("mcp-param-days", "3")];
        assert!(ok(&twice, &args).unwrap_err().contains("more than once"));
        // Base64, decoded before comparing; a bad one is not a valid value.
        let hello = json!({"region": "Hello, 世界", "days": 1});
        assert_eq!(
            ok(&[("mcp-param-region", "=?base64?SGVsbG8sIOS4lueVjA==?="), ("mcp-param-days", "1")], &hello),
            Ok(())
        );
        assert!(ok(&[("mcp-param-region", "=?base64?SGVsbG8*?="), ("mcp-param-days", "1")], &hello).is_err());
    }

    #[test]
    fn what_the_client_mirrors_the_server_accepts() {
        let mirrored = vec![("A".to_owned(), vec!["a".to_owned()])];
        for value in [
            json!("plain"),
            json!(" padded "),
            json!("=?base64?x?="),
            json!("é\n"),
            json!(true),
            json!(-7),
            json!(42.0),
        ] {
            let args = json!({ "a": value });
            let sent: Vec<(String, String)> =
                param_headers(&mirrored, Some(&args)).into_iter().map(|(n, v)| (n, header_value_for(&v))).collect();
            assert_eq!(sent.len(), 1, "{value}");
            let pairs: Vec<(&str, &str)> = sent.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
            assert_eq!(check_params(&mirrored, Some(&args), &headers(&pairs)), Ok(()), "{value}");
        }
        // Not mirrorable: no header either way.
        for value in [json!(1.5), json!(1u64 << 60), json!([1]), json!(null)] {
            let args = json!({ "a": value });
            assert!(param_headers(&mirrored, Some(&args)).is_empty(), "{value}");
            assert_eq!(check_params(&mirrored, Some(&args), &HeaderMap::new()), Ok(()), "{value}");
        }
    }
}
