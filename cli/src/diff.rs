//! Where two JSON answers differ, member by member, ignoring the members a user names.

use serde_json::Value;

/// One place where the answers differ.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Difference {
    /// Where: `result.contents.value`, `error.code`, `result[2]`.
    pub(crate) path: String,
    /// What the trace has there (`None`: nothing).
    pub(crate) recorded: Option<String>,
    /// What the server answered now (`None`: nothing).
    pub(crate) replayed: Option<String>,
}

/// Members to leave out of the comparison: a bare name (`id`, `timestamp`) at any depth, or a
/// dotted path from the answer's top (`result.serverInfo.version`).
#[derive(Debug, Default, Clone)]
pub(crate) struct Ignored {
    names: Vec<String>,
}

impl Ignored {
    /// From `--ignore` values (each may be a comma-separated list).
    pub(crate) fn new<'a>(values: impl IntoIterator<Item = &'a String>) -> Self {
        let names = values
            .into_iter()
            .flat_map(|v| v.split(','))
            .map(str::trim)
            .filter(|n| !n.is_empty())
            .map(str::to_owned)
            .collect();
        Ignored { names }
    }

    fn skips(&self, path: &str, key: &str) -> bool {
        self.names.iter().any(|n| n == key || n == path)
    }
}

/// The differences between `recorded` and `replayed` under `path` (the top's name, say `result`).
pub(crate) fn differences(path: &str, recorded: &Value, replayed: &Value, ignored: &Ignored) -> Vec<Difference> {
    let mut out = Vec::new();
    walk(path, recorded, replayed, ignored, &mut out);
    out
}

fn walk(path: &str, recorded: &Value, replayed: &Value, ignored: &Ignored, out: &mut Vec<Difference>) {
    match (recorded, replayed) {
        (Value::Object(a), Value::Object(b)) => {
            let mut keys: Vec<&String> = a.keys().chain(b.keys().filter(|k| !a.contains_key(*k))).collect();
            keys.sort();
            for key in keys {
                let here = format!("{path}.{key}");
                if ignored.skips(&here, key) {
                    continue;
                }
                match (a.get(key), b.get(key)) {
                    (Some(x), Some(y)) => walk(&here, x, y, ignored, out),
                    (x, y) => out.push(Difference { path: here, recorded: x.map(short), replayed: y.map(short) }),
                }
            }
        }
        (Value::Array(a), Value::Array(b)) => {
            for i in 0..a.len().max(b.len()) {
                let here = format!("{path}[{i}]");
                match (a.get(i), b.get(i)) {
                    (Some(x), Some(y)) => walk(&here, x, y, ignored, out),
                    (x, y) => out.push(Difference { path: here, recorded: x.map(short), replayed: y.map(short) }),
                }
            }
        }
        (a, b) if a == b => {}
        (a, b) => out.push(Difference { path: path.to_owned(), recorded: Some(short(a)), replayed: Some(short(b)) }),
    }
}

/// A value as compact JSON, cut at 200 characters.
fn short(value: &Value) -> String {
    let text = value.to_string();
    if text.chars().count() > 200 { text.chars().take(199).collect::<String>() + "…" } else { text }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn differences_name_their_path_and_ignored_members_are_skipped() {
        let recorded = json!({"sessionId": "sess-1", "items": [1, 2, {"at": 5, "v": "a"}], "gone": true});
        let replayed = json!({"sessionId": "sess-9", "items": [1, 3, {"at": 6, "v": "a"}, 4], "new": null});
        let none = Ignored::default();
        let all: Vec<String> = differences("result", &recorded, &replayed, &none).into_iter().map(|d| d.path).collect();
        assert_eq!(
            all,
            [
                "result.gone",
                "result.items[1]",
                "result.items[2].at",
                "result.items[3]",
                "result.new",
                "result.sessionId"
            ]
        );
        let ignored = Ignored::new(&["sessionId,at".to_owned(), "result.gone".to_owned()]);
        let left = differences("result", &recorded, &replayed, &ignored);
        assert_eq!(
            left,
            [
                Difference { path: "result.items[1]".into(), recorded: Some("2".into()), replayed: Some("3".into()) },
                Difference { path: "result.items[3]".into(), recorded: None, replayed: Some("4".into()) },
                Difference { path: "result.new".into(), recorded: None, replayed: Some("null".into()) },
            ]
        );
        assert!(differences("result", &json!({"a": [1]}), &json!({"a": [1]}), &none).is_empty());
    }
}
