//! The claims × versions matrix from observation cells, and its renderings.
//!
//! [`Matrix::from_cells`] is a pure function of the set of cells: shards merged in any order give the
//! matrix one run gives (a cell that two shards disagree on is an error naming it). Versions are ordered
//! by semver, probes and claims by name.
//!
//! - Per (probe, version): the outcome, the behaviour fingerprint (12 hex), why when not a pass.
//! - Per (claim, version): the verdicts of the probes citing the claim, combined
//!   ([`ClaimVerdict::combine`]: changed over diverges over holds over n/a).
//! - Timelines: per probe, the versions where its outcome or fingerprint differs from the version
//!   before it in the matrix; per claim, the versions where its verdict changed or a citing probe's
//!   behaviour did. A prompt-only or interface-only change is never a claim change: verdicts and
//!   fingerprints speak of behaviour only.

use crate::observe::{ClaimVerdict, Observation, Outcome};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// One (probe, version) cell as the matrix shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cell {
    /// How the run came out.
    pub outcome: Outcome,
    /// The behaviour fingerprint, 12 hex digits (empty for an error).
    pub fingerprint: String,
    /// Why, when not a pass.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    /// What varied when the cell was run again on this version ([`Observation::unstable`]).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub unstable: String,
}

/// A transition taken for noise ([`Matrix::noise`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Noise {
    /// The version before (the matrix's neighbour).
    pub previous: String,
    /// What moved (each part varies on some version of the probe).
    pub parts: Vec<String>,
    /// The versions where those parts were seen to vary.
    pub varies_on: Vec<String>,
}

impl Noise {
    /// In words: `moved only in result 2 (TaskOutput) text, which varies on 2.1.271: not a change`.
    pub fn why(&self) -> String {
        format!("moved only in {}, which varies on {}: not a change", self.parts.join("; "), self.varies_on.join(", "))
    }
}

/// A change between a version and the one before it in the matrix.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Change {
    /// The first version showing it.
    pub version: String,
    /// The version before it in the matrix.
    pub previous: String,
    /// What changed.
    pub what: String,
}

/// The matrix.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Matrix {
    /// Versions, oldest first.
    pub versions: Vec<String>,
    /// Probe → version → cell.
    pub probes: BTreeMap<String, BTreeMap<String, Cell>>,
    /// Claim → version → verdict.
    pub claims: BTreeMap<String, BTreeMap<String, ClaimVerdict>>,
    /// Probe → the versions where its outcome or behaviour changed.
    pub probe_timeline: BTreeMap<String, Vec<Change>>,
    /// Claim → the versions where its verdict changed or a citing probe's behaviour did.
    pub claim_timeline: BTreeMap<String, Vec<Change>>,
    /// Probes whose cells ran different versions of the probe file → how many: their changes across
    /// versions may be the probe's own (run the matrix again: a resumed matrix redoes stale cells).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub mixed_probe_files: BTreeMap<String, usize>,
    /// When the cells were normalised by more than one normaliser (their stamps,
    /// [`crate::observe::Observation::normaliser`]): stamp → how many cells. Fingerprints of two stamps
    /// may differ by the normaliser alone (run those cells again). Empty when every stamped cell agrees.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub normalisers: BTreeMap<String, usize>,
    /// Probes that did not agree with themselves when run again on one version → version → what varied:
    /// their fingerprint changes there are noise, never in a timeline.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub unstable: BTreeMap<String, BTreeMap<String, String>>,
    /// Transitions that moved only where the probe varies on other versions: probe → the later version
    /// → why ([`Matrix::from_cells`]). Both sides reproduced, but what moved is exactly what was seen to
    /// vary when a cell of the probe was run twice (a subject's race under load can agree with itself
    /// twice): listed as noise beside the unstable probes, never in a timeline.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub noise: BTreeMap<String, BTreeMap<String, Noise>>,
    /// Runs that broke an invariant ([`Outcome::Broken`]): probe → version → why. The probe needs repair
    /// there; such a cell is never a change nor the source of any fact (the timelines step over it, the
    /// interface and budgets leave its golden out).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub broken: BTreeMap<String, BTreeMap<String, String>>,
    /// Claim → the probes citing it (in any cell): where the HTML's claim cells find their evidence.
    #[serde(skip)]
    pub claim_probes: BTreeMap<String, BTreeSet<String>>,
    /// Version → how close the built-in runtime at that version's profile comes to it
    /// ([`super::conformance`]; kept in `docs/matrix/conformance.json`, set by [`Matrix::with_conformance`]).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub conformance: BTreeMap<String, super::conformance::Figure>,
}

/// Where the HTML report's cells link to, relative to the page: each cell to its committed cell file
/// (`<cells>/<version>/<probe>.json`), and a cell where something changed to the release's page
/// (`<changes>/<version>.md`, `probelab changes V --write`). None: no links (a report written elsewhere).
#[derive(Debug, Clone)]
pub struct Evidence {
    /// The cells directory, relative to the page (`cells`).
    pub cells: String,
    /// The changes pages' directory, relative to the page (`../changes`).
    pub changes: String,
}

impl Evidence {
    /// The committed layout: docs/matrix/matrix.html beside docs/matrix/cells, docs/changes one up.
    pub fn committed() -> Evidence {
        Evidence { cells: "cells".into(), changes: "../changes".into() }
    }
}

/// One part of an n/a reason, said once per tool: `LSP not offered in request 3` is `LSP not offered`
/// (the request it was missing from varies with the probe).
fn unoffered_tool(reason: &str) -> String {
    match reason.split_once(" not offered in request ") {
        Some((tool, n)) if n.chars().all(|c| c.is_ascii_digit()) => format!("{tool} not offered"),
        _ => reason.to_string(),
    }
}

fn version_key(v: &str) -> (Option<semver::Version>, String) {
    (semver::Version::parse(v).ok(), v.to_string())
}

impl Matrix {
    /// The matrix of these cells.
    pub fn from_cells(cells: &[Observation]) -> Result<Matrix, Disagree> {
        let by_key = one_cell_each(cells)?;
        let mut versions: Vec<String> =
            by_key.keys().map(|(_, v)| v.clone()).collect::<BTreeSet<_>>().into_iter().collect();
        versions.sort_by_key(|v| version_key(v));
        let mut m = Matrix { versions: versions.clone(), ..Matrix::default() };
        let mut files: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
        for ((probe, _), o) in &by_key {
            if !o.probe_sha256.is_empty() {
                files.entry(probe.as_str()).or_default().insert(o.probe_sha256.as_str());
            }
        }
        m.mixed_probe_files =
            files.into_iter().filter(|(_, s)| s.len() > 1).map(|(p, s)| (p.to_string(), s.len())).collect();
        let mut stamps: BTreeMap<&str, usize> = BTreeMap::new();
        for o in by_key.values().filter(|o| !o.normaliser.is_empty()) {
            *stamps.entry(o.normaliser.as_str()).or_default() += 1;
        }
        if stamps.len() > 1 {
            m.normalisers = stamps.into_iter().map(|(s, n)| (s.to_string(), n)).collect();
        }
        let mut claim_probes: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for ((probe, version), o) in &by_key {
            let cell = Cell {
                outcome: o.outcome,
                fingerprint: short(&o.fingerprint),
                reason: o.reason.clone(),
                unstable: o.unstable.clone(),
            };
            if !o.unstable.is_empty() {
                m.unstable.entry(probe.clone()).or_default().insert(version.clone(), o.unstable.clone());
            }
            if o.outcome == Outcome::Broken {
                m.broken.entry(probe.clone()).or_default().insert(version.clone(), o.reason.clone());
            }
            m.probes.entry(probe.clone()).or_default().insert(version.clone(), cell);
            for (claim, verdict) in &o.claims {
                claim_probes.entry(claim.clone()).or_default().insert(probe.clone());
                let slot = m.claims.entry(claim.clone()).or_default();
                let now = slot.get(version).copied();
                let combined = ClaimVerdict::combine(now.into_iter().chain([*verdict])).unwrap_or(*verdict);
                slot.insert(version.clone(), combined);
            }
        }
        for (probe, row) in &m.probes {
            let changes = probe_changes(probe, row, &versions, &by_key, &mut m.noise);
            if !changes.is_empty() {
                m.probe_timeline.insert(probe.clone(), changes);
            }
        }
        // a claim's timeline is its citing probes' own: where a probe's verdict on the claim changed
        // between two versions it ran on, or its behaviour did — never a column's combined verdict, which
        // a version where only some probes ran (a bisection's boundary) would make flip
        for claim in m.claims.keys() {
            let probes = claim_probes.get(claim).into_iter().flatten();
            let changes = claim_changes(claim, probes, &versions, &by_key, &m);
            if !changes.is_empty() {
                m.claim_timeline.insert(claim.clone(), changes);
            }
        }
        m.claim_probes = claim_probes;
        Ok(m)
    }

