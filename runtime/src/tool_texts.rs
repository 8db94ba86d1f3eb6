//! The tools' descriptions and input schemas as each measured Claude Code release sends them: data, not
//! code. `runtime/data/tool-texts.json` is generated from the committed real goldens
//! (`golden/claude-code@V/*.snap`, every `tools:` line, and the tool blobs of `golden/blobs/`) by
//! [`generate`]: every `--publish` of the lab (matrix, report, watch) writes it again when it is there,
//! and this module's test fails when it is stale (`PROBELAB_BLESS_TOOL_TEXTS=1 cargo test -p
//! probelab-runtime tool_texts` writes it too).
//!
//! For each sampled version and tool the text is the one most of that version's probes were sent (a
//! text a probe's own settings shape — a sandbox note, a custom agent — is the less common one; ties go
//! to the smaller hash). Consecutive versions with the same text are one entry: an entry holds from its
//! `from` (the first *sampled* version showing it: a change between two sampled versions is placed at
//! the later one) until the next entry's. A text that still holds a normaliser's placeholder
//! (`<home>`, `<cwd>`…) or a loaded deferred tool's `defer_loading` is left out (the runtime's own text
//! stands in).
//!
//! Where they are used ([`crate::builtin::pool`]): at any profile but the reference, each tool of the
//! pool is offered with the text of its release ([`Registry::with_texts`](crate::registry::Registry)),
//! and the tools the runtime does not perform but the release offers ([`OFFERED_ONLY`]) are in the
//! pool with their text, answering an honest error ([`Offered`]). The reference profile keeps the
//! runtime's own texts and tool list (the goldens under `golden/builtin/` were written for them).
//! What a tool *does* never comes from here: a call's input is still validated against the tool's own
//! schema.

use crate::context::ToolContext;
use crate::profile::Profile;
use crate::tool::{Tool, ToolError, ToolOutput};
use futures_util::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The generated data (see the module's docs).
pub const DATA: &str = include_str!("../data/tool-texts.json");

/// Tools the releases offer that the runtime does not perform: in the pool of a profile whose release
/// has their text, answering [`Offered`]'s error.
pub const OFFERED_ONLY: &[&str] = &["ListAgents", "Monitor", "ReportFindings", SCHEDULE_WAKEUP];

/// ScheduleWakeup: deferred while tool search is a switch (2.1.235 with `ENABLE_TOOL_SEARCH=true`
/// leaves it out of the first request), sent in full once tool search is on by default (2.1.304 on:
/// every measured first request lists it).
const SCHEDULE_WAKEUP: &str = "ScheduleWakeup";

/// One tool's text from a release on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Text {
    /// The first sampled release that sent it.
    pub from: String,
    /// The description.
    pub description: String,
    /// The input schema.
    pub input_schema: Value,
}

/// Tool → its texts, oldest first.
pub type Texts = BTreeMap<String, Vec<Text>>;

fn all() -> &'static Texts {
    static TEXTS: OnceLock<Texts> = OnceLock::new();
    // the test holds DATA to what the generator makes: it parses
    TEXTS.get_or_init(|| serde_json::from_str(DATA).unwrap_or_default())
}

/// The text of `tool` at `profile`: the entry with the latest `from` at or before its release (None for
/// a tool without data, or a release before its first entry).
pub fn at(tool: &str, profile: Profile) -> Option<&'static Text> {
    let release = profile.release();
    all().get(tool)?.iter().rev().find(|t| crate::profile::release(&t.from).is_some_and(|from| from <= release))
}

/// A tool the release offers and the runtime does not perform ([`OFFERED_ONLY`]): offered with its
/// release's text; a call is an error that says so.
#[derive(Debug, Clone, Copy)]
pub struct Offered {
    name: &'static str,
    text: &'static Text,
    defer: Option<bool>,
}

impl Offered {
    /// The tool `name` of [`OFFERED_ONLY`] at `profile`, when its release offers it.
    pub fn at(name: &'static str, profile: Profile) -> Option<Offered> {
        let defer = (name == SCHEDULE_WAKEUP).then(|| !profile.has(&crate::tools::tool_search::TOOL_SEARCH_BY_DEFAULT));
        at(name, profile).map(|text| Offered { name, text, defer })
    }
}

impl Tool for Offered {
    fn name(&self) -> &'static str {
        self.name
    }

    fn description(&self) -> String {
        self.text.description.clone()
    }

    fn input_schema(&self) -> Value {
        self.text.input_schema.clone()
    }

    fn defer_loading(&self) -> Option<bool> {
        self.defer
    }

    fn call<'a>(&'a self, _input: Value, _ctx: &'a ToolContext) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        let name = self.name;
        Box::pin(async move {
            Err(ToolError::Runtime(format!(
                "{name} is offered as Claude Code offers it, but the built-in runtime does not perform it (yet)."
            )))
        })
    }
}

/// Placeholders of the lab's normaliser: a text holding one is not what the release sent.
const PLACEHOLDERS: &[&str] = &["<home>", "<cwd>", "<sandbox>", "<tmp>", "<uuid>", "<id-", "<cwd-slug>"];

