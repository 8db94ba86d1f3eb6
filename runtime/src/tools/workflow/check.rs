//! The static checks of a workflow script (WF-1), on the syntax tree of tree-sitter's JavaScript grammar:
//! the script parses; its first statement is `export const meta = { … }` whose value is a pure literal
//! with a non-empty `name` and `description`; an inline script's body uses none of `Date.now`,
//! `Math.random`, argless `new Date` — found as nodes of the tree, so the words in a comment or a
//! string do not count.
//!
//! The texts are the reference's (Claude Code 2.1.235 parses with acorn; `probes/claude-code/workflow-*`
//! measured them); a parse error names the first node tree-sitter could not place, which may sit a token
//! away from the one acorn names.

use serde_json::{Map, Number, Value};
use tree_sitter::{Node, Parser, Tree};

/// Longest script accepted, in bytes (WF-1: the schema's `maxLength` of `script`, also applied to a
/// `scriptPath` file).
pub const MAX_SCRIPT_BYTES: usize = 524_288;
/// Width of the source excerpt under a parse error (the reference's code frame).
const FRAME_WIDTH: usize = 80;
/// What follows every parse error.
const PLAIN_JS: &str = "Workflow scripts must be plain JavaScript — common causes are TypeScript syntax (type annotations, interfaces, generics) and broken string quoting or escaping.";
/// The refusal of an inline script that reads the clock or randomness (WF-1).
pub const NOT_DETERMINISTIC: &str = "Workflow scripts must be deterministic: Date.now()/Math.random()/new Date() are unavailable (breaks resume). Stamp results after the workflow returns, or pass timestamps via args.";
/// Keys a meta object may not have.
const RESERVED_KEYS: &[&str] = &["__proto__", "constructor", "prototype"];

/// A phase of `meta.phases`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Phase {
    /// Its title.
    pub title: String,
    /// Its detail line.
    pub detail: Option<String>,
}

/// The `meta` header of a script.
#[derive(Debug, Clone, PartialEq)]
pub struct Meta {
    /// `meta.name` (the script file is named after it).
    pub name: String,
    /// `meta.description` (the launch result's `Summary`).
    pub description: String,
    /// `meta.phases` entries with a string title.
    pub phases: Vec<Phase>,
    /// The whole literal.
    pub value: Value,
}

/// A script that passed the checks: its header and the body after it.
#[derive(Debug, Clone, PartialEq)]
pub struct Parsed {
    /// The header.
    pub meta: Meta,
    /// The source after the `meta` statement (leading blank lines and semicolons dropped).
    pub body: String,
}

/// Why a script is refused: the text after `Invalid workflow script: ` (the reference's words where
/// it has them).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScriptError {
    /// Over [`MAX_SCRIPT_BYTES`].
    #[error("Script exceeds {MAX_SCRIPT_BYTES} bytes")]
    TooLarge,
    /// The grammar did not load (a build fault, not the script's).
    #[error("the JavaScript grammar cannot be loaded: {0}")]
    Grammar(String),
    /// The parser returned no tree.
    #[error("the parser gave up on the script")]
    ParserGaveUp,
    /// A syntax error: `Script parse error: …` with its code frame.
    #[error("{0}")]
    Syntax(String),
    /// The first statement is not the `meta` export.
    #[error("`export const meta = {{ name, description, phases }}` must be the FIRST statement in the script")]
    NoMeta,
    /// The `meta` object is not a plain literal: what is not.
    #[error("meta must be a pure literal: {0}")]
    NotLiteral(String),
    /// `meta.name` is missing or empty.
    #[error("meta.name must be a non-empty string")]
    NoName,
    /// `meta.description` is missing or empty.
    #[error("meta.description must be a non-empty string")]
    NoDescription,
}

/// What makes a `meta` value not a plain literal ([`ScriptError::NotLiteral`]).
struct NotLiteral(String);

impl From<&str> for NotLiteral {
    fn from(s: &str) -> Self {
        NotLiteral(s.to_string())
    }
}

impl From<String> for NotLiteral {
    fn from(s: String) -> Self {
        NotLiteral(s)
    }
}

fn parse_tree(src: &str) -> Result<Tree, ScriptError> {
    let mut parser = Parser::new();
    parser.set_language(&tree_sitter_javascript::LANGUAGE.into()).map_err(|e| ScriptError::Grammar(e.to_string()))?;
    parser.parse(src, None).ok_or(ScriptError::ParserGaveUp)
}

