//! `probelab history TOPIC`: every change to a tool, a claim or a budget across the measured releases,
//! oldest first — the answer to "since when" in one command, from the committed data the release pages
//! are made of (the cells of docs/matrix/cells and the goldens of every measured release), never a run:
//!
//! - **interface**: the tool offered, gone, deferred or changed in its schema or description
//!   ([`super::interface::between`]), with the words of the description that changed (the blob diff
//!   `probelab diff` shows);
//! - **behaviour**: a probe whose script calls the tool (cites the claim, measures the budget) changed
//!   outcome or behaviour there ([`super::report::Matrix::probe_timeline`]), with the words of each of
//!   that tool's results (and the files the checks read) that changed;
//! - **budget**: a limit of the tool (the budget itself, the budgets a claim's probes measure) took
//!   another value ([`super::budgets::changes`]);
//! - **coverage** (a claim): no probe observed it on a release, or observed it again;
//! - **exploration** (a tool): what `probelab discover` found in the tool's results or interface on the
//!   generated sessions, from the published records (docs/discover/releases).
//!
//! A topic is a claim id of the catalogue (`READ-1`), a budget's name or a unique part of one
//! (`Read: token ceiling`, `token ceiling`), a tool's name as Claude Code offers it (`Read`, any case),
//! or `tools`: every tool that came, went, became deferred or stopped being deferred.
//! Broken runs give no fact (their cells are quarantined by the matrix, their goldens not read).

use super::report::Matrix;
use crate::lab::Layout;
use crate::probe::Probe;
use crate::transcript::diff::SetError;
use serde::Serialize;
use std::collections::BTreeSet;

/// What a history is of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Topic {
    /// A tool, by the name Claude Code offers it under.
    Tool(String),
    /// A claim of the catalogue.
    Claim(String),
    /// A budget of docs/matrix/budgets.md.
    Budget(&'static super::budgets::Budget),
    /// Every tool's offer: which came, went, became deferred or no longer deferred (`tools`).
    Tools,
}

impl std::fmt::Display for Topic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Topic::Tool(t) => write!(f, "tool {t}"),
            Topic::Claim(c) => write!(f, "claim {c}"),
            Topic::Budget(b) => write!(f, "budget {:?}", b.name),
            Topic::Tools => write!(f, "the tools offered"),
        }
    }
}

/// One change, at one release.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Entry {
    /// The release it happens at.
    pub version: String,
    /// The measured release before it.
    pub previous: String,
    /// `interface`, `behaviour`, `budget` or `coverage`.
    pub kind: &'static str,
    /// The change in one line.
    pub what: String,
    /// The words that changed (a description's diff, the results' and files' word diffs).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub evidence: Vec<String>,
}

/// Which topic `name` is: a claim id, a budget (its name or a part of one that names one budget), or a
/// tool that a probe calls or a measured release offers (`tools`), in any case. Otherwise an error
/// listing what it could have been.
pub fn topic(name: &str, claims: &[String], tools: &BTreeSet<String>) -> Result<Topic, String> {
    if name == "tools" {
        return Ok(Topic::Tools);
    }
    if let Some(c) = claims.iter().find(|c| c.eq_ignore_ascii_case(name)) {
        return Ok(Topic::Claim(c.clone()));
    }
    let lower = name.to_lowercase();
    let budgets = |part: bool| -> Vec<&'static super::budgets::Budget> {
        let hits = |b: &&super::budgets::Budget| {
            b.name.eq_ignore_ascii_case(name) || (part && b.name.to_lowercase().contains(&lower))
        };
        super::budgets::BUDGETS.iter().filter(hits).collect()
    };
    if let [one] = budgets(false).as_slice() {
        return Ok(Topic::Budget(one));
    }
    if let Some(t) = tools.iter().find(|t| t.eq_ignore_ascii_case(name)) {
        return Ok(Topic::Tool(t.clone()));
    }
    // a part of a budget's name (`token ceiling`, `auto-compact`), when it names one
    match budgets(name.chars().count() >= 4).as_slice() {
        [one] => return Ok(Topic::Budget(one)),
        [] => {}
        many => {
            let names: Vec<&str> = many.iter().map(|b| b.name).collect();
            return Err(format!("{name:?} names {} budgets: {}", many.len(), names.join("; ")));
        }
    }
    Err(format!(
        "{name:?} is no tool a probe calls or a measured release offers, no claim and no budget (claims: `probelab list`; budgets: docs/matrix/budgets.md; tools, e.g.: {})",
        tools.iter().take(12).cloned().collect::<Vec<_>>().join(", ")
    ))
}

