//! `docs/matrix/releases.json`: npm's releases of Claude Code over the span the matrix measures, kept
//! beside the cells so that the committed reports say which releases they cover and which they skip,
//! and why, on any machine (the install cache's catalogue is machine-local and ages; this is its
//! snapshot, taken by each `--publish` that has a catalogue at hand).
//!
//! The timeline's "Releases" section ([`section`]) is made of it and of the cells:
//! - *measured*: a release with a cell of every probe of the matrix (none an error);
//! - *measured in part*: some probes' cells missing or errors;
//! - *skipped, no linux-x64 binary*: npm has the release but not its native binary for this platform;
//! - *skipped, could not be installed*: every cell of the release is an install error (with the error);
//! - *not run yet*: published, runnable, no cell;
//! - *never published*: a patch number missing from npm's list between two releases (2.1.243 …).
//!
//! A timeline entry names two versions of the matrix; it is *exact* when every release npm published
//! between them was skipped for a reason above (no binary, no install): the neighbours are counted
//! across those. [`exactness`] counts them, and the section says how many entries are exact and names
//! the others' unmeasured releases.

use super::report::Matrix;
use crate::observe::{DataError, Outcome};
use crate::versions::Catalogue;
use semver::Version;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The file under docs/matrix.
pub const FILE: &str = "releases.json";

/// npm's releases over the measured span.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Releases {
    /// When npm was asked (RFC 3339, the catalogue's fetch time).
    pub asked: String,
    /// Every published release from the oldest measured version on, oldest first.
    pub releases: Vec<Release>,
}

/// One release.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Release {
    /// The version.
    pub version: String,
    /// When npm says it was published (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub published: Option<String>,
    /// npm has its native linux-x64 binary.
    pub linux_x64: bool,
    /// Published as `@anthropic-ai/claude-code-linux-x64` only.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub platform_only: bool,
}

/// What the matrix has of one release.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Status {
    /// A cell of every probe, none an error.
    Measured,
    /// Some probes' cells.
    Partial {
        /// Cells that are not errors.
        cells: usize,
        /// Probes of the matrix.
        of: usize,
    },
    /// npm has no linux-x64 binary of it.
    NoBinary,
    /// Every cell an install error: the first one's reason.
    NotInstalled(String),
    /// No cell.
    NotRun,
}

impl Releases {
    /// Reads `<dir>/releases.json`; absent: no releases known (an empty list).
    pub fn read(dir: &Path) -> Result<Releases, DataError> {
        let path = dir.join(FILE);
        // a regular file of at most 4 MB (npm's whole list is ~100 KB): a FIFO there is an error, not a hang
        match crate::safe_fs::read_capped(&path, 4 << 20) {
            Ok(text) => serde_json::from_slice(&text).map_err(|source| DataError::Parse { path: path.clone(), source }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Releases::default()),
            Err(source) => Err(DataError::Read { path, source }),
        }
    }

    /// The catalogue's releases from `oldest` on.
    pub fn from_catalogue(c: &Catalogue, oldest: &Version) -> Releases {
        Releases {
            asked: c.fetched_at().to_string(),
            releases: c
                .versions()
                .iter()
                .filter(|p| p.version >= *oldest)
                .map(|p| Release {
                    version: p.version.to_string(),
                    published: p.published.clone(),
                    linux_x64: p.linux_x64,
                    platform_only: p.platform_only,
                })
                .collect(),
        }
    }

    /// As committed: pretty JSON with a final newline.
    pub fn to_json(&self) -> Result<String, serde_json::Error> {
        Ok(serde_json::to_string_pretty(self)? + "\n")
    }

    /// When a release was published, if known.
    pub fn published(&self, version: &str) -> Option<&str> {
        self.releases.iter().find(|r| r.version == version).and_then(|r| r.published.as_deref())
    }

    /// The releases strictly between two versions, oldest first.
    pub fn between(&self, a: &str, b: &str) -> Vec<&Release> {
        let (Ok(a), Ok(b)) = (Version::parse(a), Version::parse(b)) else { return Vec::new() };
        self.releases.iter().filter(|r| Version::parse(&r.version).is_ok_and(|v| v > a && v < b)).collect()
    }
}

/// What the matrix has of `version`.
pub fn status(m: &Matrix, release: &Release) -> Status {
    if !release.linux_x64 {
        return Status::NoBinary;
    }
    let cells: Vec<&super::report::Cell> = m.probes.values().filter_map(|row| row.get(&release.version)).collect();
    if cells.is_empty() {
        return Status::NotRun;
    }
    let errors: Vec<&&super::report::Cell> = cells.iter().filter(|c| c.outcome == Outcome::Error).collect();
    if errors.len() == cells.len() && errors.iter().any(|c| c.reason.contains("cannot install")) {
        return Status::NotInstalled(errors[0].reason.clone());
    }
    // a broken run (the probe needs repair there) measured nothing either
    let broken = cells.iter().filter(|c| c.outcome == Outcome::Broken).count();
    let good = cells.len() - errors.len() - broken;
    if good == m.probes.len() {
        Status::Measured
    } else {
        Status::Partial { cells: good, of: m.probes.len() }
    }
}

