//! The method names layers report: known names as they are, anything else as `_OTHER`, so that
//! a peer cannot blow up the cardinality of a tracing or metrics backend.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;

use crate::util::hash::short_word;

/// What a layer reports for a method no list names (OpenTelemetry's convention).
pub const OTHER: &str = "_OTHER";

/// A set of method names to report as they are; any other is [`OTHER`].
///
/// An `#[rpc]` trait's generated server lists its own (`GreeterServer::METHODS`); a
/// [`Router`](crate::Router) lists its routes ([`Router::methods`](crate::Router::methods)).
///
/// ```
/// use jsonrpc_duplex_core::middleware::names::MethodNames;
/// let names = MethodNames::new(["add", "sub"]);
/// assert_eq!(names.report("add"), "add");
/// assert_eq!(names.report("made/up/by/the/peer"), "_OTHER");
/// assert_eq!(MethodNames::default().report("add"), "_OTHER");
/// ```
#[derive(Clone, Debug, Default)]
pub struct MethodNames {
    /// Each name and its place (`0..len`), for layers that keep something per name.
    known: Arc<HashMap<Box<str>, usize, BuildHasherDefault<Fnv>>>,
    /// The names in their places, when they are few enough to be looked up one by one (a
    /// compare per name, cheaper than hashing the method name for a short list).
    few: Option<Arc<[Few]>>,
}

/// A name of a short list, with its bytes as a word when it has 8 or fewer: compared without
/// following its pointer.
#[derive(Clone, Debug, Default)]
struct Few {
    name: Box<str>,
    word: u64,
}

impl Few {
    #[inline(always)]
    fn is(&self, method: &str, word: u64) -> bool {
        self.name.len() == method.len() && if method.len() <= 8 { self.word == word } else { *self.name == *method }
    }
}

/// Up to this many names are looked up one by one.
const FEW: usize = 8;

/// FNV-1a: a method name is looked up on every call, and SipHash, the map's default, costs
/// more than the rest of the lookup. Its resistance to chosen collisions is not needed: the
/// table is fixed when the layer is made, a peer's names only look up in it (a name that
/// collides costs one more comparison, and makes nothing grow).
#[derive(Clone, Copy)]
struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
}

impl Hasher for Fnv {
    fn write(&mut self, bytes: &[u8]) {
        for byte in bytes {
            self.0 = (self.0 ^ u64::from(*byte)).wrapping_mul(0x0100_0000_01b3);
        }
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

impl MethodNames {
    /// These names, and no others.
    pub fn new<I, S>(names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        MethodNames::default().with(names)
    }

    /// These names as well.
    pub fn with<I, S>(self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let mut known = (*self.known).clone();
        for name in names {
            let next = known.len();
            known.entry(name.as_ref().into()).or_insert(next);
        }
        let few = (known.len() <= FEW).then(|| {
            let mut few = vec![Few::default(); known.len()];
            for (name, at) in known.iter() {
                let word = if name.len() <= 8 { short_word(name.as_bytes()) } else { 0 };
                few[*at] = Few { name: name.clone(), word };
            }
            few.into()
        });
        MethodNames { known: Arc::new(known), few }
    }

    /// The name to report for `method`: itself if listed, else [`OTHER`].
    pub fn report<'a>(&'a self, method: &str) -> &'a str {
        self.report_at(method).0
    }

    /// [`MethodNames::report`], with the name's place among [`MethodNames::len`] (`len` for
    /// [`OTHER`]): one lookup for a layer that keeps something per reported name.
    #[inline]
    pub(crate) fn report_at<'a>(&'a self, method: &str) -> (&'a str, usize) {
        match &self.few {
            Some(few) => {
                let word = if method.len() <= 8 { short_word(method.as_bytes()) } else { 0 };
                match few.iter().position(|name| name.is(method, word)) {
                    Some(at) => (&few[at].name, at),
                    None => (OTHER, few.len()),
                }
            }
            None => self.hashed(method),
        }
    }

    /// [`MethodNames::report_at`] in the map (out of line: the short list's compare stays small
    /// enough to inline into the layer).
    #[inline(never)]
    fn hashed<'a>(&'a self, method: &str) -> (&'a str, usize) {
        self.known.get_key_value(method).map_or((OTHER, self.known.len()), |(n, at)| (n, *at))
    }

    /// How many names are listed.
    #[cfg_attr(not(feature = "metrics"), allow(dead_code))]
    pub(crate) fn len(&self) -> usize {
        self.known.len()
    }
}

#[cfg(test)]
mod tests {
    use super::{FEW, MethodNames, OTHER};

    #[test]
    fn a_short_list_and_a_long_one_report_the_same_names_and_places() {
        let short: Vec<String> = (0..FEW).map(|i| format!("m/{i}")).collect();
        let long: Vec<String> = (0..FEW * 3).map(|i| format!("m/{i}")).collect();
        let (few, many) = (MethodNames::new(&short), MethodNames::new(&long));
        assert!(few.few.is_some() && many.few.is_none());
        for (i, name) in short.iter().enumerate() {
            assert_eq!(few.report_at(name), (name.as_str(), i));
            assert_eq!(many.report_at(name), (name.as_str(), i));
        }
        assert_eq!(few.report_at("m/"), (OTHER, FEW));
        // Repeated and alternating lookups find each name in its place.
        assert_eq!(few.report_at("m/3"), ("m/3", 3));
        assert_eq!(few.report_at("m/3"), ("m/3", 3));
        assert_eq!(few.report_at("m/1"), ("m/1", 1));
        assert_eq!(few.report_at("m/"), (OTHER, FEW));
        assert_eq!(few.clone().report_at("m/1"), ("m/1", 1));
        assert_eq!(many.report_at(&long[FEW * 2]), (long[FEW * 2].as_str(), FEW * 2));
        assert_eq!(many.report("nope"), OTHER);
        // Added later, a name keeps its first place.
        let again = few.with(["m/0", "new"]);
        assert_eq!(again.report_at("new"), ("new", FEW));
        assert_eq!(again.report_at("m/0"), ("m/0", 0));
        // Names longer than a word, and names that share one's first word, in a short list.
        let mixed = MethodNames::new(["textDocument/hover", "textDocu", "a", ""]);
        assert!(mixed.few.is_some());
        assert_eq!(mixed.report_at("textDocument/hover"), ("textDocument/hover", 0));
        assert_eq!(mixed.report_at("textDocument/hovex"), (OTHER, 4));
        assert_eq!(mixed.report_at("textDocu"), ("textDocu", 1));
        assert_eq!(mixed.report_at("textDocx"), (OTHER, 4));
        assert_eq!(mixed.report_at("a"), ("a", 2));
        assert_eq!(mixed.report_at(""), ("", 3));
        assert_eq!(mixed.report_at("b"), (OTHER, 4));
    }
}
