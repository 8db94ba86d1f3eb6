//! Generated tool-call sessions over edge-case fixtures: a seeded generator of Read, Edit, Write,
//! NotebookEdit, Grep and Glob calls on files of many shapes (line ends, encodings, BOMs, invalid
//! UTF-8, NUL bytes, long lines, empty files, notebooks, denied paths, a search tree), the probe that
//! plays one, and what a run of it came to per call (the normalised result text, `is_error`) and in the
//! files of the cwd afterwards. Shared by the built-in runtime's fidelity test
//! (`harness/tests/fidelity.rs`: the same sessions on `builtin@V` and Claude Code V) and release
//! exploration (`probelab discover`: the same sessions on two releases, [`crate::discover`]).
#![allow(missing_docs)]

use crate::probe::Probe;
use crate::run::RunOutput;
use crate::transcript::normalise::{normalise, Places};
use crate::transcript::{result_words, View};
use base64::Engine;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::Path;

/// Turns of a generated session (the first reads, the rest change and search).
pub const TURNS_PER_SESSION: usize = 8;

// ---------------------------------------------------------------------------------------------
// a seeded generator (SplitMix64: small, fast, the same everywhere)

pub struct Rng(pub u64);

impl Rng {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n.max(1) as u64) as usize
    }
    pub fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

pub const WORDS: &[&str] = &[
    "alpha",
    "beta",
    "gamma",
    "delta",
    "alpha beta",
    "x",
    "fn main() {",
    "}",
    "    indented",
    "\tTabbed",
    "café",
    "日本語",
    "naïve",
    "“quoted”",
    "it’s",
    "emoji 🚀",
    "$1 and $&",
    "a.b*c",
    "TODO",
    "",
    "end",
];

pub fn line(rng: &mut Rng) -> String {
    let n = rng.below(4);
    (0..n).map(|_| *rng.pick(WORDS)).collect::<Vec<_>>().join(" ")
}

pub fn text_lines(rng: &mut Rng, max: usize) -> Vec<String> {
    (0..1 + rng.below(max)).map(|_| line(rng)).collect()
}

/// A file's content and the name of its input class.
pub fn content(rng: &mut Rng) -> (&'static str, Vec<u8>) {
    let lines = text_lines(rng, 8);
    let joined = |sep: &str, last: bool| {
        let mut s = lines.join(sep);
        if last {
            s.push_str(sep);
        }
        s.into_bytes()
    };
    match rng.below(15) {
        0 | 1 => ("lf", joined("\n", true)),
        2 | 3 => ("crlf", joined("\r\n", true)),
        4 => ("no-final-newline", joined("\n", false)),
        5 => ("crlf-no-final-newline", joined("\r\n", false)),
        6 => {
            let mut s = String::new();
            for (i, l) in lines.iter().enumerate() {
                s.push_str(l);
                s.push_str(if i % 2 == 0 { "\r\n" } else { "\n" });
            }
            ("mixed-line-ends", s.into_bytes())
        }
        7 => {
            let long: String = (0..2001 + rng.below(3000)).map(|i| (b'a' + (i % 26) as u8) as char).collect();
            let mut l = lines.clone();
            let at = rng.below(l.len() + 1);
            l.insert(at, long);
            ("long-line", (l.join("\n") + "\n").into_bytes())
        }
        8 => ("empty", Vec::new()),
        9 => ("whitespace-only", rng.pick(&["\n", "  \n\n", " ", "\r\n\r\n"]).as_bytes().to_vec()),
        10 => {
            let mut b = joined("\n", true);
            for _ in 0..1 + rng.below(3) {
                let at = rng.below(b.len() + 1);
                b.insert(at, *rng.pick(&[0xE9u8, 0xFF, 0xC3, 0x80]));
            }
            ("invalid-utf8", b)
        }
        11 => {
            let mut b = joined("\n", true);
            let at = rng.below(b.len() + 1);
            b.splice(at..at, [0u8, 1, 2, 0xFE, 0]);
            ("nul-bytes", b)
        }
        12 => {
            let mut b = vec![0xEF, 0xBB, 0xBF];
            b.extend(joined("\n", true));
            ("bom", b)
        }
        13 => ("lone-cr", joined("\r", rng.chance(50))),
        _ => {
            let n = 2001 + rng.below(600);
            ("many-lines", (0..n).map(|i| format!("l{i}\n")).collect::<String>().into_bytes())
        }
    }
}

