//! Counts of a crate's production code, on Rust parsed by `syn` (the tool behind `scripts/code-counts`,
//! which gives the before → after figures of issue 28's error work).
//!
//! Production code is the module tree reached from `src/lib.rs`, `src/main.rs` and `src/bin/*.rs` through
//! `mod x;` declarations, less every item under `#[cfg(test)]` (a `#[cfg(test)] mod tests;` leaves its
//! whole file out). Comments and strings are the parser's: a `.unwrap_or_default()` in a doc comment or a
//! string is not counted; one inside a macro call (`format!("{}", x.unwrap_or_default())`) is, from the
//! macro's tokens. Counted:
//! - [`Counts::result_string`]: types written `Result<T, String>` (any path ending in `Result`, whose
//!   second argument is the path `String`), in signatures, aliases, casts and bindings alike;
//! - [`Counts::unwrap_or_default`]: calls of a method named `unwrap_or_default`;
//! - [`Counts::long_fns`]: functions and methods with a body whose text (signature to closing brace, not
//!   the doc comment) spans more than 100 lines.

use std::path::{Path, PathBuf};

use proc_macro2::{TokenStream, TokenTree};
use syn::visit::Visit;

/// Why a crate could not be read: the error of module-cycles, whose reading of a crate this shares.
pub use module_cycles::Error;

/// Where one counted thing is: `file:line` and what it is (the function's name and length for a long one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Site {
    /// The source file.
    pub file: PathBuf,
    /// Its 1-based line.
    pub line: usize,
    /// What was counted there (empty but for long functions: `name (N lines)`).
    pub what: String,
}

/// A crate's counts, each with its sites.
#[derive(Debug, Default, Clone)]
pub struct Counts {
    /// Types written `Result<T, String>`.
    pub result_string: Vec<Site>,
    /// Calls of `.unwrap_or_default()`.
    pub unwrap_or_default: Vec<Site>,
    /// Functions with a body of more than 100 lines.
    pub long_fns: Vec<Site>,
}

/// The longest a function may be without being counted by [`Counts::long_fns`].
pub const LONG_FN_LINES: usize = 100;

fn is_cfg_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg")
            && a.meta.require_list().is_ok_and(|l| {
                // `cfg(test)`, and `cfg(all(test, …))`: code that only a test build has
                let t = l.tokens.to_string();
                t == "test" || t.starts_with("all (test") || t.starts_with("all(test")
            })
    })
}

struct Visitor<'a> {
    file: &'a Path,
    counts: &'a mut Counts,
    /// `mod x;` declarations outside `#[cfg(test)]`, to follow.
    children: Vec<String>,
}

impl Visitor<'_> {
    fn site(&self, line: usize, what: String) -> Site {
        Site { file: self.file.to_path_buf(), line, what }
    }

    fn tokens(&mut self, tokens: &TokenStream) {
        let mut after_dot = false;
        for tt in tokens.clone() {
            match &tt {
                TokenTree::Group(g) => self.tokens(&g.stream()),
                TokenTree::Ident(i) if after_dot && i == "unwrap_or_default" => {
                    let s = self.site(i.span().start().line, String::new());
                    self.counts.unwrap_or_default.push(s);
                }
                _ => {}
            }
            after_dot = matches!(&tt, TokenTree::Punct(p) if p.as_char() == '.');
        }
    }

    fn function(&mut self, name: &syn::Ident, start: proc_macro2::Span, block: &syn::Block) {
        let lines = block.brace_token.span.close().end().line + 1 - start.start().line;
        if lines > LONG_FN_LINES {
            let s = self.site(start.start().line, format!("{name} ({lines} lines)"));
            self.counts.long_fns.push(s);
        }
    }
}

