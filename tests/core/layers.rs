//! The layers of `jsonrpc-duplex-core` import only downward (see `ARCHITECTURE.md`): the wire
//! (`message/`, `framing/`), the inbound seam (`handler/`) and the shared helpers (`util/`,
//! `sync/`) know nothing of the connection; the connection knows nothing of the features that
//! plug into it (`stream/`, `progress/`) nor of the top that puts them together; and no files
//! import each other in a circle.
//!
//! The check reads the code, not one spelling of it: comments and string literals are dropped,
//! `use` trees are parsed (groups, nested groups, `self`, `super`, `crate`, renames, globs, and
//! paths relative to a child module), and so are paths written in code (`crate::a::b::f()`),
//! inline modules included (`super` in a `mod tests { .. }` is the file's own module). Each path
//! resolves to the file of the deepest module it names. As in
//! `/work/shared/tools/rust_import_cycles.py`, a file naming an item of a module file that
//! encloses it (`use super::X` reaching a `mod.rs`) is how a module shares its items with its
//! children and is not an edge; declaring a child (`mod x;`) is not one either.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A crate's sources: path relative to its `src/` (with `/`), and text.
type Sources = Vec<(String, String)>;

/// `core/src`, read from disk.
fn core_sources() -> Sources {
    fn walk(root: &Path, dir: &Path, out: &mut Sources) {
        for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(root, &path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let rel = path.strip_prefix(root).unwrap();
                let rel = rel.iter().map(|s| s.to_string_lossy().into_owned()).collect::<Vec<_>>().join("/");
                out.push((rel, std::fs::read_to_string(&path).unwrap()));
            }
        }
    }
    let root: PathBuf = Path::new(env!("CARGO_MANIFEST_DIR")).join("core/src");
    let mut out = Vec::new();
    walk(&root, &root, &mut out);
    assert!(out.len() > 20, "core/src has only {} sources", out.len());
    out
}

// ---------------------------------------------------------------------------------------------
// Tokens

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Ident(String),
    /// `::`
    Sep,
    Open,
    Close,
    Semi,
    Comma,
    Star,
    Dollar,
    Other,
}

