//! The committed observatory and `probelab watch`, which keeps it current.
//!
//! The repository keeps the matrix as slim cells, `docs/matrix/cells/<version>/<probe>.json`
//! ([`Observation::slim`]: outcome, reason, claims, fingerprint; the texts are in the version's goldens),
//! and the reports made of them: `docs/matrix/matrix.json`, `matrix.txt`, `matrix.html`, `timeline.md`
//! ([`publish`]), one page per release with a change, `docs/changes/<version>.md` ([`changes_page`]).
//! Nothing there is edited by hand: a test holds the reports equal to what [`publish`] makes of the cells.
//!
//! `probelab watch` asks npm for the releases newer than the newest version with committed cells (the
//! main package and the platform-only ones), runs every claude-code probe on each of them and on that
//! newest committed version (so the first new release has its neighbour run beside it, and every change
//! is confirmed by a second run of both sides: [`super::matrix`]), blesses the new versions' goldens,
//! writes their slim cells (and the fresh ones of the version before them), regenerates the reports and
//! writes `docs/changes/<version>.md` for each new release with a change. Released versions come in
//! npm's order, so the neighbours it compares are neighbours of the registry: a change is pinned to the
//! exact release. A version without the linux-x64 binary is skipped and said.
//!
//! Exit status: 0 nothing new (or new releases without a change), 1 changes found, 2 an error (npm
//! unreachable: never "nothing new").

use super::releases::Releases;
use super::report::Matrix;
use super::{matrix, read_cells, CellDone, Goldens, MatrixOptions};
use crate::lab::Layout;
use crate::observe::{Observation, Outcome};
use crate::probe::Probe;
use crate::versions::{Catalogue, Freshness, Npm, Refresh};
use std::path::{Path, PathBuf};

/// The title of the committed reports.
pub const TITLE: &str = "probelab: claims × versions of Claude Code";

/// Where the committed observatory lives under a project root.
#[derive(Debug, Clone)]
pub struct Docs {
    /// `docs/matrix`.
    pub matrix: PathBuf,
    /// `docs/matrix/cells`.
    pub cells: PathBuf,
    /// `docs/changes`.
    pub changes: PathBuf,
}

impl Docs {
    /// The layout under a project root.
    pub fn under(root: &Path) -> Docs {
        let matrix = root.join("docs").join("matrix");
        Docs { cells: matrix.join("cells"), changes: root.join("docs").join("changes"), matrix }
    }
}