/// A notebook with mixed cells (markdown, code, raw) and outputs (stream, execute_result, error, an
/// image), with cell ids or without (nbformat 4.4), written as Jupyter writes it (1-space JSON).
pub fn notebook(rng: &mut Rng) -> (Vec<u8>, Vec<String>) {
    let with_ids = rng.chance(70);
    let mut ids = Vec::new();
    let cells: Vec<Value> = (0..1 + rng.below(4))
        .map(|i| {
            let source: Vec<String> = text_lines(rng, 3).iter().map(|l| format!("{l}\n")).collect();
            let mut cell = match rng.below(4) {
                0 => json!({"cell_type": "markdown", "metadata": {}, "source": source}),
                1 => json!({"cell_type": "raw", "metadata": {}, "source": source}),
                _ => {
                    let outputs: Vec<Value> = (0..rng.below(3))
                        .map(|_| match rng.below(4) {
                            0 => json!({"name": "stdout", "output_type": "stream", "text": [format!("{}\n", line(rng))]}),
                            1 => json!({"data": {"text/plain": [line(rng)]}, "execution_count": 1, "metadata": {}, "output_type": "execute_result"}),
                            2 => json!({"ename": "ValueError", "evalue": "bad value", "output_type": "error", "traceback": ["Traceback", "ValueError: bad value"]}),
                            _ => json!({"data": {"image/png": "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==", "text/plain": ["<Figure>"]}, "metadata": {}, "output_type": "display_data"}),
                        })
                        .collect();
                    json!({"cell_type": "code", "execution_count": if outputs.is_empty() { Value::Null } else { json!(1) }, "metadata": {}, "outputs": outputs, "source": source})
                }
            };
            if with_ids {
                let id = format!("c{i}{}", rng.below(100));
                cell["id"] = json!(id);
                ids.push(id);
            } else {
                ids.push(format!("cell-{i}"));
            }
            cell
        })
        .collect();
    let nb = json!({"cells": cells, "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}}, "nbformat": 4, "nbformat_minor": if with_ids { 5 } else { 4 }});
    let mut out = Vec::new();
    let mut ser = serde_json::Serializer::with_formatter(&mut out, serde_json::ser::PrettyFormatter::with_indent(b" "));
    let _ = serde::Serialize::serialize(&nb, &mut ser); // a Value into a Vec: nothing to fail
    out.push(b'\n');
    (out, ids)
}

pub fn notebook_edit_call(rng: &mut Rng, f: &File) -> Call {
    let mut input = json!({"notebook_path": cwd_path(&f.path), "new_source": new_string(rng)});
    let mode = *rng.pick(&["replace", "replace", "insert", "delete"]);
    if mode != "replace" || rng.chance(30) {
        input["edit_mode"] = json!(mode);
    }
    if rng.chance(85) && !f.cell_ids.is_empty() {
        input["cell_id"] = json!(rng.pick(&f.cell_ids).clone());
    } else if rng.chance(50) {
        input["cell_id"] = json!("nope");
    }
    if mode == "insert" || rng.chance(25) {
        input["cell_type"] = json!(*rng.pick(&["code", "markdown"]));
    }
    Call { tool: "NotebookEdit", input, target: Some(f.path.clone()), class: format!("notebook/notebook-edit/{mode}") }
}

// ---------------------------------------------------------------------------------------------
// scenarios

/// One generated call.
#[derive(Debug, Clone)]
pub struct Call {
    pub tool: &'static str,
    pub input: Value,
    /// The file (relative to the cwd) the call reads or changes; `None` for searches.
    pub target: Option<String>,
    /// The input class it exercises (for the coverage line).
    pub class: String,
}

#[derive(Debug, Clone)]
pub struct File {
    pub path: String,
    pub class: &'static str,
    pub bytes: Vec<u8>,
    /// A notebook's cell ids as the model would name them (`cell-N` when the cells have none).
    pub cell_ids: Vec<String>,
}

#[derive(Debug, Clone)]
pub struct Session {
    pub files: Vec<File>,
    pub empty_dirs: Vec<String>,
    pub turns: Vec<Vec<Call>>,
}

pub fn cwd_path(rel: &str) -> String {
    format!("{{cwd}}/{rel}")
}

pub fn read_call(rng: &mut Rng, f: &str, class: &str, whole: bool) -> Call {
    let mut input = json!({"file_path": cwd_path(f)});
    let mut c = format!("{class}/read");
    if !whole {
        if rng.chance(60) {
            input["offset"] = json!(rng.below(8));
            c.push_str("+offset");
        }
        if rng.chance(60) {
            input["limit"] = json!(1 + rng.below(6));
            c.push_str("+limit");
        }
    }
    Call { tool: "Read", input, target: Some(f.to_string()), class: c }
}

/// An old string for an Edit: mostly a piece of the file's first content (it may have changed since).
pub fn old_string(rng: &mut Rng, bytes: &[u8]) -> (String, &'static str) {
    let text = String::from_utf8_lossy(bytes).into_owned();
    let lines: Vec<&str> = text.split('\n').collect();
    match rng.below(8) {
        0 => (String::new(), "old-empty"),
        1 => (format!("absent-{}", rng.below(1000)), "old-not-found"),
        2 => (rng.pick(WORDS).to_string(), "old-word"),
        3 | 4 if lines.len() > 1 => {
            // a span of whole lines joined by LF (the file may hold CRLF)
            let a = rng.below(lines.len() - 1);
            let b = (a + 1 + rng.below(2)).min(lines.len());
            let span: Vec<&str> = lines[a..b].iter().map(|l| l.trim_end_matches('\r')).collect();
            (span.join("\n"), "old-lines-lf")
        }
        5 if lines.len() > 1 => {
            let a = rng.below(lines.len() - 1);
            (format!("{}\n{}", lines[a], lines[a + 1]), "old-lines-raw")
        }
        _ => {
            let l = rng.pick(&lines).trim_end_matches('\r');
            let chars: Vec<char> = l.chars().collect();
            if chars.is_empty() {
                return (rng.pick(WORDS).to_string(), "old-word");
            }
            let a = rng.below(chars.len());
            let b = a + 1 + rng.below(chars.len() - a);
            (chars[a..b].iter().collect(), "old-fragment")
        }
    }
}

pub fn new_string(rng: &mut Rng) -> String {
    match rng.below(6) {
        0 => String::new(),
        1 => format!("{}\r\n{}", line(rng), line(rng)),
        2 => format!("{}\n{}", line(rng), line(rng)),
        3 => "ünïcødé “x” ✓".to_string(),
        _ => line(rng),
    }
}

pub fn edit_call(rng: &mut Rng, f: &File) -> Call {
    let (old, kind) = old_string(rng, &f.bytes);
    let mut new = new_string(rng);
    if new == old {
        new.push('!');
    }
    let mut input = json!({"file_path": cwd_path(&f.path), "old_string": old, "new_string": new});
    let mut class = format!("{}/edit/{kind}", f.class);
    if rng.chance(30) {
        input["replace_all"] = json!(true);
        class.push_str("+replace_all");
    }
    Call { tool: "Edit", input, target: Some(f.path.clone()), class }
}

pub fn write_call(rng: &mut Rng, path: &str, class: &str) -> Call {
    let (c, bytes) = content(rng);
    let text = String::from_utf8_lossy(&bytes).into_owned();
    Call {
        tool: "Write",
        input: json!({"file_path": cwd_path(path), "content": text}),
        target: Some(path.to_string()),
        class: format!("{class}/write/{c}"),
    }
}

pub const TREE_WORDS: &[&str] = &["alpha", "Alpha", "beta", "gamma", "needle", "NEEDLE", "fn main", "x = 1", "café"];

pub fn tree_files(rng: &mut Rng) -> Vec<File> {
    let names =
        ["tree/a.txt", "tree/b.rs", "tree/sub/c.txt", "tree/sub/d.md", "tree/sub/deep/e.rs", "tree/.hidden.txt"];
    names
        .iter()
        .map(|n| {
            let lines: Vec<String> = (0..1 + rng.below(6))
                .map(|_| (0..1 + rng.below(3)).map(|_| *rng.pick(TREE_WORDS)).collect::<Vec<_>>().join(" "))
                .collect();
            let sep = if rng.chance(25) { "\r\n" } else { "\n" };
            File {
                path: n.to_string(),
                class: "tree",
                bytes: (lines.join(sep) + sep).into_bytes(),
                cell_ids: Vec::new(),
            }
        })
        .chain(std::iter::once(File {
            // a file whose matches pass Grep's 20,000-char result budget: the result is persisted
            path: "tree/big.log".into(),
            class: "tree",
            bytes: (0..900)
                .map(|i| {
                    format!(
                        "needle line {i:04} of the big log, padded to pass the result budget of Grep: {}\n",
                        "x".repeat(40)
                    )
                })
                .collect::<String>()
                .into_bytes(),
            cell_ids: Vec::new(),
        }))
        .collect()
}

pub fn search_call(rng: &mut Rng) -> Call {
    if rng.chance(35) {
        let pattern = *rng.pick(&["**/*.txt", "*.rs", "**/*.rs", "sub/**", "**/d.*", "**/nothing*", "*"]);
        let mut input = json!({"pattern": pattern, "path": cwd_path("tree")});
        if rng.chance(30) {
            input = json!({"pattern": format!("tree/{pattern}")});
        }
        return Call { tool: "Glob", input, target: None, class: "tree/glob".into() };
    }
    let pattern = *rng.pick(&["alpha", "needle", "^beta", "gam+a", "café", "x = \\d", "absent", "(?i)needle", "a|b"]);
    let mut input = json!({"pattern": pattern, "path": cwd_path("tree")});
    let mode = *rng.pick(&["content", "files_with_matches", "count"]);
    input["output_mode"] = json!(mode);
    if rng.chance(25) {
        input["-i"] = json!(true);
    }
    if mode == "content" {
        if rng.chance(40) {
            input["-n"] = json!(rng.chance(70));
        }
        if rng.chance(30) {
            input[*rng.pick(&["-A", "-B", "-C"])] = json!(rng.below(3));
        }
    }
    if rng.chance(25) {
        input["glob"] = json!(*rng.pick(&["*.rs", "*.txt", "**/*.md"]));
    }
    if rng.chance(20) {
        input["head_limit"] = json!(1 + rng.below(3));
    }
    if rng.chance(15) {
        input["offset"] = json!(rng.below(3));
    }
    if rng.chance(10) {
        input["path"] = json!(cwd_path("tree/a.txt"));
    }
    Call { tool: "Grep", input, target: None, class: format!("tree/grep/{mode}") }
}

pub fn session(rng: &mut Rng) -> Session {
    let exts = ["txt", "txt", "txt", "md", "rs", "dat", "bin", "json"];
    let mut files: Vec<File> = (0..10 + rng.below(4))
        .map(|i| {
            let (class, bytes) = content(rng);
            let ext = *rng.pick(&exts);
            File { path: format!("f{i}-{class}.{ext}"), class, bytes, cell_ids: Vec::new() }
        })
        .collect();
    for i in 0..1 + rng.below(2) {
        let (bytes, cell_ids) = notebook(rng);
        files.push(File { path: format!("nb{i}.ipynb"), class: "notebook", bytes, cell_ids });
    }
    files.push(File { path: "dir/inner.txt".into(), class: "dir", bytes: b"inner\n".to_vec(), cell_ids: Vec::new() });
    let mut turns = vec![Vec::new()];
    // turn 1: whole Reads of most files (the gate: the rest stay unread), the directories, a missing file
    let mut read: Vec<bool> = Vec::new();
    for f in &files {
        let r = rng.chance(80);
        read.push(r);
        if r {
            turns[0].push(read_call(rng, &f.path, f.class, true));
        }
    }
    for (d, class) in [("dir", "directory"), ("empty-dir", "empty-directory"), ("missing.txt", "missing")] {
        turns[0].push(Call {
            tool: "Read",
            input: json!({"file_path": cwd_path(d)}),
            target: Some(d.to_string()),
            class: format!("{class}/read"),
        });
    }
    files.extend(tree_files(rng));
    // files the session's deny rules cover (`Read(secret/**)`, `Edit(locked.txt)`)
    files.push(File {
        path: "secret/s.txt".into(),
        class: "denied",
        bytes: b"top secret\n".to_vec(),
        cell_ids: Vec::new(),
    });
    files.push(File { path: "locked.txt".into(), class: "denied", bytes: b"locked\n".to_vec(), cell_ids: Vec::new() });
    let denied = [
        ("Read", json!({"file_path": cwd_path("secret/s.txt")}), "secret/s.txt"),
        ("Read", json!({"file_path": cwd_path("locked.txt")}), "locked.txt"),
        (
            "Edit",
            json!({"file_path": cwd_path("locked.txt"), "old_string": "locked", "new_string": "open"}),
            "locked.txt",
        ),
        ("Write", json!({"file_path": cwd_path("secret/new.txt"), "content": "x\n"}), "secret/new.txt"),
        (
            "Edit",
            json!({"file_path": cwd_path("secret/s.txt"), "old_string": "top", "new_string": "no"}),
            "secret/s.txt",
        ),
    ];
    for (tool, input, target) in denied {
        if rng.chance(60) {
            turns[0].push(Call {
                tool,
                input,
                target: Some(target.into()),
                class: format!("denied/{}", tool.to_lowercase()),
            });
        }
    }
    if rng.chance(50) {
        turns[0].push(Call {
            tool: "Grep",
            input: json!({"pattern": "top", "path": cwd_path("secret"), "output_mode": "content"}),
            target: None,
            class: "denied/grep".into(),
        });
    }
    for _ in 0..3 {
        turns[0].push(search_call(rng));
    }
    // one search whose result passes the 20,000-char budget, in a fixed order (one file): persisted
    turns[0].push(Call {
        tool: "Grep",
        input: json!({"pattern": "needle", "path": cwd_path("tree/big.log"), "output_mode": "content"}),
        target: None,
        class: "tree/grep/persisted".into(),
    });
    let editable: Vec<File> = files.iter().filter(|f| !matches!(f.class, "tree" | "dir" | "denied")).cloned().collect();
    for t in 1..TURNS_PER_SESSION {
        let mut calls = Vec::new();
        for f in &editable {
            if !rng.chance(70) {
                continue;
            }
            if f.class == "notebook" {
                calls.push(if rng.chance(35) {
                    read_call(rng, &f.path, f.class, true)
                } else {
                    notebook_edit_call(rng, f)
                });
                continue;
            }
            calls.push(match rng.below(10) {
                0..=2 => {
                    let whole = rng.chance(30);
                    read_call(rng, &f.path, f.class, whole)
                }
                3..=7 => edit_call(rng, f),
                _ => write_call(rng, &f.path, f.class),
            });
        }
        // calls on files that are not there: created by Write or by an Edit with an empty old string
        match rng.below(5) {
            0 => calls.push(write_call(rng, &format!("new-{t}.txt"), "new")),
            1 => {
                let new = new_string(rng);
                calls.push(Call {
                    tool: "Edit",
                    input: json!({"file_path": cwd_path(&format!("created-{t}.txt")), "old_string": "", "new_string": new}),
                    target: Some(format!("created-{t}.txt")),
                    class: "missing/edit/old-empty".into(),
                })
            }
            2 => calls.push(Call {
                tool: "Edit",
                input: json!({"file_path": cwd_path("missing.txt"), "old_string": "a", "new_string": "b"}),
                target: Some("missing.txt".into()),
                class: "missing/edit".into(),
            }),
            3 => calls.push(Call {
                tool: "Write",
                input: json!({"file_path": cwd_path("dir"), "content": "x"}),
                target: Some("dir".into()),
                class: "directory/write".into(),
            }),
            _ => {}
        }
        for _ in 0..rng.below(3) {
            calls.push(search_call(rng));
        }
        turns.push(calls);
    }
    Session { files, empty_dirs: vec!["empty-dir".into()], turns }
}

// ---------------------------------------------------------------------------------------------
// probes and runs

/// How a generated session becomes a probe: its id, what it says, its subjects and claims, and the
/// rest of the probe file (`subject`, `settings`, more `fixture` keys) as JSON merged in.
#[derive(Debug, Clone)]
pub struct Shape {
    /// The probe's id.
    pub id: String,
    /// Its `about`.
    pub about: String,
    /// Its `subjects`.
    pub subjects: Vec<String>,
    /// Its `claims`.
    pub claims: Vec<String>,
    /// More top-level keys (`subject`, `settings`, `deadline_secs`…); `fixture` keys are merged.
    pub extra: serde_json::Map<String, Value>,
}

/// The probe file (TOML) that plays `s` in `shape`.
pub fn probe_text(s: &Session, shape: &Shape) -> Result<String, String> {
    let b64 = base64::engine::general_purpose::STANDARD;
    let mut files = serde_json::Map::new();
    for f in &s.files {
        files.insert(f.path.clone(), json!({"base64": b64.encode(&f.bytes)}));
    }
    let faults: Vec<Value> = s.empty_dirs.iter().map(|d| json!({"kind": "mkdir", "path": d})).collect();
    let mut turns: Vec<Value> = s
        .turns
        .iter()
        .filter(|t| !t.is_empty())
        .map(|t| json!({"tool_use": t.iter().map(|c| json!({"name": c.tool, "input": c.input})).collect::<Vec<_>>()}))
        .collect();
    turns.push(json!({"text": "done"}));
    let mut doc = json!({
        "id": shape.id,
        "claims": shape.claims,
        "about": shape.about,
        "subjects": shape.subjects,
        "fixture": {"files": files, "fault": faults},
        "turn": turns,
    });
    for (k, v) in &shape.extra {
        match (k.as_str(), v) {
            ("fixture", Value::Object(more)) => {
                for (fk, fv) in more {
                    doc["fixture"][fk] = fv.clone();
                }
            }
            _ => doc[k] = v.clone(),
        }
    }
    toml::to_string(&doc).map_err(|e| format!("the generated probe does not make TOML: {e}"))
}

/// The probe of `shape` that plays `s`, parsed as any probe file is.
pub fn probe_shaped(s: &Session, shape: &Shape) -> Result<Probe, String> {
    let text = probe_text(s, shape)?;
    crate::probe::parse(Path::new(&format!("generated/{}.toml", shape.id)), &text)
        .map_err(|e| format!("the generated probe does not parse: {e}\n{text}"))
}

/// The fidelity test's probe of `s`: the built-in runtime and Claude Code, the same model on both (the
/// built-in runtime follows the reference's model switch of the read gate), Grep and Glob allowed, two
/// deny rules.
pub fn probe_of(s: &Session, name: &str) -> Result<Probe, String> {
    let extra = json!({
        "deadline_secs": 180,
        "subject": {
            "builtin": {"model": "claude-sonnet-4-5"},
            "claude-code": {"args": ["--model", "claude-sonnet-4-5", "--allowedTools", "Grep,Glob"]},
        },
        "settings": {"permissions": {"deny": ["Read(secret/**)", "Edit(locked.txt)"]}},
    });
    let shape = Shape {
        id: format!("fidelity.{name}"),
        about: "generated by harness/tests/fidelity.rs".into(),
        subjects: vec!["builtin".into(), "claude-code".into()],
        claims: vec!["READ-1".into(), "EDIT-4".into()],
        extra: extra.as_object().cloned().unwrap_or_default(),
    };
    probe_shaped(s, &shape)
}

/// What a call came to on one subject.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    pub text: String,
    pub is_error: bool,
}

/// One subject's session: each call's outcome, the files of the cwd after it.
pub struct Ran {
    pub outcomes: Vec<Option<Outcome>>,
    pub files: BTreeMap<String, Vec<u8>>,
    pub problem: Option<String>,
}

/// The id a NotebookEdit insert makes up (the reference's is random): `Inserted cell <id>`, and the
/// 8-hex id of a cell in a notebook file and in a Read of it (the generator's own ids are shorter).
pub static NEW_CELL_ID: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
    regex::Regex::new(r#"(Inserted cell |"id": "|cell id=\\?")[0-9a-f]{8}\b"#).unwrap_or_else(|e| panic!("{e}"))
});