/// Parses `src` and checks its header.
pub fn parse(src: &str) -> Result<Parsed, ScriptError> {
    if src.len() > MAX_SCRIPT_BYTES {
        return Err(ScriptError::TooLarge);
    }
    let tree = parse_tree(src)?;
    let root = tree.root_node();
    if root.has_error() {
        return Err(ScriptError::Syntax(parse_error(src, root)));
    }
    let first = named_children(root).into_iter().find(|n| n.kind() != "comment" && n.kind() != "hash_bang_line");
    let Some(object) = first.and_then(|n| meta_object(n, src)) else {
        return Err(ScriptError::NoMeta);
    };
    let value = literal_object(object, src).map_err(|e| ScriptError::NotLiteral(e.0))?;
    let meta = meta_fields(value)?;
    let end = first.map(|n| n.end_byte()).unwrap_or(0);
    Ok(Parsed { meta, body: body_after(&src[end..]) })
}

/// True when an inline script's body reads the clock or randomness: `Date.now`, `Math.random` (as
/// member expressions, called or not) or `new Date` without arguments. A body that does not parse is
/// not flagged (its error comes from [`parse`]).
pub fn uses_nondeterminism(body: &str) -> bool {
    let Ok(tree) = parse_tree(body) else { return false };
    let mut found = false;
    walk(tree.root_node(), &mut |n| match n.kind() {
        "member_expression" => {
            let object = n.child_by_field_name("object");
            let property = n.child_by_field_name("property");
            if let (Some(o), Some(p)) = (object, property) {
                if o.kind() == "identifier" && p.kind() == "property_identifier" {
                    let pair = (text(o, body), text(p, body));
                    found |= pair == ("Date", "now") || pair == ("Math", "random");
                }
            }
        }
        "new_expression" => {
            let ctor = n.child_by_field_name("constructor");
            let args = n.child_by_field_name("arguments");
            if ctor.is_some_and(|c| c.kind() == "identifier" && text(c, body) == "Date")
                && args.is_none_or(|a| a.named_child_count() == 0)
            {
                found = true;
            }
        }
        _ => {}
    });
    found
}

fn walk<'t>(node: Node<'t>, f: &mut impl FnMut(Node<'t>)) {
    f(node);
    let mut cursor = node.walk();
    for child in node.children(&mut cursor) {
        walk(child, f);
    }
}

fn named_children(node: Node<'_>) -> Vec<Node<'_>> {
    let mut cursor = node.walk();
    node.named_children(&mut cursor).collect()
}

fn text<'s>(node: Node<'_>, src: &'s str) -> &'s str {
    src.get(node.byte_range()).unwrap_or("")
}

/// `export const meta = {…}` (one declarator, `const`): the object node.
fn meta_object<'t>(stmt: Node<'t>, src: &str) -> Option<Node<'t>> {
    if stmt.kind() != "export_statement" {
        return None;
    }
    let decl = stmt.child_by_field_name("declaration")?;
    if decl.kind() != "lexical_declaration" || decl.child_by_field_name("kind").map(|k| text(k, src)) != Some("const") {
        return None;
    }
    let declarators: Vec<Node<'t>> =
        named_children(decl).into_iter().filter(|n| n.kind() == "variable_declarator").collect();
    let [d] = declarators.as_slice() else { return None };
    let name = d.child_by_field_name("name")?;
    let value = unparen(d.child_by_field_name("value")?);
    (name.kind() == "identifier" && text(name, src) == "meta" && value.kind() == "object").then_some(value)
}