/// A pair of versions of the timeline with releases between them that the matrix has not measured:
/// (previous, version, those releases).
pub type Gap = (String, String, Vec<String>);

/// Timeline entries (probe and claim) whose two versions are neighbours across skipped releases, and
/// the others with the releases between them that the matrix has not measured: (exact, total, gaps).
pub fn exactness(m: &Matrix, r: &Releases) -> (usize, usize, Vec<Gap>) {
    let mut pairs = std::collections::BTreeMap::new();
    let mut total = 0;
    for c in m.probe_timeline.values().chain(m.claim_timeline.values()).flatten() {
        total += 1;
        *pairs.entry((c.previous.clone(), c.version.clone())).or_insert(0usize) += 1;
    }
    let mut exact = 0;
    let mut gaps = Vec::new();
    for ((a, b), n) in pairs {
        let unmeasured: Vec<String> = r
            .between(&a, &b)
            .into_iter()
            .filter(|rel| matches!(status(m, rel), Status::Measured | Status::Partial { .. } | Status::NotRun))
            .map(|rel| rel.version.clone())
            .collect();
        if unmeasured.is_empty() {
            exact += n;
        } else {
            gaps.push((a, b, unmeasured));
        }
    }
    (exact, total, gaps)
}

/// Version numbers between the first and last release with no release of their own (same major.minor,
/// a patch number npm never had).
pub fn never_published(r: &Releases) -> Vec<String> {
    let vs: Vec<Version> = r.releases.iter().filter_map(|x| Version::parse(&x.version).ok()).collect();
    let mut out = Vec::new();
    for w in vs.windows(2) {
        let (a, b) = (&w[0], &w[1]);
        if a.major == b.major && a.minor == b.minor && a.pre.is_empty() && b.pre.is_empty() {
            out.extend((a.patch + 1..b.patch).map(|p| format!("{}.{}.{p}", a.major, a.minor)));
        }
    }
    out
}

