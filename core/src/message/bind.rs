//! Values that bind themselves to the message they are sent in, found while it is encoded —
//! without any thread-local state.
//!
//! A stream offered to the peer or a progress token of ours is a plain `Serialize` value that can
//! sit anywhere in params or a result; what becomes of it depends on the message it travels in
//! (in a request's params it lives until that request is answered; in a result, until the
//! consumer is done; in a notification it is refused). Its `Serialize` impl writes its JSON
//! through [`serialize_bound`], which marks it for the encoder: [`to_writer`] serializes through a
//! serializer of its own that carries the message's [`Target`] explicitly, recognizes the mark,
//! tells its [`Binder`] which value it found, and writes the value's JSON as usual. Any other
//! serializer (say `serde_json::to_value`) sees only the value's JSON.
//!
//! The mark is a newtype struct with a reserved name (serde_json's `RawValue` travels the same
//! way). Inside it, a human-readable serializer gets the wire JSON; the encoder's capture (not
//! human-readable) gets the registry's address and the token, the value's identity.

use std::cell::Cell;
use std::fmt::Display;
use std::io;

use serde::ser::{self, Impossible, Serialize, Serializer};

/// The reserved name of the mark.
const BOUND: &str = "$jsonrpc_duplex::private::Bound";

/// Where the message being encoded goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// The params of our request with this id.
    Request(u64),
    /// A result this side sends.
    Response,
    /// A notification (nothing would ever end what it carries).
    Notification,
}

/// A bound value found in a message: the address of the registry that made it (which connection,
/// which feature), its token there, and whether it may be sent only on that connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Found {
    pub(crate) registry: usize,
    pub(crate) token: u64,
    pub(crate) strict: bool,
}

/// Told of every bound value in a message as it is encoded (the connection's seam).
pub(crate) trait Binder {
    /// Whether a value may be waiting to be bound: when not, messages are encoded by
    /// serde_json directly (the common case costs nothing).
    fn armed(&self) -> bool;
    /// `found` travels in a message to `target`; an error fails the encoding with its text.
    fn bind(&self, found: Found, target: Target) -> Result<(), String>;
}

/// The binder of messages that carry nothing of ours to bind (errors, cancellations): values
/// are written as their JSON.
pub(crate) const UNBOUND: &dyn Binder = &Unbound;

struct Unbound;

impl Binder for Unbound {
    fn armed(&self) -> bool {
        false
    }
    fn bind(&self, _: Found, _: Target) -> Result<(), String> {
        Ok(())
    }
}

/// The binder of a message sent to many connections (a broadcast): a value that belongs to one
/// connection (an offered stream) cannot travel in it.
pub(crate) const NOWHERE: &dyn Binder = &Nowhere;

struct Nowhere;

impl Binder for Nowhere {
    fn armed(&self) -> bool {
        true
    }
    fn bind(&self, found: Found, _: Target) -> Result<(), String> {
        match found.strict {
            true => Err("it belongs to one connection: it cannot be sent to many".to_owned()),
            false => Ok(()),
        }
    }
}

/// serde_json's compact output, with raw JSON (a `RawValue`: params, a result or error data
/// passed on as they came, perhaps pretty-printed) written on one line, its raw CR and LF as
/// spaces (whitespace in valid JSON; see `framing::write_flat`). Nothing else serde_json writes
/// holds a raw CR or LF (a string's are escaped), so every message encoded here is on one line
/// and the newline framing writes it without scanning it again (under callgrind, that scan was
/// 201 of row A's 15,283 instructions per call with newline framing).
pub(crate) struct OneLine;

impl serde_json::ser::Formatter for OneLine {
    #[inline]
    fn write_raw_fragment<W: ?Sized + std::io::Write>(
        &mut self,
        writer: &mut W,
        fragment: &str,
    ) -> std::io::Result<()> {
        crate::framing::write_flat(writer, fragment.as_bytes())
    }
}

/// Serialize `value` as JSON into `writer`, telling `binder` of each bound value in it.
pub(crate) fn to_writer<W, T>(writer: W, value: &T, binder: &dyn Binder, target: Target) -> serde_json::Result<()>
where
    W: io::Write,
    T: Serialize + ?Sized,
{
    let mut ser = serde_json::Serializer::with_formatter(writer, OneLine);
    if binder.armed() { value.serialize(Scoped { inner: &mut ser, binder, target }) } else { value.serialize(&mut ser) }
}

