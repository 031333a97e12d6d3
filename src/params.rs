//! Reading the params of positional and named methods: the server accepts both an array and an
//! object for them (as StreamJsonRpc and jsonrpsee do), and each argument is decoded once,
//! straight from its raw JSON.

use std::cell::Cell;
use std::fmt;
use std::marker::PhantomData;

use jsonrpc_duplex_core::ErrorObject;
use serde::de::{self, DeserializeOwned, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;

/// Arguments kept without allocating for methods with up to this many.
const INLINE: usize = 8;

/// The params of one request, split into arguments but not yet decoded.
#[derive(Debug)]
pub struct ParamsReader<'a> {
    names: &'static [&'static str],
    params: Option<&'a RawValue>,
    mode: Mode<'a>,
}

#[derive(Debug)]
enum Mode<'a> {
    /// Split into arguments up front (an object; an array read out of order or gone wrong).
    Split(Args<'a>),
    /// A positional array read in one pass, argument after argument (the usual case).
    Sequential(Cell<Cursor>),
}

/// Where the one-pass read of a positional array stands: two words, no flag beside them (a
/// `bool` there left seven bytes of padding that every copy of the cursor moved as two
/// overlapping 4-byte loads, which the CPU cannot forward from the stores before them: a stall
/// per argument, seen by `perf record` on row C).
#[derive(Debug, Clone, Copy)]
struct Cursor {
    /// The argument to read next.
    next: usize,
    /// Its byte offset in the array's text, or [`Cursor::ENDED`] once the array's `]` was reached.
    pos: usize,
}

impl Cursor {
    const ENDED: usize = usize::MAX;
}

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
    #[inline]
    pub fn new(params: Option<&'a RawValue>, names: &'static [&'static str]) -> Result<Self, ErrorObject> {
        let mode = match params.map(|raw| raw.get().trim_ascii_start()) {
            None => Mode::Split(Args::new(0)),
            // Read as the arguments are asked for, in one pass; anything unusual (a value that
            // does not decode, too many elements) is explained by the split path after all.
            Some(text) if text.starts_with('[') && !names.is_empty() => {
                let pos = params.map_or(0, |raw| raw.get().len() - text.len()) + 1;
                Mode::Sequential(Cell::new(Cursor { next: 0, pos }))
            }
            Some(_) => Mode::Split(split(params, names)?),
        };
        Ok(ParamsReader { names, params, mode })
    }

    /// Decode argument `index`. A missing argument decodes as `null`, so an `Option` may be
    /// left out (at the end of an array, or anywhere in an object); any other is a `-32602`
    /// naming it.
    pub fn arg<T: DeserializeOwned>(&self, index: usize) -> Result<T, ErrorObject> {
        if let Mode::Sequential(cursor) = &self.mode
            && let Some(value) = self.next_in_array(cursor, index)
        {
            return Ok(value);
        }
        let name = self.names.get(index).copied().unwrap_or("?");
        let args = match &self.mode {
            Mode::Split(args) => args,
            // Off the one-pass path: split (this also finds an array with too many elements).
            Mode::Sequential(_) => &split(self.params, self.names)?,
        };
        match args.get(index) {
            Some(raw) => serde_json::from_str(raw.get())
                .map_err(|e| ErrorObject::invalid_params(format_args!("param `{name}`: {e}"))),
            None => serde_json::from_str("null")
                .map_err(|_| ErrorObject::invalid_params(format_args!("missing param `{name}`"))),
        }
    }

    /// Argument `index` read straight from the array, if it is the next one and all is well
    /// (`None`: the caller takes the split path, which gives the same value or explains).
    fn next_in_array<T: DeserializeOwned>(&self, cursor: &Cell<Cursor>, index: usize) -> Option<T> {
        let mut at = cursor.get();
        if at.next != index {
            return None;
        }
        let text = self.params?.get();
        let value = if at.pos == Cursor::ENDED {
            serde_json::from_str("null").ok()?
        } else {
            let rest = text.get(at.pos..)?;
            let skipped = rest.len() - rest.trim_ascii_start().len();
            if rest[skipped..].starts_with(']') {
                at.pos = Cursor::ENDED;
                serde_json::from_str("null").ok()?
            } else if at.next + 1 == self.names.len() {
                // The last argument: everything before the array's closing `]` (its text ends
                // in one: it is valid JSON) is its value, decoded without the search for where
                // it ends. More elements there do not decode: the split path explains them.
                let inner = text.trim_ascii_end().strip_suffix(']')?;
                let value = serde_json::from_str(inner.get(at.pos..)?).ok()?;
                at.pos = Cursor::ENDED;
                value
            } else {
                let mut values = serde_json::Deserializer::from_str(rest).into_iter::<T>();
                let value = values.next()?.ok()?;
                let after = &rest[values.byte_offset()..];
                let after = after.trim_ascii_start();
                match after.as_bytes().first() {
                    Some(b',') => at.pos = text.len() - after.len() + 1,
                    Some(b']') => at.pos = Cursor::ENDED,
                    _ => return None,
                }
                value
            }
        };
        // (The last argument always ends the read: it is decoded up to the array's `]`.)
        at.next += 1;
        cursor.set(at);
        Some(value)
    }
}

