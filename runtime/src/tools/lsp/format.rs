//! The result texts of the nine operations (LSP-1, LSP-5), ported from Claude Code 2.1.235's formatter
//! (read in the binary's bundled source and checked against its results in
//! `probes/claude-code/lsp-*.toml`): locations shown `path:line:col`, 1-based (LSP-2), paths relative
//! to the cwd when that is shorter and does not climb two levels; counts of results and of files;
//! locations without a URI dropped (the reference logs them as malformed server data).
//!
//! Answers are taken as JSON, not as typed `lsp-types` values: the formatter must take malformed
//! answers (a location without `uri`, a symbol without `location`) the way the reference does — drop
//! the bad part, keep the rest — where a typed parse would refuse the whole answer.

use crate::profile::{Profile, Switch};
use serde_json::Value;
use std::path::{Component, Path, PathBuf};

/// From Claude Code 2.1.334 findReferences says `across 1 file` (was `across 1 files`; more files keep
/// `files`): measured by `claude-code.lsp-inputs` (result 6, `docs/changes/2.1.334.md`; 2.1.333 and
/// every release before it say `1 files`).
pub const ONE_FILE_SINGULAR: Switch =
    Switch { name: "LSP findReferences says across 1 file", since: "2.1.334", probe: "claude-code.lsp-inputs" };

/// The text, the number of results and the number of files they are in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Formatted {
    /// What the model reads.
    pub text: String,
    /// Results (definitions, references, symbols, calls).
    pub result_count: usize,
    /// Files holding them.
    pub file_count: usize,
}

/// The reference's symbol kind names (LSP `SymbolKind`).
pub fn kind_name(kind: &Value) -> &'static str {
    const NAMES: [&str; 26] = [
        "File",
        "Module",
        "Namespace",
        "Package",
        "Class",
        "Method",
        "Property",
        "Field",
        "Constructor",
        "Enum",
        "Interface",
        "Function",
        "Variable",
        "Constant",
        "String",
        "Number",
        "Boolean",
        "Array",
        "Object",
        "Key",
        "Null",
        "EnumMember",
        "Struct",
        "Event",
        "Operator",
        "TypeParameter",
    ];
    kind.as_u64().and_then(|k| NAMES.get((k as usize).wrapping_sub(1))).copied().unwrap_or("Unknown")
}