fn unparen(mut node: Node<'_>) -> Node<'_> {
    while node.kind() == "parenthesized_expression" {
        match node.named_child(0) {
            Some(inner) => node = inner,
            None => break,
        }
    }
    node
}

/// The body after the meta statement, as the reference cuts it.
fn body_after(rest: &str) -> String {
    let trimmed = rest.trim_start_matches(|c: char| c == ';' || c.is_whitespace());
    // `^[;\s]*\n` removed, then trimStart: together, every leading `;` and blank is dropped
    trimmed.to_string()
}

fn literal_object(node: Node<'_>, src: &str) -> Result<Value, NotLiteral> {
    let mut out = Map::new();
    for prop in named_children(node) {
        match prop.kind() {
            "comment" => continue,
            "pair" => {
                let key = prop.child_by_field_name("key").ok_or("only plain properties allowed in meta")?;
                let name = match key.kind() {
                    "property_identifier" => text(key, src).to_string(),
                    "string" => string_value(key, src),
                    "number" => number_key(text(key, src)),
                    "computed_property_name" => return Err("computed keys not allowed in meta".into()),
                    other => return Err(format!("unsupported key type in meta: {}", estree_type(other)).into()),
                };
                if RESERVED_KEYS.contains(&name.as_str()) {
                    return Err(format!("reserved key name not allowed in meta: {name}").into());
                }
                let value = prop.child_by_field_name("value").ok_or("only plain properties allowed in meta")?;
                out.insert(name, literal(value, src)?);
            }
            "method_definition" => return Err("methods/accessors not allowed in meta".into()),
            "shorthand_property_identifier" => return Err("non-literal node type in meta: Identifier".into()),
            _ => return Err("only plain properties allowed in meta".into()),
        }
    }
    Ok(Value::Object(out))
}

fn literal(node: Node<'_>, src: &str) -> Result<Value, NotLiteral> {
    let node = unparen(node);
    match node.kind() {
        "string" => Ok(Value::String(string_value(node, src))),
        "number" => Ok(number(text(node, src))),
        "true" => Ok(Value::Bool(true)),
        "false" => Ok(Value::Bool(false)),
        "null" => Ok(Value::Null),
        "object" => literal_object(node, src),
        "array" => {
            let mut items = Vec::new();
            let mut expect_item = true;
            let mut cursor = node.walk();
            for child in node.children(&mut cursor) {
                match child.kind() {
                    "[" | "comment" => {}
                    "]" => {}
                    "," => {
                        if expect_item {
                            return Err("sparse arrays not allowed".into());
                        }
                        expect_item = true;
                    }
                    "spread_element" => return Err("spread not allowed in meta".into()),
                    _ => {
                        items.push(literal(child, src)?);
                        expect_item = false;
                    }
                }
            }
            Ok(Value::Array(items))
        }
        "template_string" => {
            let mut out = String::new();
            for part in named_children(node) {
                match part.kind() {
                    "template_substitution" => return Err("template interpolation not allowed in meta".into()),
                    "escape_sequence" => out.push_str(&unescape(text(part, src))),
                    _ => out.push_str(text(part, src)),
                }
            }
            Ok(Value::String(out))
        }
        "unary_expression" => {
            let op = node.child_by_field_name("operator").map(|o| text(o, src));
            let arg = node.child_by_field_name("argument").map(unparen);
            match (op, arg) {
                (Some("-"), Some(a)) if a.kind() == "number" => match number(text(a, src)) {
                    Value::Number(n) => Ok(n
                        .as_f64()
                        .and_then(|f| Number::from_f64(-f))
                        .map(|n| if n.as_f64() == Some(0.0) { Value::from(0) } else { Value::Number(n) })
                        .map(|v| normalise_number(&v))
                        .unwrap_or(Value::Null)),
                    other => Ok(other),
                },
                _ => Err("only negative-number unary allowed in meta".into()),
            }
        }
        other => Err(format!("non-literal node type in meta: {}", estree_type(other)).into()),
    }
}

/// A float that is an integer as an integer (JSON as JavaScript prints it).
fn normalise_number(v: &Value) -> Value {
    match v.as_f64() {
        Some(f) if f.fract() == 0.0 && f.abs() < 9.0e15 => Value::from(f as i64),
        _ => v.clone(),
    }
}

fn number(src: &str) -> Value {
    let clean: String = src.chars().filter(|c| *c != '_').collect();
    let lower = clean.to_ascii_lowercase();
    let parsed = if let Some(h) = lower.strip_prefix("0x") {
        u64::from_str_radix(h, 16).ok().map(|n| n as f64)
    } else if let Some(o) = lower.strip_prefix("0o") {
        u64::from_str_radix(o, 8).ok().map(|n| n as f64)
    } else if let Some(b) = lower.strip_prefix("0b") {
        u64::from_str_radix(b, 2).ok().map(|n| n as f64)
    } else {
        lower.trim_end_matches('n').parse::<f64>().ok()
    };
    parsed.and_then(Number::from_f64).map(|n| normalise_number(&Value::Number(n))).unwrap_or(Value::Null)
}

fn number_key(src: &str) -> String {
    match number(src) {
        Value::Number(n) => n.to_string(),
        _ => src.to_string(),
    }
}

fn string_value(node: Node<'_>, src: &str) -> String {
    let mut out = String::new();
    for part in named_children(node) {
        match part.kind() {
            "escape_sequence" => out.push_str(&unescape(text(part, src))),
            _ => out.push_str(text(part, src)),
        }
    }
    out
}

/// One JavaScript escape sequence (`\n`, `\x41`, `\u{1F600}`, a line continuation) as its text.
fn unescape(seq: &str) -> String {
    let body = seq.strip_prefix('\\').unwrap_or(seq);
    let hex = |h: &str| u32::from_str_radix(h, 16).ok().and_then(char::from_u32).map(String::from);
    match body {
        "n" => "\n".into(),
        "t" => "\t".into(),
        "r" => "\r".into(),
        "b" => "\u{8}".into(),
        "f" => "\u{c}".into(),
        "v" => "\u{b}".into(),
        "0" => "\0".into(),
        _ if body.starts_with('\n') || body.starts_with("\r\n") || body.starts_with('\r') => String::new(),
        _ if body.starts_with("u{") => hex(body.trim_start_matches("u{").trim_end_matches('}')).unwrap_or_default(),
        _ if body.starts_with('u') && body.len() == 5 => hex(&body[1..]).unwrap_or_default(),
        _ if body.starts_with('x') && body.len() == 3 => hex(&body[1..]).unwrap_or_default(),
        other => other.to_string(),
    }
}

/// The ESTree node type acorn would name for a tree-sitter node kind.
fn estree_type(kind: &str) -> String {
    let known = [
        ("identifier", "Identifier"),
        ("call_expression", "CallExpression"),
        ("member_expression", "MemberExpression"),
        ("subscript_expression", "MemberExpression"),
        ("binary_expression", "BinaryExpression"),
        ("arrow_function", "ArrowFunctionExpression"),
        ("function_expression", "FunctionExpression"),
        ("new_expression", "NewExpression"),
        ("ternary_expression", "ConditionalExpression"),
        ("assignment_expression", "AssignmentExpression"),
        ("await_expression", "AwaitExpression"),
        ("update_expression", "UpdateExpression"),
        ("sequence_expression", "SequenceExpression"),
        ("this", "ThisExpression"),
        ("undefined", "Identifier"),
        ("regex", "Literal"),
        ("class", "ClassExpression"),
        ("tagged_template", "TaggedTemplateExpression"),
    ];
    known
        .iter()
        .find(|(k, _)| *k == kind)
        .map(|(_, t)| t.to_string())
        .unwrap_or_else(|| kind.split('_').map(|w| w[..1].to_ascii_uppercase() + &w[1..]).collect::<String>())
}

fn meta_fields(value: Value) -> Result<Meta, ScriptError> {
    let name = value.get("name").and_then(Value::as_str).filter(|s| !s.is_empty());
    let Some(name) = name.map(str::to_string) else {
        return Err(ScriptError::NoName);
    };
    let description = value.get("description").and_then(Value::as_str).filter(|s| !s.is_empty());
    let Some(description) = description.map(str::to_string) else {
        return Err(ScriptError::NoDescription);
    };
    let phases = value
        .get("phases")
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(|p| {
                    let title = p.get("title")?.as_str()?.to_string();
                    Some(Phase { title, detail: p.get("detail").and_then(Value::as_str).map(str::to_string) })
                })
                .collect()
        })
        .unwrap_or_default();
    Ok(Meta { name, description, phases, value })
}