/// The arguments of a positional method read in one go, as a tuple, when the params are an
/// array of exactly that many elements that all decode: the usual call, for the cost of one
/// `serde_json::from_str` (what a hand-written server pays). Anything else (an object, an array
/// shorter or longer, a value that does not decode) is `None`, and [`ParamsReader`] reads it,
/// giving the same values or the error that names the argument.
///
/// Called as `(&ArrayProbe::<(A, B)>::NEW).read_array(params)` with both traits in scope: for
/// a tuple that is not `DeserializeOwned` (an argument's type is not, or it has more than 16
/// elements) the probe's fallback is taken, which reads nothing, so a missing `Deserialize` is
/// reported once, by the reader, at the argument's type.
pub struct ArrayProbe<T>(PhantomData<T>);

impl<T> ArrayProbe<T> {
    /// The probe.
    pub const NEW: Self = ArrayProbe(PhantomData);
}

/// [`ArrayProbe`]'s read, where the tuple decodes.
pub trait ReadArray<T> {
    /// The arguments, or `None` (see [`ArrayProbe`]).
    fn read_array(&self, params: Option<&RawValue>) -> Option<T>;
}

impl<T: DeserializeOwned> ReadArray<T> for ArrayProbe<T> {
    #[inline]
    fn read_array(&self, params: Option<&RawValue>) -> Option<T> {
        let text = params?.get();
        // An object is left to the reader without a failed parse (and its error's allocation).
        if !text.trim_ascii_start().starts_with('[') {
            return None;
        }
        serde_json::from_str(text).ok()
    }
}

/// [`ArrayProbe`]'s fallback: nothing read.
pub trait ReadArrayNot<T> {
    /// `None`: the reader reads the arguments.
    fn read_array(&self, params: Option<&RawValue>) -> Option<T>;
}

impl<T> ReadArrayNot<T> for &ArrayProbe<T> {
    #[inline]
    fn read_array(&self, _: Option<&RawValue>) -> Option<T> {
        None
    }
}