/// The tools a golden set offers (each golden's `tools:` line) and the probes call.
pub fn known_tools(golden_dir: &std::path::Path, probes: &[Probe]) -> BTreeSet<String> {
    let mut tools: BTreeSet<String> = probes.iter().flat_map(crate::conformance::tools_called).collect();
    for entry in std::fs::read_dir(golden_dir).into_iter().flatten().flatten() {
        let Ok(text) = std::fs::read_to_string(entry.path()) else { continue };
        for line in text.lines().filter_map(|l| l.strip_prefix("tools: ")) {
            tools.extend(line.split(' ').filter_map(|t| t.split('@').next()).map(str::to_string));
        }
    }
    tools.retain(|t| !t.is_empty() && !t.starts_with("mcp__"));
    tools
}

/// Whether probe `p` is about the topic: it calls the tool, cites the claim, measures the budget.
fn concerns(p: &Probe, topic: &Topic) -> bool {
    match topic {
        Topic::Tool(t) => crate::conformance::tools_called(p).contains(t),
        Topic::Claim(c) => p.claims.contains(c),
        Topic::Budget(b) => p.id == b.probe,
        Topic::Tools => false,
    }
}

/// Whether an interface line of a release page is about `tool` (`~ tool Read: …`, `+ tool LSP`,
/// `> tool Monitor deferred`, `< tool ScheduleWakeup no longer deferred`).
fn interface_about(line: &str, tool: &str) -> bool {
    ["~ tool ", "+ tool ", "- tool ", "> tool ", "< tool ", "^ tool ", "v tool "]
        .iter()
        .any(|p| line.strip_prefix(p).is_some_and(|rest| rest.split([':', ' ']).next() == Some(tool)))
}

/// Whether a budget is about the topic.
fn budget_about(name: &str, topic: &Topic, probes: &[Probe]) -> bool {
    match topic {
        Topic::Budget(b) => b.name == name,
        Topic::Tool(t) => name.split(':').next().is_some_and(|head| head.split(" / ").any(|h| h.trim() == t)),
        Topic::Claim(c) => super::budgets::BUDGETS
            .iter()
            .filter(|b| b.name == name)
            .any(|b| probes.iter().any(|p| p.id == b.probe && p.claims.contains(c))),
        Topic::Tools => false,
    }
}

/// The tool names of a probe's main-conversation calls by tool_use id (as the stub numbers them).
fn calls_of(p: &Probe) -> Vec<(String, String)> {
    let view = crate::transcript::View { exchanges: &[], script: &p.script };
    view.tool_use_ids().into_iter().zip(view.tool_use_names()).collect()
}