/// The `Serialize` impl of a bindable value: writes `wire` (its JSON), marked so that
/// [`to_writer`] finds it as `found`.
pub(crate) fn serialize_bound<S, V>(serializer: S, found: Found, wire: &V) -> Result<S::Ok, S::Error>
where
    S: Serializer,
    V: Serialize + ?Sized,
{
    serializer.serialize_newtype_struct(BOUND, &Mark { found, wire, captured: Cell::new(false) })
}

struct Mark<'a, V: ?Sized> {
    found: Found,
    wire: &'a V,
    /// The encoder has read it (before it writes it).
    captured: Cell<bool>,
}

impl<V: Serialize + ?Sized> Serialize for Mark<'_, V> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if !serializer.is_human_readable() {
            // Only the encoder's capture is not human-readable here.
            self.captured.set(true);
            let Found { registry, token, strict } = self.found;
            return (registry as u64, token, u64::from(strict)).serialize(serializer);
        }
        // A strict value written by any serializer but a connection's encoder would reach the
        // peer unbound (say through `serde_json::to_value`): refused.
        if self.found.strict && !self.captured.get() {
            return Err(ser::Error::custom(
                "a stream can only be sent in the params of a request or in a result, on the connection that \
                 offered it (not serialized on its own, nor in a notification)",
            ));
        }
        self.wire.serialize(serializer)
    }
}

/// A serializer that forwards everything to `inner` and reports the marks it meets.
struct Scoped<'b, S> {
    inner: S,
    binder: &'b dyn Binder,
    target: Target,
}

/// A value to be serialized by a [`Scoped`] serializer (for the elements of compound values).
struct ScopedValue<'a, 'b, T: ?Sized> {
    value: &'a T,
    binder: &'b dyn Binder,
    target: Target,
}

impl<T: Serialize + ?Sized> Serialize for ScopedValue<'_, '_, T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.value.serialize(Scoped { inner: serializer, binder: self.binder, target: self.target })
    }
}

/// A compound value of the inner serializer, its elements serialized by [`Scoped`].
struct Compound<'b, C> {
    inner: C,
    binder: &'b dyn Binder,
    target: Target,
}

impl<'b, C> Compound<'b, C> {
    fn wrap<'a, T: ?Sized>(&self, value: &'a T) -> ScopedValue<'a, 'b, T> {
        ScopedValue { value, binder: self.binder, target: self.target }
    }
}

macro_rules! forward {
    ($($method:ident($($arg:ident: $ty:ty),*);)*) => {
        $(fn $method(self, $($arg: $ty),*) -> Result<S::Ok, S::Error> { self.inner.$method($($arg),*) })*
    };
}

impl<'b, S: Serializer> Serializer for Scoped<'b, S> {
    type Ok = S::Ok;
    type Error = S::Error;
    type SerializeSeq = Compound<'b, S::SerializeSeq>;
    type SerializeTuple = Compound<'b, S::SerializeTuple>;
    type SerializeTupleStruct = Compound<'b, S::SerializeTupleStruct>;
    type SerializeTupleVariant = Compound<'b, S::SerializeTupleVariant>;
    type SerializeMap = Compound<'b, S::SerializeMap>;
    type SerializeStruct = Compound<'b, S::SerializeStruct>;
    type SerializeStructVariant = Compound<'b, S::SerializeStructVariant>;

