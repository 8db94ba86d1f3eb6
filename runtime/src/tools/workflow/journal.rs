//! A run's journal (WF-1): `journal.jsonl` in the run's transcript dir, a `started` and a `result` line
//! per live agent() call, and the reference's key chain ([`journal_key`] over [`canonical_opts`]) by
//! which a resume replays the longest unchanged prefix of calls.

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// Version tag of journal keys (WF-1, the reference's `v2`).
pub const JOURNAL_KEY_VERSION: &str = "v2";

/// The journal of a run: the results on disk when it started, the key chain, the file to append to.
pub struct Journal {
    path: PathBuf,
    /// The sandbox roots its appends are confined to ([`crate::nofollow`]: never through a link the
    /// subject planted on the way).
    roots: Vec<PathBuf>,
    /// The results on disk when the run started, by key: (agent id, result).
    pub results: HashMap<String, (String, Value)>,
    /// The key of the last call (the chain's link).
    pub previous: String,
    /// Some call had no result on disk: every call from there runs live.
    pub missed: bool,
}

impl Journal {
    /// The journal of the run whose transcript dir is `dir`: empty when there is none yet (a first run),
    /// an error when there is one that cannot be read (its results would be lost without a word).
    pub fn load(dir: &Path) -> std::io::Result<Journal> {
        let path = dir.join("journal.jsonl");
        let text = match std::fs::read_to_string(&path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            read => read?,
        };
        Ok(Journal::parse(path, &text))
    }

    /// A journal of no results that appends to `dir`'s `journal.jsonl` (a run whose journal could not be
    /// read: every call runs live).
    pub fn empty(dir: &Path) -> Journal {
        Journal::parse(dir.join("journal.jsonl"), "")
    }

    fn parse(path: PathBuf, text: &str) -> Journal {
        let mut results = HashMap::new();
        for line in text.lines() {
            let Ok(v) = serde_json::from_str::<Value>(line) else { continue };
            if v["type"] == "result" {
                if let Some(key) = v["key"].as_str() {
                    let agent = v["agentId"].as_str().unwrap_or_default().to_string();
                    results.insert(key.to_string(), (agent, v["result"].clone()));
                }
            }
        }
        Journal { path, roots: Vec::new(), results, previous: String::new(), missed: false }
    }

    /// Its appends confined to `roots` (no link followed on the way from one of them).
    pub fn within(mut self, roots: &[PathBuf]) -> Journal {
        self.roots = roots.to_vec();
        self
    }

    /// Appends a line (a failed write loses the line, never the run).
    pub fn append(&self, line: &Value) {
        let _ = crate::nofollow::append(&self.roots, &self.path, format!("{line}\n").as_bytes());
    }
}

/// The canonical form of `opts` that goes into a journal key (the reference's: the keys that change what
/// an agent does, in this order, nested object keys sorted).
pub fn canonical_opts(opts: &Value) -> String {
    const KEYS: &[&str] =
        &["schema", "model", "effort", "isolation", "agentType", "disallowedTools", "bashCommandClamp"];
    let Some(o) = opts.as_object() else { return "{}".into() };
    fn sorted(v: &Value) -> Value {
        match v {
            Value::Object(m) => {
                let mut keys: Vec<&String> = m.keys().filter(|k| k.as_str() != "__proto__").collect();
                keys.sort();
                Value::Object(keys.into_iter().map(|k| (k.clone(), sorted(&m[k]))).collect::<Map<String, Value>>())
            }
            Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
            other => other.clone(),
        }
    }
    let picked: Map<String, Value> =
        KEYS.iter().filter_map(|k| o.get(*k).map(|v| (k.to_string(), sorted(v)))).collect();
    Value::Object(picked).to_string()
}

/// The journal key of a call: `v2:` + SHA-256 of `previous \0 prompt \0 canonical opts` (WF-1).
pub fn journal_key(previous: &str, prompt: &str, opts: &str) -> String {
    let mut h = Sha256::new();
    h.update(previous.as_bytes());
    h.update(b"\0");
    h.update(prompt.as_bytes());
    h.update(b"\0");
    h.update(opts.as_bytes());
    let hex: String = h.finalize().iter().map(|b| format!("{b:02x}")).collect();
    format!("{JOURNAL_KEY_VERSION}:{hex}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn journal_keys_match_the_reference() {
        // measured on Claude Code 2.1.235: the first two keys of a run of agent('WF-ONE: first'),
        // agent('WF-TWO: second') without opts
        let k1 = journal_key("", "WF-ONE: first", &canonical_opts(&Value::Null));
        assert_eq!(k1, "v2:51c4a327b8923324009db5ae63bed8e7e44ea0e54dfbc388bfccdfd3dcf734df");
        let k2 = journal_key(&k1, "WF-TWO: second", "{}");
        assert_eq!(k2, "v2:e7f3f20e874e3e8882c9bcb04d225b4bea419a455a7519d16a7479904761938d");
    }

    #[test]
    fn opts_are_canonical() {
        let o = json!({"label": "x", "model": "sonnet", "schema": {"b": 1, "a": [{"d": 1, "c": 2}]}});
        assert_eq!(canonical_opts(&o), r#"{"schema":{"a":[{"c":2,"d":1}],"b":1},"model":"sonnet"}"#);
        assert_eq!(canonical_opts(&json!({"label": "only"})), "{}");
    }

    #[test]
    fn a_missing_journal_is_empty_and_an_unreadable_one_is_an_error() {
        let d = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let loaded = Journal::load(d.path()).unwrap_or_else(|e| panic!("{e}"));
        assert!(loaded.results.is_empty(), "a first run has no journal yet");
        let line = json!({"type": "result", "key": "k1", "agentId": "a1", "result": "r"});
        loaded.append(&line);
        let again = Journal::load(d.path()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(again.results.get("k1"), Some(&("a1".to_string(), json!("r"))));
        // not text: once read as no journal at all, its results lost without a word
        std::fs::write(d.path().join("journal.jsonl"), b"{\"type\": \"result\", \"key\": \"\xff\"}\n")
            .unwrap_or_else(|e| panic!("{e}"));
        let err = Journal::load(d.path()).err().unwrap_or_else(|| panic!("invalid UTF-8 is an error"));
        assert_eq!(err.kind(), std::io::ErrorKind::InvalidData);
        // a directory where the file should be
        std::fs::remove_file(d.path().join("journal.jsonl")).unwrap_or_else(|e| panic!("{e}"));
        std::fs::create_dir(d.path().join("journal.jsonl")).unwrap_or_else(|e| panic!("{e}"));
        assert!(Journal::load(d.path()).is_err(), "a directory is an error");
    }
}