/// The history of `topic` over the matrix's versions after `since` (all when None), oldest first.
pub fn history(
    probes: &[Probe],
    layout: &Layout,
    m: &Matrix,
    topic: &Topic,
    since: Option<&str>,
    explored: &std::collections::BTreeMap<String, crate::discover::Published>,
) -> Result<Vec<Entry>, SetError> {
    use crate::transcript::diff::{diff_dirs_with, SetDiff};
    let golden = &layout.golden;
    let broken = |p: &str, v: &str| m.is_broken(p, v);
    let after = |v: &str| match since.map(semver::Version::parse) {
        None => true,
        Some(Ok(s)) => semver::Version::parse(v).is_ok_and(|v| v > s),
        Some(Err(_)) => true,
    };
    let about: Vec<&Probe> = probes.iter().filter(|p| concerns(p, topic)).collect();
    let unordered = crate::transcript::diff::unordered_of(probes);
    let budget_changes = super::budgets::changes(&super::budgets::table(golden, &m.versions, &broken), &m.versions);
    let mut out = Vec::new();
    for pair in m.versions.windows(2) {
        let (previous, version) = (&pair[0], &pair[1]);
        if !after(version) {
            continue;
        }
        let entry = |kind: &'static str, what: String, evidence: Vec<String>| Entry {
            version: version.clone(),
            previous: previous.clone(),
            kind,
            what,
            evidence,
        };
        let both = [previous, version].iter().all(|v| crate::transcript::golden::claude_code_dir(golden, v).is_dir());
        let mut diff: Option<SetDiff> = None;
        let diffed = |diff: &mut Option<SetDiff>| -> Result<(), SetError> {
            if diff.is_none() && both {
                let (l, r) = (
                    crate::transcript::golden::claude_code_dir(golden, previous),
                    crate::transcript::golden::claude_code_dir(golden, version),
                );
                *diff = Some(diff_dirs_with(&l, &r, &layout.blobs(), &unordered)?);
            }
            Ok(())
        };
        // interface: the tool's own lines, which carry the words that changed (the description's prose as
        // a word diff, its structured parts item by item: [`super::interface::tool_change`])
        if let (Topic::Tool(tool), true) = (topic, both) {
            let lines = super::interface::between(golden, previous, version, &broken)?;
            for line in lines.into_iter().filter(|l| interface_about(l, tool)) {
                out.push(entry("interface", line, Vec::new()));
            }
        }
        // the tools offered: every line of a tool that came, went, or moved in or out of deferral
        if let (Topic::Tools, true) = (topic, both) {
            let lines = super::interface::between(golden, previous, version, &broken)?;
            let offer = |l: &String| {
                ["+ tool ", "- tool ", "> tool ", "< tool ", "^ tool ", "v tool "].iter().any(|p| l.starts_with(p))
            };
            for line in lines.into_iter().filter(offer) {
                out.push(entry("interface", line, Vec::new()));
            }
        }
        // behaviour: the probes about the topic that changed here, with the words of their results
        for p in &about {
            let Some(changes) = m.probe_timeline.get(&p.id) else { continue };
            for c in changes.iter().filter(|c| &c.version == version) {
                let reason = m
                    .probes
                    .get(&p.id)
                    .and_then(|r| r.get(version))
                    .map(|cell| cell.reason.as_str())
                    .filter(|r| !r.is_empty())
                    .map(|r| format!(" ({r})"))
                    .unwrap_or_default();
                diffed(&mut diff)?;
                let calls = calls_of(p);
                // a tool's history shows that tool's results (then the files the checks read); a probe
                // that changed only in other tools' results is not in it; another topic shows all
                let (mut own, mut rest, mut any) = (Vec::new(), Vec::new(), false);
                for d in diff.iter().flat_map(|d| d.probes.iter()).filter(|d| d.probe == p.id) {
                    for ch in &d.changes {
                        any = true;
                        let tool_of = calls.iter().find(|(id, _)| ch.call.contains(id.as_str())).map(|(_, t)| t);
                        let err = ch.is_error.as_deref().map(|e| format!(" is_error {e}")).unwrap_or_default();
                        let named = tool_of.map(|t| format!(" ({t})")).unwrap_or_default();
                        let line = format!("{}{named}{err}: {}", ch.call, ch.words).trim_end_matches(": ").to_string();
                        match (topic, tool_of) {
                            (Topic::Tool(t), Some(of)) if of == t => own.push(line),
                            (Topic::Tool(_), Some(_)) => {}
                            _ => rest.push(line),
                        }
                    }
                    if d.changes.is_empty() {
                        rest.extend(d.verdict_changes.iter().cloned());
                    }
                }
                if matches!(topic, Topic::Tool(_)) && any && own.is_empty() {
                    continue;
                }
                own.append(&mut rest);
                let words = own;
                out.push(entry("behaviour", format!("{}: {}{reason}", p.id, c.what), words));
            }
        }
        // budgets
        for (name, _, _, old, new) in budget_changes.iter().filter(|b| &b.2 == version) {
            if budget_about(name, topic, probes) {
                let probe = super::budgets::BUDGETS.iter().find(|b| b.name == *name).map(|b| b.probe).unwrap_or("");
                out.push(entry("budget", format!("{name}: {old} → {new} (measured by {probe})"), Vec::new()));
            }
        }
        // what the release's exploration found of the tool (its results, its interface)
        if let (Topic::Tool(tool), Some(rec)) = (topic, explored.get(version).filter(|r| &r.a == previous)) {
            let own = |said: &str| {
                said.starts_with(&format!("{tool} (")) || said.starts_with(&format!("interface of {tool} "))
            };
            for s in rec.stable.iter().filter(|s| own(&s.said)) {
                let kind = format!("{:?}", s.kind).to_lowercase();
                out.push(entry("exploration", format!("{kind}: {}", s.said), Vec::new()));
            }
        }
        // coverage of a claim
        if let Topic::Claim(claim) = topic {
            let (lost, back) = m.coverage_moves(previous, version);
            if let Some(why) = lost.get(claim) {
                out.push(entry("coverage", format!("{claim} no longer observed ({why})"), Vec::new()));
            }
            if back.contains(claim) {
                out.push(entry("coverage", format!("{claim} observed again"), Vec::new()));
            }
        }
    }
    Ok(out)
}

