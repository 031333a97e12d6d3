//! Reading the params of positional and named methods: the server accepts both an array and an
//! object for them (as StreamJsonRpc and jsonrpsee do), and each argument is decoded once,
//! straight from its raw JSON.

use std::collections::HashMap;

use jsonrpc_duplex_core::ErrorObject;
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;

/// The params of one request, split into arguments but not yet decoded.
#[derive(Debug)]
pub struct ParamsReader<'a> {
    names: &'static [&'static str],
    shape: Shape<'a>,
}

#[derive(Debug)]
enum Shape<'a> {
    Absent,
    Array(Vec<&'a RawValue>),
    Object(HashMap<String, &'a RawValue>),
}

impl<'a> ParamsReader<'a> {
    /// Split `params` for a method whose arguments are `names` (in order). An array longer than
    /// `names`, or params that are neither an array nor an object, are a `-32602`. Members of
    /// an object that name no argument are ignored.
    pub fn new(params: Option<&'a RawValue>, names: &'static [&'static str]) -> Result<Self, ErrorObject> {
        let shape = match params {
            None => Shape::Absent,
            Some(raw) => match raw.get().trim_start().as_bytes().first() {
                Some(b'[') => {
                    let items: Vec<&RawValue> = serde_json::from_str(raw.get()).map_err(ErrorObject::invalid_params)?;
                    if items.len() > names.len() {
                        return Err(ErrorObject::invalid_params(format_args!(
                            "expected at most {} params, got {}",
                            names.len(),
                            items.len()
                        )));
                    }
                    Shape::Array(items)
                }
                Some(b'{') => Shape::Object(serde_json::from_str(raw.get()).map_err(ErrorObject::invalid_params)?),
                _ => return Err(ErrorObject::invalid_params("params must be an array or an object")),
            },
        };
        Ok(ParamsReader { names, shape })
    }

    /// Decode argument `index`. A missing argument decodes as `null`, so an `Option` may be
    /// left out (at the end of an array, or anywhere in an object); any other is a `-32602`
    /// naming it.
    pub fn arg<T: DeserializeOwned>(&self, index: usize) -> Result<T, ErrorObject> {
        let name = self.names.get(index).copied().unwrap_or("?");
        let raw = match &self.shape {
            Shape::Absent => None,
            Shape::Array(items) => items.get(index).copied(),
            Shape::Object(members) => members.get(name).copied(),
        };
        match raw {
            Some(raw) => serde_json::from_str(raw.get())
                .map_err(|e| ErrorObject::invalid_params(format_args!("param `{name}`: {e}"))),
            None => serde_json::from_str("null")
                .map_err(|_| ErrorObject::invalid_params(format_args!("missing param `{name}`"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(s: &str) -> Box<RawValue> {
        RawValue::from_string(s.to_owned()).unwrap()
    }

    #[test]
    fn array_and_object_read_the_same_arguments() {
        for params in [r#"[1, "a"]"#, r#"{"s": "a", "n": 1, "extra": true}"#] {
            let params = raw(params);
            let reader = ParamsReader::new(Some(&params), &["n", "s"]).unwrap();
            assert_eq!(reader.arg::<i64>(0).unwrap(), 1);
            assert_eq!(reader.arg::<String>(1).unwrap(), "a");
        }
    }

    #[test]
    fn a_missing_option_is_none_and_a_missing_value_is_named() {
        let params = raw("[1]");
        let reader = ParamsReader::new(Some(&params), &["n", "s"]).unwrap();
        assert_eq!(reader.arg::<Option<String>>(1).unwrap(), None);
        let e = reader.arg::<String>(1).unwrap_err();
        assert_eq!(e.code, -32602);
        assert!(e.message.contains("missing param `s`"), "{}", e.message);
    }

    #[test]
    fn too_many_positional_params_and_scalars_are_refused() {
        let params = raw("[1, 2]");
        assert!(ParamsReader::new(Some(&params), &["n"]).is_err());
        let params = raw("5");
        assert!(ParamsReader::new(Some(&params), &["n"]).is_err());
    }
}