impl<'ast> Visit<'ast> for Visitor<'_> {
    fn visit_item(&mut self, i: &'ast syn::Item) {
        let attrs = match i {
            syn::Item::Mod(m) => &m.attrs,
            syn::Item::Fn(f) => &f.attrs,
            syn::Item::Impl(x) => &x.attrs,
            syn::Item::Use(x) => &x.attrs,
            syn::Item::Struct(x) => &x.attrs,
            syn::Item::Enum(x) => &x.attrs,
            syn::Item::Const(x) => &x.attrs,
            syn::Item::Static(x) => &x.attrs,
            syn::Item::Trait(x) => &x.attrs,
            syn::Item::Type(x) => &x.attrs,
            syn::Item::Macro(x) => &x.attrs,
            _ => return syn::visit::visit_item(self, i),
        };
        if is_cfg_test(attrs) {
            return;
        }
        if let syn::Item::Mod(m) = i {
            if m.content.is_none() {
                self.children.push(m.ident.to_string());
            }
        }
        syn::visit::visit_item(self, i);
    }

    fn visit_impl_item_fn(&mut self, f: &'ast syn::ImplItemFn) {
        if is_cfg_test(&f.attrs) {
            return;
        }
        self.function(&f.sig.ident, f.sig.fn_token.span, &f.block);
        syn::visit::visit_impl_item_fn(self, f);
    }

    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        self.function(&f.sig.ident, f.sig.fn_token.span, &f.block);
        syn::visit::visit_item_fn(self, f);
    }

    fn visit_trait_item_fn(&mut self, f: &'ast syn::TraitItemFn) {
        if let Some(b) = &f.default {
            self.function(&f.sig.ident, f.sig.fn_token.span, b);
        }
        syn::visit::visit_trait_item_fn(self, f);
    }

    fn visit_expr_method_call(&mut self, m: &'ast syn::ExprMethodCall) {
        if m.method == "unwrap_or_default" {
            let s = self.site(m.method.span().start().line, String::new());
            self.counts.unwrap_or_default.push(s);
        }
        syn::visit::visit_expr_method_call(self, m);
    }

    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        self.tokens(&m.tokens);
    }

    fn visit_type_path(&mut self, t: &'ast syn::TypePath) {
        if let Some(last) = t.path.segments.last() {
            if last.ident == "Result" {
                if let syn::PathArguments::AngleBracketed(a) = &last.arguments {
                    let args: Vec<_> = a.args.iter().collect();
                    if let [_, syn::GenericArgument::Type(syn::Type::Path(e))] = args.as_slice() {
                        if e.qself.is_none() && e.path.is_ident("String") {
                            let s = self.site(last.ident.span().start().line, String::new());
                            self.counts.result_string.push(s);
                        }
                    }
                }
            }
        }
        syn::visit::visit_type_path(self, t);
    }
}

/// Counts one file into `counts`; gives the `mod x;` children it declares outside `#[cfg(test)]`.
pub fn count_source(file: &Path, text: &str, counts: &mut Counts) -> Result<Vec<String>, Error> {
    let parsed = syn::parse_file(text).map_err(|e| {
        let at = e.span().start();
        Error::Parse(format!("{}:{}:{}: {e}", file.display(), at.line, at.column + 1))
    })?;
    if is_cfg_test(&parsed.attrs) {
        return Ok(Vec::new());
    }
    let mut v = Visitor { file, counts, children: Vec::new() };
    v.visit_file(&parsed);
    Ok(v.children)
}

/// The production code counts of the crate in `crate_dir`.
pub fn crate_counts(crate_dir: &Path) -> Result<Counts, Error> {
    let src = crate_dir.join("src");
    let mut roots: Vec<PathBuf> = ["lib.rs", "main.rs"].iter().map(|r| src.join(r)).filter(|p| p.is_file()).collect();
    let bin = src.join("bin");
    if bin.is_dir() {
        let entries = std::fs::read_dir(&bin).map_err(|e| Error::Io(bin.clone(), e))?;
        for entry in entries {
            let path = entry.map_err(|e| Error::Io(bin.clone(), e))?.path();
            if path.extension().is_some_and(|x| x == "rs") {
                roots.push(path);
            } else if path.join("main.rs").is_file() {
                roots.push(path.join("main.rs"));
            }
        }
    }
    roots.sort();
    let mut counts = Counts::default();
    // (file, the directory its `mod x;` children live in)
    let mut todo: Vec<(PathBuf, PathBuf)> = roots.into_iter().map(|r| (r.clone(), dir_of(&r, true))).collect();
    let mut seen = std::collections::BTreeSet::new();
    while let Some((file, dir)) = todo.pop() {
        if !seen.insert(file.clone()) {
            continue;
        }
        let text = std::fs::read_to_string(&file).map_err(|e| Error::Io(file.clone(), e))?;
        for child in count_source(&file, &text, &mut counts)? {
            let flat = dir.join(format!("{child}.rs"));
            let nested = dir.join(&child).join("mod.rs");
            let path = if flat.is_file() { flat } else { nested };
            if !path.is_file() {
                return Err(Error::Io(path, std::io::ErrorKind::NotFound.into()));
            }
            let d = dir_of(&path, false);
            todo.push((path, d));
        }
    }
    for v in [&mut counts.result_string, &mut counts.unwrap_or_default, &mut counts.long_fns] {
        v.sort_by(|a, b| (&a.file, a.line).cmp(&(&b.file, b.line)));
    }
    Ok(counts)
}

/// Where the children of the module in `file` live: its own directory for a crate root or a `mod.rs`,
/// `a/b/` for `a/b.rs`.
fn dir_of(file: &Path, root: bool) -> PathBuf {
    let parent = file.parent().unwrap_or(Path::new(".")).to_path_buf();
    if root || file.file_name().is_some_and(|n| n == "mod.rs") {
        parent
    } else {
        file.with_extension("")
    }
}
