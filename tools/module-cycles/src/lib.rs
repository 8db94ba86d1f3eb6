//! Module import cycles of the workspace's crates, on Rust parsed by `syn` (the check behind
//! `scripts/module-cycles`, which `.ci/run` runs with `--max 1`).
//!
//! For each crate it builds the graph of its modules, one node per source file (`src/a/b.rs` and
//! `src/a/b/mod.rs` are module `a::b`; `src/bin/` is left out), with an edge A → B when A's code names B:
//! a `use` of `crate::…`, `super::…`, `self::…` or of one of the module's own child modules (`read::Read`
//! in `tools/mod.rs`), and the same paths written inline (`crate::b::f()`), also inside macro calls
//! (their tokens, as the lexer gives them). A path is resolved to the longest module prefix that exists
//! (`crate::tools::Registry` names module `tools`, `crate::tools::fs::confine` names `tools::fs`).
//! Comments and strings are the parser's (a `/**` in a doc comment or a `//` in a string hides
//! nothing), and items under `#[cfg(test)]` are left out: they do not shape the design.
//!
//! [`crate_graph`] gives a crate's graph, [`crate_cycles`] its strongly connected components of more than one module (Tarjan),
//! largest first.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use proc_macro2::{Spacing, TokenStream, TokenTree};
use syn::visit::Visit;

/// A module's path inside its crate (`["tools", "fs"]`; the crate root is empty).
pub type Module = Vec<String>;

