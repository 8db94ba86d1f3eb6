//! The interface timeline: per pair of neighbouring versions of the matrix, what the model is offered —
//! tools added, removed, deferred (moved behind ToolSearch: not removed), no longer deferred; for a tool
//! whose schema or description changed, the input-schema properties added, removed or retyped and
//! whether its description changed; the first request's model and `max_tokens` line — all read from the
//! versions' goldens with [`crate::transcript::diff`] (the same comparison `probelab diff` makes).
//! `docs/matrix/interface.md`, regenerated with the matrix ([`super::watch::publish`]).
//!
//! The tools of the lab's fixture MCP server (`mcp__fixture__…`) are the probes' own, not the subject's
//! interface, and are left out.

use super::budgets::IsBroken;
use crate::transcript::diff::{blob_text, diff_dirs, word_diff, SetError, INTO_FIRST, OUT_OF_FIRST};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// One tool's schema as a map of property → its JSON type (`string`, `integer`, `array<string>`, …).
fn properties(blob: &str) -> Option<(String, BTreeMap<String, String>)> {
    let v: serde_json::Value = serde_json::from_str(blob).ok()?;
    let description = v.get("description").and_then(|d| d.as_str()).unwrap_or("").to_string();
    let props = v.get("input_schema").and_then(|s| s.get("properties")).and_then(|p| p.as_object())?;
    let ty = |p: &serde_json::Value| -> String {
        let t = p.get("type").map(|t| t.to_string().trim_matches('"').to_string());
        match (t.as_deref(), p.get("items").and_then(|i| i.get("type")).and_then(|t| t.as_str())) {
            (Some("array"), Some(item)) => format!("array<{item}>"),
            (Some(t), _) => t.to_string(),
            (None, _) if p.get("enum").is_some() => "enum".to_string(),
            (None, _) if p.get("anyOf").is_some() || p.get("oneOf").is_some() => "union".to_string(),
            (None, _) => "any".to_string(),
        }
    };
    Some((description, props.iter().map(|(k, p)| (k.clone(), ty(p))).collect()))
}

/// The structured parts of a tool description: a line `Name: {…}` or `Name: […]` whose rest is JSON (Bash's
/// sandbox policy: `Filesystem: {"read":{"denyOnly":[…]},"write":{"allowOnly":[…]}}`, `Network:
/// {"allowedHosts":[]}`), each flattened to its leaves: `Filesystem write.allowOnly` → the list's items (a
/// scalar is a list of one). Returns the description without those lines — the prose, so that a part
/// added or gone is said once, as its items — and the leaves.
pub fn structured(description: &str) -> (String, BTreeMap<String, Vec<String>>) {
    fn leaves(path: &str, v: &serde_json::Value, out: &mut BTreeMap<String, Vec<String>>) {
        match v {
            serde_json::Value::Object(m) => {
                for (k, x) in m {
                    leaves(&if path.is_empty() { k.clone() } else { format!("{path}.{k}") }, x, out);
                }
                // an empty object keeps its place (a policy emptied reads as its items removed)
                if m.is_empty() {
                    out.entry(path.to_string()).or_default();
                }
            }
            serde_json::Value::Array(items) => {
                let list = out.entry(path.to_string()).or_default();
                list.extend(items.iter().map(|i| i.as_str().map_or_else(|| i.to_string(), str::to_string)));
            }
            other => out
                .entry(path.to_string())
                .or_default()
                .push(other.as_str().map_or_else(|| other.to_string(), str::to_string)),
        }
    }
    let mut parts = BTreeMap::new();
    let mut prose = Vec::new();
    for line in description.split('\n') {
        let parsed = line.split_once(": ").filter(|(name, rest)| {
            !name.is_empty()
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == ' ' || c == '_')
                && (rest.starts_with('{') || rest.starts_with('['))
        });
        match parsed.and_then(|(name, rest)| Some((name, serde_json::from_str::<serde_json::Value>(rest).ok()?))) {
            Some((name, v)) => {
                let mut flat = BTreeMap::new();
                leaves("", &v, &mut flat);
                parts.extend(
                    flat.into_iter()
                        .map(|(k, l)| (if k.is_empty() { name.to_string() } else { format!("{name} {k}") }, l)),
                );
            }
            None => prose.push(line.to_string()),
        }
    }
    (prose.join("\n"), parts)
}