    forward! {
        serialize_bool(v: bool);
        serialize_i8(v: i8);
        serialize_i16(v: i16);
        serialize_i32(v: i32);
        serialize_i64(v: i64);
        serialize_i128(v: i128);
        serialize_u8(v: u8);
        serialize_u16(v: u16);
        serialize_u32(v: u32);
        serialize_u64(v: u64);
        serialize_u128(v: u128);
        serialize_f32(v: f32);
        serialize_f64(v: f64);
        serialize_char(v: char);
        serialize_str(v: &str);
        serialize_bytes(v: &[u8]);
        serialize_none();
        serialize_unit();
        serialize_unit_struct(name: &'static str);
        serialize_unit_variant(name: &'static str, index: u32, variant: &'static str);
    }

    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<S::Ok, S::Error> {
        let value = ScopedValue { value, binder: self.binder, target: self.target };
        self.inner.serialize_some(&value)
    }

    fn serialize_newtype_struct<T: Serialize + ?Sized>(self, name: &'static str, value: &T) -> Result<S::Ok, S::Error> {
        if name == BOUND {
            let found = value.serialize(Capture).map_err(|e| ser::Error::custom(e.0))?;
            self.binder.bind(found, self.target).map_err(ser::Error::custom)?;
        }
        let value = ScopedValue { value, binder: self.binder, target: self.target };
        self.inner.serialize_newtype_struct(name, &value)
    }

    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        name: &'static str,
        index: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<S::Ok, S::Error> {
        let value = ScopedValue { value, binder: self.binder, target: self.target };
        self.inner.serialize_newtype_variant(name, index, variant, &value)
    }

    fn serialize_seq(self, len: Option<usize>) -> Result<Self::SerializeSeq, S::Error> {
        let inner = self.inner.serialize_seq(len)?;
        Ok(Compound { inner, binder: self.binder, target: self.target })
    }

    fn serialize_tuple(self, len: usize) -> Result<Self::SerializeTuple, S::Error> {
        let inner = self.inner.serialize_tuple(len)?;
        Ok(Compound { inner, binder: self.binder, target: self.target })
    }

    fn serialize_tuple_struct(self, name: &'static str, len: usize) -> Result<Self::SerializeTupleStruct, S::Error> {
        let inner = self.inner.serialize_tuple_struct(name, len)?;
        Ok(Compound { inner, binder: self.binder, target: self.target })
    }

    fn serialize_tuple_variant(
        self,
        name: &'static str,
        index: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Self::SerializeTupleVariant, S::Error> {
        let (binder, target) = (self.binder, self.target);
        let inner = self.inner.serialize_tuple_variant(name, index, variant, len)?;
        Ok(Compound { inner, binder, target })
    }

    fn serialize_map(self, len: Option<usize>) -> Result<Self::SerializeMap, S::Error> {
        let inner = self.inner.serialize_map(len)?;
        Ok(Compound { inner, binder: self.binder, target: self.target })
    }

    fn serialize_struct(self, name: &'static str, len: usize) -> Result<Self::SerializeStruct, S::Error> {
        let inner = self.inner.serialize_struct(name, len)?;
        Ok(Compound { inner, binder: self.binder, target: self.target })
    }

    fn serialize_struct_variant(
        self,
        name: &'static str,
        index: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Self::SerializeStructVariant, S::Error> {
        let (binder, target) = (self.binder, self.target);
        let inner = self.inner.serialize_struct_variant(name, index, variant, len)?;
        Ok(Compound { inner, binder, target })
    }

    fn collect_str<T: Display + ?Sized>(self, value: &T) -> Result<S::Ok, S::Error> {
        self.inner.collect_str(value)
    }

    fn is_human_readable(&self) -> bool {
        self.inner.is_human_readable()
    }
}

/// The compound values whose members are serialized one by one (`$method(&mut self, value)`).
macro_rules! compound {
    ($($trait:ident :: $method:ident;)*) => {$(
        impl<C: ser::$trait> ser::$trait for Compound<'_, C> {
            type Ok = C::Ok;
            type Error = C::Error;
            fn $method<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), C::Error> {
                let value = self.wrap(value);
                self.inner.$method(&value)
            }
            fn end(self) -> Result<C::Ok, C::Error> {
                self.inner.end()
            }
        }
    )*};
}

compound! {
    SerializeSeq::serialize_element;
    SerializeTuple::serialize_element;
    SerializeTupleStruct::serialize_field;
    SerializeTupleVariant::serialize_field;
}

impl<C: ser::SerializeMap> ser::SerializeMap for Compound<'_, C> {
    type Ok = C::Ok;
    type Error = C::Error;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), C::Error> {
        let key = self.wrap(key);
        self.inner.serialize_key(&key)
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), C::Error> {
        let value = self.wrap(value);
        self.inner.serialize_value(&value)
    }
    fn end(self) -> Result<C::Ok, C::Error> {
        self.inner.end()
    }
}