/// The history as text: a heading, then each release with its entries, the evidence indented.
pub fn to_text(topic: &Topic, m: &Matrix, entries: &[Entry], since: Option<&str>) -> String {
    let (first, last) =
        (m.versions.first().cloned().unwrap_or_default(), m.versions.last().cloned().unwrap_or_default());
    let releases: BTreeSet<&str> = entries.iter().map(|e| e.version.as_str()).collect();
    let mut out = format!(
        "history of {topic} across the {} measured releases {first} … {last}{}, oldest first: {} change(s) at {} release(s)\n",
        m.versions.len(),
        since.map(|s| format!(" (after {s})")).unwrap_or_default(),
        entries.len(),
        releases.len()
    );
    if entries.is_empty() {
        out.push_str("no change on the measured releases\n");
    }
    let mut at = "";
    for e in entries {
        if e.version != at {
            at = &e.version;
            out.push_str(&format!("\n{} (against {})\n", e.version, e.previous));
        }
        out.push_str(&format!("  {:<10} {}\n", e.kind, e.what));
        for l in &e.evidence {
            out.push_str(&format!("             | {l}\n"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_topic_is_a_claim_a_budget_or_a_tool_in_that_order_and_an_unknown_one_is_said() {
        let claims = vec!["READ-1".to_string(), "BASH-4".to_string()];
        let tools: BTreeSet<String> = ["Read", "Bash", "Monitor"].iter().map(|t| t.to_string()).collect();
        assert_eq!(topic("read-1", &claims, &tools), Ok(Topic::Claim("READ-1".into())));
        assert_eq!(topic("read", &claims, &tools), Ok(Topic::Tool("Read".into())));
        assert_eq!(topic("tools", &claims, &tools), Ok(Topic::Tools));
        assert!(
            matches!(topic("token ceiling", &claims, &tools), Ok(Topic::Budget(b)) if b.name == "Read: token ceiling")
        );
        let many = topic("Grep:", &claims, &tools).unwrap_err();
        assert!(many.contains("names") && many.contains("Grep: default head_limit"), "{many}");
        let none = topic("Nope", &claims, &tools).unwrap_err();
        assert!(none.starts_with("\"Nope\" is no tool") && none.contains("Bash, Monitor, Read"), "{none}");
    }

    #[test]
    fn interface_lines_are_a_tool_s_by_its_exact_name() {
        assert!(interface_about("~ tool Read: + property `allow_large` (boolean)", "Read"));
        assert!(interface_about("+ tool LSP", "LSP"));
        assert!(interface_about("> tool Monitor deferred (ToolSearch)", "Monitor"));
        assert!(interface_about("< tool ScheduleWakeup no longer deferred", "ScheduleWakeup"));
        assert!(!interface_about("~ tool ReadMcpResourceTool: description changed", "Read"));
        assert!(!interface_about("~ system prompt changed", "Read"));
    }

    #[test]
    fn budgets_are_a_tool_s_by_the_head_of_their_name() {
        let t = |name: &str| Topic::Tool(name.into());
        assert!(budget_about("Grep / Bash: persisted output preview", &t("Bash"), &[]));
        assert!(budget_about("Read: token ceiling", &t("Read"), &[]));
        assert!(!budget_about("Read: token ceiling", &t("Grep"), &[]));
    }
}