/// `... and 45 more (truncated for prompt size)`: the count of a list's items the description leaves out.
fn more_count(item: &str) -> Option<u64> {
    item.strip_prefix("... and ")?.split(' ').next()?.parse().ok()
}

/// What changed in the structured parts of two descriptions ([`structured`]), a line per list: `sandbox
/// policy Filesystem write.allowOnly: now listed `<home>/.claude/state`, 58 → 59 items in all (45 → 46 of them not listed …)`, or the part
/// added or removed whole. Empty when they are the same.
pub fn structured_change(old: &BTreeMap<String, Vec<String>>, new: &BTreeMap<String, Vec<String>>) -> Vec<String> {
    let mut out = Vec::new();
    let keys: BTreeSet<&String> = old.keys().chain(new.keys()).collect();
    for k in keys {
        let (a, b) = (old.get(k), new.get(k));
        let items = |l: Option<&Vec<String>>| -> (BTreeSet<String>, Option<u64>) {
            let l = l.map(Vec::as_slice).unwrap_or(&[]);
            (l.iter().filter(|i| more_count(i).is_none()).cloned().collect(), l.iter().find_map(|i| more_count(i)))
        };
        let ((ia, ma), (ib, mb)) = (items(a), items(b));
        let mut said: Vec<String> = Vec::new();
        // a list the description truncates shows its first items only: an item may move between the
        // listed head and the counted tail without joining or leaving the list, so it is said as listed
        // or no longer listed, and the totals say what joined or left
        let truncated = ma.is_some() || mb.is_some();
        let (plus, minus) = if truncated { ("now listed", "no longer listed") } else { ("+", "-") };
        // at most LISTED items a side, the rest counted (a policy gone whole is dozens of paths)
        const LISTED: usize = 8;
        for (sign, items) in [(plus, ib.difference(&ia).collect::<Vec<_>>()), (minus, ia.difference(&ib).collect())] {
            said.extend(items.iter().take(LISTED).map(|i| format!("{sign} `{i}`")));
            if items.len() > LISTED {
                said.push(format!("{sign} {} more", items.len() - LISTED));
            }
        }
        if truncated && (ma != mb || !said.is_empty()) {
            let all = |listed: usize, more: Option<u64>| listed as u64 + more.unwrap_or(0);
            let n = |m: Option<u64>| m.unwrap_or(0);
            said.push(format!(
                "{} → {} items in all ({} → {} of them not listed: truncated for prompt size)",
                all(ia.len(), ma),
                all(ib.len(), mb),
                n(ma),
                n(mb)
            ));
        }
        match (a, b) {
            (None, Some(_)) if said.is_empty() => out.push(format!("{k}: new (empty)")),
            (Some(_), None) if said.is_empty() => out.push(format!("{k}: gone (was empty)")),
            (None, Some(_)) => out.push(format!("{k} (new): {}", said.join(", "))),
            (Some(_), None) => out.push(format!("{k} (gone): {}", said.join(", "))),
            _ if !said.is_empty() => out.push(format!("{k}: {}", said.join(", "))),
            _ => {}
        }
    }
    out
}

/// What changed in one tool's blob: properties added / removed / retyped, the structured parts of its
/// description list by list ([`structured_change`]), and whether the rest of its description (the prose)
/// changed.
pub fn tool_change(old_blob: &str, new_blob: &str) -> Vec<String> {
    let (Some((da, pa)), Some((db, pb))) = (properties(old_blob), properties(new_blob)) else {
        return vec!["schema or description changed".into()];
    };
    let ((da, sa), (db, sb)) = (structured(&da), structured(&db));
    let mut out: Vec<String> = structured_change(&sa, &sb).into_iter().map(|l| format!("description's {l}")).collect();
    for (k, t) in &pb {
        match pa.get(k) {
            None => out.push(format!("+ property `{k}` ({t})")),
            Some(old) if old != t => out.push(format!("~ property `{k}` {old} → {t}")),
            _ => {}
        }
    }
    for (k, t) in &pa {
        if !pb.contains_key(k) {
            out.push(format!("- property `{k}` ({t})"));
        }
    }
    if da != db {
        out.push(format!("description changed: {}", word_diff(&da, &db)));
    }
    if out.is_empty() {
        // same properties and types, another blob: a property's description, an enum, a default
        out.push("schema details changed (descriptions, enums or defaults of its properties)".into());
    }
    out
}