/// The tokens that matter for paths; comments, strings and char literals are dropped.
fn tokens(text: &str) -> Vec<Tok> {
    let c: Vec<char> = text.chars().collect();
    let (mut i, n, mut out) = (0, c.len(), Vec::new());
    let at = |i: usize| c.get(i).copied().unwrap_or('\0');
    while i < n {
        let ch = c[i];
        if ch == '/' && at(i + 1) == '/' {
            while i < n && c[i] != '\n' {
                i += 1;
            }
        } else if ch == '/' && at(i + 1) == '*' {
            let mut depth = 1;
            i += 2;
            while i < n && depth > 0 {
                if c[i] == '/' && at(i + 1) == '*' {
                    depth += 1;
                    i += 2;
                } else if c[i] == '*' && at(i + 1) == '/' {
                    depth -= 1;
                    i += 2;
                } else {
                    i += 1;
                }
            }
        } else if ch == '"' {
            i += 1;
            while i < n && c[i] != '"' {
                i += if c[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
            out.push(Tok::Other);
        } else if ch == '\'' {
            // A char literal ('x', '\n', '\u{..}') or a lifetime ('a).
            if at(i + 1) == '\\' {
                i += 2;
                while i < n && c[i] != '\'' {
                    i += 1;
                }
                i += 1;
            } else if at(i + 2) == '\'' {
                i += 3;
            } else {
                i += 1;
            }
            out.push(Tok::Other);
        } else if ch.is_alphabetic() || ch == '_' {
            let start = i;
            while i < n && (c[i].is_alphanumeric() || c[i] == '_') {
                i += 1;
            }
            let word: String = c[start..i].iter().collect();
            // Raw strings: r"..", r#".."#, br"..".
            if (word == "r" || word == "br") && (at(i) == '"' || at(i) == '#') {
                let mut hashes = 0;
                while at(i + hashes) == '#' {
                    hashes += 1;
                }
                if at(i + hashes) == '"' {
                    i += hashes + 1;
                    loop {
                        if i >= n {
                            break;
                        }
                        if c[i] == '"' && (0..hashes).all(|k| at(i + 1 + k) == '#') {
                            i += 1 + hashes;
                            break;
                        }
                        i += 1;
                    }
                    out.push(Tok::Other);
                    continue;
                }
            }
            out.push(Tok::Ident(word));
        } else {
            out.push(match ch {
                ':' if at(i + 1) == ':' => {
                    i += 1;
                    Tok::Sep
                }
                '{' => Tok::Open,
                '}' => Tok::Close,
                ';' => Tok::Semi,
                ',' => Tok::Comma,
                '*' => Tok::Star,
                '$' => Tok::Dollar,
                c if c.is_whitespace() => {
                    i += 1;
                    continue;
                }
                _ => Tok::Other,
            });
            i += 1;
        }
    }
    out
}

fn is(t: Option<&Tok>, want: &Tok) -> bool {
    t == Some(want)
}

fn ident(t: Option<&Tok>) -> Option<&str> {
    match t {
        Some(Tok::Ident(s)) => Some(s),
        _ => None,
    }
}

/// Expand the use tree at `toks[*i]` into full paths (a trailing `self` names the module).
fn use_tree(toks: &[Tok], i: &mut usize, prefix: Vec<String>, out: &mut Vec<Vec<String>>) {
    let mut path = prefix;
    loop {
        match toks.get(*i) {
            Some(Tok::Sep) => *i += 1,
            Some(Tok::Ident(s)) => {
                path.push(s.clone());
                *i += 1;
                if is(toks.get(*i), &Tok::Sep) {
                    *i += 1;
                    continue;
                }
                if ident(toks.get(*i)) == Some("as") {
                    *i += 2;
                }
                out.push(path);
                return;
            }
            Some(Tok::Star) => {
                *i += 1;
                out.push(path);
                return;
            }
            Some(Tok::Open) => {
                *i += 1;
                loop {
                    match toks.get(*i) {
                        None => return,
                        Some(Tok::Close) => {
                            *i += 1;
                            return;
                        }
                        Some(Tok::Comma) => *i += 1,
                        Some(_) => {
                            let before = *i;
                            use_tree(toks, i, path.clone(), out);
                            if *i == before {
                                *i += 1;
                            }
                        }
                    }
                }
            }
            _ => return,
        }
    }
}

/// A path as written, and the module it was written in (the file's, plus inline modules).
struct Written {
    path: Vec<String>,
    scope: Vec<String>,
}

/// Every path a file's code names: `use` trees and paths in code.
fn written(text: &str, file_module: &[String]) -> Vec<Written> {
    let toks = tokens(text);
    let mut out = Vec::new();
    // Inline modules: (name, the brace depth inside them).
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut depth = 0usize;
    let mut i = 0;
    while i < toks.len() {
        let scope = || file_module.iter().cloned().chain(inline.iter().map(|(m, _)| m.clone())).collect::<Vec<_>>();
        match &toks[i] {
            Tok::Open => {
                depth += 1;
                i += 1;
            }
            Tok::Close => {
                if inline.last().is_some_and(|(_, d)| *d == depth) {
                    inline.pop();
                }
                depth = depth.saturating_sub(1);
                i += 1;
            }
            Tok::Ident(w) if w == "mod" && ident(toks.get(i + 1)).is_some() && is(toks.get(i + 2), &Tok::Open) => {
                inline.push((ident(toks.get(i + 1)).unwrap().to_owned(), depth + 1));
                i += 2;
            }
            Tok::Ident(w) if w == "use" => {
                i += 1;
                let mut paths = Vec::new();
                use_tree(&toks, &mut i, Vec::new(), &mut paths);
                let scope = scope();
                out.extend(paths.into_iter().map(|path| Written { path, scope: scope.clone() }));
                while i < toks.len() && toks[i] != Tok::Semi {
                    i += 1;
                }
            }
            Tok::Ident(w) if is(toks.get(i + 1), &Tok::Sep) && !(i > 0 && toks[i - 1] == Tok::Sep) => {
                // A path in code (`crate::a::b`, `super::x::f`, `child::T`), not `$crate::..`.
                let dollar = i > 0 && toks[i - 1] == Tok::Dollar;
                let mut path = vec![w.clone()];
                let mut j = i + 1;
                while is(toks.get(j), &Tok::Sep) {
                    match ident(toks.get(j + 1)) {
                        Some(s) => {
                            path.push(s.to_owned());
                            j += 2;
                        }
                        None => break,
                    }
                }
                if !dollar {
                    out.push(Written { path, scope: scope() });
                }
                i = j;
            }
            _ => i += 1,
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Modules and edges

/// The module a file is (`lib.rs` the root, `a/mod.rs` and `a.rs` module `a`).
fn module_of(rel: &str) -> Vec<String> {
    let mut segs: Vec<String> = rel.trim_end_matches(".rs").split('/').map(str::to_owned).collect();
    if matches!(segs.last().map(String::as_str), Some("mod" | "lib" | "main")) {
        segs.pop();
    }
    segs
}

fn is_module_file(rel: &str) -> bool {
    rel == "mod.rs" || rel.ends_with("/mod.rs") || rel == "lib.rs" || rel == "main.rs"
}

/// The file-level import graph: file → files whose modules it names.
struct Graph {
    edges: BTreeMap<String, BTreeSet<String>>,
}

impl Graph {
    fn of(sources: &Sources) -> Graph {
        let modules: BTreeMap<Vec<String>, String> =
            sources.iter().map(|(rel, _)| (module_of(rel), rel.clone())).collect();
        let file_of = |segs: &[String]| (0..=segs.len()).rev().find_map(|k| modules.get(&segs[..k])).cloned();
        let mut edges = BTreeMap::new();
        for (rel, text) in sources {
            let here = module_of(rel);
            let mut to = BTreeSet::new();
            for Written { path, scope } in written(text, &here) {
                let Some(full) = resolve(&path, &scope, &modules) else { continue };
                let Some(target) = file_of(&full) else { continue };
                if &target == rel {
                    continue;
                }
                let tmod = module_of(&target);
                if is_module_file(&target) && here.starts_with(&tmod) {
                    continue; // an enclosing module's items
                }
                to.insert(target);
            }
            edges.insert(rel.clone(), to);
        }
        Graph { edges }
    }

    /// Every circle of files: strongly connected components of two or more files (Tarjan).
    fn cycles(&self) -> Vec<Vec<String>> {
        struct Walk<'a> {
            g: &'a Graph,
            index: BTreeMap<&'a str, usize>,
            low: BTreeMap<&'a str, usize>,
            stack: Vec<&'a str>,
            on: BTreeSet<&'a str>,
            out: Vec<Vec<String>>,
        }
        impl<'a> Walk<'a> {
            fn strong(&mut self, v: &'a str) {
                let n = self.index.len();
                self.index.insert(v, n);
                self.low.insert(v, n);
                self.stack.push(v);
                self.on.insert(v);
                let g: &'a Graph = self.g;
                for w in g.edges.get(v).into_iter().flatten() {
                    let w = w.as_str();
                    if !self.index.contains_key(w) {
                        self.strong(w);
                        let lw = self.low[w];
                        let lv = self.low.get_mut(v).unwrap();
                        *lv = (*lv).min(lw);
                    } else if self.on.contains(w) {
                        let iw = self.index[w];
                        let lv = self.low.get_mut(v).unwrap();
                        *lv = (*lv).min(iw);
                    }
                }
                if self.low[v] == self.index[v] {
                    let mut comp = Vec::new();
                    loop {
                        let w = self.stack.pop().unwrap();
                        self.on.remove(w);
                        comp.push(w.to_owned());
                        if w == v {
                            break;
                        }
                    }
                    if comp.len() > 1 {
                        comp.sort();
                        self.out.push(comp);
                    }
                }
            }
        }
        let mut walk = Walk {
            g: self,
            index: BTreeMap::new(),
            low: BTreeMap::new(),
            stack: Vec::new(),
            on: BTreeSet::new(),
            out: Vec::new(),
        };
        for v in self.edges.keys() {
            if !walk.index.contains_key(v.as_str()) {
                walk.strong(v);
            }
        }
        walk.out
    }

    /// Imports from a file under `folder` into a module whose top is one of `above`.
    fn upward(&self, folder: &str, above: &[&str]) -> Vec<String> {
        let mut found = Vec::new();
        for (from, tos) in &self.edges {
            if module_of(from).first().map(String::as_str) != Some(folder) {
                continue;
            }
            for to in tos {
                if module_of(to).first().is_some_and(|top| above.contains(&top.as_str())) {
                    found.push(format!("{from} -> {to}"));
                }
            }
        }
        found
    }
}

/// The module a written path names, from the crate root; `None` for an external crate or a name
/// that is not a module path of this crate.
fn resolve(path: &[String], scope: &[String], modules: &BTreeMap<Vec<String>, String>) -> Option<Vec<String>> {
    let first = path.first()?;
    let mut full = match first.as_str() {
        "crate" => path[1..].to_vec(),
        "self" => scope.iter().chain(&path[1..]).cloned().collect(),
        "super" => {
            let mut base = scope.to_vec();
            let mut rest = path;
            while rest.first().is_some_and(|s| s == "super") {
                base.pop();
                rest = &rest[1..];
            }
            base.into_iter().chain(rest.iter().cloned()).collect()
        }
        // A path relative to a child module file (`use config::Config` in `connection/mod.rs`).
        _ => {
            let child: Vec<String> = scope.iter().chain(std::iter::once(first)).cloned().collect();
            if path.len() < 2 || !modules.contains_key(&child) {
                return None;
            }
            scope.iter().chain(path).cloned().collect()
        }
    };
    // `a::{self, ..}` names `a`.
    if full.last().is_some_and(|s| s == "self") {
        full.pop();
    }
    Some(full)
}

// ---------------------------------------------------------------------------------------------
// The checks on core/src

#[test]
fn the_wire_the_inbound_seam_and_the_helpers_import_nothing_above_them() {
    let graph = Graph::of(&core_sources());
    let above = ["connection", "stream", "progress", "server", "transport", "profile", "features"];
    for folder in ["message", "framing", "handler", "util", "sync"] {
        let found = graph.upward(folder, &above);
        assert!(found.is_empty(), "core/src/{folder} imports from a layer above it:\n{}", found.join("\n"));
    }
}

#[test]
fn the_connection_knows_none_of_the_features_that_plug_into_it() {
    let graph = Graph::of(&core_sources());
    let found = graph.upward("connection", &["stream", "progress", "profile", "features", "server", "transport"]);
    assert!(found.is_empty(), "core/src/connection imports a feature:\n{}", found.join("\n"));
}

#[test]
fn no_files_of_core_import_each_other_in_a_circle() {
    let cycles = Graph::of(&core_sources()).cycles();
    let shown: Vec<String> = cycles.iter().map(|c| c.join(", ")).collect();
    assert!(cycles.is_empty(), "files of core/src import each other in a circle:\n{}", shown.join("\n"));
}

#[test]
fn the_scan_sees_the_imports_of_the_real_tree() {
    // A check that sees nothing passes for nothing: the edges it must find on core/src.
    let graph = Graph::of(&core_sources());
    let to = |from: &str| graph.edges.get(from).unwrap_or_else(|| panic!("no {from}"));
    assert!(to("connection/reader.rs").contains("connection/shared.rs"), "{:?}", to("connection/reader.rs"));
    assert!(to("handler/responder.rs").iter().any(|t| t.starts_with("message/")), "{:?}", to("handler/responder.rs"));
    assert!(to("stream/feature.rs").contains("connection/mod.rs"), "{:?}", to("stream/feature.rs"));
}

// ---------------------------------------------------------------------------------------------
// The check itself, on small synthetic trees

fn tree(files: &[(&str, &str)]) -> Graph {
    Graph::of(&files.iter().map(|(p, t)| (p.to_string(), t.to_string())).collect())
}

fn edges_of(g: &Graph, from: &str) -> Vec<String> {
    g.edges[from].iter().cloned().collect()
}

#[test]
fn use_trees_resolve_to_files() {
    let g = tree(&[
        ("lib.rs", "mod a; mod b; mod c;"),
        ("a/mod.rs", "mod x; mod y; pub(crate) use x::X;"),
        ("a/x.rs", "use super::y::{self, Y};"),
        ("a/y.rs", "use crate::{b::{self, deep::{D, E as F}}, c::*};"),
        ("b/mod.rs", "pub mod deep;"),
        ("b/deep.rs", "pub struct D; pub struct E;"),
        ("c.rs", "pub struct C;"),
    ]);
    assert_eq!(edges_of(&g, "a/mod.rs"), ["a/x.rs"], "a path relative to a child module");
    assert_eq!(edges_of(&g, "a/x.rs"), ["a/y.rs"]);
    assert_eq!(edges_of(&g, "a/y.rs"), ["b/deep.rs", "b/mod.rs", "c.rs"]);
    assert!(g.cycles().is_empty());
}

#[test]
fn paths_in_code_count_and_comments_and_strings_do_not() {
    let g = tree(&[
        ("lib.rs", "mod a; mod b; mod c; mod d;"),
        (
            "a.rs",
            "// use crate::b::B;\n/* crate::c::C /* nested */ crate::c::C */\n\
             fn f<'a>(x: &'a str) -> char { let _ = \"crate::c::C\"; let _ = r#\"crate::c\"#; \
             let _ = crate :: d :: g(); '{' }",
        ),
        ("b.rs", "macro_rules! m { () => { $crate::a::f() } }"),
        ("c.rs", ""),
        ("d.rs", "pub fn g() {}"),
    ]);
    assert_eq!(edges_of(&g, "a.rs"), ["d.rs"]);
    assert!(edges_of(&g, "b.rs").is_empty(), "`$crate` in a macro is the caller's crate");
}

#[test]
fn super_in_an_inline_module_is_the_files_own_module() {
    let g = tree(&[
        ("lib.rs", "mod a;"),
        ("a/mod.rs", "mod x; mod y;"),
        ("a/x.rs", "fn f() {} #[cfg(test)] mod tests { use super::f; use super::super::y::Y; }"),
        ("a/y.rs", "pub struct Y;"),
    ]);
    assert_eq!(edges_of(&g, "a/x.rs"), ["a/y.rs"]);
}

#[test]
fn a_circle_of_files_fails_the_check() {
    let g = tree(&[
        ("lib.rs", "mod a; mod b;"),
        ("a/mod.rs", "mod x; mod y; mod z;"),
        ("a/x.rs", "use super::{y::{Y}};"),
        ("a/y.rs", "pub struct Y(crate::a::z::Z);"),
        ("a/z.rs", "pub struct Z; fn back() { let _ = super::x::f; }"),
        ("b.rs", "use crate::a::x;"),
    ]);
    assert_eq!(g.cycles(), [vec!["a/x.rs".to_owned(), "a/y.rs".to_owned(), "a/z.rs".to_owned()]]);
    // A child using its parent module file's items is no circle.
    let g = tree(&[
        ("lib.rs", "mod a;"),
        ("a/mod.rs", "mod x; use self::x::X; pub struct P;"),
        ("a/x.rs", "use super::P;"),
    ]);
    assert!(g.cycles().is_empty());
}

#[test]
fn an_import_from_a_layer_above_fails_the_check() {
    let g = tree(&[
        ("lib.rs", "mod message; mod connection;"),
        ("message/mod.rs", "mod parse;"),
        ("message/parse.rs", "fn f() -> usize { crate::connection::limits::MAX }"),
        ("connection/mod.rs", "pub mod limits;"),
        ("connection/limits.rs", "pub const MAX: usize = 1;"),
    ]);
    assert_eq!(g.upward("message", &["connection"]), ["message/parse.rs -> connection/limits.rs"]);
    assert!(g.upward("connection", &["message"]).is_empty());
}
