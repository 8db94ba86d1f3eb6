//! The lab: run a probe on a subject, check it, render and normalise its transcript, compare it with
//! the golden file (or bless it). Used by the CLI and by the probe test binary alike.

use crate::check::{evaluate, evaluate_on, invariants, Verdict};
use crate::observe::{self, Observation};
use crate::probe::Probe;
pub use crate::run::RunError;
use crate::subject::{Subject, SubjectId};
use crate::transcript::golden::{self, Compare};
use crate::transcript::normalise::{Normaliser, Places};
use crate::transcript::{render, Blobs, Header, View};
use std::path::{Path, PathBuf};

/// Where the lab's data lives.
#[derive(Debug, Clone)]
pub struct Layout {
    /// `fixtures/`.
    pub fixtures: PathBuf,
    /// `golden/`.
    pub golden: PathBuf,
    /// The probelab binary: the built-in engine for exec probes (`{rg}`) and their `measure` wrapper.
    pub engine: PathBuf,
    /// The subjects there are (the registered kinds and the project's command subjects).
    pub subjects: crate::subject::Registry,
}

impl Layout {
    /// The repository's own layout (this crate sits in `harness/`), fixed at compile time: for this
    /// repository's test binaries and benches only. The CLI takes the layout of the project it runs in
    /// ([`crate::project::Project::layout`]).
    pub fn repo() -> Layout {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let engine = std::env::current_exe().unwrap_or_else(|_| PathBuf::from("probelab"));
        Layout { fixtures: root.join("fixtures"), golden: root.join("golden"), engine, subjects: Default::default() }
    }

    /// The blob store.
    pub fn blobs(&self) -> PathBuf {
        self.golden.join("blobs")
    }

    /// The observatory's committed cells, `docs/matrix/cells/` next to `golden/`: what each Claude Code
    /// version did with each probe (a version profile's verdicts are held to them: [`measured`]).
    pub fn cells(&self) -> PathBuf {
        self.golden.parent().unwrap_or(Path::new(".")).join("docs").join("matrix").join("cells")
    }
}

/// What the real Claude Code did with a probe at a version, where it did not pass ([`measured`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Measured {
    /// `changed` or `not-applicable`.
    pub outcome: observe::Outcome,
    /// The cell's reason; empty for an unstable cell whose outcome held (which checks failed varied).
    pub reason: String,
}

/// What the real Claude Code did with `probe` at the version a built-in subject imitates (`builtin@V`;
/// a bare `builtin`: the newest, `profile::NEWEST`): the outcome word and reason of the committed cell
/// `<cells>/V/<probe>.json` when it is not a pass (`changed`, `not-applicable`). None for any other
/// subject, a pass, an error cell, a cell of another version of the probe file (stale), one whose
/// outcome varied when run again, or a version without a cell of the probe; the reason is empty for an
/// unstable cell whose outcome held (which checks failed varied). A cell that is there but cannot be read or is not an
/// observation is an error: the run would otherwise be judged by another rule without a word.
pub fn measured(
    layout: &Layout,
    subject: &crate::subject::SubjectId,
    probe: &crate::probe::Probe,
) -> Result<Option<Measured>, crate::observe::DataError> {
    use crate::observe::DataError;
    if subject.kind != crate::subject::id::SubjectKind::Builtin {
        return Ok(None);
    }
    let version = subject.reference_version();
    let path = layout.cells().join(version.to_string()).join(format!("{}.json", probe.id));
    let bytes = match std::fs::read(&path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => return Err(DataError::Read { path, source }),
    };
    let cell: observe::Observation =
        serde_json::from_slice(&bytes).map_err(|source| DataError::NotAnObservation { path, source })?;
    // a cell of another version of the probe file (its checks or scopes edited since) measured another
    // probe: no measurement until the matrix runs it again, the profile is judged by its checks
    if !cell.probe_sha256.is_empty() && cell.probe_sha256 != observe::probe_sha256(probe) {
        return Ok(None);
    }
    // the real V did not agree with itself when the matrix ran it again (a race under load): where
    // the outcome itself varied there is no measurement; where only the failing checks did, the
    // profile is held to the outcome alone (an empty reason)
    if cell.unstable.starts_with("outcome ") {
        return Ok(None);
    }
    let reason = if cell.unstable.is_empty() { cell.reason } else { String::new() };
    match cell.outcome {
        observe::Outcome::Changed | observe::Outcome::NotApplicable => {
            Ok(Some(Measured { outcome: cell.outcome, reason }))
        }
        _ => Ok(None),
    }
}