/// What `runtime/data/tool-texts.json` holds for the goldens under `golden` (see the module's docs):
/// every `golden/claude-code@V/` in release order, the tool blobs of `golden/blobs/`. A golden
/// directory or its blobs that cannot be listed is an error; an unreadable snapshot or blob counts as
/// holding no text.
pub fn generate(golden: &Path) -> std::io::Result<Texts> {
    let mut versions: Vec<(crate::profile::Version, PathBuf)> = std::fs::read_dir(golden)?
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_str()?.to_string();
            Some((crate::profile::release(name.strip_prefix("claude-code@")?)?, e.path()))
        })
        .collect();
    versions.sort();
    let blobs: BTreeMap<String, PathBuf> = std::fs::read_dir(golden.join("blobs"))?
        .flatten()
        .filter_map(|e| Some((e.file_name().to_str()?.get(..12)?.to_string(), e.path())))
        .collect();
    let mut out = Texts::new();
    for (release, dir) in versions {
        // tool → short hash → in how many probes
        let mut seen: BTreeMap<String, BTreeMap<String, usize>> = BTreeMap::new();
        let mut snaps: Vec<PathBuf> =
            std::fs::read_dir(&dir).into_iter().flatten().flatten().map(|e| e.path()).collect();
        snaps.sort();
        for snap in snaps.iter().filter(|p| p.extension().is_some_and(|x| x == "snap")) {
            let text = std::fs::read_to_string(snap).unwrap_or_default();
            let mut here: BTreeMap<String, String> = BTreeMap::new();
            for line in text.lines().filter_map(|l| l.strip_prefix("tools: ")) {
                let tokens: Vec<&str> = line.split(' ').collect();
                for (i, tok) in tokens.iter().enumerate() {
                    let Some((name, hash)) = tok.split_once('@') else { continue };
                    if tokens.get(i + 1) == Some(&"(deferred)") || name.starts_with("mcp__") {
                        continue;
                    }
                    here.entry(name.to_string()).or_insert_with(|| hash.to_string());
                }
            }
            for (name, hash) in here {
                *seen.entry(name).or_default().entry(hash).or_default() += 1;
            }
        }
        for (name, hashes) in seen {
            // the most common; ties to the smaller hash (BTreeMap order, max_by keeps the last max)
            let best = hashes.iter().rev().max_by_key(|(_, n)| **n).map(|(h, _)| h.clone()).unwrap_or_default();
            let Some(path) = blobs.get(&best) else { continue };
            let raw = std::fs::read_to_string(path).unwrap_or_default();
            if PLACEHOLDERS.iter().any(|p| raw.contains(p)) {
                continue;
            }
            let Ok(Value::Object(blob)) = serde_json::from_str::<Value>(&raw) else { continue };
            if blob.keys().any(|k| !matches!(k.as_str(), "name" | "description" | "input_schema")) {
                continue;
            }
            let text = Text {
                from: release.to_string(),
                description: blob.get("description").and_then(Value::as_str).unwrap_or_default().to_string(),
                input_schema: blob.get("input_schema").cloned().unwrap_or(Value::Null),
            };
            let entries = out.entry(name).or_default();
            let same = entries
                .last()
                .is_some_and(|l: &Text| l.description == text.description && l.input_schema == text.input_schema);
            if !same {
                entries.push(text);
            }
        }
    }
    Ok(out)
}

/// The file's text for `texts`: pretty JSON with a final newline.
pub fn to_json(texts: &Texts) -> String {
    serde_json::to_string_pretty(texts).unwrap_or_default() + "\n"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_committed_tool_texts_are_what_the_goldens_hold() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let made = to_json(&generate(&root.join("golden")).unwrap_or_else(|e| panic!("{e}")));
        let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/tool-texts.json");
        if std::env::var_os("PROBELAB_BLESS_TOOL_TEXTS").is_some_and(|v| v == "1") {
            std::fs::write(&file, &made).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        }
        assert!(
            DATA == made,
            "runtime/data/tool-texts.json is stale against golden/claude-code@*/: run \
             PROBELAB_BLESS_TOOL_TEXTS=1 cargo test -p probelab-runtime tool_texts (then build again)"
        );
    }

    #[test]
    fn a_text_holds_from_its_release_until_the_next() {
        let at_v = |t: &str, v: &str| at(t, Profile::at(v).unwrap_or_else(|e| panic!("{e}"))).map(|t| t.from.as_str());
        // TaskOutput's text stops with the tool at 2.1.277: the last entry still answers (the pool decides)
        assert_eq!(at_v("ListAgents", "2.1.240"), None, "ListAgents is first sent by 2.1.252 (sampled)");
        assert!(at_v("ListAgents", "2.1.252").is_some());
        assert_eq!(at_v("Monitor", "2.1.309"), None);
        assert!(at_v("Monitor", "2.1.333").is_some());
        // Read gains `allow_large` at 2.1.296 (docs/matrix/interface.md)
        let read =
            |v: &str| at("Read", Profile::at(v).unwrap_or_else(|e| panic!("{e}"))).map(|t| t.input_schema.clone());
        let has = |v: &str| read(v).is_some_and(|s| s.pointer("/properties/allow_large").is_some());
        assert!(!has("2.1.295") && has("2.1.296") && has("2.1.333"));
    }
}
