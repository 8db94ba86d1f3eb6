//! Built-in conformance per version: how close `builtin@V` (the built-in runtime at the version profile
//! V, `runtime/src/profile.rs`) comes to the real Claude Code V — the share of the probes both ran whose
//! tool results (texts and `is_error`, in call order) are the same, `probelab diff`'s conformance figure.
//!
//! [`measure`] runs the built-in side now and reads the real side from its committed goldens
//! (`golden/claude-code@V/`): no Claude Code run is needed. A probe whose `requires` are missing on this
//! host is run on neither side. `probelab profiles --publish` keeps the figures in
//! `docs/matrix/conformance.json` ([`FILE`]); the matrix's HTML shows them as its "built-in conformance"
//! row ([`super::report::Matrix::to_html`]).

use crate::lab::{golden_step, run_probe, Layout};
use crate::probe::Probe;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The file under `docs/matrix` that keeps the figures.
pub const FILE: &str = "conformance.json";

/// One version's figure.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Figure {
    /// Probes both sides ran (the real side's committed goldens, the built-in's run now).
    pub common: usize,
    /// Of those, the probes whose tool results are the same.
    pub same: usize,
}

impl Figure {
    /// The share, in whole percent (rounded down: 97.9% is not 98%).
    pub fn percent(&self) -> usize {
        (self.same * 100).checked_div(self.common).unwrap_or(100)
    }
}

/// Version → figure.
pub type Table = BTreeMap<String, Figure>;

/// The figures kept under `matrix_dir` (none when the file is not there).
pub fn read(matrix_dir: &Path) -> Result<Table, super::DataError> {
    let path = matrix_dir.join(FILE);
    match std::fs::read(&path) {
        Ok(bytes) => serde_json::from_slice(&bytes).map_err(|source| super::DataError::Parse { path, source }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Table::new()),
        Err(source) => Err(super::DataError::Read { path, source }),
    }
}

/// The table as the file holds it (sorted by version, a trailing newline).
pub fn to_json(table: &Table) -> String {
    serde_json::to_string_pretty(table).unwrap_or_default() + "\n"
}

/// What one measurement found: the figure, and the probes run on neither side (their requirements
/// missing here: `bash.sandbox (needs bubblewrap …)`).
#[derive(Debug, Clone, Default)]
pub struct Measured {
    /// The figure.
    pub figure: Figure,
    /// Probes left out, with why.
    pub skipped: Vec<String>,
    /// The probes whose tool results differ.
    pub differ: Vec<String>,
    /// Probes left out because the real version did not agree with itself when the matrix ran them
    /// twice (the committed cell is unstable: its golden is one run of a race), with what varied.
    pub unstable: Vec<String>,
}