/// A run's verdict for its subject. Checks and invariants decide, except for a version profile
/// (`builtin@V`, a bare `builtin` at the newest) on a probe the real V does not pass ([`measured`]):
/// then the run must come out as V did — the same outcome with the same reason (the same checks failed,
/// the same tools not offered) — and anything else is a failure. Ok(Some(note)): passed as V did (note
/// says so); Err: the failures.
pub fn verdict(
    report: &Report,
    measured: Option<&Measured>,
    subject: &crate::subject::SubjectId,
) -> Result<Option<String>, String> {
    let Some(Measured { outcome, reason }) = measured else {
        // a version profile without the tool a probe calls (a probe only the built-in runs, the
        // real version measured nothing): not applicable at V, as the matrix says of a real version
        if not_applicable(report, subject) {
            let at = crate::subject::SubjectId::claude_code(subject.reference_version());
            return Ok(Some(format!("not applicable at {subject} (as {at}): {}", report.observation.reason)));
        }
        return if report.passed() { Ok(None) } else { Err(report.failures().join("\n")) };
    };
    let real = crate::subject::SubjectId::claude_code(subject.reference_version());
    if report.observation.outcome == *outcome && reason.is_empty() {
        return Ok(Some(format!("as {real}: {} (which checks fail varies there: unstable)", outcome.name())));
    }
    if report.observation.outcome == *outcome && report.observation.reason == *reason {
        return Ok(Some(format!("as {real}: {} ({reason})", outcome.name())));
    }
    let reason = if reason.is_empty() { "which checks fail varies there" } else { reason.as_str() };
    let mut why = format!(
        "{real} is {} here ({reason}); {subject} is {}{}",
        outcome.name(),
        report.observation.outcome.name(),
        if report.observation.reason.is_empty() { String::new() } else { format!(" ({})", report.observation.reason) }
    );
    for f in report.failures() {
        why.push('\n');
        why.push_str(f);
    }
    Err(why)
}

/// Whether a run of a built-in profile is not applicable at its release (it calls tools the release does
/// not offer, the matrix's `not-applicable`): such a run has no golden — its transcript shows only the
/// tools missing, not what the probe is about, and is not even stable where the missing tool sequenced
/// the conversation (TaskOutput's wait for a background run, gone from 2.1.277). The suite says it is
/// skipped, with why. As for a real version, the tools missing decide whatever else broke (without
/// TaskOutput's wait a background probe's conversation runs past its script, an invariant fails).
pub fn not_applicable(report: &Report, subject: &crate::subject::SubjectId) -> bool {
    subject.is_builtin() && report.observation.outcome == observe::Outcome::NotApplicable
}