/// Split `params` into the arguments `names` (an array longer than `names`, or params that are
/// neither an array nor an object, are a `-32602`).
fn split<'a>(params: Option<&'a RawValue>, names: &'static [&'static str]) -> Result<Args<'a>, ErrorObject> {
    let Some(raw) = params else { return Ok(Args::new(0)) };
    match raw.get().trim_ascii_start().as_bytes().first() {
        Some(b'[' | b'{') => {
            let mut de = serde_json::Deserializer::from_str(raw.get());
            let (args, given) = Split { names }.deserialize(&mut de).map_err(ErrorObject::invalid_params)?;
            if given > names.len() {
                return Err(ErrorObject::invalid_params(format_args!(
                    "expected at most {} params, got {given}",
                    names.len()
                )));
            }
            Ok(args)
        }
        _ => Err(ErrorObject::invalid_params("params must be an array or an object")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(s: &str) -> Box<RawValue> {
        RawValue::from_string(s.to_owned()).unwrap()
    }

    #[test]
    fn the_one_pass_read_agrees_with_the_split_read() {
        // Each case through the one-pass path (arguments in order) and through the split path
        // (an out-of-order first read forces it): the same values, the same errors.
        let cases = [
            r#"[1, "a"]"#,
            r#" [ 1 , "a" ] "#,
            r#"[1]"#,
            r#"[]"#,
            r#"[1, "a", 3]"#,
            r#"["x", "a"]"#,
            r#"[1, 2]"#,
            r#"[1, null]"#,
            r#"[-0.5e3, "\u00e9\"q"]"#,
            r#"[18446744073709551616, "a"]"#,
            r#"[1, "a" ] "#,
            r#"[1,"]"]"#,
            r#"[1, ["x", "]"]]"#,
            r#"[1, {"a": "]"}]"#,
            r#"[null,null]"#,
        ];
        for text in cases {
            let params = raw(text);
            let one_pass = ParamsReader::new(Some(&params), &["n", "s"]).and_then(|r| {
                let n = r.arg::<Option<f64>>(0)?;
                let s = r.arg::<Option<String>>(1)?;
                Ok((n, s))
            });
            let split = ParamsReader::new(Some(&params), &["n", "s"]).and_then(|r| {
                let s = r.arg::<Option<String>>(1)?;
                let n = r.arg::<Option<f64>>(0)?;
                Ok((n, s))
            });
            assert_eq!(one_pass.as_ref().map_err(|e| &e.message), split.as_ref().map_err(|e| &e.message), "{text}");
            let strict_one =
                ParamsReader::new(Some(&params), &["n", "s"]).and_then(|r| Ok((r.arg::<i64>(0)?, r.arg::<String>(1)?)));
            let strict_split = ParamsReader::new(Some(&params), &["n", "s"]).and_then(|r| {
                let s = r.arg::<String>(1)?;
                Ok((r.arg::<i64>(0)?, s))
            });
            match (&strict_one, &strict_split) {
                (Ok(a), Ok(b)) => assert_eq!(a, b, "{text}"),
                (Err(a), Err(_)) => assert_eq!(a.code, -32602, "{text}"),
                _ => panic!("{text}: {strict_one:?} against {strict_split:?}"),
            }
        }
    }

    #[test]
    // Called as the macro calls it: through a reference, which picks the probe's read.
    #[allow(clippy::needless_borrow)]
    fn the_tuple_read_takes_only_what_the_reader_reads_the_same() {
        // The one-read tuple answers only for an array of exactly the arguments that all
        // decode; there it gives the reader's values, and for everything else it leaves the
        // call to the reader (which explains what is wrong).
        let cases = [
            (r#"[1, "a"]"#, true),
            (r#" [ 1 , "a" ] "#, true),
            (r#"[-0.5e3, "\u00e9\"q"]"#, false),
            (r#"[1,"]"]"#, true),
            (r#"[1]"#, false),
            (r#"[]"#, false),
            (r#"[1, "a", 3]"#, false),
            (r#"["x", "a"]"#, false),
            (r#"[1, 2]"#, false),
            (r#"[1, null]"#, false),
            (r#"{"n": 1, "s": "a"}"#, false),
            ("5", false),
        ];
        for (text, read) in cases {
            let params = raw(text);
            let tuple = (&ArrayProbe::<(i64, String)>::NEW).read_array(Some(&params));
            assert_eq!(tuple.is_some(), read, "{text}");
            let reader =
                ParamsReader::new(Some(&params), &["n", "s"]).and_then(|r| Ok((r.arg::<i64>(0)?, r.arg::<String>(1)?)));
            if let Some(tuple) = tuple {
                assert_eq!(Ok(tuple), reader.map_err(|e| e.message), "{text}");
            }
            // Options: a short array is the reader's (a missing argument is `None` there).
            let tuple = (&ArrayProbe::<(Option<f64>, Option<String>)>::NEW).read_array(Some(&params));
            let reader = ParamsReader::new(Some(&params), &["n", "s"])
                .and_then(|r| Ok((r.arg::<Option<f64>>(0)?, r.arg::<Option<String>>(1)?)));
            if let Some(tuple) = tuple {
                assert!(text.trim_start().starts_with('['), "{text}");
                assert_eq!(Ok(tuple), reader.map_err(|e| e.message), "{text}");
            }
        }
        assert_eq!((&ArrayProbe::<(i64, String)>::NEW).read_array(None), None);
        // A tuple that does not decode takes the fallback, which reads nothing.
        struct Opaque;
        assert!((&ArrayProbe::<(Opaque,)>::NEW).read_array(Some(&raw("[1]"))).is_none());
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
        // Too many elements: found when the arguments are read (the one-pass read sees the
        // array go on after the last one).
        let params = raw("[1, 2]");
        let e = ParamsReader::new(Some(&params), &["n"]).and_then(|r| r.arg::<i64>(0)).unwrap_err();
        assert_eq!(e.message, "Invalid params: expected at most 1 params, got 2");
        let e = ParamsReader::new(Some(&params), &[]).unwrap_err();
        assert_eq!(e.message, "Invalid params: expected at most 0 params, got 2");
        let params = raw("5");
        assert!(ParamsReader::new(Some(&params), &["n"]).is_err());
    }
}
