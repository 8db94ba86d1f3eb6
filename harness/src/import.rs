//! `probelab import SESSION.jsonl`: a probe from a Claude Code session transcript (the JSONL Claude
//! Code keeps under `~/.claude/projects/<cwd-slug>/<session-id>.jsonl`).
//!
//! What the session gives, the probe keeps:
//! - the first user message as `prompt`;
//! - each assistant message of the main chain (sub-agents' `isSidechain` entries are left out) as a
//!   `[[turn]]`: its text, its tool_use calls in order, each named `<tool>-<n>` (`read-1`, `edit-2`) so
//!   checks stay put when turns are inserted; a final `text` turn when the session ended on a call;
//! - the session's cwd as `{cwd}` in every input and expected text;
//! - fixture stubs for the files it touched: a file's content from the first whole-file Read of it that
//!   came before any change to it (line numbers taken off), else, for a file an Edit changed first, its
//!   `old_string`, marked `# stub`;
//! - a check per call, proposed from the recorded result: its `is_error` and its text (`equals` up to
//!   [`EQUALS_MAX`] chars, else `contains` of its first line), each marked `# imported: review`;
//! - `subjects = ["builtin", "claude-code"]` and claims guessed from the tools (`READ-1` for Read…),
//!   to be reviewed.
//!
//! A line that is not JSON is an error with `file:line` (a cut last line: "the session is truncated"); a
//! file without user and assistant entries carrying a `sessionId` is not a Claude Code session.

use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

/// The longest recorded result proposed as `equals` (longer ones: `contains` of the first line).
pub const EQUALS_MAX: usize = 2000;

/// An input that cannot be imported: where and what.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{place}: {message}")]
pub struct ImportError {
    /// `file:line`, or the file.
    pub place: String,
    /// What is wrong.
    pub message: String,
}

/// One scripted call and what the session recorded for it.
#[derive(Debug, Clone)]
struct Call {
    name: String,
    id: String,
    input: Value,
    result: Option<(String, bool)>,
}

#[derive(Debug, Clone, Default)]
struct Turn {
    message_id: String,
    text: Vec<String>,
    calls: Vec<Call>,
}

/// The session read from its JSONL.
#[derive(Debug, Clone, Default)]
struct Session {
    id: String,
    cwd: String,
    version: String,
    prompt: Option<String>,
    turns: Vec<Turn>,
}

/// A `tool_result` block's text and whether it is an error. The reminders a subject appends are not the
/// tool's result (and vary by model).
fn result_of(b: &Value) -> (String, bool) {
    let text = crate::transcript::result_text(b);
    let text =
        if text.contains("<system-reminder>") { crate::transcript::normalise::strip_reminders(&text) } else { text };
    (text, b.get("is_error") == Some(&Value::Bool(true)))
}

/// A `tool_use` block's call: one the probe cannot name or pair with its result is an error, not
/// imported as `name = ""`.
fn call_of(b: &Value) -> Result<Call, String> {
    Ok(Call {
        name: required(b, "name", "tool_use")?,
        id: required(b, "id", "tool_use")?,
        input: b.get("input").cloned().unwrap_or_else(|| serde_json::json!({})),
        result: None,
    })
}

/// A block's string field that must be there (a `tool_use`'s name and id, a `tool_result`'s
/// `tool_use_id`), or what is wrong.
fn required(block: &Value, key: &str, kind: &str) -> Result<String, String> {
    match block.get(key).and_then(Value::as_str) {
        Some(v) if !v.is_empty() => Ok(v.to_string()),
        _ => Err(format!("a {kind} block without its {key}: not a session Claude Code wrote (or a damaged one)")),
    }
}