/// The distinct `model: …` lines of a golden directory's transcripts (those of the probes `skip` names
/// left out).
fn model_lines(dir: &Path, skip: &dyn Fn(&str) -> bool) -> BTreeSet<String> {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.strip_suffix(".snap").is_some_and(|probe| !skip(probe))
        })
        .filter_map(|e| std::fs::read_to_string(e.path()).ok())
        .flat_map(|t| t.lines().filter_map(|l| l.strip_prefix("model: ").map(str::to_string)).collect::<Vec<_>>())
        .collect()
}

/// The changes between two versions' goldens, a line each. The goldens of a probe whose run broke an
/// invariant on either version (`broken(probe, version)`) are left out: a broken run's requests are no
/// interface of the subject's (a script that ran out made Claude Code retry without tool search, and its
/// tools read as no longer deferred).
pub fn between(golden_root: &Path, old: &str, new: &str, broken: IsBroken<'_>) -> Result<Vec<String>, SetError> {
    let (l, r) = (golden_root.join(super::subject(old)), golden_root.join(super::subject(new)));
    let blobs = golden_root.join("blobs");
    let d = diff_dirs(&l, &r, &blobs)?;
    let ours = |t: &String| !t.starts_with("mcp__fixture__");
    let mut lines: BTreeSet<String> = BTreeSet::new();
    let mut changed: BTreeMap<String, (String, String)> = BTreeMap::new();
    // per tool, the probes whose first request gained (or lost) it
    let mut first: BTreeMap<(bool, String), Vec<String>> = BTreeMap::new();
    let skip = |p: &str| broken(p, old) || broken(p, new);
    // the requests' `model: …, max_tokens: …` lines of each whole side
    let (was, now) = (model_lines(&l, &skip), model_lines(&r, &skip));
    for p in d.probes.iter().filter(|p| !skip(&p.probe)) {
        lines.extend(p.tools_added.iter().filter(|t| ours(t)).map(|t| format!("+ tool {t}")));
        lines.extend(p.tools_removed.iter().filter(|t| ours(t)).map(|t| format!("- tool {t}")));
        lines.extend(p.tools_deferred.iter().filter(|t| ours(t)).map(|t| format!("> tool {t} deferred (ToolSearch)")));
        lines.extend(p.tools_undeferred.iter().filter(|t| ours(t)).map(|t| format!("< tool {t} no longer deferred")));
        for (into, tools) in [(true, &p.tools_into_first), (false, &p.tools_out_of_first)] {
            for t in tools.iter().filter(|t| ours(t)) {
                first.entry((into, t.clone())).or_default().push(p.probe.clone());
            }
        }
        for k in &p.tools_changed {
            // `tool NAME OLD → NEW`
            let parts: Vec<&str> = k.split(' ').collect();
            if let [_, name, old, _, new] = parts[..] {
                if ours(&name.to_string()) {
                    changed.entry(name.to_string()).or_insert_with(|| (old.to_string(), new.to_string()));
                }
            }
        }
    }
    let mut out: Vec<String> = lines.into_iter().collect();
    for ((into, tool), probes) in first.iter().rev() {
        let (mark, words) = if *into { ("^", INTO_FIRST) } else { ("v", OUT_OF_FIRST) };
        let shown: Vec<&str> = probes.iter().take(3).map(String::as_str).collect();
        let more = if probes.len() > 3 { format!(" and {} more", probes.len() - 3) } else { String::new() };
        out.push(format!("{mark} tool {tool} {words}, in {} probe(s): {}{more}", probes.len(), shown.join(", ")));
    }
    for (name, (old, new)) in &changed {
        let what = tool_change(&blob_text(&blobs, old), &blob_text(&blobs, new));
        out.push(format!("~ tool {name}: {}", what.join("; ")));
    }
    // the system prompt's words that changed (the probes' prompts differ by their settings: each distinct
    // change once)
    let mut said: Vec<String> = Vec::new();
    for k in d.blob_changes.keys().filter_map(|k| k.strip_prefix("system ")) {
        let Some((a, b)) = k.split_once(" → ") else { continue };
        let words = word_diff(&blob_text(&blobs, a), &blob_text(&blobs, b));
        if !said.contains(&words) {
            said.push(words);
        }
    }
    match said.len() {
        0 => {}
        1 => out.push(format!("~ system prompt changed: {}", said[0])),
        n => out.push(format!("~ system prompt changed ({n} prompts of the probes' settings), e.g.: {}", said[0])),
    }
    out.extend(cache_moves(&d, &l, &r, &skip));
    for x in was.difference(&now) {
        out.push(format!("request: model line was `{x}`"));
    }
    for x in now.difference(&was) {
        out.push(format!("request: model line now `{x}`"));
    }
    Ok(out)
}