    /// Gives each probe of `d` (a diff of the goldens of versions `a` → `b`) the fingerprints of its
    /// cells on both versions, so `probelab diff` judges behaviour as the timeline does — one fingerprint
    /// function for both (the goldens stay the evidence). Between neighbouring versions of the matrix a
    /// probe's behaviour differs exactly where the probe timeline has an entry; a side that did not
    /// reproduce itself is noise, never a difference. Probes without a cell on both sides keep the
    /// goldens' verdict.
    pub fn judge(&self, d: &mut crate::transcript::diff::SetDiff, a: &str, b: &str) {
        use crate::transcript::diff::Fingerprints;
        for p in &mut d.probes {
            let Some(row) = self.probes.get(&p.probe) else { continue };
            let (Some(x), Some(y)) = (row.get(a), row.get(b)) else { continue };
            // a broken run is no behaviour: nothing is compared, the probe needs repair there
            let broken: Vec<String> = [(a, x), (b, y)]
                .iter()
                .filter(|(_, c)| c.outcome == Outcome::Broken)
                .map(|(v, c)| format!("the probe needs repair on {v} ({})", c.reason))
                .collect();
            if !broken.is_empty() {
                p.fingerprints = Some(Fingerprints {
                    left: format!("{} {}", x.outcome.word(), x.fingerprint),
                    right: format!("{} {}", y.outcome.word(), y.fingerprint),
                    same: true,
                    broken: broken.join("; "),
                    ..Fingerprints::default()
                });
                continue;
            }
            let mut unstable: Vec<String> = [(a, x), (b, y)]
                .iter()
                .filter(|(_, c)| !c.unstable.is_empty())
                .map(|(v, c)| format!("on {v} it varies in {}", c.unstable))
                .collect();
            if let Some(n) = self.noise.get(&p.probe).and_then(|n| n.get(b)).filter(|n| n.previous == a) {
                unstable.push(n.why());
            }
            let moved = x.outcome != y.outcome || x.fingerprint != y.fingerprint;
            let parts = self
                .probe_timeline
                .get(&p.probe)
                .into_iter()
                .flatten()
                .filter(|c| c.version == b && c.previous == a)
                .map(|c| c.what.clone())
                .collect();
            p.fingerprints = Some(Fingerprints {
                left: format!("{} {}", x.outcome.word(), x.fingerprint),
                right: format!("{} {}", y.outcome.word(), y.fingerprint),
                same: !moved || !unstable.is_empty(),
                unstable: unstable.join("; "),
                parts,
                broken: String::new(),
            });
        }
    }

    /// The diff of the catalogue's goldens of Claude Code `a` → `b` under `layout`, judged by these
    /// cells ([`Matrix::judge`]): what a release page, the committed diff report and an exploration's
    /// record each say of the pair (the golden sets must be there).
    pub fn judged_diff(
        &self,
        layout: &crate::lab::Layout,
        probes: &[crate::probe::Probe],
        a: &str,
        b: &str,
    ) -> Result<crate::transcript::diff::SetDiff, crate::transcript::diff::SetError> {
        use crate::transcript::golden::claude_code_dir;
        let (l, r) = (claude_code_dir(&layout.golden, a), claude_code_dir(&layout.golden, b));
        let unordered = crate::transcript::diff::unordered_of(probes);
        let mut d = crate::transcript::diff::diff_dirs_with(&l, &r, &layout.blobs(), &unordered)?;
        self.judge(&mut d, a, b);
        Ok(d)
    }

    /// Whether the run of `probe` on `version` broke an invariant ([`Matrix::broken`]).
    pub fn is_broken(&self, probe: &str, version: &str) -> bool {
        self.broken.get(probe).is_some_and(|r| r.contains_key(version))
    }