/// The compound values whose members are named (`serialize_field(&mut self, key, value)`).
macro_rules! named_compound {
    ($($trait:ident;)*) => {$(
        impl<C: ser::$trait> ser::$trait for Compound<'_, C> {
            type Ok = C::Ok;
            type Error = C::Error;
            fn serialize_field<T: Serialize + ?Sized>(&mut self, key: &'static str, value: &T) -> Result<(), C::Error> {
                let value = self.wrap(value);
                self.inner.serialize_field(key, &value)
            }
            fn skip_field(&mut self, key: &'static str) -> Result<(), C::Error> {
                self.inner.skip_field(key)
            }
            fn end(self) -> Result<C::Ok, C::Error> {
                self.inner.end()
            }
        }
    )*};
}

named_compound! {
    SerializeStruct;
    SerializeStructVariant;
}

/// Reads a mark's identity: exactly `(registry, token, strict)`, three `u64`s.
struct Capture;

#[derive(Debug)]
struct CaptureError(String);

impl Display for CaptureError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for CaptureError {}

impl ser::Error for CaptureError {
    fn custom<T: Display>(msg: T) -> Self {
        CaptureError(msg.to_string())
    }
}

fn not_a_mark<T>() -> Result<T, CaptureError> {
    Err(CaptureError("a bound value's mark is not (registry, token, strict)".to_owned()))
}

/// The pair as it is read.
struct Triple {
    items: [u64; 3],
    len: usize,
}

impl ser::SerializeTuple for Triple {
    type Ok = Found;
    type Error = CaptureError;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), CaptureError> {
        let n = value.serialize(U64)?;
        let slot = self.items.get_mut(self.len).ok_or_else(|| CaptureError("too many members".to_owned()))?;
        *slot = n;
        self.len += 1;
        Ok(())
    }
    fn end(self) -> Result<Found, CaptureError> {
        match (self.len, self.items) {
            (3, [registry, token, strict]) => Ok(Found { registry: registry as usize, token, strict: strict != 0 }),
            _ => not_a_mark(),
        }
    }
}

/// Reads one `u64`.
struct U64;

macro_rules! refuse {
    ($ok:ty; $($method:ident($($ty:ty),*);)*) => {
        $(fn $method(self, $(_: $ty),*) -> Result<$ok, CaptureError> { not_a_mark() })*
    };
}