/// The request-shape lines of a comparison: where the cache markers (`cache_control`) sit moved in these
/// probes — a change of the request's shape only, never of what a tool did (a check that read it
/// broke skill.basics at 2.1.237 and mended it at 2.1.248) — with the model the requests named, on which
/// it depends (`claude-sonnet-4-5` sends the same on both releases): `request shape: cache_control moved
/// (model claude-opus-…): skill.basics request 2 system[2] system[3] → system[2] message 4 block 2; …`.
fn cache_moves(
    d: &crate::transcript::diff::SetDiff,
    older: &Path,
    newer: &Path,
    skip: &dyn Fn(&str) -> bool,
) -> Vec<String> {
    // per model: each probe's first request whose markers moved
    let mut by_model: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for p in d.probes.iter().filter(|p| !skip(&p.probe)) {
        if p.shape.as_deref().is_none_or(|s| !s.contains(" cache_control: ")) {
            continue;
        }
        let read = |dir: &Path| std::fs::read_to_string(dir.join(format!("{}.snap", p.probe))).unwrap_or_default();
        let (was, now) = (read(older), read(newer));
        let (mo, mn) = (cache_markers(&was), cache_markers(&now));
        // paired by request (`request 3 (conversation named)`): a request on one side only is the
        // conversation's change (a tool gone, a turn more), never a marker that moved
        let moved = mo.iter().find_map(|(r, a)| mn.get(r).filter(|b| *b != a).map(|b| (r, a, b)));
        let Some((r, a, b)) = moved else { continue };
        let model = now
            .lines()
            .find_map(|l| l.strip_prefix("model: "))
            .and_then(|m| m.split(',').next())
            .unwrap_or("?")
            .to_string();
        let first = format!("{} {r}: {a} → {b}", p.probe);
        by_model.entry(model).or_default().push(first);
    }
    by_model
        .into_iter()
        .map(|(model, probes)| {
            let shown: Vec<&String> = probes.iter().take(3).collect();
            let more = if probes.len() > 3 { format!("; and {} more", probes.len() - 3) } else { String::new() };
            format!(
                "request shape: cache_control moved in {} probes (model {model}), e.g. {}{more}",
                probes.len(),
                shown.iter().map(|s| s.as_str()).collect::<Vec<_>>().join("; ")
            )
        })
        .collect()
}

/// Each request of a golden (`request 3 (conversation named)`, its heading) → where its cache markers
/// sit (`system[2] message 4 block 2`, or `none`).
fn cache_markers(golden: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut heading: Option<String> = None;
    for l in golden.lines() {
        if let Some(h) = l.strip_prefix("## request ") {
            heading = Some(format!("request {h}"));
            out.insert(format!("request {h}"), "none".to_string());
        } else if l.starts_with("## ") {
            heading = None;
        } else if let (Some(h), Some(m)) = (&heading, l.strip_prefix("cache_control: ")) {
            out.insert(h.clone(), m.to_string());
        }
    }
    out
}