/// Everything a probe run produced.
#[derive(Debug)]
pub struct Report {
    /// Probe id.
    pub probe: String,
    /// Subject name.
    pub subject: String,
    /// Checks and invariants.
    pub verdicts: Vec<Verdict>,
    /// The normalised transcript (golden body).
    pub transcript: String,
    /// Blobs it references.
    pub blobs: Blobs,
    /// The golden file's header description.
    pub description: String,
    /// Where the sandbox was kept, if asked.
    pub kept: Option<PathBuf>,
    /// Divergences from claims shown on this subject ("claim: fact").
    pub diverges: Vec<String>,
    /// Exec probes: the evidence (argv, verbatim output, exit, duration, max RSS) as JSON.
    pub evidence: Option<serde_json::Value>,
    /// Loop probes: where the run's time went.
    pub timing: Option<crate::run::Timing>,
    /// The run layer by layer (behaviour, interface, prompt, request shape) and its outcome, for
    /// comparing versions.
    pub observation: Observation,
    /// The tool_use ids of the results the probe marks `unordered`
    /// ([`crate::transcript::diff::unordered_ids`]): their lines are compared with the golden as a set.
    pub unordered: std::collections::BTreeSet<String>,
}

impl Report {
    /// All verdicts passed.
    pub fn passed(&self) -> bool {
        self.verdicts.iter().all(|v| v.pass)
    }

    /// The failed verdicts' details.
    pub fn failures(&self) -> Vec<&str> {
        self.verdicts.iter().filter(|v| !v.pass).map(|v| v.detail.as_str()).collect()
    }
}

/// Runs one probe on a subject (parsed by the caller, once: [`crate::subject::Registry::parse`]): set up
/// (installed), then [`run_probe_on`].
pub async fn run_probe(
    probe: &Probe,
    subject: &crate::subject::SubjectId,
    layout: &Layout,
    keep: bool,
) -> Result<Report, RunError> {
    let prepared = layout.subjects.prepare(subject)?;
    run_probe_on(probe, prepared.as_ref(), layout, keep).await
}

/// Runs one probe on a subject that is set up.
pub async fn run_probe_on(
    probe: &Probe,
    subject: &dyn Subject,
    layout: &Layout,
    keep: bool,
) -> Result<Report, RunError> {
    let id = subject.id();
    let description = subject.description();
    if !probe.execs.is_empty() {
        let (rg, sha) = match subject.rg_engine(&layout.engine) {
            None => return Err(RunError::NoEngine { probe: probe.id.clone(), subject: id.to_string() }),
            Some(engine) => engine.map_err(RunError::Engine)?,
        };
        return run_exec_probe(probe, id, layout, keep, (&rg, &sha), description).await;
    }
    let mut run = crate::run::run_conversation(probe, subject, &layout.fixtures).await?;
    let dialect = subject.dialect();
    let subject = id;
    let view = View { exchanges: &run.exchanges, script: &run.script };
    let mut verdicts: Vec<Verdict> = (0..probe.checks.len())
        .map(|i| evaluate_on(probe, i, subject, || evaluate(probe, i, &view, &run.sandbox, dialect)))
        .collect();
    verdicts.extend(invariants(&run, &view));
    let lines: Vec<String> = verdicts.iter().map(Verdict::line).collect();
    let mut blobs = Blobs::new();
    let name = subject.to_string();
    let places = Places {
        root: &run.sandbox.root,
        cwd: &run.sandbox.cwd,
        home: &run.sandbox.home,
        today: crate::transcript::normalise::today_utc(),
        subject,
        web: run.web.as_deref(),
    };
    let normaliser = Normaliser::new(&places);
    let norm = |t: &str| normaliser.apply(t);
    let files = crate::check::files_read(probe, &run.sandbox, &norm);
    let raw = render(&header(probe, subject, &name), &view, (&files, &lines), &mut blobs, &norm)?;
    let transcript = normaliser.apply(&raw);
    let observation = {
        let (outcome, reason) = observe::outcome_of(&verdicts, &observe::not_offered(&view));
        let behaviour =
            observe::behaviour(&view, &run.sandbox.cwd, &observe::known_files(probe), &probe.unordered, &norm);
        let (interface, prompt, shape) = observe::first_request_layers(&view, &norm);
        observation(probe, subject, (outcome, reason), &lines, behaviour, (interface, prompt, shape))
    };
    let kept = keep.then(|| run.sandbox.keep());
    if let Some(dir) = &kept {
        // for probe authors: what the wire saw, before and after normalisation, whatever the verdicts
        // the subject could leave links by these names in its sandbox: replaced, never written through
        keep_file(dir, "record.jsonl", &run.record);
        keep_file(dir, "transcript.txt", transcript.as_bytes());
        write_failures(dir, &verdicts);
    }
    let evidence = run.artefact.take().map(|a| {
        let mut e = serde_json::json!({"probe": probe.id, "subject": name});
        if let (Some(e), serde_json::Value::Object(fields)) = (e.as_object_mut(), a) {
            e.extend(fields);
        }
        e
    });
    Ok(Report {
        probe: probe.id.clone(),
        subject: name.clone(),
        verdicts,
        transcript,
        blobs,
        description,
        kept,
        diverges: header(probe, subject, &name).diverges,
        evidence,
        timing: Some(run.timing),
        observation,
        unordered: crate::transcript::diff::unordered_ids(probe),
    })
}