/// `Script parse error: Unexpected token (L:C)` with the reference's code frame (line 1-based, column
/// 0-based, at the token a left-to-right parser stops at). tree-sitter's ERROR node starts where the
/// construct it could not finish began: when that is a keyword or punctuation token (`const` in
/// `const = 3`), the parser rejected the token after it, so that one is named — measured on 2.1.235:
/// `const = 3` on line 2 is `Unexpected token (2:6)` with the caret under `=`
/// (`probes/workflow/refusals.toml`); when it is a whole node (`2` in `foo(1 2)`), that node.
fn parse_error(src: &str, root: Node<'_>) -> String {
    let mut at: Option<tree_sitter::Point> = None;
    walk(root, &mut |n| {
        if at.is_none() && (n.is_error() || n.is_missing()) {
            at = Some(if n.is_error() { rejected_token(n).start_position() } else { n.start_position() });
        }
    });
    let Some(p) = at else {
        return format!("Script parse error: Unexpected token. {PLAIN_JS}");
    };
    let line = src.split('\n').nth(p.row).unwrap_or("").trim_end_matches('\r');
    let chars: Vec<char> = line.chars().collect();
    let col = line.get(..p.column.min(line.len())).map(|s| s.chars().count()).unwrap_or(0);
    let s = col.min(chars.len());
    let a = s.saturating_sub(FRAME_WIDTH / 2).min(chars.len().saturating_sub(FRAME_WIDTH));
    let shown: String = chars.iter().skip(a).take(FRAME_WIDTH).collect();
    let caret = format!("{}^", " ".repeat(s - a));
    format!("Script parse error: Unexpected token ({}:{col})\n\n{shown}\n{caret}\n\n{PLAIN_JS}", p.row + 1)
}