/// The matrix and the files made of it: (file name under docs/matrix, content).
pub type Reports = (Matrix, Vec<(&'static str, String)>);

/// The reports of the committed cells, as (file name, content): what [`publish`] writes. The budgets
/// table is read from the versions' goldens under `golden` ([`super::budgets`]); the built-in
/// conformance row of the HTML from `conformance` (`docs/matrix/conformance.json`); the timeline's
/// "Releases" section from `releases` (`docs/matrix/releases.json`, [`super::releases`]).
pub fn reports(
    cells: &[Observation],
    golden: &Path,
    conformance: &super::conformance::Table,
    releases: &Releases,
) -> Result<Reports, String> {
    let m = Matrix::from_cells(cells)?.with_conformance(conformance);
    let section = super::releases::section(&m, releases);
    let html = m.to_html("probelab: claims × versions", Some(&super::report::Evidence::committed()));
    let html = match html.rfind("</body>") {
        Some(at) if !section.is_empty() => format!("{}{}{}", &html[..at], section_html(&section), &html[at..]),
        _ => html,
    };
    let files = vec![
        ("matrix.json", m.to_json()),
        ("matrix.txt", m.to_text()),
        ("matrix.html", html),
        ("timeline.md", m.to_markdown(TITLE) + &section),
        ("budgets.md", super::budgets::to_markdown(golden, &m.versions)),
        ("interface.md", super::interface::to_markdown(golden, &m.versions)),
    ];
    Ok((m, files))
}

/// The "Releases" section as HTML: its heading, paragraphs and (nested) list items, bold and code spans
/// kept.
fn section_html(markdown: &str) -> String {
    fn inline(s: &str) -> String {
        let s = s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;");
        let mut out = String::new();
        for (i, part) in s.split("**").enumerate() {
            if i > 0 {
                out.push_str(if i % 2 == 1 { "<b>" } else { "</b>" });
            }
            for (j, bit) in part.split('`').enumerate() {
                if j > 0 {
                    out.push_str(if j % 2 == 1 { "<code>" } else { "</code>" });
                }
                out.push_str(bit);
            }
        }
        out
    }
    let mut h = String::new();
    let mut depth = 0;
    for line in markdown.lines() {
        let t = line.trim_start();
        let want = if t.starts_with("- ") { 1 + (line.len() - t.len()) / 2 } else { 0 };
        while depth < want {
            h.push_str("<ul>\n");
            depth += 1;
        }
        while depth > want {
            h.push_str("</ul>\n");
            depth -= 1;
        }
        if let Some(item) = t.strip_prefix("- ") {
            h.push_str(&format!("<li>{}</li>\n", inline(item)));
        } else if let Some(title) = t.strip_prefix("## ") {
            h.push_str(&format!("<h2>{}</h2>\n", inline(title)));
        } else if !t.is_empty() {
            h.push_str(&format!("<p>{}</p>\n", inline(t)));
        }
    }
    while depth > 0 {
        h.push_str("</ul>\n");
        depth -= 1;
    }
    h
}

/// Writes each cell slim under `docs.cells` (replacing the cell of the same version and probe), then
/// regenerates every report of the committed cells: docs/matrix ([`reports`]; with a `catalogue` newer
/// than `docs/matrix/releases.json`, that file is refreshed from it first) and docs/changes, one page
/// per release with a change ([`pages`]; the page of a release without one any more is removed).
/// Returns the matrix.
pub fn publish(
    docs: &Docs,
    layout: &Layout,
    probes: &[Probe],
    cells: &[Observation],
    catalogue: Option<&Catalogue>,
) -> Result<Matrix, String> {
    for c in cells {
        super::write_cell(&docs.cells, &c.slim()).map_err(|e| e.to_string())?;
    }
    std::fs::create_dir_all(&docs.matrix).map_err(|e| format!("{}: {e}", docs.matrix.display()))?;
    let all = read_cells(std::slice::from_ref(&docs.cells)).map_err(|e| e.to_string())?;
    let mut releases = Releases::read(&docs.matrix).map_err(|e| e.to_string())?;
    let oldest = all.iter().filter_map(|c| c.version.as_deref().and_then(|v| semver::Version::parse(v).ok())).min();
    if let (Some(c), Some(oldest)) = (catalogue, oldest) {
        let asked = releases.asked.parse::<jiff::Timestamp>().ok();
        if asked.is_none_or(|a| c.fetched_at() >= a) {
            let fresh = Releases::from_catalogue(c, &oldest);
            if fresh.releases != releases.releases || asked.is_none() {
                let text = fresh.to_json().map_err(|e| e.to_string())?;
                crate::versions::write_file_atomic(&docs.matrix.join(super::releases::FILE), text.as_bytes())
                    .map_err(|e| e.to_string())?;
                releases = fresh;
            }
        }
    }
    let conformance = super::conformance::read(&docs.matrix).map_err(|e| e.to_string())?;
    let (m, files) = reports(&all, &layout.golden, &conformance, &releases)?;
    for (name, text) in files {
        let path = docs.matrix.join(name);
        crate::versions::write_file_atomic(&path, text.as_bytes()).map_err(|e| e.to_string())?;
    }
    let made = pages(probes, layout, &m, &releases)?;
    std::fs::create_dir_all(&docs.changes).map_err(|e| format!("{}: {e}", docs.changes.display()))?;
    for (version, page) in &made {
        let path = docs.changes.join(format!("{version}.md"));
        if std::fs::read_to_string(&path).ok().as_deref() != Some(page.as_str()) {
            crate::versions::write_file_atomic(&path, page.as_bytes()).map_err(|e| e.to_string())?;
        }
    }
    for stale in stale_pages(&docs.changes, &made)? {
        std::fs::remove_file(&stale).map_err(|e| format!("{}: {e}", stale.display()))?;
    }
    Ok(m)
}

/// Every release page the matrix makes: (version, page) for each version with a change in the probes'
/// timeline, against the version before it in the matrix ([`release_page`]; the publication date from
/// the committed releases).
pub fn pages(
    probes: &[Probe],
    layout: &Layout,
    m: &Matrix,
    releases: &Releases,
) -> Result<Vec<(String, String)>, String> {
    let changed: std::collections::BTreeSet<&str> =
        m.probe_timeline.values().flatten().map(|c| c.version.as_str()).collect();
    let mut out = Vec::new();
    for w in m.versions.windows(2) {
        let (previous, version) = (&w[0], &w[1]);
        if changed.contains(version.as_str()) {
            out.push((
                version.clone(),
                release_page(probes, layout, m, version, previous, releases.published(version))?,
            ));
        }
    }
    Ok(out)
}

/// The pages under `dir` named for a version (`<semver>.md`) that `made` has not: releases without a
/// change any more.
fn stale_pages(dir: &Path, made: &[(String, String)]) -> Result<Vec<PathBuf>, String> {
    let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut out = Vec::new();
    for e in entries {
        let e = e.map_err(|e| format!("{}: {e}", dir.display()))?;
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(v) = name.strip_suffix(".md") else { continue };
        if semver::Version::parse(v).is_ok() && !made.iter().any(|(m, _)| m == v) {
            out.push(e.path());
        }
    }
    out.sort();
    Ok(out)
}

/// `docs/changes/<version>.md`: what changed in a release, against the release before it — each probe
/// whose outcome or behaviour moved there (from the matrix's timeline, every one reproduced), and the
/// evidence: the summary of `probelab diff` of the two versions' goldens (the words of each changed tool
/// result, the interface: tools added, removed, deferred, schemas changed).
pub fn changes_page(version: &str, previous: &str, published: Option<&str>, m: &Matrix, diff_summary: &str) -> String {
    let mut out = format!("# What changed in Claude Code {version}\n\n");
    out.push_str(&format!(
        "Against {previous}, the release before it in npm's order{}. Measured by probelab's claude-code probes; \
         generated by `probelab watch` (or `probelab matrix --publish`); do not edit by hand.\n\n",
        published.map(|p| format!("; {version} was published {}", p.get(..10).unwrap_or(p))).unwrap_or_default()
    ));
    out.push_str("## Behaviour\n\n");
    let mut any = false;
    for (probe, changes) in &m.probe_timeline {
        for c in changes.iter().filter(|c| c.version == version) {
            any = true;
            let reason = m
                .probes
                .get(probe)
                .and_then(|r| r.get(version))
                .map(|cell| cell.reason.as_str())
                .filter(|r| !r.is_empty())
                .map(|r| format!(" ({r})"))
                .unwrap_or_default();
            out.push_str(&format!("- `{probe}` {} → **{}**: {}{reason}\n", c.previous, c.version, c.what));
        }
    }
    if !any {
        out.push_str("No probe's outcome or behaviour changed.\n");
    }
    let unstable: Vec<String> = m
        .unstable
        .iter()
        .filter_map(|(p, row)| row.get(version).map(|w| format!("- `{p}`: varies in {w}\n")))
        .collect();
    if !unstable.is_empty() {
        out.push_str(
            "\nUnstable on this release (run again, it did not agree with itself; not counted as a change):\n\n",
        );
        out.push_str(&unstable.concat());
    }
    out.push_str(&format!(
        "\n## Evidence: `probelab diff claude-code@{previous} claude-code@{version}`\n\n```\n{}```\n",
        diff_summary
    ));
    out
}

/// The whole page of a release against the version before it ([`changes_page`] with the evidence of
/// `probelab diff` — results a probe marks `unordered` compared as sets, as its fingerprint does — then
/// the budgets and the interface).
pub fn release_page(
    probes: &[Probe],
    layout: &Layout,
    m: &Matrix,
    version: &str,
    previous: &str,
    published: Option<&str>,
) -> Result<String, String> {
    use crate::transcript::diff::{diff_dirs_with, render_summary, unordered_ids};
    let golden = &layout.golden;
    let (l, r) = (golden.join(super::subject(previous)), golden.join(super::subject(version)));
    let unordered =
        probes.iter().filter(|p| !p.unordered.is_empty()).map(|p| (p.id.clone(), unordered_ids(p))).collect();
    // the versions a bisection added to the matrix keep cells, not goldens: their evidence is a command
    // a missing set is named by its place in the repository, never by a path of this machine: the page
    // is committed
    let missing = missing_goldens(golden, &[previous, version]);
    let compared = match &missing {
        Some(m) => Err(m.clone()),
        None => diff_dirs_with(&l, &r, &layout.blobs(), &unordered).map_err(|e| e.to_string()),
    };
    let evidence = match compared {
        Ok(mut d) => {
            m.judge(&mut d, previous, version);
            d.left = format!("golden/{}", super::subject(previous));
            d.right = format!("golden/{}", super::subject(version));
            render_summary(&d)
        }
        Err(e) => {
            let changed = m.probe_timeline.iter().filter(|(_, ch)| ch.iter().any(|c| c.version == version));
            let first = changed.map(|(p, _)| p.as_str()).next().unwrap_or("PROBE");
            format!(
                "(no golden sets of both versions to compare: {e})\nrun `probelab explain {first} --versions \
                 {previous},{version}` (each probe above): it runs what is not committed\n"
            )
        }
    };
    Ok(changes_page(version, previous, published, m, &evidence)
        + &budget_lines(golden, version, previous)
        + &interface_lines(golden, version, previous))
}

/// The versions of these without a committed golden set, as the repository names it
/// (`golden/claude-code@2.1.241 is not committed`), or None when every one has its set.
fn missing_goldens(golden: &Path, versions: &[&str]) -> Option<String> {
    let missing: Vec<String> = versions
        .iter()
        .filter(|v| !golden.join(super::subject(v)).is_dir())
        .map(|v| format!("golden/{} is not committed", super::subject(v)))
        .collect();
    (!missing.is_empty()).then(|| missing.join("; "))
}

/// The interface lines of a release's page ([`super::interface::between`]).
pub fn interface_lines(golden: &Path, version: &str, previous: &str) -> String {
    if let Some(m) = missing_goldens(golden, &[previous, version]) {
        return format!("\n## Interface\n\n(not compared: {m})\n");
    }
    match super::interface::between(golden, previous, version) {
        Ok(lines) if lines.is_empty() => "\n## Interface\n\nNo interface change.\n".into(),
        Ok(lines) => format!("\n## Interface\n\n{}", lines.iter().map(|l| format!("- {l}\n")).collect::<String>()),
        Err(e) => format!("\n## Interface\n\n(not compared: {e})\n"),
    }
}

/// The budget lines of a release's page: each budget whose value differs from the release before it.
pub fn budget_lines(golden: &Path, version: &str, previous: &str) -> String {
    let versions = [previous.to_string(), version.to_string()];
    let t = super::budgets::table(golden, &versions);
    let ch = super::budgets::changes(&t, &versions);
    if ch.is_empty() {
        return "\n## Budgets\n\nNo budget of docs/matrix/budgets.md changed.\n".into();
    }
    let mut out = String::from("\n## Budgets\n\n");
    for (name, _, _, old, new) in ch {
        out.push_str(&format!("- **{name}**: {old} → {new}\n"));
    }
    out
}

/// What a watch did.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Watched {
    /// The newest version with committed cells before the watch.
    pub previous: String,
    /// The releases newer than it that were run, oldest first.
    pub new: Vec<String>,
    /// Releases newer than it that were not run, and why.
    pub skipped: Vec<(String, String)>,
    /// The changes at the new releases: (version, previous, probe, what).
    pub changes: Vec<(String, String, String, String)>,
    /// Probes unstable on a new release: (version, probe, what varies).
    pub unstable: Vec<(String, String, String)>,
    /// Cells that errored (no verdict): (version, probe, why).
    pub errors: Vec<(String, String, String)>,
    /// Probes whose run on the newest committed version did not give back its committed golden: their
    /// transcript varies between runs (a race, an order) even where the fingerprint agrees — worth a look.
    pub golden_differs: Vec<String>,
    /// The pages written.
    pub pages: Vec<PathBuf>,
}

/// The newest version with committed cells.
pub fn newest_committed(docs: &Docs) -> Result<semver::Version, String> {
    let entries = std::fs::read_dir(&docs.cells).map_err(|e| {
        format!("{}: {e} (no committed matrix: run `probelab matrix --publish` first)", docs.cells.display())
    })?;
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str().and_then(|n| semver::Version::parse(n).ok()))
        .max()
        .ok_or_else(|| format!("{} holds no version's cells", docs.cells.display()))
}