/// The observation of a run from its parts.
fn observation(
    probe: &Probe,
    subject: &SubjectId,
    (outcome, reason): (observe::Outcome, String),
    lines: &[String],
    behaviour: observe::Behaviour,
    (interface, prompt, shape): (std::collections::BTreeMap<String, String>, String, observe::Shape),
) -> Observation {
    Observation {
        probe: probe.id.clone(),
        subject: subject.name.clone(),
        version: subject.version.as_ref().map(ToString::to_string),
        outcome,
        reason,
        claims: observe::claim_verdicts(probe, subject, outcome),
        verdicts: lines.to_vec(),
        fingerprint: observe::fingerprint(&behaviour),
        behaviour,
        interface,
        prompt,
        shape,
        golden: String::new(),
        probe_sha256: observe::probe_sha256(probe),
        normaliser: crate::transcript::normalise::stamp().to_string(),
        reproduced: 0,
        unstable: String::new(),
    }
}

async fn run_exec_probe(
    probe: &Probe,
    subject: &SubjectId,
    layout: &Layout,
    keep: bool,
    (rg, sha): (&Path, &str),
    description: String,
) -> Result<Report, RunError> {
    let mut sandbox = crate::probe::sandbox::Sandbox::create(probe, &layout.fixtures).map_err(RunError::Sandbox)?;
    // confined like a subject (issue 41): its own namespaces, the host read-only, no network
    let confined =
        crate::confine::for_run(probe, subject, &sandbox.root, &[], true).await.map_err(RunError::Confine)?;
    let confine = confined.as_ref().map(|c| &c.confinement);
    let records =
        crate::subject::exec::run_exec(probe, &sandbox, &layout.engine, rg, confine).await.map_err(RunError::Exec)?;
    drop(confined);
    let mut verdicts: Vec<Verdict> = (0..probe.checks.len())
        .map(|i| evaluate_on(probe, i, subject, || crate::check::evaluate_exec(probe, i, &records, &sandbox)))
        .collect();
    verdicts.push(crate::check::exec_invariant(probe, &records));
    let lines: Vec<String> = verdicts.iter().map(Verdict::line).collect();
    let places = Places {
        root: &sandbox.root,
        cwd: &sandbox.cwd,
        home: &sandbox.home,
        today: crate::transcript::normalise::today_utc(),
        subject,
        web: None,
    };
    let name = subject.to_string();
    let normaliser = Normaliser::new(&places);
    let files = crate::check::files_read(probe, &sandbox, &|t: &str| normaliser.apply(t));
    let raw = crate::transcript::render_exec(&header(probe, subject, &name), &records, (&files, &lines));
    let transcript = normaliser.apply(&raw);
    let norm = |t: &str| normaliser.apply(t);
    let behaviour = observe::exec_behaviour(&records, &sandbox.cwd, &observe::known_files(probe), &norm);
    let observation =
        observation(probe, subject, observe::outcome_of(&verdicts, &[]), &lines, behaviour, Default::default());
    let evidence = serde_json::json!({
        "probe": probe.id, "subject": name, "engine": rg, "engine_sha256": sha, "commands": records,
    });
    let kept = keep.then(|| sandbox.keep());
    if let Some(dir) = &kept {
        write_failures(dir, &verdicts);
    }
    Ok(Report {
        probe: probe.id.clone(),
        subject: name.clone(),
        verdicts,
        transcript,
        blobs: Blobs::new(),
        description,
        kept,
        diverges: header(probe, subject, &name).diverges,
        evidence: Some(evidence),
        timing: None,
        observation,
        unordered: Default::default(),
    })
}