/// Why `builtin@V` could not be measured against the committed goldens of V ([`measure`]).
#[derive(Debug, thiserror::Error)]
pub enum MeasureError {
    /// V has no committed golden set to compare with.
    #[error("no committed goldens of claude-code@{version} ({})", dir.display())]
    NoGoldens {
        /// The version.
        version: String,
        /// Where its goldens would be.
        dir: PathBuf,
    },
    /// `builtin@V` or `claude-code@V` is no subject here (a version the built-in runtime has no profile
    /// of).
    #[error(transparent)]
    Subject(#[from] crate::subject::SubjectError),
    /// The scratch golden set of the built-in side could not be made.
    #[error("a temp dir")]
    Temp(#[source] std::io::Error),
    /// A probe's run on `builtin@V` failed.
    #[error("probe {probe}")]
    Run {
        /// The probe.
        probe: String,
        /// Why.
        source: crate::run::RunError,
    },
    /// A probe's transcript on `builtin@V` could not be made a golden of the scratch set.
    #[error("probe {probe}")]
    Golden {
        /// The probe.
        probe: String,
        /// Why.
        source: crate::lab::GoldenError,
    },
    /// The built-in side's goldens and the committed ones could not be diffed.
    #[error(transparent)]
    Diff(#[from] crate::transcript::diff::SetError),
}

/// Runs `builtin@<version>` on every probe of `probes` that the real `version` has a committed golden of
/// (`<golden>/claude-code@<version>/<probe>.snap`) and compares the tool results ([`Figure`]); a figure
/// of no probe when none is shared (a version whose goldens are of real-only probes). A probe whose
/// committed cell on the real version is unstable is left out ([`Measured::unstable`]).
pub async fn measure(probes: &[Probe], layout: &Layout, version: &str) -> Result<Measured, MeasureError> {
    let real = crate::transcript::golden::claude_code_dir(&layout.golden, version);
    if !real.is_dir() {
        return Err(MeasureError::NoGoldens { version: version.to_string(), dir: real });
    }
    let subject = format!("builtin@{version}");
    let id = layout.subjects.parse(&subject)?;
    let cc = layout.subjects.parse(&crate::subject::id::claude_code_name(&version))?;
    let tmp = tempfile::tempdir().map_err(MeasureError::Temp)?;
    let run_layout = Layout { golden: tmp.path().to_path_buf(), ..layout.clone() };
    let mut out = Measured::default();
    for p in probes {
        if !p.applies_to(&id) || !real.join(format!("{}.snap", p.id)).is_file() {
            continue;
        }
        if let Some(why) = [&id, &cc].iter().find_map(|s| crate::probe::host::missing(&p.requires_on(s))) {
            out.skipped.push(format!("{} ({why})", p.id));
            continue;
        }
        let cell = super::read_cell(&super::cell_path(&layout.cells(), version, &p.id));
        if let Some(varies) = cell.map(|c| c.unstable).filter(|u| !u.is_empty()) {
            out.unstable.push(format!("{} (varies in {varies})", p.id));
            continue;
        }
        let probe = || p.id.clone();
        let report = run_probe(p, &id, &run_layout, false)
            .await
            .map_err(|source| MeasureError::Run { probe: probe(), source })?;
        golden_step(&report, &run_layout, true).map_err(|source| MeasureError::Golden { probe: probe(), source })?;
    }
    let unordered = crate::transcript::diff::unordered_of(probes);
    let mine = tmp.path().join(&subject);
    if !mine.is_dir() {
        // a version with goldens of real-only probes (a bisection's boundary): nothing to compare
        return Ok(out);
    }
    let d = crate::transcript::diff::diff_dirs_with(&mine, &real, &layout.blobs(), &unordered)?;
    out.figure = Figure { common: d.probes.len(), same: d.probes.iter().filter(|p| p.results.is_none()).count() };
    out.differ = d.probes.iter().filter(|p| p.results.is_some()).map(|p| p.probe.clone()).collect();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_version_without_committed_goldens_is_not_measured() {
        let d = tempfile::tempdir().unwrap();
        let layout = Layout { golden: d.path().join("golden"), ..Layout::repo() };
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let e = rt.block_on(measure(&[], &layout, "2.1.1")).unwrap_err();
        let dir = d.path().join("golden").join("claude-code@2.1.1");
        assert!(
            matches!(&e, MeasureError::NoGoldens { version, dir: at } if version == "2.1.1" && *at == dir),
            "{e:?}"
        );
        assert_eq!(e.to_string(), format!("no committed goldens of claude-code@2.1.1 ({})", dir.display()));
    }

    #[test]
    fn figures_round_down_and_read_back() {
        assert_eq!(Figure { common: 92, same: 90 }.percent(), 97);
        assert_eq!(Figure { common: 92, same: 92 }.percent(), 100);
        assert_eq!(Figure::default().percent(), 100);
        let d = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(read(d.path()).unwrap(), Table::new());
        let t = Table::from([("2.1.235".to_string(), Figure { common: 94, same: 94 })]);
        std::fs::write(d.path().join(FILE), to_json(&t)).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(read(d.path()).unwrap(), t);
        std::fs::write(d.path().join(FILE), "[").unwrap_or_else(|e| panic!("{e}"));
        let e = read(d.path()).unwrap_err();
        assert!(matches!(&e, super::super::DataError::Parse { path, .. } if path.ends_with(FILE)), "{e:?}");
        assert!(crate::exit::chain(&e).starts_with(&format!("{}: ", d.path().join(FILE).display())), "{e}");
    }
}
