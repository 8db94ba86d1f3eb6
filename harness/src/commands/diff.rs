//! `probelab diff A B`: the layered diff of two golden sets, or of two subjects run now.

use crate::exit::{Outcome, Usage as _};
use crate::lab::{golden_step, run_probe, Layout};
use crate::project::Project;
use anyhow::Context as _;
use std::path::PathBuf;
use std::process::ExitCode;

/// `probelab diff`: exit 2 on any error.
pub fn diff(
    project: &Project,
    left: &str,
    right: &str,
    run_now: bool,
    json: bool,
    html: Option<&std::path::Path>,
    full: bool,
) -> Outcome {
    let probes = super::load_probes(project, std::slice::from_ref(&project.probes)).usage()?;
    diff_of(project, &probes, (left, right), run_now, json, html, full).usage()?;
    Ok(ExitCode::SUCCESS)
}

/// `probelab diff`: its errors carry what was being done (`{e:#}` prints them outermost first).
pub fn diff_of(
    project: &Project,
    probes: &[crate::probe::Probe],
    (left, right): (&str, &str),
    run_now: bool,
    json: bool,
    html: Option<&std::path::Path>,
    full: bool,
) -> anyhow::Result<()> {
    use crate::transcript::diff::{diff_dirs_with, render_html, render_summary, render_text};
    let golden = project.golden.clone();
    let tmp = tempfile::tempdir()?;
    // --run: a side that names a directory of goldens is read as it is (`golden/claude-code@2.1.333`),
    // a subject is run; a probe whose `requires` are missing here on either side is run on neither
    let is_dir = |name: &str| PathBuf::from(name).is_dir();
    let registry = project.registry();
    let parse = |name: &str| if is_dir(name) { Ok(None) } else { registry.parse(name).map(Some) };
    let (lid, rid) = match (parse(left), parse(right)) {
        (Ok(l), Ok(r)) if run_now => (l, r),
        (Err(e), _) | (_, Err(e)) if run_now => return Err(e.into()),
        _ => (None, None),
    };
    let mut skipped: Vec<String> = Vec::new();
    let mut shared: Vec<&crate::probe::Probe> = Vec::new();
    for p in probes {
        let ids: Vec<&crate::subject::SubjectId> = lid.iter().chain(rid.iter()).collect();
        if !ids.iter().all(|id| p.applies_to(id)) {
            continue;
        }
        match ids.iter().find_map(|id| crate::probe::host::missing(&p.requires_on(id))) {
            Some(why) => skipped.push(format!("{} ({why})", p.id)),
            None => shared.push(p),
        }
    }
    if !skipped.is_empty() {
        println!("skipped on both sides, their requirements missing here: {}", skipped.join(", "));
    }
    // each error keeps its type under anyhow's (RunError, GoldenError, ...): said once, with its causes
    let side = |name: &str| -> anyhow::Result<PathBuf> {
        if run_now && !is_dir(name) {
            let dir = tmp.path().join(name);
            let layout = Layout { golden: dir.clone(), ..project.layout(super::engine()) };
            let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
            let id = layout.subjects.parse(name)?;
            for p in &shared {
                let report = rt.block_on(run_probe(p, &id, &layout, false))?;
                golden_step(&report, &Layout { golden: tmp.path().to_path_buf(), ..layout.clone() }, true)?;
            }
            Ok(tmp.path().join(name))
        } else {
            let p = PathBuf::from(name);
            Ok(if p.is_dir() { p } else { golden.join(name) })
        }
    };
    let (l, r) = (side(left)?, side(right)?);
    let blobs =
        if run_now && !(is_dir(left) || is_dir(right)) { tmp.path().join("blobs") } else { golden.join("blobs") };
    // a blob is what its name (its SHA-256) says, or the comparison is not to be trusted
    let corrupt = crate::transcript::golden::corrupt_blobs(&blobs);
    if !corrupt.is_empty() {
        for (p, why) in &corrupt {
            eprintln!("probelab diff: {}: {why}", p.display());
        }
        anyhow::bail!("{} corrupt blob(s): run the probes with --bless to write them again", corrupt.len());
    }
    // results a probe marks `unordered` compare as sets of lines, as in the behaviour fingerprint
    let unordered = crate::transcript::diff::unordered_of(probes);
    let mut d = diff_dirs_with(&l, &r, &blobs, &unordered)?;
    // two measured Claude Code versions: behaviour is judged by the observatory's committed cells (the
    // timeline's fingerprints), the goldens are the evidence
    let version = |dir: &std::path::Path| {
        dir.file_name().and_then(|n| n.to_str()).and_then(|n| n.strip_prefix("claude-code@")).map(str::to_string)
    };
    if let (false, Some(a), Some(b)) = (run_now, version(&l), version(&r)) {
        let docs = crate::observatory::watch::Docs::under(&project.root);
        if docs.cells.is_dir() {
            match docs.matrix_of_cells() {
                Ok(m) => m.judge(&mut d, &a, &b),
                Err(e) => {
                    eprintln!(
                        "probelab diff: the committed cells are not used ({}): behaviour judged by the goldens",
                        crate::exit::chain(&e)
                    )
                }
            }
        }
    }
    if json {
        println!("{}", serde_json::to_string_pretty(&d).context("the diff as JSON")?);
    } else {
        print!("{}", if full { render_text(&d) } else { render_summary(&d) });
    }
    if let Some(h) = html {
        let claims = probes.iter().map(|p| (p.id.clone(), p.claims.clone())).collect();
        std::fs::write(h, render_html(&d, &claims)).with_context(|| h.display().to_string())?;
    }
    Ok(())
}
