//! The published record of an exploration (`docs/discover/releases/<B>.json`) and the section of B's
//! page made of it: what was run, the stable differences in words, and for each the probes of the
//! catalogue that show it too ([`super::seen`]); [`super::published`] makes it of a report.

use super::finding::Kind;
use crate::lab::Layout;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The committed record of a release's exploration against the release before it
/// (`docs/discover/releases/<B>.json`): what its page says under "Found by exploration" — the stable
/// differences in words (each once), the noise and broken sessions counted, what was run. Made from a
/// [`Report`] ([`published`]); the release pages are made from it, so it is data, not a page.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct Published {
    /// The older release.
    pub a: String,
    /// The newer release (the record's name).
    pub b: String,
    /// The generator's seed.
    pub seed: u64,
    /// Sessions run (each on both sides, twice).
    pub sessions: usize,
    /// Calls in them.
    pub calls: usize,
    /// Wall time of the exploration, whole seconds.
    pub seconds: u64,
    /// The stable differences, in words, each once, with the probes that show them too.
    pub stable: Vec<Stable>,
    /// Differences between two runs of one side (not counted as changes).
    pub noise: usize,
    /// Sessions that broke on a side.
    pub broken: usize,
}

/// One stable difference of a record ([`Published`]), in words.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct Stable {
    /// Its kind.
    pub kind: Kind,
    /// The statement ([`statement`]).
    pub said: String,
    /// The probes of the catalogue whose goldens show the same change between the two releases
    /// ([`seen::shown_by`]), sorted; empty: no probe shows it. None: not compared (the goldens of a
    /// side were not there).
    pub shown_by: Option<Vec<String>>,
}

/// The diff of the catalogue's goldens of releases `a` and `b` (under `layout`'s golden root), judged
/// by the committed cells `m` as the release pages are: what [`published`] tells the findings of the
/// probes by. None where the goldens of either release are not there.
pub fn probe_diff(
    layout: &Layout,
    probes: &[crate::probe::Probe],
    m: &crate::observatory::report::Matrix,
    a: &str,
    b: &str,
) -> Result<Option<crate::transcript::diff::SetDiff>, crate::transcript::diff::SetError> {
    use crate::transcript::golden::claude_code_dir;
    if ![a, b].iter().all(|v| claude_code_dir(&layout.golden, v).is_dir()) {
        return Ok(None);
    }
    m.judged_diff(layout, probes, a, b).map(Some)
}

/// Where the records are: `docs/discover/releases` under a project root.
pub fn published_dir(root: &Path) -> PathBuf {
    root.join("docs").join("discover").join("releases")
}

/// The records under `dir`, by the newer release (none: an empty map; a record that does not read is
/// an error naming it).
pub fn read_published(dir: &Path) -> Result<BTreeMap<String, Published>, crate::observe::DataError> {
    use crate::observe::DataError;
    let mut out = BTreeMap::new();
    let Ok(entries) = std::fs::read_dir(dir) else { return Ok(out) };
    for e in entries.flatten() {
        let path = e.path();
        if path.extension().and_then(|x| x.to_str()) != Some("json") {
            continue;
        }
        let bytes = crate::safe_fs::read_capped(&path, 4 << 20)
            .map_err(|source| DataError::Read { path: path.clone(), source })?;
        let p: Published = serde_json::from_slice(&bytes).map_err(|source| DataError::Parse { path, source })?;
        out.insert(p.b.clone(), p);
    }
    Ok(out)
}

/// Why an exploration record could not be written ([`write_published`]).
#[derive(Debug, thiserror::Error)]
pub enum RecordWriteError {
    /// The records' directory could not be created.
    #[error("cannot create {}", dir.display())]
    Create {
        /// The directory.
        dir: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The record could not be made into JSON.
    #[error("cannot make the record of {b} into JSON")]
    Json {
        /// The release it is of.
        b: String,
        /// Why.
        source: serde_json::Error,
    },
    /// The file could not be written.
    #[error(transparent)]
    Write(#[from] crate::versions::VersionError),
}

/// Writes a record as `dir/<b>.json`.
pub fn write_published(dir: &Path, p: &Published) -> Result<PathBuf, RecordWriteError> {
    std::fs::create_dir_all(dir).map_err(|source| RecordWriteError::Create { dir: dir.to_path_buf(), source })?;
    let path = dir.join(format!("{}.json", p.b));
    let text = serde_json::to_string_pretty(p).map_err(|source| RecordWriteError::Json { b: p.b.clone(), source })?;
    crate::versions::write_file_atomic(&path, (text + "\n").as_bytes())?;
    Ok(path)
}

/// The probes a release page names of those that show a finding too (the record has them all).
pub const SHOWN_NAMED: usize = 3;

/// The "Found by exploration" section of release `version`'s page (empty without a record that found
/// something stable).
pub fn page_section(p: &Published) -> String {
    if p.stable.is_empty() {
        return String::new();
    }
    let compared: Vec<&Stable> = p.stable.iter().filter(|s| s.shown_by.is_some()).collect();
    let unseen = compared.iter().filter(|s| s.shown_by.as_ref().is_some_and(Vec::is_empty)).count();
    let against = if compared.len() == p.stable.len() {
        let by_probe = compared.len() - unseen;
        let said = match (unseen, by_probe) {
            (0, 1) => "it is shown by a probe of the catalogue too".to_string(),
            (0, n) => format!("all {n} are shown by a probe of the catalogue too"),
            (1, 0) => "it is shown by no probe of the catalogue".to_string(),
            (n, 0) => format!("none of the {n} is shown by a probe of the catalogue"),
            (n, m) => format!("{n} shown by no probe of the catalogue, {m} by a probe too"),
        };
        format!("{said} (each said below; the goldens of both releases compared)")
    } else if compared.is_empty() {
        "not compared with the probes (the goldens of a side were not there)".to_string()
    } else {
        format!(
            "{unseen} of the {} compared with the probes shown by none, {} not compared",
            compared.len(),
            p.stable.len() - compared.len()
        )
    };
    let mut out = format!(
        "\n## Found by exploration\n\n`probelab discover {} {}` ran {} generated sessions ({} tool calls) on both \
         releases, each side twice, in {} s: {} stable difference(s) on the same sessions, in words below; \
         {against}. {} difference(s) between two runs of one side were noise{}.\n\n",
        p.a,
        p.b,
        p.sessions,
        p.calls,
        p.seconds,
        p.stable.len(),
        p.noise,
        if p.broken > 0 { format!(", {} session(s) broke (no evidence from them)", p.broken) } else { String::new() }
    );
    for s in &p.stable {
        let kind = match s.kind {
            Kind::Result => "result",
            Kind::File => "file",
            Kind::Request => "request",
        };
        let seen = match &s.shown_by {
            None => " — not compared with the probes".to_string(),
            Some(v) if v.is_empty() => " — shown by no probe".to_string(),
            Some(v) => {
                let named: Vec<String> = v.iter().take(SHOWN_NAMED).map(|p| format!("`{p}`")).collect();
                match v.len() - named.len() {
                    0 => format!(" — shown by {} too", named.join(", ")),
                    more => format!(" — shown by {} probes too ({} and {more} more)", v.len(), named.join(", ")),
                }
            }
        };
        out.push_str(&format!("- {kind}: {}{seen}\n", s.said.replace('\n', " ")));
    }
    out
}