    /// The matrix as pretty JSON (deterministic: maps are sorted).
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default() + "\n"
    }

    /// The matrix as text: the claims × versions table (one letter a cell), the probes × versions table,
    /// then the timelines.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        let letter = |v: ClaimVerdict| match v {
            ClaimVerdict::Holds => 'H',
            ClaimVerdict::Diverges => 'D',
            ClaimVerdict::Changed => 'C',
            ClaimVerdict::NotApplicable => '-',
            ClaimVerdict::Error => 'E',
            ClaimVerdict::Broken => 'B',
        };
        // the versions a column each, oldest first; twelve to a line (one line of 87 was 729 characters)
        out.push_str(&format!("claims × versions ({} versions, a column each, oldest first):\n", self.versions.len()));
        for (i, chunk) in self.versions.chunks(12).enumerate() {
            out.push_str(&format!("  {:>3}–{:<3} {}\n", i * 12 + 1, i * 12 + chunk.len(), chunk.join(" ")));
        }
        out.push_str(
            "H holds · D diverges (documented) · C changed · - n/a · E error · B broken run (no verdict) · . not run\n\n",
        );
        for (probe, n) in &self.mixed_probe_files {
            out.push_str(&format!(
                "warning: the cells of {probe} ran {n} different versions of its probe file: run the matrix again\n"
            ));
        }
        if !self.normalisers.is_empty() {
            let stamps: Vec<String> = self.normalisers.iter().map(|(s, n)| format!("{s} ({n} cells)")).collect();
            out.push_str(&format!(
                "warning: the cells were normalised by {} normalisers ({}): a fingerprint change between them may be the normaliser's; run the older cells again\n",
                self.normalisers.len(),
                stamps.join(", ")
            ));
        }
        if !self.mixed_probe_files.is_empty() || !self.normalisers.is_empty() {
            out.push('\n');
        }
        let width = self.claims.keys().map(String::len).max().unwrap_or(5).max(5);
        for (claim, row) in &self.claims {
            let cells: String = self.versions.iter().map(|v| row.get(v).map(|x| letter(*x)).unwrap_or('.')).collect();
            out.push_str(&format!("{claim:<width$} {cells}\n"));
        }
        out.push_str("\nprobes × versions (p pass · c changed · - n/a · E error · b broken run, the probe needs repair; the letter is upper-case where the behaviour differs from the version before)\n\n");
        let pwidth = self.probes.keys().map(String::len).max().unwrap_or(5).max(5);
        for (probe, row) in &self.probes {
            let mut prev: Option<&Cell> = None;
            let cells: String = self
                .versions
                .iter()
                .map(|v| match row.get(v) {
                    None => '.',
                    Some(c) => {
                        let ch = match c.outcome {
                            Outcome::Pass => 'p',
                            Outcome::Changed => 'c',
                            Outcome::NotApplicable => '-',
                            Outcome::Error => 'E',
                            Outcome::Broken => 'b',
                        };
                        // a broken run is never a move, and is stepped over
                        if c.outcome == Outcome::Broken {
                            return ch;
                        }
                        let moved = prev.is_some_and(|p| p.fingerprint != c.fingerprint || p.outcome != c.outcome);
                        prev = Some(c);
                        if moved {
                            ch.to_ascii_uppercase()
                        } else {
                            ch
                        }
                    }
                })
                .collect();
            out.push_str(&format!("{probe:<pwidth$} {cells}\n"));
        }
        out.push_str("\ntimeline (per claim: the first version of each change)\n");
        if self.claim_timeline.is_empty() {
            out.push_str("  no claim changed across these versions\n");
        }
        for (claim, changes) in &self.claim_timeline {
            for c in changes {
                out.push_str(&format!("  {claim:<width$} {:>10} (after {}): {}\n", c.version, c.previous, c.what));
            }
        }
        let errors: Vec<String> = self
            .probes
            .iter()
            .flat_map(|(p, row)| {
                row.iter()
                    .filter(|(_, c)| c.outcome == Outcome::Error)
                    .map(move |(v, c)| format!("  {p} on {v}: {}", c.reason))
            })
            .collect();
        if !errors.is_empty() {
            out.push_str("\nerrors\n");
            out.push_str(&(errors.join("\n") + "\n"));
        }
        out.push_str(&self.broken_text(
            "\nbroken runs (a failed invariant: the probe needs repair there; never a change, never a fact)\n",
            "  ",
        ));
        out.push_str(
            &self.unstable_text("\nunstable (run again on one version, the behaviour varied: not a change)\n", "  "),
        );
        out
    }

    /// The broken runs, a line each (`PROBE needs repair on V: why`), under a heading (nothing when there
    /// are none).
    pub fn broken_text(&self, heading: &str, bullet: &str) -> String {
        if self.broken.is_empty() {
            return String::new();
        }
        let mut out = heading.to_string();
        for (probe, row) in &self.broken {
            let mut row: Vec<(&String, &String)> = row.iter().collect();
            row.sort_by_key(|(v, _)| version_key(v));
            for (version, why) in row {
                out.push_str(&format!("{bullet}{probe} needs repair on {version}: {why}\n"));
            }
        }
        out
    }

    /// The unstable probes, a line each per version, under a heading (nothing when there are none).
    fn unstable_text(&self, heading: &str, bullet: &str) -> String {
        if self.unstable.is_empty() && self.noise.is_empty() {
            return String::new();
        }
        let mut out = heading.to_string();
        for (probe, row) in &self.unstable {
            for (version, what) in row {
                out.push_str(&format!("{bullet}{probe} on {version}: varies in {what}\n"));
            }
        }
        for (probe, row) in &self.noise {
            for (version, n) in row {
                out.push_str(&format!("{bullet}{probe} {} → {version}: {}\n", n.previous, n.why()));
            }
        }
        out
    }

    /// Whether a claim's verdict is an observation of the subject (holds, diverges, changed): n/a (every
    /// probe citing it could not run its tool there), an error or a broken run observe nothing.
    fn observed(v: ClaimVerdict) -> bool {
        matches!(v, ClaimVerdict::Holds | ClaimVerdict::Diverges | ClaimVerdict::Changed)
    }

    /// Where each claim is observed: claim → the ranges of neighbouring versions of the matrix where its
    /// verdict is an observation ([`Matrix::observed`]), oldest first, as (first, last) — the claims
    /// whose probes stop running on a release (a tool gone or deferred) show where they went dark.
    pub fn coverage(&self) -> BTreeMap<String, Vec<(String, String)>> {
        let mut out = BTreeMap::new();
        for (claim, row) in &self.claims {
            let mut ranges: Vec<(String, String)> = Vec::new();
            let mut open = false;
            for v in &self.versions {
                let seen = row.get(v).is_some_and(|x| Self::observed(*x));
                match (seen, open) {
                    (true, false) => ranges.push((v.clone(), v.clone())),
                    (true, true) => {
                        if let Some(r) = ranges.last_mut() {
                            r.1 = v.clone();
                        }
                    }
                    _ => {}
                }
                open = seen;
            }
            out.insert(claim.clone(), ranges);
        }
        out
    }

    /// The claims observed on `previous` that no probe observes on `version` (claim → why, from the
    /// reasons of the probes citing it there: `TaskOutput not offered in request 1`), and those observed
    /// again on `version` after a gap (claim → empty).
    pub fn coverage_moves(&self, previous: &str, version: &str) -> (BTreeMap<String, String>, BTreeSet<String>) {
        let mut lost = BTreeMap::new();
        let mut back = BTreeSet::new();
        for (claim, row) in &self.claims {
            let (before, now) = (row.get(previous).copied(), row.get(version).copied());
            match (before.map(Self::observed), now.map(Self::observed)) {
                (Some(true), Some(false)) => {
                    let why: BTreeSet<String> = self
                        .claim_probes
                        .get(claim)
                        .into_iter()
                        .flatten()
                        .filter_map(|p| self.probes.get(p)?.get(version))
                        .flat_map(|c| c.reason.split("; ").map(unoffered_tool).collect::<Vec<_>>())
                        .filter(|r| !r.is_empty())
                        .collect();
                    let word = now.map(|v| v.word()).unwrap_or("n/a");
                    let why = if why.is_empty() {
                        word.to_string()
                    } else {
                        format!("{word}: {}", why.into_iter().collect::<Vec<_>>().join("; "))
                    };
                    lost.insert(claim.clone(), why);
                }
                (Some(false), Some(true)) => {
                    back.insert(claim.clone());
                }
                _ => {}
            }
        }
        (lost, back)
    }

    /// The coverage section of the Markdown: how many claims are observed on every version, then each
    /// other claim with the versions it is observed on (or none).
    fn coverage_markdown(&self) -> String {
        let cov = self.coverage();
        let (Some(first), Some(last)) = (self.versions.first(), self.versions.last()) else { return String::new() };
        let whole = |r: &Vec<(String, String)>| r.len() == 1 && &r[0].0 == first && &r[0].1 == last;
        let every = cov.values().filter(|r| whole(r)).count();
        let mut out = format!(
            "\n## Coverage of the claims\n\n{every} of {} claims are observed on every version ({first} to {last}): \
             holds, diverges or changed. The others, with the versions they are observed on (a claim is not \
             observed where every probe citing it is n/a, broken or an error):\n\n",
            cov.len()
        );
        for (claim, ranges) in cov.iter().filter(|(_, r)| !whole(r)) {
            let said: Vec<String> =
                ranges.iter().map(|(a, b)| if a == b { a.clone() } else { format!("{a} to {b}") }).collect();
            out.push_str(&format!(
                "- **{claim}**: {}\n",
                if said.is_empty() {
                    "observed on no version".to_string()
                } else {
                    format!("observed on {}", said.join(", "))
                }
            ));
        }
        out
    }

    /// The matrix as Markdown (docs/matrix/timeline.md): the versions, the claims × versions table, then
    /// each claim's and each probe's timeline. `P → V` reads "first seen at V; the version before it in
    /// the matrix is P" — exact when the two are adjacent in npm's order (the matrix of docs/ runs the
    /// boundary pairs `probelab bisect` found), else the change is somewhere in (P, V].
    pub fn to_markdown(&self, title: &str) -> String {
        self.to_markdown_with(title, None)
    }

    /// [`Matrix::to_markdown`]; with `published` — the words of every change
    /// ([`Matrix::said`]) and the pages' directory relative to the file (`../changes`) — each
    /// release in the claims' timeline links to its page and the probes' timeline is "Changes by tool" in
    /// words ([`super::readable::by_tool`]) instead of a line per change with its fingerprints.
    pub fn to_markdown_with(&self, title: &str, published: Option<(&[super::readable::Said], &str)>) -> String {
        let mut out = format!("# {title}\n\n");
        out.push_str(&format!(
            "{} versions, {} probes, {} claims. Generated by `probelab report --markdown` from the cells of `probelab matrix`; do not edit by hand.\n\n",
            self.versions.len(),
            self.probes.len(),
            self.claims.len()
        ));
        // a row per claim, its verdicts as runs of releases (a column per release made rows of 900
        // characters)
        out.push_str("## Claims over the releases\n\nEach claim's verdict as runs of releases: the verdict, the first and last release it holds for, and how many releases (`·`: not measured there).\n\n| claim | verdict over the releases |\n|---|---|\n");
        for (claim, row) in &self.claims {
            let runs = super::readable::runs(&self.versions, &|v| row.get(v).map(|x| x.word().to_string()));
            out.push_str(&format!("| {claim} | {} |\n", super::readable::runs_text(&runs)));
        }
        let at = |v: &str| match published {
            Some((_, changes)) => format!("[{v}]({changes}/{v}.md)"),
            None => format!("**{v}**"),
        };
        out.push_str("\n## Timeline of the claims\n\n");
        for (claim, changes) in &self.claim_timeline {
            for c in changes {
                out.push_str(&format!("- **{claim}** {} → {}: {}\n", c.previous, at(&c.version), c.what));
            }
        }
        match published {
            Some((said, changes)) => out.push_str(&super::readable::by_tool(said, changes)),
            None => {
                out.push_str("\n## Timeline of the probes\n\n");
                for (probe, changes) in &self.probe_timeline {
                    for c in changes {
                        let reason = self
                            .probes
                            .get(probe)
                            .and_then(|r| r.get(&c.version))
                            .map(|cell| cell.reason.as_str())
                            .unwrap_or("");
                        let why = if reason.is_empty() { String::new() } else { format!(" ({reason})") };
                        out.push_str(&format!("- `{probe}` {} → **{}**: {}{why}\n", c.previous, c.version, c.what));
                    }
                }
            }
        }
        out.push_str(&self.unstable_text(
            "\n## Unstable probes\n\nRun again on one version, these did not agree with themselves: their fingerprints there are noise, never a change.\n\n",
            "- ",
        ));
        out.push_str(&self.coverage_markdown());
        out.push_str(&self.broken_text(
            "\n## Broken runs\n\nThese runs failed an invariant of every run (a request refused by the stub, a scripted turn not served, the deadline, the subject gone): the probe's script did not fit the version and needs repair there. A broken run is never a change, and no interface, budget, claim or timeline fact comes from it.\n\n",
            "- ",
        ));
        out
    }

    /// Every change of the matrix's probe timeline in words, oldest release first (then by probe).
    /// `unordered`: per probe, the tool_use ids whose result lines come in any order.
    pub fn said(
        &self,
        golden: &std::path::Path,
        unordered: &BTreeMap<String, BTreeSet<String>>,
    ) -> Vec<super::readable::Said> {
        let m = self;
        let none = BTreeSet::new();
        let mut out = Vec::new();
        for (probe, changes) in &m.probe_timeline {
            for Change { previous, version, what } in changes {
                let read = |v: &str| {
                    std::fs::read_to_string(
                        crate::transcript::golden::claude_code_dir(golden, v).join(format!("{probe}.snap")),
                    )
                    .ok()
                };
                let reason = m
                    .probes
                    .get(probe)
                    .and_then(|r| r.get(version))
                    .map(|c| c.reason.as_str())
                    .filter(|r| !r.is_empty() && !what.contains(*r))
                    .map(|r| format!(" ({r})"))
                    .unwrap_or_default();
                let mut s = super::readable::Said {
                    probe: probe.clone(),
                    previous: previous.clone(),
                    version: version.clone(),
                    what: super::readable::plain(what) + &reason,
                    words: Vec::new(),
                    tools: Vec::new(),
                };
                if let (Some(a), Some(b)) = (read(previous), read(version)) {
                    let (results, verdicts) =
                        crate::transcript::diff::transcript_changes(&a, &b, unordered.get(probe).unwrap_or(&none));
                    for (tool, c) in &results {
                        let named = tool.as_ref().map(|t| format!(" ({t})")).unwrap_or_default();
                        let err = c.is_error.as_deref().map(|e| format!(" is_error {e}")).unwrap_or_default();
                        let call = c.call.trim_end_matches(':').trim_end_matches(" is_error");
                        s.words.push(format!("{call}{named}{err}: {}", c.words).trim_end_matches(": ").to_string());
                        if let Some(t) = tool.as_ref().filter(|t| !s.tools.contains(t)) {
                            s.tools.push(t.clone());
                        }
                    }
                    if results.is_empty() {
                        s.words.extend(verdicts);
                    }
                    if s.tools.is_empty() {
                        let first = b.lines().chain(a.lines()).find_map(|l| l.strip_prefix("tool_use "));
                        s.tools.extend(first.and_then(|l| l.split(' ').nth(1)).map(str::to_string));
                    }
                }
                if s.tools.is_empty() {
                    s.tools.push(super::readable::NO_TOOL.into());
                }
                out.push(s);
            }
        }
        out.sort_by(|a, b| (version_key(&a.version), &a.probe).cmp(&(version_key(&b.version), &b.probe)));
        out
    }

    /// The matrix with the built-in conformance figures of its versions (the others are left out).
    pub fn with_conformance(mut self, table: &super::conformance::Table) -> Matrix {
        self.conformance =
            table.iter().filter(|(v, _)| self.versions.contains(v)).map(|(v, f)| (v.clone(), *f)).collect();
        self
    }

    /// The matrix as a static HTML page ([`Matrix::to_html_with`], no words of the changes).
    pub fn to_html(&self, title: &str, evidence: Option<&Evidence>) -> String {
        self.to_html_with(title, evidence, &[])
    }

    /// The releases as ranges in which no row of the matrix moves (no probe's outcome or fingerprint,
    /// no claim's verdict, no conformance figure): (first, last) indices into `versions`. The HTML has a
    /// column per range, not per release — 87 releases are 38 ranges — so it fits a screen.
    pub fn ranges(&self) -> Vec<(usize, usize)> {
        let key = |v: &str| -> Vec<String> {
            let probes = self.probes.values().map(|r| r.get(v).map(|c| format!("{:?} {}", c.outcome, c.fingerprint)));
            let claims = self.claims.values().map(|r| r.get(v).map(|x| x.word().to_string()));
            let conf = std::iter::once(self.conformance.get(v).map(|f| f.percent().to_string()));
            probes.chain(claims).chain(conf).map(Option::unwrap_or_default).collect()
        };
        let mut out: Vec<(usize, usize)> = Vec::new();
        let mut last: Option<Vec<String>> = None;
        for (i, v) in self.versions.iter().enumerate() {
            let k = key(v);
            match out.last_mut() {
                Some(r) if last.as_ref() == Some(&k) => r.1 = i,
                _ => out.push((i, i)),
            }
            last = Some(k);
        }
        out
    }

    /// A range of releases in words: `2.1.243` or `2.1.243 – 2.1.246 (3 releases)`.
    fn range_words(&self, (a, b): (usize, usize)) -> String {
        if a == b {
            self.versions[a].clone()
        } else {
            format!("{} – {} ({} releases)", self.versions[a], self.versions[b], b - a + 1)
        }
    }

    /// The matrix as a static HTML page: the claims table and the probes table with a column per range of
    /// releases in which nothing moves ([`Matrix::ranges`]), each cell a colour and a mark, what moved
    /// on the release a range starts with marked (outlined); each cell's title says in words what it is
    /// and — on the release it happened — what changed, with the words of the results from `said`
    /// ([`Matrix::said`]); then the timelines. With `evidence`, each cell links to what it is
    /// made of: a change to its release's page (its words in full), any other cell to its cell file (a
    /// claim's: the first citing probe's there).
    pub fn to_html_with(&self, title: &str, evidence: Option<&Evidence>, said: &[super::readable::Said]) -> String {
        let mut h = String::new();
        h.push_str(&format!(
            "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>{}</title>\n<style>\nbody{{font-family:sans-serif;margin:1em;max-width:1560px}} table{{border-collapse:collapse;font-size:12px}} td,th{{border:1px solid #ccc;padding:1px 3px;text-align:center}} th.v{{writing-mode:vertical-rl;font-weight:normal;white-space:nowrap}} td.l{{text-align:left;white-space:nowrap}} td a{{text-decoration:none;color:inherit}} .holds{{background:#cfc}} .diverges{{background:#ffd27f}} .changed{{background:#f99}} .na{{background:#ddd}} .error{{background:#f0f}} .broken{{background:#fff;outline:2px dashed #c00}} .pass{{background:#cfc}} .moved{{font-weight:bold;outline:2px solid #333}} li{{overflow-wrap:anywhere}}\n</style></head><body>\n<h1>{}</h1>\n",
            esc(title),
            esc(title)
        ));
        let ranges = self.ranges();
        h.push_str(&format!(
            "<p>{} versions, {} probes, {} claims. A column per range of releases in which no row moves ({} ranges); \
             ✓ holds / pass, ≈ diverges, ✗ changed, – n/a, ! error, ⚠ broken run; an outlined cell: it moved on the \
             release its range starts with. Hover over a cell for what it is and what changed, in words; click it \
             for the release's page (a change) or the cell's file.</p>\n",
            self.versions.len(),
            self.probes.len(),
            self.claims.len(),
            ranges.len()
        ));
        let head: String = ranges
            .iter()
            .map(|r| {
                format!("<th class=\"v\" title=\"{}\">{}</th>", esc(&self.range_words(*r)), esc(&self.range_head(*r)))
            })
            .collect();
        h.push_str(&format!("<h2>Claims × versions</h2>\n<table id=\"claims\"><tr><th>claim</th>{head}</tr>\n"));
        self.html_claims(&mut h, evidence, &ranges);
        h.push_str("</table>\n");
        h.push_str(&format!("<h2>Probes × versions</h2>\n<table id=\"probes\"><tr><th>probe</th>{head}</tr>\n"));
        self.html_conformance(&mut h, evidence, &ranges);
        self.html_probes(&mut h, evidence, &ranges, said);
        h.push_str("</table>\n<h2>Timeline</h2>\n<ul id=\"timeline\">\n");
        self.html_timeline(&mut h, evidence);
        h.push_str("</ul>\n");
        self.html_unstable(&mut h);
        if !self.broken.is_empty() {
            h.push_str("<h2>Broken runs</h2>\n<p>A failed invariant: the probe needs repair there; never a change, never a fact.</p>\n<ul id=\"broken\">\n");
            for line in self.broken_text("", "").lines() {
                h.push_str(&format!("<li>{}</li>\n", esc(line)));
            }
            h.push_str("</ul>\n");
        }
        h.push_str("</body></html>\n");
        h
    }

    /// A range's column heading: `2.1.296`, or `2.1.243 – 246` (the last release's patch when only it
    /// differs).
    fn range_head(&self, (a, b): (usize, usize)) -> String {
        let (x, y) = (&self.versions[a], &self.versions[b]);
        if a == b {
            return x.clone();
        }
        match (x.rsplit_once('.'), y.rsplit_once('.')) {
            (Some((px, _)), Some((py, patch))) if px == py => format!("{x} – {patch}"),
            _ => format!("{x} – {y}"),
        }
    }

    /// The claims table's rows: each claim's verdict per range, linked to its change page or a cell citing it.
    fn html_claims(&self, h: &mut String, evidence: Option<&Evidence>, ranges: &[(usize, usize)]) {
        for (claim, row) in &self.claims {
            h.push_str(&format!("<tr><td class=\"l\">{}</td>", esc(claim)));
            for &(a, b) in ranges {
                let v = &self.versions[a];
                match row.get(v) {
                    Some(x) => {
                        let class = match x {
                            ClaimVerdict::NotApplicable => "na",
                            _ => x.word(),
                        };
                        let moved = changed_at(self.claim_timeline.get(claim), v);
                        let href = evidence.and_then(|e| {
                            if moved {
                                return Some(format!("{}/{}.md", e.changes, esc(v)));
                            }
                            let probe = self
                                .claim_probes
                                .get(claim)?
                                .iter()
                                .find(|p| self.probes.get(*p).is_some_and(|r| r.contains_key(v)))?;
                            Some(format!("{}/{}/{}.json", e.cells, esc(v), esc(probe)))
                        });
                        let mut title = format!("{claim} {} on {}", x.word(), self.range_words((a, b)));
                        for c in self.claim_timeline.get(claim).into_iter().flatten().filter(|c| &c.version == v) {
                            title.push_str(&format!("\nchanged on {v} (after {}): {}", c.previous, c.what));
                        }
                        h.push_str(&format!(
                            "<td class=\"{class}{}\" title=\"{}\">{}</td>",
                            if moved { " moved" } else { "" },
                            esc(&title),
                            link(mark(x.word()).to_string(), href)
                        ))
                    }
                    None => h.push_str("<td></td>"),
                }
            }
            h.push_str("</tr>\n");
        }
    }

    /// The built-in conformance row (when the figures are there): per range, the share of probes of `builtin@V` with the real V's tool results.
    fn html_conformance(&self, h: &mut String, evidence: Option<&Evidence>, ranges: &[(usize, usize)]) {
        if !self.conformance.is_empty() {
            // the built-in runtime at each version's profile against the real version's goldens
            h.push_str("<tr id=\"conformance\"><td class=\"l\"><b>built-in conformance</b></td>");
            for &(a, b) in ranges {
                let v = &self.versions[a];
                match self.conformance.get(v) {
                    // its evidence: the figures' file beside the page (`probelab profiles --publish`)
                    Some(f) => h.push_str(&format!(
                        "<td class=\"{}\" title=\"builtin@{v} against golden/claude-code@{v}: {} of {} probes with the same tool results (on {})\">{}</td>",
                        if f.percent() >= 95 { "pass" } else { "changed" },
                        f.same,
                        f.common,
                        esc(&self.range_words((a, b))),
                        link(format!("{}%", f.percent()), evidence.map(|_| super::conformance::FILE.to_string()))
                    )),
                    None => h.push_str("<td></td>"),
                }
            }
            h.push_str("</tr>\n");
        }
    }

    /// The probes table's rows: each probe's outcome per range (a move on the range's first release
    /// marked, its words in the title), linked to its change page or its cell.
    fn html_probes(
        &self,
        h: &mut String,
        evidence: Option<&Evidence>,
        ranges: &[(usize, usize)],
        said: &[super::readable::Said],
    ) {
        /// The most of a title's words (a hover box, not the page: the page has them all).
        const TITLE_WORDS: usize = 1200;
        for (probe, row) in &self.probes {
            h.push_str(&format!("<tr><td class=\"l\">{}</td>", esc(probe)));
            for &(a, b) in ranges {
                let v = &self.versions[a];
                match row.get(v) {
                    Some(c) => {
                        let moved = c.outcome != Outcome::Broken && changed_at(self.probe_timeline.get(probe), v);
                        let class = match c.outcome {
                            Outcome::Pass => "pass",
                            Outcome::Changed => "changed",
                            Outcome::NotApplicable => "na",
                            Outcome::Error => "error",
                            Outcome::Broken => "broken",
                        };
                        let href = evidence.map(|e| {
                            if moved {
                                format!("{}/{}.md", e.changes, esc(v))
                            } else {
                                format!("{}/{}/{}.json", e.cells, esc(v), esc(probe))
                            }
                        });
                        let reason = if c.reason.is_empty() { String::new() } else { format!(" ({})", c.reason) };
                        let mut title = format!("{probe} {} on {}{reason}", c.outcome.word(), self.range_words((a, b)));
                        if moved {
                            let here: Vec<&super::readable::Said> =
                                said.iter().filter(|s| &s.probe == probe && &s.version == v).collect();
                            for s in &here {
                                title.push_str(&format!("\nchanged on {v} (after {}): {}", s.previous, s.what));
                                for w in &s.words {
                                    title.push_str(&format!("\n{w}"));
                                }
                            }
                            if here.is_empty() {
                                for ch in
                                    self.probe_timeline.get(probe).into_iter().flatten().filter(|ch| &ch.version == v)
                                {
                                    title.push_str(&format!(
                                        "\nchanged on {v} (after {}): {}",
                                        ch.previous,
                                        super::readable::plain(&ch.what)
                                    ));
                                }
                            }
                        }
                        if title.chars().count() > TITLE_WORDS {
                            title = title.chars().take(TITLE_WORDS).collect::<String>()
                                + "… (the release's page has it all)";
                        }
                        h.push_str(&format!(
                            "<td class=\"{class}{}\" title=\"{}\">{}</td>",
                            if moved { " moved" } else { "" },
                            esc(&title),
                            link(mark(c.outcome.word()).to_string(), href)
                        ));
                    }
                    None => h.push_str("<td></td>"),
                }
            }
            h.push_str("</tr>\n");
        }
    }

    /// The timeline's items: each claim's changes, linked to their change pages.
    fn html_timeline(&self, h: &mut String, evidence: Option<&Evidence>) {
        for (claim, changes) in &self.claim_timeline {
            for c in changes {
                let at = link(
                    format!("<b>{}</b>", esc(&c.version)),
                    evidence.map(|e| format!("{}/{}.md", e.changes, esc(&c.version))),
                );
                h.push_str(&format!(
                    "<li><b>{}</b> at {at} (after {}): {}</li>\n",
                    esc(claim),
                    esc(&c.previous),
                    esc(&c.what)
                ));
            }
        }
    }

    /// The unstable probes and the noise, when there are any.
    fn html_unstable(&self, h: &mut String) {
        if !self.unstable.is_empty() || !self.noise.is_empty() {
            h.push_str("<h2>Unstable probes</h2>\n<p>Run again on one version, these did not agree with themselves: not a change.</p>\n<ul id=\"unstable\">\n");
            for (probe, row) in &self.unstable {
                for (version, what) in row {
                    h.push_str(&format!("<li>{} on {}: varies in {}</li>\n", esc(probe), esc(version), esc(what)));
                }
            }
            for (probe, row) in &self.noise {
                for (version, n) in row {
                    h.push_str(&format!(
                        "<li>{} {} → {}: {}</li>\n",
                        esc(probe),
                        esc(&n.previous),
                        esc(version),
                        esc(&n.why())
                    ));
                }
            }
            h.push_str("</ul>\n");
        }
    }
}