fn read_session(file: &Path, text: &str) -> Result<Session, ImportError> {
    let place = |line: usize| format!("{}:{line}", file.display());
    let mut s = Session::default();
    let mut results: BTreeMap<String, (String, bool)> = BTreeMap::new();
    let lines: Vec<&str> = text.lines().collect();
    for (i, line) in lines.iter().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let entry: Value = serde_json::from_str(line).map_err(|e| {
            let last = i + 1 == lines.len() && !text.ends_with('\n');
            let message = if last && e.is_eof() {
                format!("the session is truncated: its last line ends inside a JSON value ({e})")
            } else {
                format!("not a JSON line of a Claude Code session: {e}")
            };
            ImportError { place: place(i + 1), message }
        })?;
        let at = |message| ImportError { place: place(i + 1), message };
        let kind = entry.get("type").and_then(Value::as_str).unwrap_or_default();
        if !matches!(kind, "user" | "assistant") || entry.get("isSidechain") == Some(&Value::Bool(true)) {
            continue;
        }
        let (Some(session), Some(message)) = (entry.get("sessionId").and_then(Value::as_str), entry.get("message"))
        else {
            continue;
        };
        if s.id.is_empty() {
            s.id = session.to_string();
        }
        if s.cwd.is_empty() {
            s.cwd = entry.get("cwd").and_then(Value::as_str).unwrap_or_default().to_string();
        }
        if s.version.is_empty() {
            s.version = entry.get("version").and_then(Value::as_str).unwrap_or_default().to_string();
        }
        let blocks: Vec<Value> = match message.get("content") {
            Some(Value::String(t)) => vec![serde_json::json!({"type": "text", "text": t})],
            Some(Value::Array(b)) => b.clone(),
            _ => Vec::new(),
        };
        if kind == "user" {
            for b in &blocks {
                match b.get("type").and_then(Value::as_str) {
                    Some("tool_result") => {
                        let id = required(b, "tool_use_id", "tool_result").map_err(at)?;
                        results.insert(id, result_of(b));
                    }
                    Some("text") if s.prompt.is_none() && s.turns.is_empty() => {
                        s.prompt = b.get("text").and_then(Value::as_str).map(str::to_string);
                    }
                    _ => {}
                }
            }
            continue;
        }
        // an assistant message comes as one entry per content block, all with the message's id
        let message_id = message.get("id").and_then(Value::as_str).unwrap_or_default().to_string();
        if s.turns.last().is_none_or(|t| t.message_id != message_id || message_id.is_empty()) {
            s.turns.push(Turn { message_id, ..Turn::default() });
        }
        let Some(turn) = s.turns.last_mut() else { continue };
        for b in &blocks {
            match b.get("type").and_then(Value::as_str) {
                Some("text") => {
                    if let Some(t) = b.get("text").and_then(Value::as_str).filter(|t| !t.trim().is_empty()) {
                        turn.text.push(t.to_string());
                    }
                }
                Some("tool_use") => turn.calls.push(call_of(b).map_err(at)?),
                _ => {}
            }
        }
    }
    // an assistant message with nothing to replay (only thinking, or damaged): the stub cannot send an
    // empty answer, and the API refuses one that comes back in the next request
    s.turns.retain(|t| !t.text.is_empty() || !t.calls.is_empty());
    if s.id.is_empty() || s.turns.is_empty() {
        return Err(ImportError {
            place: file.display().to_string(),
            message: "not a Claude Code session: no user and assistant entries with a sessionId".into(),
        });
    }
    for c in s.turns.iter_mut().flat_map(|t| t.calls.iter_mut()) {
        c.result = results.get(&c.id).cloned();
    }
    Ok(s)
}

/// The file content a whole-file Read result shows (`N<TAB>line`, a final empty numbered line for a
/// final newline), or none when it does not look like one.
fn content_of_read(result: &str) -> Option<String> {
    let mut lines = Vec::new();
    for (i, l) in result.split('\n').enumerate() {
        let (n, rest) = l.split_once('\t')?;
        if n.trim().parse::<usize>().ok()? != i + 1 {
            return None;
        }
        lines.push(rest);
    }
    Some(lines.join("\n"))
}

/// A JSON value as a TOML value on one line: objects as inline tables, strings as basic strings; JSON
/// nulls, which TOML lacks, left out.
fn toml_value(v: &Value) -> String {
    match v {
        Value::Object(o) => {
            let fields: Vec<String> = o
                .iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| format!("{} = {}", toml_key(k), toml_value(v)))
                .collect();
            if fields.is_empty() {
                "{}".into()
            } else {
                format!("{{ {} }}", fields.join(", "))
            }
        }
        Value::Array(a) => {
            format!("[{}]", a.iter().filter(|v| !v.is_null()).map(toml_value).collect::<Vec<_>>().join(", "))
        }
        Value::String(s) => toml_str(s),
        Value::Null => "\"\"".into(),
        other => other.to_string(),
    }
}