macro_rules! refuse_compounds {
    ($ok:ty) => {
        type SerializeSeq = Impossible<$ok, CaptureError>;
        type SerializeTupleStruct = Impossible<$ok, CaptureError>;
        type SerializeTupleVariant = Impossible<$ok, CaptureError>;
        type SerializeMap = Impossible<$ok, CaptureError>;
        type SerializeStruct = Impossible<$ok, CaptureError>;
        type SerializeStructVariant = Impossible<$ok, CaptureError>;

        refuse! { $ok;
            serialize_bool(bool); serialize_i8(i8); serialize_i16(i16); serialize_i32(i32);
            serialize_i64(i64); serialize_u8(u8); serialize_u16(u16); serialize_u32(u32);
            serialize_f32(f32); serialize_f64(f64); serialize_char(char); serialize_str(&str);
            serialize_bytes(&[u8]); serialize_none(); serialize_unit();
            serialize_unit_struct(&'static str);
            serialize_unit_variant(&'static str, u32, &'static str);
        }

        fn serialize_some<T: Serialize + ?Sized>(self, _: &T) -> Result<$ok, CaptureError> {
            not_a_mark()
        }
        fn serialize_newtype_struct<T: Serialize + ?Sized>(self, _: &'static str, _: &T) -> Result<$ok, CaptureError> {
            not_a_mark()
        }
        fn serialize_newtype_variant<T: Serialize + ?Sized>(
            self,
            _: &'static str,
            _: u32,
            _: &'static str,
            _: &T,
        ) -> Result<$ok, CaptureError> {
            not_a_mark()
        }
        fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq, CaptureError> {
            not_a_mark()
        }
        fn serialize_tuple_struct(self, _: &'static str, _: usize) -> Result<Self::SerializeTupleStruct, CaptureError> {
            not_a_mark()
        }
        fn serialize_tuple_variant(
            self,
            _: &'static str,
            _: u32,
            _: &'static str,
            _: usize,
        ) -> Result<Self::SerializeTupleVariant, CaptureError> {
            not_a_mark()
        }
        fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap, CaptureError> {
            not_a_mark()
        }
        fn serialize_struct(self, _: &'static str, _: usize) -> Result<Self::SerializeStruct, CaptureError> {
            not_a_mark()
        }
        fn serialize_struct_variant(
            self,
            _: &'static str,
            _: u32,
            _: &'static str,
            _: usize,
        ) -> Result<Self::SerializeStructVariant, CaptureError> {
            not_a_mark()
        }
        fn is_human_readable(&self) -> bool {
            false
        }
    };
}

impl Serializer for Capture {
    type Ok = Found;
    type Error = CaptureError;
    type SerializeTuple = Triple;
    refuse_compounds!(Found);
    refuse! { Found; serialize_u64(u64); serialize_i128(i128); serialize_u128(u128); }

    fn serialize_tuple(self, _: usize) -> Result<Triple, CaptureError> {
        Ok(Triple { items: [0; 3], len: 0 })
    }
}

impl Serializer for U64 {
    type Ok = u64;
    type Error = CaptureError;
    type SerializeTuple = Impossible<u64, CaptureError>;
    refuse_compounds!(u64);
    refuse! { u64; serialize_i128(i128); serialize_u128(u128); }

    fn serialize_u64(self, n: u64) -> Result<u64, CaptureError> {
        Ok(n)
    }
    fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple, CaptureError> {
        not_a_mark()
    }
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;

    use super::*;

    /// A value bound to registry 7 with its token, written as `{"token":N}`.
    struct Offer(u64);

    impl Serialize for Offer {
        fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
            #[derive(serde::Serialize)]
            struct Wire {
                token: u64,
            }
            serialize_bound(serializer, Found { registry: 7, token: self.0, strict: true }, &Wire { token: self.0 })
        }
    }

    #[derive(Default)]
    struct Log {
        armed: bool,
        found: RefCell<Vec<(Found, Target)>>,
        refuse: bool,
    }

    impl Binder for Log {
        fn armed(&self) -> bool {
            self.armed
        }
        fn bind(&self, found: Found, target: Target) -> Result<(), String> {
            if self.refuse {
                return Err("refused here".to_owned());
            }
            self.found.borrow_mut().push((found, target));
            Ok(())
        }
    }

    fn encode(value: &impl Serialize, binder: &Log, target: Target) -> Result<String, String> {
        let mut out = Vec::new();
        to_writer(&mut out, value, binder, target).map_err(|e| e.to_string())?;
        Ok(String::from_utf8(out).unwrap())
    }

    #[test]
    fn marks_are_found_anywhere_and_written_as_their_json() {
        let raw = serde_json::value::RawValue::from_string(r#"{"raw":[1,2]}"#.to_owned()).unwrap();
        let value = (
            Offer(3),
            serde_json::json!({"a": 1}),
            vec![Some(Offer(4))],
            raw,
            std::collections::BTreeMap::from([("k", Offer(5))]),
        );
        let log = Log { armed: true, ..Log::default() };
        let text = encode(&value, &log, Target::Request(9)).unwrap();
        assert_eq!(text, r#"[{"token":3},{"a":1},[{"token":4}],{"raw":[1,2]},{"k":{"token":5}}]"#);
        let found: Vec<_> = log.found.borrow().iter().map(|(f, t)| (f.registry, f.token, *t)).collect();
        assert_eq!(found, [(7, 3, Target::Request(9)), (7, 4, Target::Request(9)), (7, 5, Target::Request(9))]);
        // Any other serializer refuses a strict value.
        assert!(serde_json::to_string(&Offer(3)).unwrap_err().to_string().contains("in the params of a request"));
    }

    #[test]
    fn a_binder_that_refuses_fails_the_encoding_and_one_not_armed_is_not_asked() {
        let refusing = Log { armed: true, refuse: true, ..Log::default() };
        assert!(encode(&[Offer(1)], &refusing, Target::Notification).unwrap_err().contains("refused here"));
        let idle = Log::default();
        assert!(encode(&[Offer(1)], &idle, Target::Response).is_err(), "a strict value outside an armed encoder");
        assert!(idle.found.borrow().is_empty());
    }
}
