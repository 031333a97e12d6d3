//! How `call` answers the requests the server sends it meanwhile: `null`, `-32601`, or what a
//! file says per method.

use crate::error::CliError;
use std::collections::HashMap;

use jsonrpc_duplex_core::{ErrorObject, Router};
use serde::Deserialize;
use serde_json::value::RawValue;

/// One answer: a result or an error object, as in a JSON-RPC response.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Answer {
    /// The result (may be `null`).
    #[serde(default, deserialize_with = "present")]
    result: Option<Box<RawValue>>,
    /// The error object.
    #[serde(default)]
    error: Option<ErrorObject>,
}

fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Box<RawValue>>, D::Error> {
    Box::<RawValue>::deserialize(d).map(Some)
}

impl Answer {
    fn outcome(&self) -> Result<Box<RawValue>, ErrorObject> {
        match (&self.result, &self.error) {
            (_, Some(error)) => Err(error.clone()),
            (Some(result), None) => Ok(result.clone()),
            (None, None) => Ok(null()),
        }
    }
}

fn null() -> Box<RawValue> {
    RawValue::NULL.to_owned()
}

/// The rule.
#[derive(Clone, Debug)]
pub(crate) enum AnswerRule {
    /// Every request is answered `null`.
    Null,
    /// Every request is answered `-32601` (method not found).
    MethodNotFound,
    /// Per method, from a file; `"*"` for every other method; the rest get `-32601`.
    File(HashMap<String, Answer>),
}

impl AnswerRule {
    /// `null`, `error`, or a file of `{"method": {"result": …} | {"error": {"code": …, "message": …}}}`.
    pub(crate) fn parse(arg: &str) -> Result<AnswerRule, CliError> {
        match arg {
            "null" => Ok(AnswerRule::Null),
            "error" | "-32601" => Ok(AnswerRule::MethodNotFound),
            path => {
                let text = std::fs::read_to_string(path)
                    .map_err(|source| CliError::AnswerFile { path: path.to_owned(), source })?;
                let answers: HashMap<String, Answer> = serde_json::from_str(&text)
                    .map_err(|source| CliError::AnswerJson { path: path.to_owned(), source })?;
                Ok(AnswerRule::File(answers))
            }
        }
    }

    /// The answer to a request for `method`.
    pub(crate) fn answer(&self, method: &str) -> Result<Box<RawValue>, ErrorObject> {
        match self {
            AnswerRule::Null => Ok(null()),
            AnswerRule::MethodNotFound => Err(ErrorObject::method_not_found(method)),
            AnswerRule::File(answers) => match answers.get(method).or_else(|| answers.get("*")) {
                Some(answer) => answer.outcome(),
                None => Err(ErrorObject::method_not_found(method)),
            },
        }
    }

    /// A router that answers every request by this rule.
    pub(crate) fn router(self) -> Router {
        Router::new().fallback(move |request, reply| {
            let outcome = self.answer(request.method());
            async move {
                reply.respond(outcome);
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_answers_per_method_with_a_default() {
        let dir = std::env::temp_dir().join(format!("jrpc-answer-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("answers.json");
        std::fs::write(
            &path,
            r#"{"workspace/configuration": {"result": [{"tabSize": 4}]},
                "window/showMessageRequest": {"error": {"code": -32800, "message": "no"}},
                "*": {"result": null}}"#,
        )
        .unwrap();
        let rule = AnswerRule::parse(path.to_str().unwrap()).unwrap();
        assert_eq!(rule.answer("workspace/configuration").unwrap().get(), r#"[{"tabSize": 4}]"#);
        assert_eq!(rule.answer("window/showMessageRequest").unwrap_err().code, -32800);
        assert_eq!(rule.answer("anything/else").unwrap().get(), "null");
        std::fs::write(&path, r#"{"a": {"result": 1}}"#).unwrap();
        let rule = AnswerRule::parse(path.to_str().unwrap()).unwrap();
        assert_eq!(rule.answer("b").unwrap_err().code, -32601);
        std::fs::write(&path, r#"{"a": {"reslt": 1}}"#).unwrap();
        let wrong = AnswerRule::parse(path.to_str().unwrap()).unwrap_err();
        assert!(matches!(wrong, CliError::AnswerJson { .. }) && wrong.to_string().contains("reslt"), "{wrong}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_simple_rules() {
        assert_eq!(AnswerRule::parse("null").unwrap().answer("x").unwrap().get(), "null");
        assert_eq!(AnswerRule::parse("error").unwrap().answer("x").unwrap_err().code, -32601);
        let missing = AnswerRule::parse("/no/such/answers.json").unwrap_err();
        assert!(matches!(missing, CliError::AnswerFile { .. }), "{missing}");
        assert!(missing.to_string().contains("expected null, error or a JSON file"));
    }
}