/// A verdict's or outcome's mark in the HTML tables (its word is in the cell's title and the legend).
fn mark(word: &str) -> &'static str {
    match word {
        "holds" | "pass" => "✓",
        "diverges" => "≈",
        "changed" => "✗",
        "error" => "!",
        "broken" => "⚠",
        _ => "–",
    }
}

/// Whether a timeline has a change at version `v`.
fn changed_at(timeline: Option<&Vec<Change>>, v: &str) -> bool {
    timeline.is_some_and(|cs| cs.iter().any(|c| c.version == v))
}

/// `inner` linked to `href`, when there is one.
fn link(inner: String, href: Option<String>) -> String {
    match href {
        Some(h) => format!("<a href=\"{h}\">{inner}</a>"),
        None => inner,
    }
}

/// Text as HTML.
fn esc(s: &str) -> String {
    crate::html::escape(s)
}

fn short(fingerprint: &str) -> String {
    fingerprint.chars().take(12).collect()
}

/// The cells by (probe, version): one each — two cells of one (probe, version) that disagree are an error
/// (fingerprints compare as the matrix shows them: a slim cell made from a report keeps 12 hex).
/// Two cells of one probe on one version that say different things ([`Matrix::from_cells`]): each's
/// outcome and fingerprint as the matrix shows them.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "two cells of {probe} on {version} disagree ({first} / {second}): merge shards of one matrix, or run the cell again"
)]
pub struct Disagree {
    /// The probe.
    pub probe: String,
    /// The version (or subject).
    pub version: String,
    /// The first cell's outcome and fingerprint (`pass 0123456789ab`).
    pub first: String,
    /// The other's.
    pub second: String,
}