/// Why a crate could not be read.
#[derive(Debug)]
pub enum Error {
    /// A directory or file could not be read.
    Io(PathBuf, std::io::Error),
    /// A source file is not Rust `syn` can parse (file:line:col and the parser's message).
    Parse(String),
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Io(p, e) => write!(f, "{}: {e}", p.display()),
            Error::Parse(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for Error {}

/// The members of the workspace at `root` (its Cargo.toml's `[workspace] members`) that have a `src/`,
/// sorted: the crates the workspace's checks (module-cycles, code-counts) read when given none.
pub fn workspace_members(root: &Path) -> Result<Vec<PathBuf>, Box<dyn std::error::Error>> {
    let manifest = root.join("Cargo.toml");
    let text = std::fs::read_to_string(&manifest).map_err(|e| format!("{}: {e}", manifest.display()))?;
    let doc: toml::Table = toml::from_str(&text).map_err(|e| format!("{}: {e}", manifest.display()))?;
    let names = doc
        .get("workspace")
        .and_then(|w| w.get("members"))
        .and_then(|m| m.as_array())
        .ok_or_else(|| format!("{}: no [workspace] members", manifest.display()))?;
    let mut dirs: Vec<PathBuf> =
        names.iter().filter_map(|n| n.as_str()).map(|n| root.join(n)).filter(|d| d.join("src").is_dir()).collect();
    dirs.sort();
    Ok(dirs)
}

/// Every `.rs` file under `src` reachable as a module, by module path.
pub fn module_files(src: &Path) -> Result<BTreeMap<Module, PathBuf>, Error> {
    let mut out = BTreeMap::new();
    let mut dirs = vec![src.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        let entries = std::fs::read_dir(&dir).map_err(|e| Error::Io(dir.clone(), e))?;
        for entry in entries {
            let path = entry.map_err(|e| Error::Io(dir.clone(), e))?.path();
            if path.is_dir() {
                dirs.push(path);
                continue;
            }
            if path.extension().is_none_or(|x| x != "rs") {
                continue;
            }
            let Ok(rel) = path.with_extension("").strip_prefix(src).map(Path::to_path_buf) else { continue };
            let mut parts: Module = rel.iter().map(|p| p.to_string_lossy().into_owned()).collect();
            if parts.last().is_some_and(|l| ["mod", "lib", "main"].contains(&l.as_str())) {
                parts.pop();
            }
            if parts.first().is_some_and(|f| f == "bin") {
                continue;
            }
            out.insert(parts, path);
        }
    }
    Ok(out)
}

/// The module graph of a crate given as its modules' sources (module path → (file name for errors,
/// source text)): each module → the other modules its code names.
pub fn module_graph(sources: &BTreeMap<Module, (String, String)>) -> Result<BTreeMap<Module, BTreeSet<Module>>, Error> {
    let modules: BTreeSet<Module> = sources.keys().cloned().collect();
    let mut graph = BTreeMap::new();
    for (module, (file, text)) in sources {
        let parsed = syn::parse_file(text).map_err(|e| {
            let at = e.span().start();
            Error::Parse(format!("{file}:{}:{}: {e}", at.line, at.column + 1))
        })?;
        let mut refs = Refs { modules: &modules, here: module.clone(), found: BTreeSet::new() };
        refs.visit_file(&parsed);
        refs.found.remove(module);
        graph.insert(module.clone(), refs.found);
    }
    Ok(graph)
}

/// The module graph of the crate in `crate_dir` (its `src/`).
pub fn crate_graph(crate_dir: &Path) -> Result<BTreeMap<Module, BTreeSet<Module>>, Error> {
    let mut sources = BTreeMap::new();
    for (module, path) in module_files(&crate_dir.join("src"))? {
        let text = std::fs::read_to_string(&path).map_err(|e| Error::Io(path.clone(), e))?;
        sources.insert(module, (path.display().to_string(), text));
    }
    module_graph(&sources)
}

/// A crate's import cycles: its strongly connected components of more than one module, each sorted,
/// largest first.
pub fn crate_cycles(crate_dir: &Path) -> Result<Vec<Vec<Module>>, Error> {
    Ok(cycles(&crate_graph(crate_dir)?))
}

/// The strongly connected components of more than one node (Tarjan), each sorted, largest first.
pub fn cycles(graph: &BTreeMap<Module, BTreeSet<Module>>) -> Vec<Vec<Module>> {
    struct Tarjan<'a> {
        graph: &'a BTreeMap<Module, BTreeSet<Module>>,
        index: BTreeMap<&'a Module, usize>,
        low: BTreeMap<&'a Module, usize>,
        stack: Vec<&'a Module>,
        on: BTreeSet<&'a Module>,
        out: Vec<Vec<Module>>,
    }
    impl<'a> Tarjan<'a> {
        fn strong(&mut self, v: &'a Module) {
            let i = self.index.len();
            self.index.insert(v, i);
            self.low.insert(v, i);
            self.stack.push(v);
            self.on.insert(v);
            for w in self.graph.get(v).into_iter().flatten() {
                let Some((w, _)) = self.graph.get_key_value(w) else { continue };
                if let Some(&wi) = self.index.get(w) {
                    if self.on.contains(w) {
                        let low = self.low[v].min(wi);
                        self.low.insert(v, low);
                    }
                } else {
                    self.strong(w);
                    let low = self.low[v].min(self.low[w]);
                    self.low.insert(v, low);
                }
            }
            if self.low[v] == self.index[v] {
                let mut comp = Vec::new();
                while let Some(w) = self.stack.pop() {
                    self.on.remove(w);
                    comp.push(w.clone());
                    if w == v {
                        break;
                    }
                }
                self.out.push(comp);
            }
        }
    }
    let mut t = Tarjan {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in graph.keys() {
        if !t.index.contains_key(v) {
            t.strong(v);
        }
    }
    let mut comps: Vec<Vec<Module>> = t.out.into_iter().filter(|c| c.len() > 1).collect();
    for c in &mut comps {
        c.sort();
    }
    comps.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
    comps
}

/// A module as the report names it (`tools::fs`; the root is `(crate root)`).
pub fn name(m: &Module) -> String {
    if m.is_empty() {
        "(crate root)".to_string()
    } else {
        m.join("::")
    }
}

/// The module a path names, seen from module `here` (which may be inside an inline `mod`), or `None`
/// when it names no module of the crate (`std::…`, a local, a type).
fn resolve(segs: &[String], here: &Module, modules: &BTreeSet<Module>) -> Option<Module> {
    let first = segs.first()?;
    let (base, rest): (Module, &[String]) = match first.as_str() {
        "crate" => (Vec::new(), &segs[1..]),
        "super" | "self" => {
            let mut base = here.clone();
            let mut rest = segs;
            while let Some(s) = rest.first().filter(|s| *s == "super" || *s == "self") {
                if s == "super" {
                    base.pop();
                }
                rest = &rest[1..];
            }
            (base, rest)
        }
        // a child module named without `self::` (`read::Read` in tools/mod.rs); one segment alone is a
        // local or a value, not a path into the child
        _ if segs.len() > 1 && modules.contains(&[here.as_slice(), &segs[..1]].concat()) => (here.clone(), segs),
        _ => return None,
    };
    let mut best = None;
    for k in 0..=rest.len() {
        let cand = [base.as_slice(), &rest[..k]].concat();
        if modules.contains(&cand) {
            best = Some(cand);
        }
    }
    best
}

/// Collects the modules a file's code names.
struct Refs<'a> {
    modules: &'a BTreeSet<Module>,
    /// the module the visitor is in: the file's, then each inline `mod` it enters
    here: Module,
    found: BTreeSet<Module>,
}

impl Refs<'_> {
    fn path(&mut self, segs: &[String]) {
        if let Some(m) = resolve(segs, &self.here, self.modules) {
            // a path into an inline module lands on the file that holds it
            let file = (0..=m.len()).rev().map(|k| m[..k].to_vec()).find(|p| self.modules.contains(p));
            self.found.extend(file);
        }
    }

