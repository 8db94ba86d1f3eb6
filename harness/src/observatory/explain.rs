//! `probelab explain PROBE --versions A,B` and `probelab bundle PROBE A B`: one probe's change between two
//! Claude Code versions, as a user reads it, and as a user attaches it to an upstream bug report.
//!
//! Both compare the two versions' golden transcripts of the probe with [`crate::transcript::diff`] (the
//! summary's words first, then every layer); a version without a committed golden of the probe is run
//! now (installed if needed) and its transcript made in a temporary golden set, so any pair works.
//! A bundle is a directory: the probe file, both transcripts, the diff, and a README with the one-line
//! command that reproduces it.

use crate::lab::{golden_step, run_probe, Layout};
use crate::probe::Probe;
use crate::transcript::diff::{diff_dirs_with, render_summary, render_text, unordered_ids};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The two transcripts of a probe and their diff.
#[derive(Debug, Clone)]
pub struct Explained {
    /// The older version's transcript (the golden file's text).
    pub left: String,
    /// The newer version's.
    pub right: String,
    /// The summary (the changed words) then every layer.
    pub diff: String,
    /// Where each transcript came from (`golden/claude-code@A/<probe>.snap`, or `run now`).
    pub sources: [String; 2],
}

/// Why a probe's change could not be explained or bundled ([`explain`], [`bundle`]).
#[derive(Debug, thiserror::Error)]
pub enum ExplainError {
    /// A file or directory of the scratch golden set or of the bundle.
    #[error("{}", path.display())]
    Io {
        /// Where.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A version without a committed golden could not be run.
    #[error(transparent)]
    Run(#[from] crate::run::RunError),
    /// Its transcript could not be made a golden.
    #[error(transparent)]
    Golden(#[from] crate::lab::GoldenError),
    /// The two goldens could not be diffed.
    #[error(transparent)]
    Diff(#[from] crate::transcript::diff::SetError),
}

/// An [`ExplainError::Io`] at `path`.
fn io(path: &Path) -> impl FnOnce(std::io::Error) -> ExplainError {
    let path = path.to_path_buf();
    move |source| ExplainError::Io { path, source }
}

/// Explains a probe's change between two versions (see the module docs); `scratch` holds what is run now.
pub async fn explain(
    probe: &Probe,
    a: &str,
    b: &str,
    layout: &Layout,
    scratch: &Path,
) -> Result<Explained, ExplainError> {
    let tmp_golden = scratch.join("golden");
    let blobs = tmp_golden.join("blobs");
    std::fs::create_dir_all(&blobs).map_err(io(&blobs))?;
    // the committed blobs, so a transcript run now and a committed one name their tools alike
    for e in std::fs::read_dir(layout.blobs()).into_iter().flatten().flatten() {
        let _ = std::fs::copy(e.path(), blobs.join(e.file_name()));
    }
    let mut sources = [String::new(), String::new()];
    for (i, v) in [a, b].iter().enumerate() {
        let subject = super::subject(v);
        let committed = crate::transcript::golden::path(&layout.golden, &subject, &probe.id);
        let dest = crate::transcript::golden::path(&tmp_golden, &subject, &probe.id);
        let parent = dest.parent().unwrap_or(&tmp_golden);
        std::fs::create_dir_all(parent).map_err(io(parent))?;
        if committed.is_file() {
            std::fs::copy(&committed, &dest).map_err(io(&committed))?;
            sources[i] = format!("golden/{subject}/{}.snap", probe.id);
        } else {
            let id = layout.subjects.parse(&subject).map_err(crate::run::RunError::from)?;
            let report = run_probe(probe, &id, layout, false).await?;
            golden_step(&report, &Layout { golden: tmp_golden.clone(), ..layout.clone() }, true)?;
            sources[i] = format!("run now on {subject} (no committed golden)");
        }
    }
    let unordered: BTreeMap<String, _> = [(probe.id.clone(), unordered_ids(probe))].into_iter().collect();
    let (l, r) = (tmp_golden.join(super::subject(a)), tmp_golden.join(super::subject(b)));
    let mut d = diff_dirs_with(&l, &r, &blobs, &unordered)?;
    d.left = super::subject(a);
    d.right = super::subject(b);
    let read = |p: PathBuf| std::fs::read_to_string(&p).map_err(io(&p));
    Ok(Explained {
        left: read(l.join(format!("{}.snap", probe.id)))?,
        right: read(r.join(format!("{}.snap", probe.id)))?,
        diff: render_summary(&d) + "\n" + &render_text(&d),
        sources,
    })
}

/// Writes a bundle of an explanation under `dir` (created; an existing bundle is replaced). Returns its
/// path.
pub fn bundle(probe: &Probe, a: &str, b: &str, e: &Explained, dir: &Path) -> Result<PathBuf, ExplainError> {
    let out = dir.join(format!("probelab-bundle-{}-{a}-{b}", probe.id));
    if out.exists() {
        std::fs::remove_dir_all(&out).map_err(io(&out))?;
    }
    std::fs::create_dir_all(&out).map_err(io(&out))?;
    let probe_file = format!("{}.toml", probe.id);
    let write = |name: &str, text: &str| std::fs::write(out.join(name), text).map_err(io(&out.join(name)));
    std::fs::copy(&probe.path, out.join(&probe_file)).map_err(io(&probe.path))?;
    write(&format!("claude-code@{a}.snap"), &e.left)?;
    write(&format!("claude-code@{b}.snap"), &e.right)?;
    write("diff.txt", &e.diff)?;
    let first_line = e.diff.lines().nth(1).unwrap_or_default();
    let readme = format!(
        "# {id}: Claude Code {a} → {b}\n\n{about}\n\n{first_line}\n\nThe probe (`{probe_file}`) scripts the model's tool calls; \
         a stand-in of the Messages API plays them and records what the tools answered. `claude-code@{a}.snap` \
         and `claude-code@{b}.snap` are the normalised transcripts ({s0}; {s1}), `diff.txt` what differs \
         (the changed words first, then every layer).\n\nReproduce with probelab (in its repository, \
         `cargo run -p harness --` in place of `probelab`):\n\n```sh\nprobelab explain {id} --versions {a},{b}\n\
         probelab run --subject claude-code@{b} {probe_file}     # one version, checks and transcript\n```\n",
        id = probe.id,
        about = probe.about,
        s0 = e.sources[0],
        s1 = e.sources[1],
    );
    write("README.md", &readme)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_committed_pair_is_explained_and_bundled_without_running_anything() {
        let layout = Layout::repo();
        let probes =
            crate::probe::load_all(&[layout.golden.join("..").join("probes")]).unwrap_or_else(|e| panic!("{e}"));
        let probe = probes.iter().find(|p| p.id == "claude-code.tasks-partial-write").cloned();
        let probe = probe.unwrap_or_else(|| panic!("the probe is shipped"));
        let d = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap_or_else(|e| panic!("{e}"));
        let e = rt.block_on(explain(&probe, "2.1.332", "2.1.333", &layout, d.path())).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(e.sources[0], "golden/claude-code@2.1.332/claude-code.tasks-partial-write.snap");
        assert!(e.diff.starts_with("diff claude-code@2.1.332 → claude-code@2.1.333\n"), "{}", e.diff);
        assert!(e.diff.contains("EPERM: operation not permitted, [-open-]{+rename "), "{}", e.diff);
        let out = bundle(&probe, "2.1.332", "2.1.333", &e, d.path()).unwrap_or_else(|e| panic!("{e}"));
        let mut names: Vec<String> = std::fs::read_dir(&out)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(
            names,
            [
                "README.md",
                "claude-code.tasks-partial-write.toml",
                "claude-code@2.1.332.snap",
                "claude-code@2.1.333.snap",
                "diff.txt"
            ]
        );
        let readme = std::fs::read_to_string(out.join("README.md")).unwrap_or_default();
        assert!(
            readme.contains("probelab explain claude-code.tasks-partial-write --versions 2.1.332,2.1.333"),
            "{readme}"
        );
    }
}