pub fn without_new_ids(text: &str) -> String {
    NEW_CELL_ID.replace_all(text, "${1}<new-id>").into_owned()
}

pub static SIZE: std::sync::LazyLock<regex::Regex> =
    std::sync::LazyLock::new(|| regex::Regex::new(r"\(\d+(\.\d+)?KB\)").unwrap_or_else(|e| panic!("{e}")));

pub static REMINDER: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
    regex::Regex::new(r"(?s)\s*<system-reminder>(.*?)</system-reminder>").unwrap_or_else(|e| panic!("{e}"))
});

/// The tool's own text: the reminders a subject appends to results taken off (Read's own warnings,
/// which are the whole result, stay), trailing whitespace too (Claude Code trims it when it appends).
pub fn own_text(text: &str) -> String {
    let kept = REMINDER.replace_all(text, |c: &regex::Captures<'_>| {
        if c[1].trim_start().starts_with("Warning: the file exists") {
            c[0].to_string()
        } else {
            String::new()
        }
    });
    without_new_ids(kept.trim_end())
}

pub fn files_of(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
        let Ok(entries) = std::fs::read_dir(dir) else { return };
        for e in entries.flatten() {
            let p = e.path();
            let rel = p.strip_prefix(root).unwrap_or(&p).to_string_lossy().into_owned();
            if rel == ".claude" {
                continue;
            }
            if p.is_dir() {
                out.insert(format!("{rel}/"), Vec::new());
                walk(root, &p, out);
            } else {
                let bytes = std::fs::read(&p).unwrap_or_default();
                let bytes = match (rel.ends_with(".ipynb"), String::from_utf8(bytes)) {
                    (true, Ok(t)) => without_new_ids(&t).into_bytes(),
                    (_, Ok(t)) => t.into_bytes(),
                    (_, Err(e)) => e.into_bytes(),
                };
                out.insert(rel, bytes);
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

pub fn collect(run: Result<RunOutput, crate::run::RunError>, calls: usize, subject: &str) -> Ran {
    let run = match run {
        Ok(r) => r,
        Err(e) => {
            return Ran { outcomes: vec![None; calls], files: BTreeMap::new(), problem: Some(crate::exit::chain(&e)) }
        }
    };
    let view = View { exchanges: &run.exchanges, script: &run.script };
    let places = Places {
        root: &run.sandbox.root,
        cwd: &run.sandbox.cwd,
        home: &run.sandbox.home,
        today: String::new(),
        subject: &crate::subject::SubjectId::parse_registered(subject)
            .unwrap_or_else(crate::subject::SubjectId::builtin),
        web: run.web.as_deref(),
    };
    let outcomes = (1..=calls)
        .map(|n| {
            view.result(n).map(|b| Outcome {
                text: own_text(&normalise(&result_words(&b), &places)),
                is_error: b.get("is_error") == Some(&Value::Bool(true)),
            })
        })
        .collect();
    let problem = match &run.end {
        crate::run::RunEnd::Finished => None,
        other => Some(format!("the run ended {other:?}")),
    };
    Ran { outcomes, files: files_of(&run.sandbox.cwd), problem }
}