/// `--keep`: the whole texts of the failed text assertions, by check, in `failures.json` of the kept
/// sandbox (none when nothing failed).
fn write_failures(dir: &Path, verdicts: &[Verdict]) {
    let failed: Vec<serde_json::Value> = verdicts
        .iter()
        .filter(|v| !v.compared.is_empty())
        .map(|v| serde_json::json!({"verdict": v.name, "detail": v.detail, "compared": v.compared}))
        .collect();
    if !failed.is_empty() {
        // `{:#}`: a Value pretty-printed, as `to_vec_pretty` wrote it (and with no error to drop)
        keep_file(dir, "failures.json", format!("{:#}", serde_json::Value::Array(failed)).as_bytes());
    }
}

/// `--keep`: writes a file of the kept sandbox; one that cannot be written is said on stderr (the run's
/// verdict stands: the file is for the probe's author, not evidence of the run).
fn keep_file(dir: &Path, name: &str, bytes: &[u8]) {
    let path = dir.join(name);
    if let Err(e) = crate::safe_fs::write_inside(dir, &path, bytes) {
        eprintln!("probelab: --keep: cannot write {}: {e}", path.display());
    }
}

fn header<'a>(probe: &'a Probe, subject: &SubjectId, name: &'a str) -> Header<'a> {
    let diverges = probe.divergences_on(subject).iter().map(|d| format!("{}: {}", d.claim, d.fact)).collect();
    Header {
        probe: &probe.id,
        claims: &probe.claims,
        subject: name,
        diverges,
        cache_markers: probe.shape_varies.is_none(),
    }
}

/// What happened to a probe's golden.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GoldenOutcome {
    /// Same as the golden.
    Same,
    /// Written (bless).
    Blessed,
    /// Missing (run with --bless).
    Missing,
    /// Differs: the diff.
    Differs(String),
    /// Blobs referenced but not stored.
    MissingBlobs(Vec<String>),
}