fn one_cell_each(cells: &[Observation]) -> Result<BTreeMap<(String, String), &Observation>, Disagree> {
    let mut by_key: BTreeMap<(String, String), &Observation> = BTreeMap::new();
    for o in cells {
        let version = o.version.clone().unwrap_or_else(|| o.subject.clone());
        if let Some(prev) = by_key.insert((o.probe.clone(), version.clone()), o) {
            // fingerprints compare as the matrix shows them (a slim cell made from a report keeps 12 hex)
            if prev.outcome != o.outcome || short(&prev.fingerprint) != short(&o.fingerprint) || prev.claims != o.claims
            {
                return Err(Disagree {
                    probe: o.probe.clone(),
                    version,
                    first: format!("{} {}", prev.outcome.word(), short(&prev.fingerprint)),
                    second: format!("{} {}", o.outcome.word(), short(&o.fingerprint)),
                });
            }
        }
    }
    Ok(by_key)
}

/// A probe's changes between neighbouring versions it ran on: its outcome or behaviour moved, neither
/// side unstable. A move only in parts seen to vary on another version (and whose outcome, if it moved,
/// varied somewhere too) is noise, kept in `noise` instead.
fn probe_changes(
    probe: &str,
    row: &BTreeMap<String, Cell>,
    versions: &[String],
    by_key: &BTreeMap<(String, String), &Observation>,
    noises: &mut BTreeMap<String, BTreeMap<String, Noise>>,
) -> Vec<Change> {
    // the parts of the probe's behaviour seen to vary on one version, and where
    let mut varying: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (v, cell) in row.iter().filter(|(_, c)| !c.unstable.is_empty()) {
        for part in cell.unstable.split("; ") {
            let part = if part.starts_with("outcome ") { "outcome" } else { part };
            varying.entry(part.to_string()).or_default().insert(v.clone());
        }
    }
    let mut changes = Vec::new();
    let mut prev: Option<(&String, &Cell)> = None;
    for v in versions {
        // a broken run says nothing of the behaviour: stepped over, as a version not run
        let Some(cell) = row.get(v).filter(|c| c.outcome != Outcome::Broken) else { continue };
        if let Some((pv, pc)) = prev {
            // a side that did not reproduce itself says nothing of a change
            let noise = !pc.unstable.is_empty() || !cell.unstable.is_empty();
            if !noise && (pc.outcome != cell.outcome || pc.fingerprint != cell.fingerprint) {
                // what moved, where both cells kept their behaviour (hashed or whole)
                let parts =
                    match (by_key.get(&(probe.to_string(), pv.clone())), by_key.get(&(probe.to_string(), v.clone()))) {
                        (Some(a), Some(b)) if !a.behaviour.is_empty() && !b.behaviour.is_empty() => {
                            a.behaviour.hashed().differences(&b.behaviour.hashed())
                        }
                        _ => Vec::new(),
                    };
                let outcome_varies = pc.outcome == cell.outcome || varying.contains_key("outcome");
                if !parts.is_empty() && outcome_varies && parts.iter().all(|x| varying.contains_key(x)) {
                    let mut on: BTreeSet<String> = BTreeSet::new();
                    for x in parts.iter().map(String::as_str).chain((pc.outcome != cell.outcome).then_some("outcome")) {
                        on.extend(varying.get(x).into_iter().flatten().cloned());
                    }
                    let mut varies_on: Vec<String> = on.into_iter().collect();
                    varies_on.sort_by_key(|v| version_key(v));
                    let n = Noise { previous: pv.clone(), parts, varies_on };
                    noises.entry(probe.to_string()).or_default().insert(v.clone(), n);
                    prev = Some((v, cell));
                    continue;
                }
                let parts = if parts.is_empty() { String::new() } else { format!(" ({})", parts.join("; ")) };
                let what = if pc.outcome != cell.outcome {
                    format!("{} → {}", pc.outcome.word(), cell.outcome.word())
                } else {
                    format!("behaviour {} → {}{parts}", pc.fingerprint, cell.fingerprint)
                };
                changes.push(Change { version: v.clone(), previous: pv.clone(), what });
            }
        }
        prev = Some((v, cell));
    }
    changes
}