/// Decodes `%XX` escapes (invalid sequences stay as they are).
fn percent_decode(s: &str) -> String {
    let hex = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            if let (Some(h), Some(l)) = (hex(b[i + 1]), hex(b[i + 2])) {
                out.push(h * 16 + l);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8(out).unwrap_or_else(|_| s.to_string())
}

/// The path of a `file://` URI (the reference strips the scheme and decodes the escapes).
pub fn uri_path(uri: &str) -> String {
    percent_decode(uri.strip_prefix("file://").unwrap_or(uri))
}

/// `to` relative to `from` (both absolute, lexically), like Node's `path.relative`.
fn relative(from: &Path, to: &Path) -> PathBuf {
    let f: Vec<Component> = from.components().collect();
    let t: Vec<Component> = to.components().collect();
    let common = f.iter().zip(&t).take_while(|(a, b)| a == b).count();
    let mut out = PathBuf::new();
    for _ in common..f.len() {
        out.push("..");
    }
    for c in &t[common..] {
        out.push(c.as_os_str());
    }
    out
}

/// A URI as the reference shows it: relative to `cwd` when that is shorter and does not start with
/// `../../`, else the absolute path; `<unknown location>` without a URI.
pub fn format_uri(uri: Option<&str>, cwd: &Path) -> String {
    let Some(uri) = uri else { return "<unknown location>".into() };
    let path = uri_path(uri);
    let rel = relative(cwd, Path::new(&path)).to_string_lossy().into_owned();
    if rel.len() < path.len() && !rel.starts_with("../../") {
        return rel;
    }
    path
}

fn line_col(range: &Value) -> (u64, u64) {
    (range["start"]["line"].as_u64().unwrap_or(0) + 1, range["start"]["character"].as_u64().unwrap_or(0) + 1)
}

/// A `Location` or a `LocationLink` as `{uri, range}` (a link's selection range, else its range).
pub fn as_location(v: &Value) -> Value {
    if v.get("targetUri").is_some() {
        let range = v.get("targetSelectionRange").filter(|r| !r.is_null()).or(v.get("targetRange"));
        return serde_json::json!({"uri": v["targetUri"], "range": range.cloned().unwrap_or(Value::Null)});
    }
    v.clone()
}

fn has_uri(v: &Value) -> bool {
    v.get("uri").and_then(Value::as_str).is_some_and(|u| !u.is_empty())
}

fn loc_text(v: &Value, cwd: &Path) -> String {
    let (l, c) = line_col(&v["range"]);
    format!("{}:{l}:{c}", format_uri(v["uri"].as_str(), cwd))
}

fn files(uris: impl Iterator<Item = String>) -> usize {
    uris.collect::<std::collections::BTreeSet<_>>().len()
}

/// Groups items by their formatted URI, in first-seen order.
fn group<'a>(items: &[&'a Value], uri: impl Fn(&Value) -> Option<&str>, cwd: &Path) -> Vec<(String, Vec<&'a Value>)> {
    let mut out: Vec<(String, Vec<&Value>)> = Vec::new();
    for it in items {
        let key = format_uri(uri(it), cwd);
        match out.iter_mut().find(|(k, _)| *k == key) {
            Some((_, v)) => v.push(it),
            None => out.push((key, vec![it])),
        }
    }
    out
}

fn plural(n: usize, word: &str) -> String {
    if n == 1 {
        word.to_string()
    } else {
        format!("{word}s")
    }
}

const NO_DEFINITION: &str = "No definition found. This may occur if the cursor is not on a symbol, or if the definition is in an external library not indexed by the LSP server.";
const NO_REFERENCES: &str = "No references found. This may occur if the symbol has no usages, or if the LSP server has not fully indexed the workspace.";
const NO_HOVER: &str = "No hover information available. This may occur if the cursor is not on a symbol, or if the LSP server has not fully indexed the file.";
const NO_DOC_SYMBOLS: &str = "No symbols found in document. This may occur if the file is empty, not supported by the LSP server, or if the server has not fully indexed the file.";
const NO_WS_SYMBOLS: &str = "No symbols found in workspace. This may occur if the workspace is empty, or if the LSP server has not finished indexing the project.";
/// No item at the position (prepareCallHierarchy, and the first step of incoming/outgoing calls).
pub const NO_CALL_ITEM: &str = "No call hierarchy item found at this position";

fn definitions(result: &Value, cwd: &Path) -> Formatted {
    let list: Vec<Value> = match result {
        Value::Array(a) => a.iter().map(as_location).collect(),
        Value::Null => vec![],
        v => vec![as_location(v)],
    };
    let good: Vec<&Value> = list.iter().filter(|l| has_uri(l)).collect();
    let (result_count, file_count) = (good.len(), files(good.iter().map(|l| l["uri"].to_string())));
    let text = match result {
        Value::Null => NO_DEFINITION.to_string(),
        Value::Array(_) if good.is_empty() => NO_DEFINITION.to_string(),
        Value::Array(_) if good.len() == 1 => format!("Defined in {}", loc_text(good[0], cwd)),
        Value::Array(_) => {
            let lines: Vec<String> = good.iter().map(|l| format!("  {}", loc_text(l, cwd))).collect();
            format!("Found {} definitions:\n{}", good.len(), lines.join("\n"))
        }
        v => format!("Defined in {}", loc_text(&as_location(v), cwd)),
    };
    Formatted { text, result_count, file_count }
}