/// The timeline's "Releases" section (Markdown), from the matrix and the releases; empty when no
/// releases are known.
pub fn section(m: &Matrix, r: &Releases) -> String {
    let Some(first) = m.versions.first() else { return String::new() };
    let Ok(lo) = Version::parse(first) else { return String::new() };
    // from the oldest measured release to the newest npm has: releases newer than the matrix are "not run
    // yet" (what `probelab watch` runs), never left out of the count
    let span: Vec<&Release> = r.releases.iter().filter(|x| Version::parse(&x.version).is_ok_and(|v| v >= lo)).collect();
    let Some(last) = span.last().map(|x| x.version.clone()) else { return String::new() };
    let mut measured = 0;
    let (mut partial, mut no_binary, mut not_installed, mut not_run) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for rel in &span {
        match status(m, rel) {
            Status::Measured => measured += 1,
            Status::Partial { cells, of } => partial.push(format!("{} ({cells} of {of})", rel.version)),
            Status::NoBinary => no_binary.push(rel.version.clone()),
            Status::NotInstalled(why) => not_installed.push(format!("{} ({why})", rel.version)),
            Status::NotRun => not_run.push(rel.version.clone()),
        }
    }
    let platform_only: Vec<&str> = span.iter().filter(|x| x.platform_only).map(|x| x.version.as_str()).collect();
    let never: Vec<String> =
        never_published(&Releases { asked: String::new(), releases: span.iter().map(|x| (*x).clone()).collect() });
    let list = |v: &[String]| if v.is_empty() { "none".to_string() } else { v.join(", ") };
    let mut out = String::from("\n## Releases\n\n");
    out.push_str(&format!(
        "npm published {} releases of Claude Code from {first} to {last} (asked {}); the timeline's neighbours are \
         counted across the releases skipped below.\n\n",
        span.len(),
        r.asked.get(..10).unwrap_or(&r.asked)
    ));
    out.push_str(&format!("- measured, a cell of every probe: **{measured} of {}**\n", span.len()));
    out.push_str(&format!("- measured in part: {}\n", list(&partial)));
    let newest = m.versions.last().and_then(|v| Version::parse(v).ok());
    let newer = not_run.iter().filter(|v| Version::parse(v).ok() > newest).count();
    out.push_str(&format!(
        "- not run yet: {}{}\n",
        list(&not_run),
        if newer > 0 { format!(" ({newer} newer than the matrix: `probelab watch` runs them)") } else { String::new() }
    ));
    out.push_str(&format!("- skipped, no linux-x64 binary on npm: {}\n", list(&no_binary)));
    out.push_str(&format!("- skipped, could not be installed: {}\n", list(&not_installed)));
    out.push_str(&format!(
        "- published as `@anthropic-ai/claude-code-linux-x64` only (installed from it): {}\n",
        if platform_only.is_empty() { "none".into() } else { platform_only.join(", ") }
    ));
    out.push_str(&format!("- version numbers npm never published in this span: {}\n", list(&never)));
    let (exact, total, gaps) = exactness(m, r);
    out.push_str(&format!(
        "- timeline entries naming two neighbouring releases: **{exact} of {total}**{}\n",
        if gaps.is_empty() { String::new() } else { ":".into() }
    ));
    for (a, b, between) in gaps {
        out.push_str(&format!("  - {a} → {b}: not measured between them: {}\n", between.join(", ")));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observe::Observation;

    fn rel(v: &str, linux_x64: bool) -> Release {
        Release {
            version: v.into(),
            published: Some(format!("2026-11-{:02}T00:00:00Z", 1)),
            linux_x64,
            platform_only: false,
        }
    }

    fn cell(probe: &str, version: &str, outcome: Outcome, fp: &str) -> Observation {
        let mut o = Observation::for_test(probe, version, outcome, fp);
        if outcome == Outcome::Error {
            o.reason = format!("cannot install claude-code@{version}: npm failed");
        }
        o.reproduced = 1;
        o
    }

    #[test]
    fn the_section_counts_each_kind_of_release_and_pins_entries_only_across_skipped_ones() {
        // 2.1.1 measured, 2.1.2 no binary, 2.1.3 not installable, 2.1.5 measured (2.1.4 never published),
        // 2.1.6 not run, 2.1.7 measured with a change against 2.1.5: the entry 2.1.1 → 2.1.5 is exact
        // (the releases between were skipped), 2.1.5 → 2.1.7 is not (2.1.6 was never run)
        let cells = vec![
            cell("p", "2.1.1", Outcome::Pass, "aaaa"),
            cell("q", "2.1.1", Outcome::Pass, "cccc"),
            cell("p", "2.1.3", Outcome::Error, ""),
            cell("q", "2.1.3", Outcome::Error, ""),
            cell("p", "2.1.5", Outcome::Pass, "bbbb"),
            cell("q", "2.1.5", Outcome::Pass, "cccc"),
            cell("p", "2.1.7", Outcome::Pass, "dddd"),
        ];
        let m = Matrix::from_cells(&cells).unwrap_or_else(|e| panic!("{e}"));
        let r = Releases {
            asked: "2026-12-02T10:00:00Z".into(),
            releases: ["2.1.1", "2.1.2", "2.1.3", "2.1.5", "2.1.6", "2.1.7", "2.1.8"]
                .iter()
                .map(|v| rel(v, *v != "2.1.2"))
                .collect(),
        };
        let s = section(&m, &r);
        // 2.1.8, newer than every cell, counts too: not run yet
        assert!(s.contains("npm published 7 releases of Claude Code from 2.1.1 to 2.1.8 (asked 2026-12-02)"), "{s}");
        assert!(s.contains("- measured, a cell of every probe: **2 of 7**\n"), "{s}");
        assert!(s.contains("- measured in part: 2.1.7 (1 of 2)\n"), "{s}");
        assert!(
            s.contains("- not run yet: 2.1.6, 2.1.8 (1 newer than the matrix: `probelab watch` runs them)\n"),
            "{s}"
        );
        assert!(s.contains("- skipped, no linux-x64 binary on npm: 2.1.2\n"), "{s}");
        assert!(
            s.contains("- skipped, could not be installed: 2.1.3 (cannot install claude-code@2.1.3: npm failed)\n"),
            "{s}"
        );
        assert!(s.contains("- version numbers npm never published in this span: 2.1.4\n"), "{s}");
        let (exact, total, gaps) = exactness(&m, &r);
        assert!(total >= 2, "{m:?}");
        assert_eq!(gaps.len(), 1, "{gaps:?}");
        assert_eq!(
            (gaps[0].0.as_str(), gaps[0].1.as_str(), gaps[0].2.clone()),
            ("2.1.5", "2.1.7", vec!["2.1.6".to_string()])
        );
        assert!(exact >= 1 && exact < total, "{exact} of {total}");
        assert!(s.contains("  - 2.1.5 → 2.1.7: not measured between them: 2.1.6\n"), "{s}");
    }

    #[test]
    fn no_releases_known_is_no_section_and_an_absent_file_is_an_empty_list() {
        let m = Matrix::from_cells(&[cell("p", "2.1.1", Outcome::Pass, "aaaa")]).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(section(&m, &Releases::default()), "");
        let d = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(Releases::read(d.path()).ok(), Some(Releases::default()));
        std::fs::write(d.path().join(FILE), "{").unwrap_or_else(|e| panic!("{e}"));
        assert!(Releases::read(d.path()).is_err(), "a broken file is an error, never an empty list");
    }
}