/// A claim's changes: where a citing probe's verdict on it changed between two versions it ran on (both
/// sides stable, not noise), or its behaviour did, oldest first.
fn claim_changes<'a>(
    claim: &String,
    probes: impl Iterator<Item = &'a String>,
    versions: &[String],
    by_key: &BTreeMap<(String, String), &Observation>,
    m: &Matrix,
) -> Vec<Change> {
    let mut changes = Vec::new();
    for p in probes {
        let mut prev: Option<(&String, ClaimVerdict, bool)> = None;
        for v in versions {
            let Some(o) = by_key.get(&(p.clone(), v.clone())).filter(|o| o.outcome != Outcome::Broken) else {
                continue;
            };
            let Some(verdict) = o.claims.get(claim).copied() else { continue };
            let unstable = !o.unstable.is_empty();
            if let Some((pv, pverdict, punstable)) = prev {
                let noise = m.noise.get(p).and_then(|n| n.get(v)).is_some_and(|n| &n.previous == pv);
                if pverdict != verdict && !unstable && !punstable && !noise {
                    changes.push(Change {
                        version: v.clone(),
                        previous: pv.clone(),
                        what: format!("{p}: {} → {}", pverdict.word(), verdict.word()),
                    });
                }
            }
            prev = Some((v, verdict, unstable));
        }
        for c in m.probe_timeline.get(p).into_iter().flatten() {
            let verdict_moved = changes.iter().any(|x| x.version == c.version && x.what.starts_with(&format!("{p}: ")));
            if c.what.starts_with("behaviour") && !verdict_moved {
                changes.push(Change { what: format!("{p}: {}", c.what), ..c.clone() });
            }
        }
    }
    changes.sort_by_key(|c| version_key(&c.version));
    changes
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(probe: &str, version: &str, outcome: Outcome, fp: &str, claim: (&str, ClaimVerdict)) -> Observation {
        let claims = BTreeMap::from([(claim.0.to_string(), claim.1)]);
        Observation { claims, ..Observation::for_test(probe, version, outcome, fp) }
    }

    #[test]
    fn a_claim_whose_probes_become_n_a_is_no_longer_observed_and_its_range_is_shown() {
        use ClaimVerdict::*;
        let gone = |v: &str| Observation {
            reason: "TaskOutput not offered in request 1".into(),
            ..cell("bg", v, Outcome::NotApplicable, "", ("BG-1", NotApplicable))
        };
        let cells = vec![
            cell("bg", "2.1.1", Outcome::Pass, "aaaa", ("BG-1", Holds)),
            gone("2.1.2"),
            cell("bg", "2.1.3", Outcome::Pass, "aaaa", ("BG-1", Holds)),
            cell("read", "2.1.1", Outcome::Pass, "cccc", ("READ-1", Holds)),
            cell("read", "2.1.2", Outcome::Changed, "dddd", ("READ-1", Changed)),
            cell("read", "2.1.3", Outcome::Changed, "dddd", ("READ-1", Changed)),
        ];
        let m = Matrix::from_cells(&cells).unwrap_or_else(|e| panic!("{e}"));
        let cov = m.coverage();
        assert_eq!(cov["BG-1"], vec![("2.1.1".to_string(), "2.1.1".to_string()), ("2.1.3".into(), "2.1.3".into())]);
        assert_eq!(cov["READ-1"], vec![("2.1.1".to_string(), "2.1.3".to_string())], "a change is an observation");
        let (lost, back) = m.coverage_moves("2.1.1", "2.1.2");
        assert_eq!(lost.get("BG-1").map(String::as_str), Some("n/a: TaskOutput not offered"));
        assert!(back.is_empty() && !lost.contains_key("READ-1"));
        let (lost, back) = m.coverage_moves("2.1.2", "2.1.3");
        assert!(lost.is_empty() && back.contains("BG-1"));
        let md = m.to_markdown("t");
        assert!(md.contains("1 of 2 claims are observed on every version (2.1.1 to 2.1.3)"), "{md}");
        assert!(md.contains("- **BG-1**: observed on 2.1.1, 2.1.3\n"), "{md}");
        assert!(!md.contains("- **READ-1**: observed"), "{md}");
        let page = crate::observatory::watch::changes_page("2.1.2", "2.1.1", None, &m, "");
        assert!(
            page.contains("## Claims no longer observed") && page.contains("- BG-1 (n/a: TaskOutput not offered"),
            "{page}"
        );
        let page = crate::observatory::watch::changes_page("2.1.3", "2.1.2", None, &m, "");
        assert!(page.contains("Observed again on 2.1.3, after 2.1.2 where no probe observed them: BG-1."), "{page}");
    }

    #[test]
    fn shards_in_any_order_give_one_matrix_and_changes_are_found() {
        use ClaimVerdict::*;
        let cells = vec![
            cell("p", "2.1.10", Outcome::Pass, "aaaa", ("READ-2", Holds)),
            cell("p", "2.1.9", Outcome::Pass, "aaaa", ("READ-2", Holds)),
            cell("p", "2.1.11", Outcome::Changed, "bbbb", ("READ-2", Changed)),
            cell("q", "2.1.10", Outcome::Pass, "cccc", ("GREP-1", Holds)),
            cell("q", "2.1.11", Outcome::Pass, "dddd", ("GREP-1", Holds)),
        ];
        let one = Matrix::from_cells(&cells).unwrap_or_else(|e| panic!("{e}"));
        let mut shuffled = cells.clone();
        shuffled.reverse();
        shuffled.push(cells[0].clone()); // the same cell from two shards
        assert_eq!(Matrix::from_cells(&shuffled).unwrap_or_else(|e| panic!("{e}")), one);
        assert_eq!(one.versions, ["2.1.9", "2.1.10", "2.1.11"], "semver order, not text order");
        assert_eq!(one.claim_timeline["READ-2"][0].version, "2.1.11");
        assert_eq!(
            one.claim_timeline["READ-2"][0].what, "p: holds → changed",
            "named by the probe whose verdict moved"
        );
        // a version where only another probe ran (a bisection's boundary) does not make the claim flip
        let mut sparse = cells.clone();
        sparse.push(cell("r", "2.1.105", Outcome::Pass, "eeee", ("READ-2", Holds)));
        sparse.push(cell("r", "2.1.100", Outcome::Pass, "eeee", ("READ-2", Holds)));
        let m = Matrix::from_cells(&sparse).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(m.claim_timeline["READ-2"].len(), 1, "{:?}", m.claim_timeline["READ-2"]);
        // a behaviour change with the claim still holding is on the claim's timeline, named
        assert_eq!(one.claim_timeline["GREP-1"][0].what, "q: behaviour cccc → dddd");
        assert!(one.to_text().contains("READ-2 HHC"), "{}", one.to_text());
        let mut bad = cells.clone();
        bad.push(cell("p", "2.1.9", Outcome::Changed, "zzzz", ("READ-2", Changed)));
        assert!(Matrix::from_cells(&bad).err().is_some_and(|e| e.to_string().contains("disagree")));
    }

    #[test]
    fn a_probe_that_varies_on_one_version_is_unstable_never_a_change() {
        use ClaimVerdict::*;
        let a = cell("p", "2.1.235", Outcome::Pass, "aaaa", ("C-1", Holds));
        let mut b = cell("p", "2.1.236", Outcome::Pass, "bbbb", ("C-1", Holds));
        let c = cell("p", "2.1.237", Outcome::Pass, "cccc", ("C-1", Holds));
        // reproduced on both sides: a change
        let m = Matrix::from_cells(&[a.clone(), b.clone(), c.clone()]).unwrap_or_default();
        assert_eq!(m.probe_timeline["p"].len(), 2);
        assert!(m.claim_timeline.contains_key("C-1"));
        // 2.1.236 varied when run again: neither of its transitions is a change
        b.unstable = "file .rv/4242 only in one run".into();
        let m = Matrix::from_cells(&[a, b, c]).unwrap_or_default();
        assert!(!m.probe_timeline.contains_key("p"), "{:?}", m.probe_timeline);
        assert!(!m.claim_timeline.contains_key("C-1"), "{:?}", m.claim_timeline);
        assert_eq!(m.unstable["p"]["2.1.236"], "file .rv/4242 only in one run");
        assert!(m.to_text().contains("  p on 2.1.236: varies in file .rv/4242 only in one run\n"), "{}", m.to_text());
        assert!(m.to_markdown("t").contains("## Unstable probes"));
        assert!(m.to_html("t", None).contains("<li>p on 2.1.236: varies in file .rv/4242 only in one run</li>"));
    }

    #[test]
    fn a_transition_that_moves_only_where_the_probe_varies_elsewhere_is_noise_not_a_change() {
        use crate::observe::{Behaviour, CallResult};
        use ClaimVerdict::*;
        let with = |v: &str, fp: &str, text: &str, outcome: Outcome| {
            let r = |t: &str, s: &str| Some(CallResult { tool: t.into(), text: s.into(), is_error: false });
            let behaviour = Behaviour { results: vec![r("Read", "same"), r("TaskOutput", text)], ..Default::default() };
            let verdict = if outcome == Outcome::Pass { Holds } else { Changed };
            Observation { behaviour, ..cell("p", v, outcome, fp, ("WF-1", verdict)) }
        };
        // 2.1.2 reproduced twice, but its moved part (result 2) is what varies on 2.1.4
        let mut cells = vec![
            with("2.1.1", "aaaa", "done: output", Outcome::Pass),
            with("2.1.2", "bbbb", "done", Outcome::Pass),
            with("2.1.3", "aaaa", "done: output", Outcome::Pass),
            with("2.1.4", "aaaa", "done: output", Outcome::Pass),
        ];
        cells[3].unstable = "result 2 (TaskOutput) text".into();
        let m = Matrix::from_cells(&cells).unwrap_or_default();
        assert!(!m.probe_timeline.contains_key("p"), "{:?}", m.probe_timeline);
        assert!(!m.claim_timeline.contains_key("WF-1"), "{:?}", m.claim_timeline);
        assert_eq!(m.noise["p"]["2.1.2"].previous, "2.1.1");
        assert_eq!(m.noise["p"]["2.1.3"].varies_on, vec!["2.1.4".to_string()]);
        assert!(
            m.to_text().contains(
                "  p 2.1.1 → 2.1.2: moved only in result 2 (TaskOutput) text, which varies on 2.1.4: not a change\n"
            ),
            "{}",
            m.to_text()
        );
        assert!(m.to_html("t", None).contains("<li>p 2.1.1 → 2.1.2: moved only in"));
        // with the outcome moving too, the outcome must be among what varies
        cells[1] = with("2.1.2", "bbbb", "done", Outcome::Changed);
        let m = Matrix::from_cells(&cells).unwrap_or_default();
        assert_eq!(m.probe_timeline["p"].len(), 2, "an outcome that never varied is a change: {:?}", m.noise);
        cells[3].unstable = "outcome pass / changed; result 2 (TaskOutput) text".into();
        let m = Matrix::from_cells(&cells).unwrap_or_default();
        assert!(!m.probe_timeline.contains_key("p"), "{:?}", m.probe_timeline);
        assert!(!m.claim_timeline.contains_key("WF-1"), "{:?}", m.claim_timeline);
        // a part that never varied is a change, whatever else moved with it
        let mut other = with("2.1.2", "cccc", "done", Outcome::Pass);
        other.behaviour.results[0] = Some(CallResult { tool: "Read".into(), text: "new".into(), is_error: false });
        cells[1] = other;
        let m = Matrix::from_cells(&cells).unwrap_or_default();
        assert_eq!(m.probe_timeline["p"].len(), 2, "{:?}", m.noise);
        assert!(m.noise.is_empty());
    }

    #[test]
    fn the_built_in_conformance_is_a_row_of_the_html_for_the_versions_measured() {
        use super::super::conformance::{Figure, Table};
        use ClaimVerdict::*;
        let cells = [
            cell("p", "2.1.9", Outcome::Pass, "aaaa", ("READ-2", Holds)),
            cell("p", "2.1.10", Outcome::Pass, "aaaa", ("READ-2", Holds)),
        ];
        let plain = Matrix::from_cells(&cells).unwrap_or_default();
        assert!(!plain.to_html("t", None).contains("built-in conformance"));
        assert!(!plain.to_json().contains("conformance"), "no figures, the JSON as before");
        let table = Table::from([
            ("2.1.9".to_string(), Figure { common: 92, same: 92 }),
            ("2.1.10".to_string(), Figure { common: 92, same: 58 }),
            ("2.1.999".to_string(), Figure { common: 1, same: 1 }),
        ]);
        let m = Matrix::from_cells(&cells).unwrap_or_default().with_conformance(&table);
        assert_eq!(m.conformance.len(), 2, "a version outside the matrix is left out");
        let html = m.to_html("t", None);
        let row = html.lines().find(|l| l.contains("built-in conformance")).unwrap_or_default();
        assert!(row.contains(">100%</td>") && row.contains(">63%</td>"), "{row}");
        let linked = m.to_html("t", Some(&Evidence::committed()));
        let row = linked.lines().find(|l| l.contains("built-in conformance")).unwrap_or_default();
        assert!(row.contains("><a href=\"conformance.json\">63%</a></td>"), "the figures' file is the evidence: {row}");
        assert!(row.contains("title=\"builtin@2.1.10 against golden/claude-code@2.1.10: 58 of 92 probes"), "{row}");
        assert!(row.find(">100%").unwrap_or(usize::MAX) < row.find(">63%").unwrap_or(0), "version order: {row}");
    }

    #[test]
    fn cells_of_different_probe_files_are_named() {
        use ClaimVerdict::*;
        let mut a = cell("p", "2.1.9", Outcome::Pass, "aaaa", ("READ-2", Holds));
        let mut b = cell("p", "2.1.10", Outcome::Pass, "bbbb", ("READ-2", Holds));
        a.probe_sha256 = "1".repeat(64);
        b.probe_sha256 = "1".repeat(64);
        assert!(Matrix::from_cells(&[a.clone(), b.clone()]).unwrap_or_default().mixed_probe_files.is_empty());
        b.probe_sha256 = "2".repeat(64);
        let m = Matrix::from_cells(&[a, b]).unwrap_or_default();
        assert_eq!(m.mixed_probe_files.get("p"), Some(&2));
        assert!(m.normalisers.is_empty(), "cells without stamps say nothing of normalisers");
        let mut c = cell("q", "2.1.9", Outcome::Pass, "aaaa", ("READ-2", Holds));
        let mut d = cell("q", "2.1.10", Outcome::Pass, "aaaa", ("READ-2", Holds));
        (c.normaliser, d.normaliser) = ("aaaaaaaaaaaa".into(), "aaaaaaaaaaaa".into());
        assert!(Matrix::from_cells(&[c.clone(), d.clone()]).unwrap_or_default().normalisers.is_empty());
        d.normaliser = "bbbbbbbbbbbb".into();
        let two = Matrix::from_cells(&[c, d]).unwrap_or_default();
        assert_eq!(two.normalisers.len(), 2);
        assert!(two.to_text().contains("normalised by 2 normalisers"), "{}", two.to_text());
        assert!(
            m.to_text().contains("warning: the cells of p ran 2 different versions of its probe file"),
            "{}",
            m.to_text()
        );
    }
    #[test]
    fn a_change_says_its_words_under_the_tool_whose_result_changed() {
        let d = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let golden = d.path();
        let snap = |v: &str, result: &str| {
            let dir = golden.join(format!("claude-code@{v}"));
            std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
            let t = format!(
                "probe: p\n## request 1\ntool_use toolu_p_1 Glob {{}}\ntool_use toolu_p_2 Grep {{}}\n## request 2\ntool_result toolu_p_1:\n  | a.txt\ntool_result toolu_p_2:\n  | {result}\n## verdicts\npass invariant: i\n"
            );
            std::fs::write(dir.join("p.snap"), t).unwrap_or_else(|e| panic!("{e}"));
        };
        snap("1.0.0", "found 2 lines");
        snap("1.0.1", "found 3 lines");
        let mut m = Matrix { versions: vec!["1.0.0".into(), "1.0.1".into()], ..Matrix::default() };
        m.probe_timeline.insert(
            "p".into(),
            vec![Change {
                previous: "1.0.0".into(),
                version: "1.0.1".into(),
                what: "behaviour aaaaaaaaaaaa → bbbbbbbbbbbb (result 2 (Grep) text)".into(),
            }],
        );
        let s = m.said(golden, &BTreeMap::new());
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].tools, ["Grep"], "the Glob result did not change");
        assert_eq!(s[0].words, ["tool_result toolu_p_2 (Grep): found [-2-]{+3+} lines"]);
        let md = super::super::readable::by_tool(&s, "../changes");
        assert!(md.contains("### Grep\n\n1 change(s) at 1 release(s).\n\n- [1.0.1](../changes/1.0.1.md) (after 1.0.0) `p`: behaviour changed in result 2 (Grep) text\n  - `tool_result toolu_p_2 (Grep): found [-2-]{+3+} lines`\n"), "{md}");
        assert!(!md.contains("### Glob"), "{md}");
        // a side without goldens: the change is still listed, without words
        std::fs::remove_dir_all(golden.join("claude-code@1.0.0")).unwrap_or_else(|e| panic!("{e}"));
        let s = m.said(golden, &BTreeMap::new());
        assert_eq!((s[0].words.len(), s[0].tools.as_slice()), (0, &[super::super::readable::NO_TOOL.to_string()][..]));
    }
}