fn references(result: &Value, cwd: &Path, one_file_singular: bool) -> Formatted {
    let list: Vec<Value> = result.as_array().cloned().unwrap_or_default();
    let good: Vec<&Value> = list.iter().filter(|l| has_uri(l)).collect();
    let (result_count, file_count) = (good.len(), files(good.iter().map(|l| l["uri"].to_string())));
    let text = if good.is_empty() {
        NO_REFERENCES.to_string()
    } else if good.len() == 1 {
        format!("Found 1 reference:\n  {}", loc_text(good[0], cwd))
    } else {
        let groups = group(&good, |v| v["uri"].as_str(), cwd);
        let files = if groups.len() == 1 && one_file_singular { "file" } else { "files" };
        let mut out = vec![format!("Found {} references across {} {files}:", good.len(), groups.len())];
        for (file, items) in groups {
            out.push(format!("\n{file}:"));
            for it in items {
                let (l, c) = line_col(&it["range"]);
                out.push(format!("  Line {l}:{c}"));
            }
        }
        out.join("\n")
    };
    Formatted { text, result_count, file_count }
}

fn hover_contents(c: &Value) -> String {
    match c {
        Value::Array(a) => a
            .iter()
            .map(|x| x.as_str().map(str::to_string).unwrap_or_else(|| x["value"].as_str().unwrap_or("").to_string()))
            .collect::<Vec<_>>()
            .join("\n\n"),
        Value::String(s) => s.clone(),
        v => v["value"].as_str().unwrap_or("").to_string(),
    }
}

fn hover(result: &Value) -> Formatted {
    if result.is_null() {
        return Formatted { text: NO_HOVER.into(), result_count: 0, file_count: 0 };
    }
    let body = hover_contents(&result["contents"]);
    let text = match result.get("range").filter(|r| !r.is_null()) {
        Some(r) => {
            let (l, c) = line_col(r);
            format!("Hover info at {l}:{c}:\n\n{body}")
        }
        None => body,
    };
    Formatted { text, result_count: 1, file_count: 1 }
}

fn count_symbols(list: &[Value]) -> usize {
    list.len()
        + list
            .iter()
            .filter_map(|s| s["children"].as_array())
            .filter(|c| !c.is_empty())
            .map(|c| count_symbols(c))
            .sum::<usize>()
}

fn symbol_lines(s: &Value, depth: usize, out: &mut Vec<String>) {
    let mut line = format!("{}{} ({})", "  ".repeat(depth), s["name"].as_str().unwrap_or(""), kind_name(&s["kind"]));
    if let Some(d) = s["detail"].as_str().filter(|d| !d.is_empty()) {
        line.push(' ');
        line.push_str(d);
    }
    line.push_str(&format!(" - Line {}", s["range"]["start"]["line"].as_u64().unwrap_or(0) + 1));
    out.push(line);
    for c in s["children"].as_array().into_iter().flatten() {
        symbol_lines(c, depth + 1, out);
    }
}

fn document_symbols(result: &Value, cwd: &Path) -> Formatted {
    let list: Vec<Value> = result.as_array().cloned().unwrap_or_default();
    let result_count =
        if list.first().is_some_and(|f| f.get("range").is_some()) { count_symbols(&list) } else { list.len() };
    let file_count = usize::from(!list.is_empty());
    let text = if list.is_empty() {
        NO_DOC_SYMBOLS.to_string()
    } else if list[0].get("location").is_some() {
        workspace_symbols_text(&list, cwd)
    } else {
        let mut out = vec!["Document symbols:".to_string()];
        for s in &list {
            symbol_lines(s, 0, &mut out);
        }
        out.join("\n")
    };
    Formatted { text, result_count, file_count }
}

fn ws_good(s: &Value) -> bool {
    s["location"]["uri"].as_str().is_some_and(|u| !u.is_empty())
}