/// Why a golden could not be blessed ([`golden_step`]).
#[derive(Debug, thiserror::Error)]
pub enum GoldenError {
    /// The transcript or a blob holds the value of one of the lab's secret variables.
    #[error(
        "{}: not blessed: {what} holds the value of the lab's ${name} (line {line}); a subject must never see the lab's environment",
        file.display()
    )]
    Leaked {
        /// The golden file.
        file: PathBuf,
        /// `the transcript`, `blob <hash>`.
        what: String,
        /// The variable.
        name: String,
        /// The line it is on.
        line: usize,
    },
    /// The golden or its blobs could not be written.
    #[error("{}", file.display())]
    Bless {
        /// The golden file.
        file: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

/// Compares with (or blesses) the golden file.
///
/// Secrets never reach a golden ([`crate::transcript::secrets`]): known secret shapes are redacted from
/// the transcript before it is compared or written, and a transcript or blob that holds the value of
/// one of the lab's secret variables is refused, never blessed.
pub fn golden_step(report: &Report, layout: &Layout, bless: bool) -> Result<GoldenOutcome, GoldenError> {
    use crate::transcript::secrets;
    let file = golden::path(&layout.golden, &report.subject, &report.probe);
    let transcript = secrets::redact(&report.transcript);
    if bless {
        let lab = secrets::lab_secrets();
        let texts = std::iter::once(("the transcript".to_string(), transcript.as_ref()))
            .chain(report.blobs.iter().map(|(h, t)| (format!("blob {h}"), t.as_str())));
        for (what, text) in texts {
            if let Some((name, line)) = secrets::leaked(text, &lab) {
                return Err(GoldenError::Leaked { file, what, name, line });
            }
        }
        golden::bless(&layout.golden, &file, &report.description, &transcript, &layout.blobs(), &report.blobs)
            .map_err(|source| GoldenError::Bless { file: file.clone(), source })?;
        return Ok(GoldenOutcome::Blessed);
    }
    let unordered = &report.unordered;
    let in_any_order = |t: &str| crate::transcript::diff::unordered_sorted(t, unordered);
    let canon: Option<&dyn Fn(&str) -> String> = if unordered.is_empty() { None } else { Some(&in_any_order) };
    Ok(match golden::compare_with(&file, &transcript, canon) {
        Compare::Same => {
            let missing = golden::missing_blobs(&layout.blobs(), &report.blobs);
            if missing.is_empty() {
                GoldenOutcome::Same
            } else {
                GoldenOutcome::MissingBlobs(missing)
            }
        }
        Compare::Missing => GoldenOutcome::Missing,
        Compare::Differs(d) => GoldenOutcome::Differs(d),
    })
}

#[cfg(test)]
mod tests {
    use crate::subject::engine_sha256;

    #[test]
    fn an_unordered_result_in_another_order_is_the_golden_and_any_other_difference_is_not() {
        let d = tempfile::tempdir().unwrap();
        let layout = super::Layout { golden: d.path().join("golden"), ..super::Layout::repo() };
        let body = |a: &str, b: &str| {
            format!("probe: p\ntool_result toolu_p_1:\n  | {a}\n  | {b}\n## verdicts\npass check 1: result 1\n")
        };
        let report = |t: String, ids: &[&str]| super::Report {
            probe: "p".into(),
            subject: "builtin".into(),
            verdicts: Vec::new(),
            transcript: t,
            blobs: Default::default(),
            description: "d".into(),
            kept: None,
            diverges: Vec::new(),
            evidence: None,
            timing: None,
            observation: crate::observe::Observation::for_test("p", "builtin", crate::observe::Outcome::Pass, "f"),
            unordered: ids.iter().map(|s| s.to_string()).collect(),
        };
        let step = |r: &super::Report| super::golden_step(r, &layout, false).unwrap();
        super::golden_step(&report(body("a.rs", "b.rs"), &[]), &layout, true).unwrap();
        assert!(matches!(step(&report(body("b.rs", "a.rs"), &["toolu_p_1"])), super::GoldenOutcome::Same));
        assert!(matches!(step(&report(body("b.rs", "a.rs"), &[])), super::GoldenOutcome::Differs(_)), "ordered");
        assert!(
            matches!(step(&report(body("c.rs", "a.rs"), &["toolu_p_1"])), super::GoldenOutcome::Differs(_)),
            "a line that differs is a difference as a set too"
        );
    }

    #[test]
    fn a_committed_cell_that_does_not_parse_is_an_error_not_a_version_profile_judged_by_its_checks() {
        let d = tempfile::tempdir().unwrap();
        let layout = super::Layout { golden: d.path().join("golden"), ..super::Layout::repo() };
        let cells = layout.cells().join("2.1.235");
        std::fs::create_dir_all(&cells).unwrap();
        let id = crate::subject::SubjectId::parse_registered("builtin@2.1.235").unwrap();
        let text = "id = \"p\"\nclaims = [\"READ-1\"]\nabout = \"a\"\n[[turn]]\ntext = \"done\"\n";
        let probe = crate::probe::parse(std::path::Path::new("p.toml"), text).unwrap();
        assert!(super::measured(&layout, &id, &probe).unwrap().is_none(), "no cell: held to nothing");
        let mut cell = crate::observe::Observation::for_test("p", "2.1.235", crate::observe::Outcome::Changed, "f");
        cell.reason = "check 1 failed".into();
        std::fs::write(cells.join("p.json"), serde_json::to_string(&cell).unwrap()).unwrap();
        assert_eq!(
            super::measured(&layout, &id, &probe).unwrap(),
            Some(super::Measured { outcome: crate::observe::Outcome::Changed, reason: "check 1 failed".into() })
        );
        let bare = crate::subject::SubjectId::parse_registered("builtin").unwrap();
        assert!(super::measured(&layout, &bare, &probe).unwrap().is_none());
        // a real cell that varied when run again is no measurement
        cell.unstable = "result 2 (TaskOutput) text".into();
        std::fs::write(cells.join("p.json"), serde_json::to_string(&cell).unwrap()).unwrap();
        assert_eq!(
            super::measured(&layout, &id, &probe).unwrap(),
            Some(super::Measured { outcome: crate::observe::Outcome::Changed, reason: String::new() }),
            "the outcome alone"
        );
        // the outcome itself varied: no measurement
        cell.unstable = "outcome changed / pass; result 2 (TaskOutput) text".into();
        std::fs::write(cells.join("p.json"), serde_json::to_string(&cell).unwrap()).unwrap();
        assert!(super::measured(&layout, &id, &probe).unwrap().is_none());
        // a cell of another version of the probe file: no measurement; of this one: held to it
        cell.unstable = String::new();
        cell.probe_sha256 = "0".repeat(64);
        std::fs::write(cells.join("p.json"), serde_json::to_string(&cell).unwrap()).unwrap();
        assert!(super::measured(&layout, &id, &probe).unwrap().is_none(), "a stale cell");
        cell.probe_sha256 = crate::observe::probe_sha256(&probe);
        std::fs::write(cells.join("p.json"), serde_json::to_string(&cell).unwrap()).unwrap();
        assert!(super::measured(&layout, &id, &probe).unwrap().is_some());
        // a merge left half a cell: the profile was silently judged by its own checks instead
        std::fs::write(cells.join("p.json"), "{\"outcome\": \"changed\"").unwrap();
        let e = super::measured(&layout, &id, &probe).unwrap_err();
        assert!(
            matches!(&e, crate::observe::DataError::NotAnObservation { path, .. } if path.ends_with("2.1.235/p.json")),
            "{e:?}"
        );
    }

    #[test]
    fn a_probe_on_a_subject_there_is_not_is_a_run_error_of_the_subject() {
        let text = "id = \"p\"\nclaims = [\"READ-1\"]\nabout = \"a\"\n[[turn]]\ntext = \"done\"\n";
        let probe = crate::probe::parse(std::path::Path::new("p.toml"), text).unwrap();
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let layout = super::Layout::repo();
        let run = || -> Result<super::Report, super::RunError> {
            let id = layout.subjects.parse("claude-code@2_1")?;
            rt.block_on(super::run_probe(&probe, &id, &layout, false))
        };
        let e = run().unwrap_err();
        assert!(
            matches!(&e, super::RunError::Subject(crate::subject::SubjectError::NotAVersion { version, .. }) if version == "2_1"),
            "{e:?}"
        );
        assert_eq!(
            e.to_string(),
            "subject \"claude-code@2_1\": \"2_1\" is not a version (write e.g. claude-code@2.1.235)"
        );
    }

    #[test]
    fn an_engine_that_cannot_be_read_is_an_error_not_the_hash_of_nothing() {
        let d = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let missing = d.path().join("no-engine");
        let e = engine_sha256(&missing).map_err(|e| e.kind());
        assert_eq!(e, Err(std::io::ErrorKind::NotFound));
        let engine = d.path().join("engine");
        std::fs::write(&engine, b"bin").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(engine_sha256(&engine).ok(), Some(crate::transcript::sha256(b"bin")));
    }
}
