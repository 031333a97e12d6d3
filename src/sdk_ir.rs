//! What the Python, Go and TypeScript generators share: one walk over the services' typed errors
//! that names a class for each, the word-by-word `PascalCase` of Python and Go names, and (in
//! [`types`]) the walk over schemas that gives Python and Go their types.

pub(crate) mod types;

use std::collections::BTreeMap;

use crate::openrpc::{Describe, ErrorDoc, Method, Schemas, Service};

/// Every typed error of the services, one class each, by class name: `{Name}Error` (the name in
/// the language's `PascalCase`, `Error` appended unless it ends so), and with the code appended
/// when two errors of one name have two codes.
pub(crate) struct ErrorNames<'a> {
    pub(crate) classes: BTreeMap<String, &'a ErrorDoc>,
}

impl<'a> ErrorNames<'a> {
    pub(crate) fn new(services: impl Iterator<Item = &'a Service>, pascal: fn(&str) -> String) -> Self {
        let mut classes: BTreeMap<String, &'a ErrorDoc> = BTreeMap::new();
        for e in services.flat_map(|s| &s.methods).flat_map(|m| &m.errors) {
            let base = pascal(&e.name);
            let base = if base.ends_with("Error") { base } else { format!("{base}Error") };
            let name = match classes.get(&base) {
                Some(known) if known.code != e.code => format!("{base}{}", e.code.unsigned_abs()),
                _ => base,
            };
            classes.entry(name).or_insert(e);
        }
        ErrorNames { classes }
    }

    /// The classes of a method's errors (name and error), in the method's order.
    pub(crate) fn of<'m>(&'m self, m: &'m Method) -> impl Iterator<Item = (&'m str, &'a ErrorDoc)> + 'm {
        m.errors.iter().filter_map(move |e| {
            self.classes.iter().find(|(_, c)| c.code == e.code && c.name == e.name).map(|(n, c)| (n.as_str(), *c))
        })
    }
}

/// Any name as `PascalCase`, word by word (`tool_output`, `tool-output` → `ToolOutput`): the
/// spelling of Python classes and exported Go names.
pub(crate) fn pascal(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut upper = true;
    for c in name.chars() {
        if !c.is_ascii_alphanumeric() {
            upper = true;
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

/// What a generated module covers: clients for the traits the Rust side serves, the traits its
/// own side serves (the Rust side calls them back), the schemas of their types, and a line for
/// the file's header.
#[derive(Debug, Default)]
pub(crate) struct Services {
    pub(crate) schemas: Schemas,
    pub(crate) clients: Vec<Service>,
    pub(crate) servers: Vec<Service>,
    pub(crate) header: Option<String>,
}

impl Services {
    /// Add a trait the Rust side serves.
    pub(crate) fn client<D: Describe>(&mut self) {
        let service = self.schemas.describe::<D>();
        self.clients.push(service);
    }

    /// Add a trait the module's side serves.
    pub(crate) fn server<D: Describe>(&mut self) {
        let service = self.schemas.describe::<D>();
        self.servers.push(service);
    }

    /// Every trait, clients first.
    pub(crate) fn all(&self) -> impl Iterator<Item = &Service> {
        self.clients.iter().chain(&self.servers)
    }
}