fn toml_key(k: &str) -> String {
    if !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
        k.to_string()
    } else {
        toml_str(k)
    }
}

/// A TOML basic string: JSON's escapes are TOML's, and DEL, which JSON leaves, is escaped too.
fn toml_str(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_default().replace('\u{7f}', "\\u007F")
}

/// The probe text for a session file; `id` names the probe.
pub fn import(file: &Path, text: &str, id: &str) -> Result<String, ImportError> {
    let s = read_session(file, text)?;
    let cwd = Cwd(s.cwd.trim_end_matches('/').to_string());
    let files = fixture_files(&s, &cwd.0);
    let claims = guessed_claims(&s);
    let mut o = String::new();
    o.push_str(&format!(
        "# Imported by `probelab import` from {} (Claude Code {}, session {}).\n\
         # Review: the claims, the fixture stubs, and every check marked `imported: review`.\n",
        file.display(),
        if s.version.is_empty() { "?" } else { &s.version },
        s.id
    ));
    o.push_str(&format!("id = {}\n", toml_str(id)));
    o.push_str(&format!(
        "claims = [{}]   # guessed from the tools: review\n",
        claims.iter().map(|c| toml_str(c)).collect::<Vec<_>>().join(", ")
    ));
    o.push_str(&format!("about = {}\n", toml_str(&format!("imported from Claude Code session {}", s.id))));
    o.push_str("subjects = [\"builtin\", \"claude-code\"]\n");
    if let Some(p) = &s.prompt {
        o.push_str(&format!("prompt = {}\n", toml_str(&cwd.text(p))));
    }
    // a long session: the built-in loop's turn limit and the deadline grow with its turns
    let turns = s.turns.len() + usize::from(s.turns.last().is_some_and(|t| !t.calls.is_empty()));
    let long = turns > crate::run::DEFAULT_MAX_TURNS;
    if long {
        o.push_str(&format!("deadline_secs = {}   # a long session: a second a turn\n", 60 + turns));
    }
    if !files.is_empty() {
        o.push_str("\n[fixture]\n");
        for (rel, (content, stub)) in &files {
            let mark = if *stub { "   # stub: the old_string of its first Edit, review" } else { "" };
            o.push_str(&format!("files.{} = {}{mark}\n", toml_str(rel), toml_str(content)));
        }
    }
    if long {
        o.push_str(&format!("\n[subject.builtin]\nmax_turns = {turns}\n"));
    }
    let checks = turns_and_checks(&s, &cwd, &mut o);
    if s.turns.last().is_some_and(|t| !t.calls.is_empty()) {
        o.push_str("\n[[turn]]   # the session ended on a call: the model's last word, added\ntext = \"done\"\n");
    }
    o.push_str(&checks);
    Ok(o)
}

/// The session's cwd (no trailing `/`), written `{cwd}` in the probe.
struct Cwd(String);

impl Cwd {
    /// `t` with the cwd written `{cwd}`.
    fn text(&self, t: &str) -> String {
        if self.0.is_empty() {
            t.to_string()
        } else {
            t.replace(&self.0, "{cwd}")
        }
    }

    /// A tool call's input with the cwd written `{cwd}` in every string.
    fn input(&self, v: &Value) -> Value {
        fn walk(v: &mut Value, f: &dyn Fn(&str) -> String) {
            match v {
                Value::String(s) => *s = f(s),
                Value::Array(a) => a.iter_mut().for_each(|x| walk(x, f)),
                Value::Object(o) => o.values_mut().for_each(|x| walk(x, f)),
                _ => {}
            }
        }
        let mut v = v.clone();
        walk(&mut v, &|s| self.text(s));
        v
    }
}

