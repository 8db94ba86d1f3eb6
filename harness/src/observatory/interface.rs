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
use crate::transcript::diff::{blob_text, diff_dirs};
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

/// What changed in one tool's blob: properties added / removed / retyped, and whether its description
/// changed.
pub fn tool_change(old_blob: &str, new_blob: &str) -> Vec<String> {
    let (Some((da, pa)), Some((db, pb))) = (properties(old_blob), properties(new_blob)) else {
        return vec!["schema or description changed".into()];
    };
    let mut out = Vec::new();
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
        out.push("description changed".into());
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
pub fn between(golden_root: &Path, old: &str, new: &str, broken: IsBroken<'_>) -> Result<Vec<String>, String> {
    let (l, r) = (golden_root.join(super::subject(old)), golden_root.join(super::subject(new)));
    let blobs = golden_root.join("blobs");
    let d = diff_dirs(&l, &r, &blobs)?;
    let ours = |t: &String| !t.starts_with("mcp__fixture__");
    let mut lines: BTreeSet<String> = BTreeSet::new();
    let mut changed: BTreeMap<String, (String, String)> = BTreeMap::new();
    let skip = |p: &str| broken(p, old) || broken(p, new);
    // the requests' `model: …, max_tokens: …` lines of each whole side
    let (was, now) = (model_lines(&l, &skip), model_lines(&r, &skip));
    for p in d.probes.iter().filter(|p| !skip(&p.probe)) {
        lines.extend(p.tools_added.iter().filter(|t| ours(t)).map(|t| format!("+ tool {t}")));
        lines.extend(p.tools_removed.iter().filter(|t| ours(t)).map(|t| format!("- tool {t}")));
        lines.extend(p.tools_deferred.iter().filter(|t| ours(t)).map(|t| format!("> tool {t} deferred (ToolSearch)")));
        lines.extend(p.tools_undeferred.iter().filter(|t| ours(t)).map(|t| format!("< tool {t} no longer deferred")));
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
    for (name, (old, new)) in &changed {
        let what = tool_change(&blob_text(&blobs, old), &blob_text(&blobs, new));
        out.push(format!("~ tool {name}: {}", what.join("; ")));
    }
    if d.blob_changes.keys().any(|k| k.starts_with("system ")) {
        out.push("~ system prompt changed".into());
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
        "What the first request offers the model, compared between neighbouring versions of the matrix from \
         their goldens (golden/claude-code@<version>/, the claude-code probes): `+` / `-` a tool added / \
         removed, `>` deferred (moved behind ToolSearch, not removed), `<` no longer deferred, `~` a tool's \
         input-schema properties (added, removed, retyped) or description; the system prompt; the model and \
         max_tokens of the first request; `request shape:` where the requests' cache markers (`cache_control`) \
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
                out.push_str(&format!("(not compared: {})\n", e.replace(&golden_root.display().to_string(), "golden")))
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

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
                "description changed"
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