/// The first token inside an ERROR node that the grammar could not use: the error node's first child
/// that is itself an error or comes after the last complete child, else the node itself.
fn first_leaf(n: Node<'_>) -> Node<'_> {
    let mut cursor = n.walk();
    let children: Vec<Node<'_>> = n.children(&mut cursor).collect();
    children.iter().find(|c| c.is_error()).map(|c| first_leaf(*c)).unwrap_or(n)
}

/// The token a left-to-right parser rejects in the ERROR node `n` (see [`parse_error`]): after a
/// leading keyword or punctuation token, the next token of the source; else where `n` starts.
fn rejected_token(n: Node<'_>) -> Node<'_> {
    let inner = first_leaf(n);
    let Some(lead) = inner.child(0) else { return inner };
    if lead.is_named() || lead.child_count() > 0 {
        return inner;
    }
    next_token(lead).unwrap_or(inner)
}

/// The leaf that follows `n` in the source (the first leaf of the nearest following sibling up the tree).
fn next_token(n: Node<'_>) -> Option<Node<'_>> {
    let mut cur = n;
    let mut next = loop {
        if let Some(s) = cur.next_sibling() {
            break s;
        }
        cur = cur.parent()?;
    };
    while let Some(c) = next.child(0) {
        next = c;
    }
    Some(next)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(src: &str) -> String {
        parse(src).err().map(|e| e.to_string()).unwrap_or_else(|| panic!("accepted: {src}"))
    }

    #[test]
    fn header_rules() {
        let ok = parse("export const meta = { name: 'a', description: 'b', phases: [{ title: 'Go', detail: \"x\\ty\" }] }\nphase('Go')\nreturn await agent('p')\n")
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(ok.meta.name, "a");
        assert_eq!(ok.meta.phases, vec![Phase { title: "Go".into(), detail: Some("x\ty".into()) }]);
        assert_eq!(ok.body, "phase('Go')\nreturn await agent('p')\n");
        let first = "`export const meta = { name, description, phases }` must be the FIRST statement in the script";
        assert_eq!(err("const x = 1\nexport const meta = { name: 'a', description: 'b' }\n"), first);
        assert_eq!(err("export let meta = { name: 'a', description: 'b' }\n"), first);
        assert_eq!(
            err("export const meta = { name: N, description: 'b' }\n"),
            "meta must be a pure literal: non-literal node type in meta: Identifier"
        );
        assert_eq!(
            err("export const meta = { name: `a${1}`, description: 'b' }\n"),
            "meta must be a pure literal: template interpolation not allowed in meta"
        );
        assert_eq!(
            err("export const meta = { name: 'a', description: 'b', n: f() }\n"),
            "meta must be a pure literal: non-literal node type in meta: CallExpression"
        );
        assert_eq!(
            err("export const meta = { name: 'a', description: 'b', ...x }\n"),
            "meta must be a pure literal: only plain properties allowed in meta"
        );
        assert_eq!(err("export const meta = { name: 'x' }\n"), "meta.description must be a non-empty string");
        assert_eq!(err("export const meta = { description: 'x' }\n"), "meta.name must be a non-empty string");
        let ok =
            parse("// header\nexport const meta = { name: `n`, description: 'd', n: -2, l: [1, 'a'], o: { t: true } }")
                .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(ok.meta.value["n"], -2);
        assert_eq!(ok.meta.value["l"], serde_json::json!([1, "a"]));
    }

    #[test]
    fn parse_errors_name_the_place() {
        let e = err("export const meta = { name: 'x', description: 'y' }\nconst = 3\n");
        // measured on 2.1.235: the token after `const` (`probes/workflow/refusals.toml`)
        assert!(e.starts_with("Script parse error: Unexpected token (2:6)"), "{e}");
        assert!(e.contains("\n\nconst = 3\n      ^\n"), "{e}");
        // a whole node the grammar could not place is named itself
        assert!(err("export const meta = { name: 'x', description: 'y' }\nfoo(1 2)\n")
            .starts_with("Script parse error: Unexpected token (2:6)"));
        assert!(e.ends_with(PLAIN_JS), "{e}");
    }

    #[test]
    fn determinism_is_read_from_the_tree() {
        assert!(uses_nondeterminism("const t = Date.now()"));
        assert!(uses_nondeterminism("const r = Math.random()"));
        assert!(uses_nondeterminism("const d = new Date()"));
        assert!(uses_nondeterminism("const d = new Date"));
        assert!(uses_nondeterminism("const f = Date.now"));
        assert!(!uses_nondeterminism("const d = new Date(0)"));
        assert!(!uses_nondeterminism("// Date.now() in a comment\nconst s = 'Math.random()'\nreturn s"));
        assert!(!uses_nondeterminism("const x = Date['now']"));
    }
}