/// The fixture's files: per path under the cwd, its content before the session changed it, as a whole
/// Read showed it, or a stub (`true`): the old_string of the file's first Edit.
fn fixture_files(s: &Session, cwd: &str) -> BTreeMap<String, (String, bool)> {
    let mut files: BTreeMap<String, (String, bool)> = BTreeMap::new(); // rel → (content, stub)
    let mut changed: Vec<String> = Vec::new();
    for c in s.turns.iter().flat_map(|t| &t.calls) {
        let Some(path) = c.input.get("file_path").or_else(|| c.input.get("notebook_path")).and_then(Value::as_str)
        else {
            continue;
        };
        let Some(rel) = path.strip_prefix(&format!("{cwd}/")).filter(|_| !cwd.is_empty()) else { continue };
        let rel = rel.to_string();
        let known = files.contains_key(&rel) || changed.contains(&rel);
        match c.name.as_str() {
            "Read" if !known && c.input.get("offset").is_none() && c.input.get("limit").is_none() => {
                if let Some((text, false)) = &c.result {
                    if let Some(content) = content_of_read(text) {
                        files.insert(rel, (content, false));
                    }
                }
            }
            "Edit" if !known => {
                let old = c.input.get("old_string").and_then(Value::as_str).unwrap_or_default();
                files.insert(rel.clone(), (format!("{old}\n"), true));
                changed.push(rel);
            }
            "Write" | "Edit" | "NotebookEdit" => changed.push(rel),
            _ => {}
        }
    }
    files
}

/// The claims guessed from the tools the session called (the first claim of each family, in order of
/// first call; `PIPE-1` when none).
fn guessed_claims(s: &Session) -> Vec<String> {
    let mut claims: Vec<String> = Vec::new();
    for c in s.turns.iter().flat_map(|t| &t.calls) {
        let family = match c.name.as_str() {
            "Read" => "READ",
            "Edit" | "Write" => "EDIT",
            "NotebookEdit" => "NB",
            "Bash" => "BASH",
            "Grep" => "GREP",
            "Glob" => "GLOB",
            _ => "PIPE",
        };
        let claim = format!("{family}-1");
        if crate::claims::exists(&claim) && !claims.contains(&claim) {
            claims.push(claim);
        }
    }
    if claims.is_empty() {
        claims.push("PIPE-1".into());
    }
    claims
}

/// Writes the session's turns to `o` (each call given an id, `read-3`) and returns the checks of their
/// results, marked for review (the whole text when short, else its first line).
fn turns_and_checks(s: &Session, cwd: &Cwd, o: &mut String) -> String {
    let mut checks = String::new();
    let mut n = 0;
    for t in &s.turns {
        o.push_str("\n[[turn]]\n");
        if !t.text.is_empty() {
            o.push_str(&format!("text = {}\n", toml_str(&cwd.text(&t.text.join("\n\n")))));
        }
        if t.calls.is_empty() {
            continue;
        }
        o.push_str("tool_use = [\n");
        for c in &t.calls {
            n += 1;
            let name =
                format!("{}-{n}", c.name.to_ascii_lowercase().replace(|ch: char| !ch.is_ascii_alphanumeric(), "-"));
            o.push_str(&format!(
                "  {{ id = {}, name = {}, input = {} }},\n",
                toml_str(&name),
                toml_str(&c.name),
                toml_value(&cwd.input(&c.input))
            ));
            match &c.result {
                None => checks.push_str(&format!("\n# the session recorded no result for {name}\n")),
                Some((text, is_error)) => checks.push_str(&check_of(&name, &cwd.text(text), *is_error)),
            }
        }
        o.push_str("]\n");
    }
    checks
}