fn workspace_symbols_text(list: &[Value], cwd: &Path) -> String {
    let good: Vec<&Value> = list.iter().filter(|s| ws_good(s)).collect();
    if good.is_empty() {
        return NO_WS_SYMBOLS.into();
    }
    let mut out = vec![format!("Found {} {} in workspace:", good.len(), plural(good.len(), "symbol"))];
    for (file, items) in group(&good, |v| v["location"]["uri"].as_str(), cwd) {
        out.push(format!("\n{file}:"));
        for s in items {
            let mut line = format!(
                "  {} ({}) - Line {}",
                s["name"].as_str().unwrap_or(""),
                kind_name(&s["kind"]),
                s["location"]["range"]["start"]["line"].as_u64().unwrap_or(0) + 1
            );
            if let Some(c) = s["containerName"].as_str().filter(|c| !c.is_empty()) {
                line.push_str(&format!(" in {c}"));
            }
            out.push(line);
        }
    }
    out.join("\n")
}

fn workspace_symbols(result: &Value, cwd: &Path) -> Formatted {
    let list: Vec<Value> = result.as_array().cloned().unwrap_or_default();
    let good: Vec<&Value> = list.iter().filter(|s| ws_good(s)).collect();
    let text = if list.is_empty() { NO_WS_SYMBOLS.to_string() } else { workspace_symbols_text(&list, cwd) };
    Formatted {
        text,
        result_count: good.len(),
        file_count: files(good.iter().map(|s| s["location"]["uri"].to_string())),
    }
}

fn call_item(it: &Value, cwd: &Path) -> String {
    let name = it["name"].as_str().unwrap_or("");
    let kind = kind_name(&it["kind"]);
    let Some(uri) = it["uri"].as_str() else { return format!("{name} ({kind}) - <unknown location>") };
    let mut s = format!(
        "{name} ({kind}) - {}:{}",
        format_uri(Some(uri), cwd),
        it["range"]["start"]["line"].as_u64().unwrap_or(0) + 1
    );
    if let Some(d) = it["detail"].as_str().filter(|d| !d.is_empty()) {
        s.push_str(&format!(" [{d}]"));
    }
    s
}

fn prepare_call_hierarchy(result: &Value, cwd: &Path) -> Formatted {
    let list: Vec<Value> = result.as_array().cloned().unwrap_or_default();
    let text = match list.len() {
        0 => NO_CALL_ITEM.to_string(),
        1 => format!("Call hierarchy item: {}", call_item(&list[0], cwd)),
        n => {
            let mut out = vec![format!("Found {n} call hierarchy items:")];
            out.extend(list.iter().map(|i| format!("  {}", call_item(i, cwd))));
            out.join("\n")
        }
    };
    let file_count = files(list.iter().filter_map(|i| i["uri"].as_str()).map(str::to_string));
    Formatted { text, result_count: list.len(), file_count }
}

fn calls(result: &Value, cwd: &Path, incoming: bool) -> Formatted {
    let list: Vec<Value> = result.as_array().cloned().unwrap_or_default();
    let end = if incoming { "from" } else { "to" };
    let file_count = files(list.iter().filter_map(|c| c[end]["uri"].as_str()).map(str::to_string));
    if list.is_empty() {
        let text = if incoming {
            "No incoming calls found (nothing calls this function)"
        } else {
            "No outgoing calls found (this function calls nothing)"
        };
        return Formatted { text: text.into(), result_count: 0, file_count: 0 };
    }
    let dir = if incoming { "incoming" } else { "outgoing" };
    let mut out = vec![format!("Found {} {dir} {}:", list.len(), plural(list.len(), "call"))];
    let present: Vec<&Value> = list.iter().filter(|c| c[end].is_object()).collect();
    for (file, items) in group(&present, |c| c[end]["uri"].as_str(), cwd) {
        out.push(format!("\n{file}:"));
        for c in items {
            let it = &c[end];
            let mut line = format!(
                "  {} ({}) - Line {}",
                it["name"].as_str().unwrap_or(""),
                kind_name(&it["kind"]),
                it["range"]["start"]["line"].as_u64().unwrap_or(0) + 1
            );
            if let Some(r) = c["fromRanges"].as_array().filter(|r| !r.is_empty()) {
                let at: Vec<String> = r
                    .iter()
                    .map(|x| {
                        let (l, c) = line_col(x);
                        format!("{l}:{c}")
                    })
                    .collect();
                let label = if incoming { "calls at" } else { "called from" };
                line.push_str(&format!(" [{label}: {}]", at.join(", ")));
            }
            out.push(line);
        }
    }
    Formatted { text: out.join("\n"), result_count: list.len(), file_count }
}