    /// Each path a `use` tree names (`a::{b, c::{d as e, *}}` → `a::b`, `a::c::d`, `a::c`).
    fn use_tree(&mut self, prefix: &mut Vec<String>, tree: &syn::UseTree) {
        match tree {
            syn::UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                self.use_tree(prefix, &p.tree);
                prefix.pop();
            }
            syn::UseTree::Name(n) if n.ident == "self" => self.path(prefix),
            syn::UseTree::Name(n) => self.path(&[prefix.as_slice(), &[n.ident.to_string()]].concat()),
            syn::UseTree::Rename(r) => self.path(&[prefix.as_slice(), &[r.ident.to_string()]].concat()),
            syn::UseTree::Glob(_) => self.path(prefix),
            syn::UseTree::Group(g) => {
                for t in &g.items {
                    self.use_tree(prefix, t);
                }
            }
        }
    }

    /// The paths in a macro call's tokens: each run `ident (:: ident)*` (`$crate` read as `crate`) not
    /// preceded by `::`, at every level of nesting.
    fn tokens(&mut self, tokens: TokenStream) {
        let toks: Vec<TokenTree> = tokens.into_iter().collect();
        let colons = |i: usize| {
            matches!((toks.get(i), toks.get(i + 1)), (Some(TokenTree::Punct(a)), Some(TokenTree::Punct(b)))
                if a.as_char() == ':' && a.spacing() == Spacing::Joint && b.as_char() == ':')
        };
        let mut i = 0;
        while i < toks.len() {
            match &toks[i] {
                TokenTree::Group(g) => {
                    self.tokens(g.stream());
                    i += 1;
                }
                TokenTree::Ident(id) if i < 2 || !colons(i - 2) => {
                    let dollar = i > 0 && matches!(&toks[i - 1], TokenTree::Punct(p) if p.as_char() == '$');
                    let mut segs = vec![if dollar && id == "crate" { "crate".to_string() } else { id.to_string() }];
                    if dollar && id != "crate" {
                        i += 1;
                        continue;
                    }
                    let mut j = i + 1;
                    while colons(j) {
                        let Some(TokenTree::Ident(next)) = toks.get(j + 2) else { break };
                        segs.push(next.to_string());
                        j += 3;
                    }
                    if segs.len() > 1 {
                        self.path(&segs);
                    }
                    i = j;
                }
                _ => i += 1,
            }
        }
    }
}

/// `#[cfg(test)]`
fn cfg_test(attrs: &[syn::Attribute]) -> bool {
    attrs
        .iter()
        .any(|a| a.path().is_ident("cfg") && matches!(&a.meta, syn::Meta::List(l) if l.tokens.to_string() == "test"))
}

fn item_attrs(item: &syn::Item) -> &[syn::Attribute] {
    use syn::Item;
    match item {
        Item::Const(i) => &i.attrs,
        Item::Enum(i) => &i.attrs,
        Item::ExternCrate(i) => &i.attrs,
        Item::Fn(i) => &i.attrs,
        Item::ForeignMod(i) => &i.attrs,
        Item::Impl(i) => &i.attrs,
        Item::Macro(i) => &i.attrs,
        Item::Mod(i) => &i.attrs,
        Item::Static(i) => &i.attrs,
        Item::Struct(i) => &i.attrs,
        Item::Trait(i) => &i.attrs,
        Item::TraitAlias(i) => &i.attrs,
        Item::Type(i) => &i.attrs,
        Item::Union(i) => &i.attrs,
        Item::Use(i) => &i.attrs,
        _ => &[],
    }
}

