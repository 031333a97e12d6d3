//! A typed map: what a layer or a transport attaches to a call or a connection.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::fmt;

/// Values keyed by their type, one of each: what a [middleware](crate::middleware) layer
/// attaches to a call for its handler ([`RequestContext::extensions`](crate::RequestContext::extensions)),
/// or what a transport attaches to a connection ([`PeerInfo::extensions`](crate::PeerInfo::extensions)).
///
/// An empty map allocates nothing.
///
/// ```
/// use jsonrpc_duplex_core::Extensions;
///
/// #[derive(Clone, Debug, PartialEq)]
/// struct User(String);
///
/// let mut ext = Extensions::new();
/// ext.insert(User("ana".into()));
/// assert_eq!(ext.get::<User>(), Some(&User("ana".into())));
/// assert_eq!(ext.get::<u32>(), None);
/// ```
#[derive(Default)]
pub struct Extensions {
    // Boxed: an empty map is one word (every reply slot holds room for one).
    #[allow(clippy::box_collection)]
    map: Option<Box<HashMap<TypeId, Box<dyn Any + Send + Sync>>>>,
}

impl Extensions {
    /// An empty map.
    pub const fn new() -> Self {
        Extensions { map: None }
    }

    /// Insert a value, returning the one of the same type it replaces.
    pub fn insert<T: Send + Sync + 'static>(&mut self, value: T) -> Option<T> {
        let old = self.map.get_or_insert_with(Default::default).insert(TypeId::of::<T>(), Box::new(value))?;
        old.downcast::<T>().ok().map(|b| *b)
    }

    /// The value of type `T`, if there is one.
    pub fn get<T: Send + Sync + 'static>(&self) -> Option<&T> {
        self.map.as_ref()?.get(&TypeId::of::<T>())?.downcast_ref()
    }

    /// The value of type `T`, mutably.
    pub fn get_mut<T: Send + Sync + 'static>(&mut self) -> Option<&mut T> {
        self.map.as_mut()?.get_mut(&TypeId::of::<T>())?.downcast_mut()
    }

    /// Take the value of type `T` out.
    pub fn remove<T: Send + Sync + 'static>(&mut self) -> Option<T> {
        let old = self.map.as_mut()?.remove(&TypeId::of::<T>())?;
        old.downcast::<T>().ok().map(|b| *b)
    }

    /// Whether the map holds nothing.
    pub fn is_empty(&self) -> bool {
        self.map.as_ref().is_none_or(|m| m.is_empty())
    }

    /// How many values the map holds.
    pub fn len(&self) -> usize {
        self.map.as_ref().map_or(0, |m| m.len())
    }
}

impl fmt::Debug for Extensions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Extensions").field("len", &self.len()).finish()
    }
}

/// The empty map, for a context that has none.
pub(crate) static EMPTY: Extensions = Extensions::new();