/// Formats the answer to `operation` (one of LSP-1's nine) as Claude Code at `profile` words it.
pub fn format(operation: &str, result: &Value, cwd: &Path, profile: Profile) -> Formatted {
    match operation {
        "goToDefinition" | "goToImplementation" => definitions(result, cwd),
        "findReferences" => references(result, cwd, profile.has(&ONE_FILE_SINGULAR)),
        "hover" => hover(result),
        "documentSymbol" => document_symbols(result, cwd),
        "workspaceSymbol" => workspace_symbols(result, cwd),
        "prepareCallHierarchy" => prepare_call_hierarchy(result, cwd),
        "incomingCalls" => calls(result, cwd, true),
        "outgoingCalls" => calls(result, cwd, false),
        other => Formatted { text: format!("Unsupported operation: {other}"), result_count: 0, file_count: 0 },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn loc(uri: &str, l: u32, c: u32) -> Value {
        json!({"uri": uri, "range": {"start": {"line": l, "character": c}, "end": {"line": l, "character": c + 1}}})
    }

    const CWD: &str = "/sb/work";

    #[test]
    fn definitions_are_one_based_and_relative() {
        let f = format(
            "goToDefinition",
            &json!([loc("file:///sb/work/a.probe", 2, 4)]),
            Path::new(CWD),
            Profile::reference(),
        );
        assert_eq!(f, Formatted { text: "Defined in a.probe:3:5".into(), result_count: 1, file_count: 1 });
        let two = json!([loc("file:///sb/work/a.probe", 0, 0), loc("file:///other/b%20c.probe", 1, 1), {"range": {}}]);
        let f = format("goToDefinition", &two, Path::new(CWD), Profile::reference());
        assert_eq!(f.text, "Found 2 definitions:\n  a.probe:1:1\n  /other/b c.probe:2:2");
        assert_eq!((f.result_count, f.file_count), (2, 2));
        assert!(format("goToDefinition", &Value::Null, Path::new(CWD), Profile::reference())
            .text
            .starts_with("No definition found."));
        let link = json!({"targetUri": "file:///sb/work/x.probe", "targetRange": loc("", 5, 0)["range"],
            "targetSelectionRange": loc("", 5, 6)["range"]});
        assert_eq!(
            format("goToImplementation", &link, Path::new(CWD), Profile::reference()).text,
            "Defined in x.probe:6:7"
        );
    }

    #[test]
    fn references_group_by_file_with_counts() {
        let r = json!([
            loc("file:///sb/work/a.probe", 0, 0),
            loc("file:///sb/work/a.probe", 2, 4),
            loc("file:///sb/work/other.probe", 1, 2),
            {"uri": null}
        ]);
        let f = format("findReferences", &r, Path::new(CWD), Profile::reference());
        assert_eq!(
            f.text,
            "Found 3 references across 2 files:\n\na.probe:\n  Line 1:1\n  Line 3:5\n\nother.probe:\n  Line 2:3"
        );
        assert_eq!((f.result_count, f.file_count), (3, 2));
        let one = format(
            "findReferences",
            &json!([loc("file:///sb/work/a.probe", 0, 0)]),
            Path::new(CWD),
            Profile::reference(),
        );
        assert_eq!(one.text, "Found 1 reference:\n  a.probe:1:1");
        // two references in one file: `1 files` before ONE_FILE_SINGULAR (2.1.333), `1 file` from it
        let same = json!([loc("file:///sb/work/a.probe", 0, 0), loc("file:///sb/work/a.probe", 2, 4)]);
        let at = |v: &str| {
            let p = Profile::at(v).unwrap_or_else(|e| panic!("{e}"));
            format("findReferences", &same, Path::new(CWD), p).text
        };
        assert_eq!(at("2.1.333"), "Found 2 references across 1 files:\n\na.probe:\n  Line 1:1\n  Line 3:5");
        assert_eq!(at("2.1.334"), "Found 2 references across 1 file:\n\na.probe:\n  Line 1:1\n  Line 3:5");
        assert!(format("findReferences", &r, Path::new(CWD), Profile::at("2.1.334").unwrap_or_else(|e| panic!("{e}")))
            .text
            .starts_with("Found 3 references across 2 files:"));
    }

    #[test]
    fn hover_symbols_and_calls() {
        let h = json!({"contents": {"kind": "markdown", "value": "**x**"}, "range": loc("", 0, 0)["range"]});
        assert_eq!(format("hover", &h, Path::new(CWD), Profile::reference()).text, "Hover info at 1:1:\n\n**x**");
        assert_eq!(
            format("hover", &json!({"contents": ["a", {"value": "b"}]}), Path::new(CWD), Profile::reference()).text,
            "a\n\nb"
        );
        let syms = json!([{"name": "Probe", "kind": 5, "range": loc("", 0, 0)["range"], "children": [
            {"name": "run", "kind": 6, "detail": "()", "range": loc("", 1, 2)["range"]}]}]);
        let f = format("documentSymbol", &syms, Path::new(CWD), Profile::reference());
        assert_eq!(f.text, "Document symbols:\nProbe (Class) - Line 1\n  run (Method) () - Line 2");
        assert_eq!((f.result_count, f.file_count), (2, 1));
        let ws = json!([{"name": "A", "kind": 12, "location": loc("file:///sb/work/a.probe", 3, 0), "containerName": "M"},
            {"name": "B", "kind": 99, "location": {}}]);
        let f = format("workspaceSymbol", &ws, Path::new(CWD), Profile::reference());
        assert_eq!(f.text, "Found 1 symbol in workspace:\n\na.probe:\n  A (Function) - Line 4 in M");
        let item =
            |n: &str| json!({"name": n, "kind": 12, "uri": "file:///sb/work/a.probe", "range": loc("", 4, 0)["range"]});
        let inc = json!([{"from": item("main"), "fromRanges": [loc("", 4, 4)["range"]]}]);
        assert_eq!(
            format("incomingCalls", &inc, Path::new(CWD), Profile::reference()).text,
            "Found 1 incoming call:\n\na.probe:\n  main (Function) - Line 5 [calls at: 5:5]"
        );
        assert_eq!(
            format("prepareCallHierarchy", &json!([item("run")]), Path::new(CWD), Profile::reference()).text,
            "Call hierarchy item: run (Function) - a.probe:5"
        );
        assert_eq!(
            format("outgoingCalls", &json!([]), Path::new(CWD), Profile::reference()).text,
            "No outgoing calls found (this function calls nothing)"
        );
    }

    #[test]
    fn far_paths_stay_absolute() {
        assert_eq!(format_uri(Some("file:///elsewhere/x.py"), Path::new("/sb/work")), "/elsewhere/x.py");
        assert_eq!(format_uri(Some("file:///sb/x.py"), Path::new("/sb/work")), "../x.py");
        assert_eq!(format_uri(None, Path::new("/sb/work")), "<unknown location>");
    }
}