impl<'ast> Visit<'ast> for Refs<'_> {
    fn visit_item(&mut self, item: &'ast syn::Item) {
        if !cfg_test(item_attrs(item)) {
            syn::visit::visit_item(self, item);
        }
    }

    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        if let Some((_, items)) = &m.content {
            self.here.push(m.ident.to_string());
            for item in items {
                self.visit_item(item);
            }
            self.here.pop();
        }
    }

    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        if u.leading_colon.is_none() {
            self.use_tree(&mut Vec::new(), &u.tree);
        }
    }

    /// `pub(crate)`, `pub(in crate::shell)`: who may see an item, not a module it uses.
    fn visit_visibility(&mut self, _: &'ast syn::Visibility) {}

    fn visit_path(&mut self, p: &'ast syn::Path) {
        if p.leading_colon.is_none() {
            let segs: Vec<String> = p.segments.iter().map(|s| s.ident.to_string()).collect();
            self.path(&segs);
        }
        syn::visit::visit_path(self, p);
    }

    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        syn::visit::visit_macro(self, m);
        self.tokens(m.tokens.clone());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn graph(files: &[(&str, &str)]) -> BTreeMap<Module, BTreeSet<Module>> {
        let sources = files
            .iter()
            .map(|(m, text)| {
                let module: Module = m.split("::").filter(|s| !s.is_empty()).map(str::to_string).collect();
                (module, (m.to_string(), text.to_string()))
            })
            .collect();
        module_graph(&sources).unwrap_or_else(|e| panic!("{e}"))
    }

    fn edges(g: &BTreeMap<Module, BTreeSet<Module>>, from: &str) -> Vec<String> {
        let from: Module = from.split("::").filter(|s| !s.is_empty()).map(str::to_string).collect();
        g[&from].iter().map(name).collect()
    }

    #[test]
    fn a_doc_comment_holding_a_block_opener_and_a_string_holding_a_line_comment_hide_no_import() {
        let g = graph(&[
            ("", "pub mod a; pub mod b; pub mod c; pub mod d;"),
            (
                "a",
                "//! A rule like `x/**` matches below x.\n\
                 /// and so does `y/**`\n\
                 const URL: &str = \"http://example.com/*\";\n\
                 use crate::b::B;\n\
                 fn f() -> &'static str { let _ = \"// not a comment\"; crate::c::g(); \"*/\" }\n\
                 use super::d;\n",
            ),
            ("b", "pub struct B;"),
            ("c", "pub fn g() {}"),
            ("d", ""),
        ]);
        assert_eq!(edges(&g, "a"), ["b", "c", "d"]);
    }

    #[test]
    fn use_groups_children_macros_and_inline_modules_resolve_to_files() {
        let g = graph(&[
            ("", "pub mod tools; pub mod x; pub mod y; pub use tools::Read;"),
            (
                "tools",
                "mod read; mod grep;\n\
                 pub use read::Read;\n\
                 use crate::{x::{self, X as Y}, y::*};\n\
                 pub(crate) fn f(read: u8) -> u8 { read }\n\
                 pub(in crate::y) struct Z;\n\
                 #[cfg(test)] mod tests { use crate::nothing; }\n",
            ),
            ("tools::read", "pub struct Read; mod inner { use super::super::grep::G; }"),
            ("tools::grep", "fn f() { println!(\"{}\", crate::x::name()); }"),
            ("x", "pub fn name() -> &'static str { \"\" } #[cfg(test)] use crate::tools;"),
            ("y", ""),
        ]);
        assert_eq!(edges(&g, "tools"), ["tools::read", "x", "y"]);
        assert_eq!(edges(&g, "tools::read"), ["tools::grep"]);
        assert_eq!(edges(&g, "tools::grep"), ["x"]);
        assert!(edges(&g, "x").is_empty());
        // a visibility names no module: `pub(crate)` is no edge to the root, `pub(in crate::y)` none to y
        assert!(!g.values().flatten().any(|m| m.is_empty()), "{g:?}");
    }

    #[test]
    fn a_cycle_is_one_component_and_a_chain_none() {
        let g = graph(&[
            ("", "pub mod a; pub mod b; pub mod c; pub mod d;"),
            ("a", "use crate::b::f;"),
            ("b", "pub fn f() { crate::c::g() }"),
            ("c", "pub fn g() { let _ = super::a::h; }"),
            ("d", "use crate::a;"),
        ]);
        let names: Vec<Vec<String>> = cycles(&g).iter().map(|c| c.iter().map(name).collect()).collect();
        assert_eq!(names, [["a", "b", "c"]]);
        let chain = graph(&[("", "pub mod a; pub mod b;"), ("a", "use crate::b::f;"), ("b", "pub fn f() {}")]);
        assert!(cycles(&chain).is_empty());
    }

    #[test]
    fn a_file_that_does_not_parse_is_an_error_at_its_place() {
        let sources = BTreeMap::from([(Vec::new(), ("src/lib.rs".to_string(), "fn f() {\n  let = ;\n}".to_string()))]);
        let e = module_graph(&sources).err().unwrap_or_else(|| panic!("parsed")).to_string();
        assert!(e.starts_with("src/lib.rs:2:"), "{e}");
    }
}
