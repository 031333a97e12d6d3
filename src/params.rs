//! Reading the params of positional and named methods: the server accepts both an array and an
//! object for them (as StreamJsonRpc and jsonrpsee do), and each argument is decoded once,
//! straight from its raw JSON.

use std::fmt;

use jsonrpc_duplex_core::ErrorObject;
use serde::de::{self, DeserializeOwned, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;

/// Arguments kept without allocating for methods with up to this many.
const INLINE: usize = 8;

/// The params of one request, split into arguments but not yet decoded.
#[derive(Debug)]
pub struct ParamsReader<'a> {
    names: &'static [&'static str],
    args: Args<'a>,
}

/// Each argument's raw JSON by position (`None`: not given).
#[derive(Debug)]
enum Args<'a> {
    Inline([Option<&'a RawValue>; INLINE]),
    Heap(Vec<Option<&'a RawValue>>),
}

impl<'a> Args<'a> {
    fn new(n: usize) -> Self {
        if n <= INLINE { Args::Inline([None; INLINE]) } else { Args::Heap(vec![None; n]) }
    }

    fn slots(&mut self) -> &mut [Option<&'a RawValue>] {
        match self {
            Args::Inline(a) => a,
            Args::Heap(v) => v,
        }
    }

    fn get(&self, index: usize) -> Option<&'a RawValue> {
        match self {
            Args::Inline(a) => a.get(index).copied().flatten(),
            Args::Heap(v) => v.get(index).copied().flatten(),
        }
    }
}

/// Reads an array or an object of params into [`Args`] in one pass over the JSON.
struct Split {
    names: &'static [&'static str],
}

/// The arguments, and how many an array held (0 for an object).
type SplitArgs<'de> = (Args<'de>, usize);

impl<'de> DeserializeSeed<'de> for Split {
    type Value = SplitArgs<'de>;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<SplitArgs<'de>, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Split {
    type Value = SplitArgs<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("params as an array or an object")
    }

    fn visit_seq<S: SeqAccess<'de>>(self, mut seq: S) -> Result<SplitArgs<'de>, S::Error> {
        let mut args = Args::new(self.names.len());
        let mut n = 0;
        while let Some(raw) = seq.next_element::<&'de RawValue>()? {
            if let Some(slot) = args.slots().get_mut(n).filter(|_| n < self.names.len()) {
                *slot = Some(raw);
            }
            n += 1;
        }
        Ok((args, n))
    }

    fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<SplitArgs<'de>, M::Error> {
        let mut args = Args::new(self.names.len());
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            match self.names.iter().position(|name| *name == key) {
                // Members that name no argument are ignored; a repeated one, the last wins.
                Some(i) => args.slots()[i] = Some(map.next_value::<&'de RawValue>()?),
                None => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok((args, 0))
    }
}

impl<'a> ParamsReader<'a> {
    /// Split `params` for a method whose arguments are `names` (in order). An array longer than
    /// `names`, or params that are neither an array nor an object, are a `-32602`. Members of
    /// an object that name no argument are ignored.
    pub fn new(params: Option<&'a RawValue>, names: &'static [&'static str]) -> Result<Self, ErrorObject> {
        let args = match params {
            None => Args::new(0),
            Some(raw) => match raw.get().trim_start().as_bytes().first() {
                Some(b'[' | b'{') => {
                    let mut de = serde_json::Deserializer::from_str(raw.get());
                    let (args, given) = Split { names }.deserialize(&mut de).map_err(ErrorObject::invalid_params)?;
                    if given > names.len() {
                        return Err(ErrorObject::invalid_params(format_args!(
                            "expected at most {} params, got {given}",
                            names.len()
                        )));
                    }
                    args
                }
                _ => return Err(ErrorObject::invalid_params("params must be an array or an object")),
            },
        };
        Ok(ParamsReader { names, args })
    }

    /// Decode argument `index`. A missing argument decodes as `null`, so an `Option` may be
    /// left out (at the end of an array, or anywhere in an object); any other is a `-32602`
    /// naming it.
    pub fn arg<T: DeserializeOwned>(&self, index: usize) -> Result<T, ErrorObject> {
        let name = self.names.get(index).copied().unwrap_or("?");
        match self.args.get(index) {
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