/// The releases after `after` that a watch runs (with the binary), and those it skips (without).
pub fn releases_after(c: &Catalogue, after: &semver::Version) -> (Vec<String>, Vec<(String, String)>) {
    let mut run = Vec::new();
    let mut skipped = Vec::new();
    for p in c.versions().iter().filter(|p| p.version > *after) {
        if p.linux_x64 {
            run.push(p.version.to_string());
        } else {
            skipped.push((p.version.to_string(), c.no_linux_x64_text(&p.version)));
        }
    }
    (run, skipped)
}

/// Where and how a watch runs.
#[derive(Debug, Clone, Copy)]
pub struct Setup<'a> {
    /// The project's root (docs/ under it).
    pub root: &'a Path,
    /// The project's probes.
    pub probes: &'a [Probe],
    /// Its layout (goldens).
    pub layout: &'a Layout,
    /// Where the run's cells go.
    pub work: &'a Path,
    /// Cells of one version side by side.
    pub jobs: usize,
    /// The npm to ask.
    pub npm: &'a Npm,
}

/// Runs a watch (see the module docs).
pub async fn watch(
    setup: Setup<'_>,
    done: &mut dyn FnMut(&CellDone),
    say: &mut dyn FnMut(&str),
) -> Result<Watched, String> {
    let Setup { root, probes, layout, work, jobs, npm } = setup;
    let docs = Docs::under(root);
    let previous = newest_committed(&docs)?;
    let cache_root = crate::subject::claude_code::cache_root();
    let (catalogue, fresh) = Catalogue::load(&cache_root, npm, Refresh::Always).map_err(|e| e.to_string())?;
    if let Freshness::Offline { error, .. } = &fresh {
        return Err(format!("npm could not be asked for new releases: {error}"));
    }
    let (new, skipped) = releases_after(&catalogue, &previous);
    let mut w = Watched { previous: previous.to_string(), new: new.clone(), skipped, ..Watched::default() };
    for (v, why) in &w.skipped {
        say(&format!("skipped {v}: {why}"));
    }
    if new.is_empty() {
        say(&format!("nothing new after {previous} ({})", fresh.describe(&catalogue)));
        return Ok(w);
    }
    say(&format!("{} new after {previous}: {}; running them beside {previous}", new.len(), new.join(", ")));
    let mut versions = vec![previous.to_string()];
    versions.extend(new.iter().cloned());
    let opts = MatrixOptions {
        out: work.to_path_buf(),
        fresh: false,
        goldens: Goldens::Bless,
        jobs,
        bless_only: Some(new.clone()),
    };
    let cells = matrix(probes, &versions, layout, &opts, done).await.map_err(|e| e.to_string())?;
    for c in cells.iter().filter(|c| c.outcome == Outcome::Error) {
        w.errors.push((c.version.clone().unwrap_or_default(), c.probe.clone(), c.reason.clone()));
    }
    if !w.errors.is_empty() {
        return Err(format!(
            "{} cells could not run (no verdict), nothing was published: {}",
            w.errors.len(),
            w.errors.iter().take(5).map(|(v, p, why)| format!("{p} on {v}: {why}")).collect::<Vec<_>>().join("; ")
        ));
    }
    w.golden_differs = cells
        .iter()
        .filter(|c| c.version.as_deref() == Some(w.previous.as_str()) && c.golden == "differs")
        .map(|c| c.probe.clone())
        .collect();
    // the pages of the new releases with a change are written by publish, with every other report
    let m = publish(&docs, layout, probes, &cells, Some(&catalogue))?;
    for v in &new {
        for (probe, changes) in &m.probe_timeline {
            for c in changes.iter().filter(|c| &c.version == v) {
                w.changes.push((v.clone(), c.previous.clone(), probe.clone(), c.what.clone()));
            }
        }
        for (probe, row) in &m.unstable {
            if let Some(what) = row.get(v) {
                w.unstable.push((v.clone(), probe.clone(), what.clone()));
            }
        }
        if w.changes.iter().any(|c| &c.0 == v) {
            w.pages.push(docs.changes.join(format!("{v}.md")));
        }
    }
    Ok(w)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observe::ClaimVerdict;
    use std::collections::BTreeMap;

    fn cell(probe: &str, version: &str, outcome: Outcome, fp: &str) -> Observation {
        let reason = if outcome == Outcome::Changed { "failed: check 1: result 1".into() } else { String::new() };
        let text = "a long text".to_string();
        let results = vec![Some(crate::observe::CallResult { tool: "Read".into(), text, is_error: false })];
        Observation {
            reason,
            claims: BTreeMap::from([("C-1".to_string(), ClaimVerdict::Holds)]),
            verdicts: vec!["pass check 1".into()],
            behaviour: crate::observe::Behaviour { results, ..Default::default() },
            probe_sha256: "s".into(),
            reproduced: 1,
            ..Observation::for_test(probe, version, outcome, fp)
        }
    }

    #[test]
    fn published_cells_are_slim_and_the_reports_are_made_of_every_committed_cell() {
        let d = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let docs = Docs::under(d.path());
        let layout = Layout { golden: d.path().join("golden"), ..Layout::repo() };
        publish(&docs, &layout, &[], &[cell("p", "2.1.1", Outcome::Pass, "aaaa")], None)
            .unwrap_or_else(|e| panic!("{e}"));
        let m = publish(&docs, &layout, &[], &[cell("p", "2.1.2", Outcome::Changed, "bbbb")], None)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(m.versions, ["2.1.1", "2.1.2"], "the earlier publication's cells are kept");
        let kept = std::fs::read_to_string(docs.cells.join("2.1.2/p.json")).unwrap_or_else(|e| panic!("{e}"));
        assert!(!kept.contains("a long text") && !kept.contains("pass check 1"), "slim: {kept}");
        assert!(kept.contains("\"fingerprint\": \"bbbb\"") && kept.contains("\"reproduced\": 1"), "{kept}");
        let md = std::fs::read_to_string(docs.matrix.join("timeline.md")).unwrap_or_else(|e| panic!("{e}"));
        assert!(md.contains("- `p` 2.1.1 → **2.1.2**: pass → changed (failed: check 1: result 1)"), "{md}");
        for f in ["matrix.json", "matrix.txt", "matrix.html", "budgets.md"] {
            assert!(docs.matrix.join(f).is_file(), "{f}");
        }
        let page = changes_page("2.1.2", "2.1.1", Some("2026-11-30T00:00:00Z"), &m, "diff a → b\n");
        assert!(page.starts_with("# What changed in Claude Code 2.1.2\n\nAgainst 2.1.1, the release before it in npm's order; 2.1.2 was published 2026-11-30."), "{page}");
        assert!(page.contains("- `p` 2.1.1 → **2.1.2**: pass → changed (failed: check 1: result 1)\n"), "{page}");
        assert!(page.ends_with("```\ndiff a → b\n```\n"), "{page}");
        let quiet = changes_page("2.1.1", "2.1.0", None, &m, "");
        assert!(quiet.contains("No probe's outcome or behaviour changed."), "{quiet}");
    }

    #[test]
    fn the_committed_reports_are_what_the_committed_cells_make() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let docs = Docs::under(&root);
        let cells = read_cells(std::slice::from_ref(&docs.cells)).unwrap_or_else(|e| panic!("{e}"));
        let conformance = super::super::conformance::read(&docs.matrix).unwrap_or_else(|e| panic!("{e}"));
        let releases = Releases::read(&docs.matrix).unwrap_or_else(|e| panic!("{e}"));
        let (m, files) =
            reports(&cells, &root.join("golden"), &conformance, &releases).unwrap_or_else(|e| panic!("{e}"));
        for (name, made) in files {
            let kept = std::fs::read_to_string(docs.matrix.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert!(
                kept == made,
                "docs/matrix/{name} is not what docs/matrix/cells make: run `probelab matrix --publish` (or \
                 `probelab watch`) instead of editing either by hand"
            );
        }
        // docs/changes: a page per release with a change, each what publish makes of the committed data,
        // and no page of a release without one
        let probes = crate::probe::load_all(&[root.join("probes")]).unwrap_or_else(|e| panic!("{e}"));
        let made = pages(&probes, &Layout::repo(), &m, &releases).unwrap_or_else(|e| panic!("{e}"));
        assert!(!made.is_empty(), "the committed matrix has changes, so pages");
        for (version, page) in &made {
            let path = docs.changes.join(format!("{version}.md"));
            let kept = std::fs::read_to_string(&path).unwrap_or_default();
            assert!(
                kept == *page,
                "docs/changes/{version}.md is not what the committed cells and goldens make: run `probelab report \
                 docs/matrix/cells --publish`"
            );
        }
        let stale = stale_pages(&docs.changes, &made).unwrap_or_else(|e| panic!("{e}"));
        assert!(stale.is_empty(), "pages of releases without a change: {stale:?}");
    }

    #[test]
    fn publish_writes_the_page_of_each_release_with_a_change_and_removes_the_others() {
        let d = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let docs = Docs::under(d.path());
        let layout = Layout { golden: d.path().join("golden"), ..Layout::repo() };
        std::fs::create_dir_all(&docs.changes).unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(docs.changes.join("2.1.1.md"), "old page").unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(docs.changes.join("README.md"), "kept").unwrap_or_else(|e| panic!("{e}"));
        let cells = [cell("p", "2.1.1", Outcome::Pass, "aaaa"), cell("p", "2.1.2", Outcome::Changed, "bbbb")];
        publish(&docs, &layout, &[], &cells, None).unwrap_or_else(|e| panic!("{e}"));
        let page = std::fs::read_to_string(docs.changes.join("2.1.2.md")).unwrap_or_else(|e| panic!("{e}"));
        assert!(page.starts_with("# What changed in Claude Code 2.1.2\n"), "{page}");
        assert!(!docs.changes.join("2.1.1.md").exists(), "2.1.1 has no change: its page goes");
        assert!(docs.changes.join("README.md").exists(), "a page not named for a version stays");
        // the same cells published again: the same page
        publish(&docs, &layout, &[], &[], None).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(std::fs::read_to_string(docs.changes.join("2.1.2.md")).ok().as_deref(), Some(page.as_str()));
    }

    #[test]
    fn diff_and_timeline_agree_on_every_committed_pair_of_neighbouring_versions() {
        // `probelab diff` of two measured versions' goldens judges behaviour by the cells' fingerprints,
        // so it reports a behaviour difference exactly where the timeline has an entry — before, 17 of
        // 1,068 probe pairs disagreed (file-only changes the goldens cannot show; goldens from runs that
        // varied)
        use crate::transcript::diff::diff_dirs;
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let docs = Docs::under(&root);
        let golden = root.join("golden");
        let cells = read_cells(std::slice::from_ref(&docs.cells)).unwrap_or_else(|e| panic!("{e}"));
        let m = Matrix::from_cells(&cells).unwrap_or_else(|e| panic!("{e}"));
        let (mut pairs, mut probes) = (0, 0);
        for w in m.versions.windows(2) {
            let (a, b) = (&w[0], &w[1]);
            let (l, r) = (golden.join(format!("claude-code@{a}")), golden.join(format!("claude-code@{b}")));
            if !l.is_dir() || !r.is_dir() {
                continue;
            }
            let Ok(mut d) = diff_dirs(&l, &r, &golden.join("blobs")) else { continue };
            m.judge(&mut d, a, b);
            pairs += 1;
            for p in &d.probes {
                let Some(f) = &p.fingerprints else { continue };
                probes += 1;
                let in_timeline = m
                    .probe_timeline
                    .get(&p.probe)
                    .is_some_and(|cs| cs.iter().any(|c| c.version == *b && c.previous == *a));
                assert_eq!(
                    !p.same_behaviour(),
                    in_timeline,
                    "{} {a} → {b}: diff and timeline disagree ({f:?})",
                    p.probe
                );
            }
        }
        assert!(pairs >= 10 && probes >= 1000, "{pairs} pairs, {probes} probes compared");
    }

    #[test]
    fn the_cells_verdict_shows_what_the_goldens_cannot() {
        use crate::observe::{Observation, Outcome};
        use crate::transcript::diff::{render_summary, ProbeDiff, SetDiff};
        let cells = vec![
            Observation::for_test("files-only", "2.1.1", Outcome::Pass, "aaaa"),
            Observation::for_test("files-only", "2.1.2", Outcome::Pass, "bbbb"),
            Observation::for_test("varied", "2.1.1", Outcome::Pass, "cccc"),
            Observation::for_test("varied", "2.1.2", Outcome::Pass, "cccc"),
        ];
        let m = Matrix::from_cells(&cells).unwrap_or_else(|e| panic!("{e}"));
        let mut d = SetDiff {
            probes: vec![
                ProbeDiff { probe: "files-only".into(), ..ProbeDiff::default() },
                ProbeDiff { probe: "varied".into(), results: Some("-x\n+y\n".into()), ..ProbeDiff::default() },
                ProbeDiff { probe: "no-cells".into(), results: Some("-x\n+y\n".into()), ..ProbeDiff::default() },
            ],
            ..SetDiff::default()
        };
        m.judge(&mut d, "2.1.1", "2.1.2");
        let same: Vec<bool> = d.probes.iter().map(|p| p.same_behaviour()).collect();
        assert_eq!(same, [false, true, false]);
        let text = render_summary(&d);
        assert!(text.contains("  files-only\n    cells pass aaaa → pass bbbb: behaviour aaaa → bbbb"), "{text}");
        assert!(text.contains("varied: same behaviour per the matrix (cells pass cccc = pass cccc)"), "{text}");
        assert!(text.contains("behaviour differs in 2 of 3 probes"), "{text}");
    }

    #[test]
    fn every_cell_of_the_committed_html_links_to_evidence_that_is_there() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let docs = Docs::under(&root);
        let html = std::fs::read_to_string(docs.matrix.join("matrix.html")).unwrap_or_else(|e| panic!("{e}"));
        let hrefs: Vec<&str> = html.split("href=\"").skip(1).filter_map(|r| r.split('"').next()).collect();
        // every filled cell (claims, probes) carries a link; the empty ones (`<td></td>`) are not counted
        let filled = html.split("<td class=\"").skip(1).filter(|c| !c.starts_with("l\"")).count();
        let cell_links = html
            .split("<td class=\"")
            .skip(1)
            .filter(|c| !c.starts_with("l\""))
            .filter(|c| c.split("</td>").next().is_some_and(|inner| inner.contains("<a href=")));
        assert_eq!(cell_links.count(), filled, "a filled cell of matrix.html has no link");
        assert!(filled > 1000, "{filled} filled cells");
        let mut changes = 0;
        for h in &hrefs {
            let target = docs.matrix.join(h);
            assert!(target.is_file(), "matrix.html links to {h}, which is not there");
            changes += usize::from(h.ends_with(".md"));
        }
        assert!(changes > 50, "{changes} links to changes pages");
    }

    #[test]
    fn releases_after_the_newest_committed_are_run_and_those_without_the_binary_skipped() {
        use crate::versions::Published;
        let p = |v: &str, x, only| Published {
            version: semver::Version::parse(v).unwrap_or_else(|e| panic!("{e}")),
            published: None,
            linux_x64: x,
            platform_only: only,
        };
        let c = Catalogue::from_versions(
            vec![
                p("2.1.331", true, false),
                p("2.1.332", true, false),
                p("2.1.333", true, true),
                p("2.1.334", false, false),
            ],
            jiff::Timestamp::UNIX_EPOCH,
        );
        let (run, skipped) = releases_after(&c, &semver::Version::new(2, 1, 332));
        assert_eq!(run, ["2.1.333"]);
        assert_eq!(skipped.len(), 1);
        assert_eq!(skipped[0].0, "2.1.334");
        assert!(skipped[0].1.contains("no linux-x64 binary"), "{}", skipped[0].1);
        let d = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let docs = Docs::under(d.path());
        assert!(newest_committed(&docs).is_err_and(|e| e.contains("probelab matrix --publish")));
        for v in ["2.1.9", "2.1.10", "notes"] {
            std::fs::create_dir_all(docs.cells.join(v)).unwrap_or_else(|e| panic!("{e}"));
        }
        assert_eq!(newest_committed(&docs).map(|v| v.to_string()), Ok("2.1.10".to_string()), "semver, not text order");
    }
}