/// The check of a call's result, marked for review.
fn check_of(name: &str, text: &str, is_error: bool) -> String {
    let mut check = format!("\n[[check]]   # imported: review\nresult = {}\nis_error = {is_error}\n", toml_str(name));
    if text.chars().count() <= EQUALS_MAX {
        check.push_str(&format!("equals = {}\n", toml_str(text)));
    } else if let Some(first) = text.lines().next().filter(|l| !l.is_empty()) {
        check.push_str(&format!(
            "contains = {}   # the first line of {} chars\n",
            toml_str(first),
            text.chars().count()
        ));
    }
    check
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(v: Value) -> String {
        v.to_string() + "\n"
    }

    fn session() -> String {
        let base = serde_json::json!({"sessionId": "s1", "cwd": "/w", "version": "2.1.235"});
        let with = |extra: Value| {
            let mut v = base.clone();
            if let (Some(o), Value::Object(e)) = (v.as_object_mut(), extra) {
                o.extend(e);
            }
            line(v)
        };
        [
            line(serde_json::json!({"type": "queue-operation", "operation": "enqueue", "sessionId": "s1"})),
            with(serde_json::json!({"type": "user", "message": {"role": "user", "content": "Fix /w/f.txt."}})),
            with(serde_json::json!({"type": "assistant", "message": {"id": "m1", "content": [{"type": "text", "text": "Reading."}]}})),
            with(serde_json::json!({"type": "assistant", "message": {"id": "m1", "content": [{"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": "/w/f.txt"}}]}})),
            with(serde_json::json!({"type": "user", "message": {"content": [{"type": "tool_result", "tool_use_id": "t1", "content": "1\tone\n2\ttwo\n3\t"}]}})),
            with(serde_json::json!({"type": "assistant", "isSidechain": true, "message": {"id": "x", "content": [{"type": "tool_use", "id": "t9", "name": "Bash", "input": {"command": "ls"}}]}})),
            with(serde_json::json!({"type": "assistant", "message": {"id": "m2", "content": [{"type": "tool_use", "id": "t2", "name": "Edit", "input": {"file_path": "/w/g.txt", "old_string": "a", "new_string": "b", "x": null}}]}})),
            with(serde_json::json!({"type": "user", "message": {"content": [{"type": "tool_result", "tool_use_id": "t2", "is_error": true, "content": "<tool_use_error>String to replace not found in file.</tool_use_error>"}]}})),
        ]
        .concat()
    }

    #[test]
    fn an_assistant_message_with_nothing_to_replay_is_left_out_and_the_probe_parses() {
        // only thinking: no text, no call (found by the surface fuzzer as a probe with `text = ""`)
        let thinking = serde_json::json!({"type": "assistant", "sessionId": "s1", "cwd": "/w",
            "message": {"id": "m0", "content": [{"type": "thinking", "thinking": "hm"}]}});
        let text = session().replacen("\n", &format!("\n{}", line(thinking)), 2);
        let p = import(Path::new("s.jsonl"), &text, "imported.s1").unwrap_or_else(|e| panic!("{e}"));
        assert!(!p.contains("text = \"\"\n"), "{p}");
        let parsed = crate::probe::parse(Path::new("probes/s.toml"), &p);
        assert!(parsed.is_ok(), "{:?}\n{p}", parsed.err().map(|e| e.to_string()));
    }

    #[test]
    fn a_session_becomes_turns_named_calls_fixture_stubs_and_proposed_checks() {
        let p = import(Path::new("s.jsonl"), &session(), "imported.s1").unwrap_or_else(|e| panic!("{e}"));
        assert!(p.contains("prompt = \"Fix {cwd}/f.txt.\"\n"), "{p}");
        assert!(p.contains("files.\"f.txt\" = \"one\\ntwo\\n\"\n"), "{p}");
        assert!(p.contains("files.\"g.txt\" = \"a\\n\"   # stub"), "{p}");
        assert!(p.contains("[[turn]]\ntext = \"Reading.\"\ntool_use = [\n  { id = \"read-1\", name = \"Read\", input = { file_path = \"{cwd}/f.txt\" } },\n]\n"), "{p}");
        assert!(p.contains("{ id = \"edit-2\", name = \"Edit\", input = { file_path = \"{cwd}/g.txt\", old_string = \"a\", new_string = \"b\" } }"), "{p}");
        assert!(!p.contains("t9") && !p.contains("\"ls\""), "sub-agent entries are left out: {p}");
        assert!(p.contains("ended on a call: the model's last word, added\ntext = \"done\"\n"), "{p}");
        assert!(
            p.contains("result = \"edit-2\"\nis_error = true\nequals = \"<tool_use_error>String to replace"),
            "{p}"
        );
        assert!(p.contains("claims = [\"READ-1\", \"EDIT-1\"]"), "{p}");
        let probe = crate::probe::parse(Path::new("imported.toml"), &p).unwrap_or_else(|e| panic!("{e}\n{p}"));
        assert_eq!(probe.checks.len(), 2);
        assert_eq!(probe.script.turns.len(), 3);
    }

    #[test]
    fn a_long_session_gets_a_turn_limit_and_a_deadline_that_fit_it() {
        let base = serde_json::json!({"sessionId": "s1", "cwd": "/w", "version": "2.1.235"});
        let mut text = line(
            serde_json::json!({"type": "user", "sessionId": "s1", "cwd": "/w", "message": {"role": "user", "content": "go"}}),
        );
        for i in 0..120 {
            let mut a = base.clone();
            a["type"] = "assistant".into();
            a["message"] = serde_json::json!({"id": format!("m{i}"), "content": [{"type": "tool_use", "id": format!("t{i}"), "name": "Read", "input": {"file_path": "/w/f.txt"}}]});
            let mut u = base.clone();
            u["type"] = "user".into();
            u["message"] = serde_json::json!({"content": [{"type": "tool_result", "tool_use_id": format!("t{i}"), "content": "1\tone\n"}]});
            text.push_str(&(line(a) + &line(u)));
        }
        let p = import(Path::new("s.jsonl"), &text, "imported.long").unwrap_or_else(|e| panic!("{e}"));
        let probe = crate::probe::parse(Path::new("imported.toml"), &p).unwrap_or_else(|e| panic!("{e}\n{p}"));
        // 120 calls and the final word: without a limit the built-in loop stopped at its default 50
        assert_eq!(probe.script.turns.len(), 121);
        assert_eq!(probe.subject.builtin.max_turns, Some(121));
        assert_eq!(probe.deadline_secs, 181);
        // a short one keeps the defaults
        let short = import(Path::new("s.jsonl"), &session(), "imported.s1").unwrap_or_else(|e| panic!("{e}"));
        assert!(!short.contains("max_turns") && !short.contains("deadline_secs"), "{short}");
    }

    #[test]
    fn bad_input_is_named_with_file_and_line() {
        let e = |t: &str| import(Path::new("s.jsonl"), t, "x").err().map(|e| e.to_string()).unwrap_or_default();
        let s = session();
        let cut = &s[..s.len() - 20];
        assert!(e(cut).starts_with("s.jsonl:8: the session is truncated"), "{}", e(cut));
        let bad = s.replacen("\n", "\nnot json\n", 2);
        assert!(e(&bad).starts_with("s.jsonl:2: not a JSON line of a Claude Code session"), "{}", e(&bad));
        assert!(e("{\"a\": 1}\n").starts_with("s.jsonl: not a Claude Code session"), "{}", e("{\"a\": 1}\n"));
        // a call without a name or an id, a result without its call's id: an error at the line, not `name = ""`
        let no_name = s.replace("\"name\":\"Read\",", "");
        assert_ne!(no_name, s);
        assert_eq!(
            e(&no_name),
            "s.jsonl:4: a tool_use block without its name: not a session Claude Code wrote (or a damaged one)"
        );
        let no_id = s.replace("{\"type\":\"tool_use\",\"id\":\"t1\",", "{\"type\":\"tool_use\",");
        assert_ne!(no_id, s);
        assert!(e(&no_id).starts_with("s.jsonl:4: a tool_use block without its id: "), "{}", e(&no_id));
        let no_use_id = s.replace("\"tool_use_id\":\"t2\",", "");
        assert_ne!(no_use_id, s);
        assert!(
            e(&no_use_id).starts_with("s.jsonl:8: a tool_result block without its tool_use_id: "),
            "{}",
            e(&no_use_id)
        );
        assert_eq!(content_of_read("1\tone\n2\t"), Some("one\n".into()));
        assert_eq!(content_of_read("File does not exist."), None);
        assert_eq!(
            toml_value(&serde_json::json!({"a b": "x\ty\u{7f}", "n": [1, null, true]})),
            "{ \"a b\" = \"x\\ty\\u007F\", n = [1, true] }"
        );
    }
}