/// `docs/matrix/interface.md`: per pair of neighbouring versions (oldest first) that both have goldens,
/// the changes of [`between`] (the goldens of broken runs left out).
pub fn to_markdown(golden_root: &Path, versions: &[String], broken: IsBroken<'_>) -> String {
    let mut out = String::from("# Interface of Claude Code's tools, per version\n\n");
    out.push_str(
        "What the requests offer the model, compared between neighbouring versions of the matrix from \
         their goldens (golden/claude-code@<version>/, the claude-code probes): `+` / `-` a tool added / \
         removed, `>` deferred (moved behind ToolSearch, not removed), `<` no longer deferred, `^` / `v` a tool \
         offered in the first request now / only from a later request on now, `~` a tool's input-schema \
         properties (added, removed, retyped), the structured parts of its description list by list (Bash's \
         sandbox policy: `Filesystem write.allowOnly: + …`) and whether the rest of its description changed; \
         the system prompt; the model and max_tokens of the first request; `request shape:` where the requests' cache markers (`cache_control`) \
         sit, with the model they were sent for — a change of the request's shape, never of a tool's behaviour. \
         The goldens of a run that broke an invariant are left out. Generated with the matrix (`probelab matrix --publish`, `probelab \
         watch`); do not edit by hand.\n",
    );
    let present: Vec<&String> = versions.iter().filter(|v| golden_root.join(super::subject(v)).is_dir()).collect();
    for w in present.windows(2) {
        out.push_str(&format!("\n## {} → {}\n\n", w[0], w[1]));
        match between(golden_root, w[0], w[1], broken) {
            Ok(lines) if lines.is_empty() => out.push_str("No interface change.\n"),
            Ok(lines) => {
                for l in lines {
                    out.push_str(&format!("- {l}\n"));
                }
            }
            // the page is committed: the golden directory by its name, never this machine's path to it
            Err(e) => {
                let why = crate::exit::chain(&e).replace(&golden_root.display().to_string(), "golden");
                out.push_str(&format!("(not compared: {why})\n"))
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_policy_change_in_a_description_reads_as_its_own_items() {
        let policy = |write: &str, more: u32, net: &str| {
            format!(
                "Runs a command.\n\nThe sandbox has the following restrictions:\nFilesystem: {{\"read\":{{\"denyOnly\":[\"<home>/.claude/ide\"]}},\"write\":{{\"allowOnly\":[\"/tmp/claude\",{write}\"... and {more} more (truncated for prompt size)\"]}}}}{net}\n - Be careful."
            )
        };
        let blob = |d: &str| {
            serde_json::json!({"name": "Bash", "description": d, "input_schema": {"properties": {"command": {"type": "string"}}}}).to_string()
        };
        let (a, b) = (policy("", 45, "\nNetwork: {\"allowedHosts\":[]}"), policy("\"<home>/.claude/state\",", 46, ""));
        let (prose, parts) = structured(&a);
        assert_eq!(prose, "Runs a command.\n\nThe sandbox has the following restrictions:\n - Be careful.");
        assert_eq!(parts["Filesystem write.allowOnly"], ["/tmp/claude", "... and 45 more (truncated for prompt size)"]);
        // the policy's items, and nothing said of the prose, which is the same
        assert_eq!(
            tool_change(&blob(&a), &blob(&b)),
            [
                "description's Filesystem write.allowOnly: now listed `<home>/.claude/state`, 46 → 48 items in all (45 → 46 of them not listed: truncated for prompt size)",
                "description's Network allowedHosts: gone (was empty)",
            ]
        );
        // the prose changing too is said apart
        let c = b.replace("Be careful", "Be very careful");
        assert_eq!(tool_change(&blob(&b), &blob(&c)), ["description changed: Runs a command.⏎⏎The sandbox has the following restrictions:⏎ - Be {+very +}careful."]);
        // a line that only looks like one stays prose
        assert_eq!(structured("Example: {not json}").1.len(), 0);
    }

    #[test]
    fn a_tool_s_schema_change_is_named_by_property() {
        let old = r#"{"name": "Read", "description": "Reads.", "input_schema": {"properties": {"file_path": {"type": "string"}, "limit": {"type": "integer"}, "gone": {"type": "boolean"}}}}"#;
        let new = r#"{"name": "Read", "description": "Reads files.", "input_schema": {"properties": {"file_path": {"type": "string"}, "limit": {"type": "number"}, "pages": {"type": "array", "items": {"type": "string"}}}}}"#;
        assert_eq!(
            tool_change(old, new),
            [
                "~ property `limit` integer → number",
                "+ property `pages` (array<string>)",
                "- property `gone` (boolean)",
                "description changed: Reads{+ files+}."
            ]
        );
        assert_eq!(
            tool_change(old, old),
            ["schema details changed (descriptions, enums or defaults of its properties)"]
        );
        assert_eq!(tool_change("(blob x not in the store)", new), ["schema or description changed"]);
    }

    /// Two neighbouring versions whose goldens share no probe are said so with the directory's name,
    /// not the path of the checkout that made the page (it read `/work/…/harness/../golden/…`).
    #[test]
    fn versions_without_a_common_probe_are_named_without_this_machine_s_path() {
        let d = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        for (v, probe) in [("2.1.1", "a"), ("2.1.2", "b")] {
            let dir = d.path().join(super::super::subject(v));
            std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
            std::fs::write(
                dir.join(format!("{probe}.snap")),
                "---\nsource: x\n---\nprobe: x\n## verdicts\npass invariant: i\n",
            )
            .unwrap_or_else(|e| panic!("{e}"));
        }
        let md = to_markdown(d.path(), &["2.1.1".to_string(), "2.1.2".to_string()], &|_, _| false);
        assert!(md.contains("(not compared: golden/claude-code@2.1.1 and golden/claude-code@2.1.2"), "{md}");
        assert!(!md.contains(&d.path().display().to_string()), "{md}");
    }

    #[test]
    fn where_the_cache_markers_moved_is_a_request_shape_line_with_its_model() {
        // skill.basics "changed" at 2.1.237 only because cache_control moved onto the skill body block
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join("golden");
        let lines = between(&root, "2.1.236", "2.1.237", &|_, _| false).unwrap_or_else(|e| panic!("{e}"));
        let shape = lines
            .iter()
            .find(|l| l.starts_with("request shape: cache_control moved"))
            .unwrap_or_else(|| panic!("{lines:#?}"));
        assert!(shape.contains(" probes (model claude-opus-5), e.g. ") && shape.contains(" → "), "{shape}");
        let back = between(&root, "2.1.247", "2.1.248", &|_, _| false).unwrap_or_else(|e| panic!("{e}"));
        assert!(back.iter().any(|l| l.starts_with("request shape: cache_control moved")), "{back:#?}");
        // 2.1.277's agent-background sends one request more (TaskOutput gone): no marker of a request
        // both sides sent moved, so no request-shape line (it read `request 3: message 8 block 1 → message 8
        // block 1`, the first lines of the two sides paired whatever their request)
        let more = between(&root, "2.1.276", "2.1.277", &|_, _| false).unwrap_or_else(|e| panic!("{e}"));
        assert!(!more.iter().any(|l| l.contains("agent-background")), "{more:#?}");
        assert!(
            cache_markers("## request 1\ncache_control: system[2]\n## request 2\n## response 2\ncache_control: x\n")
                == BTreeMap::from([
                    ("request 1".to_string(), "system[2]".to_string()),
                    ("request 2".into(), "none".into())
                ])
        );
    }

    #[test]
    fn the_committed_goldens_show_2_1_332_s_deferred_tools_as_deferred_not_removed() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join("golden");
        let lines = between(&root, "2.1.235", "2.1.332", &|_, _| false).unwrap_or_else(|e| panic!("{e}"));
        for l in
            ["+ tool ListAgents", "+ tool ToolSearch", "- tool TaskOutput", "> tool WebFetch deferred (ToolSearch)"]
        {
            assert!(lines.iter().any(|x| x == l), "no {l:?} in {lines:#?}");
        }
        assert!(!lines.iter().any(|x| x == "- tool WebFetch"), "{lines:#?}");
        assert!(lines.iter().any(|x| x.starts_with("~ tool Read: ")), "{lines:#?}");
    }
}
