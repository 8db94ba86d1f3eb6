//! `probelab run`: a subject's probes run, a line per probe (or a JSON object), the summary, and the exit
//! code (1 on a failure, 2 on a usage or probe-file error, 5 when nothing ran).

use crate::exit::{Outcome, Usage as _};
use crate::project::Project;
use anyhow::Context as _;
use std::path::PathBuf;
use std::process::ExitCode;

/// `probelab run`'s exit code when a subject ran no probe: every selected probe skipped, or none
/// selected (pytest's 5: "no tests were collected"). `--allow-empty` makes it 0.
pub const EXIT_NOTHING_RAN: u8 = 5;

/// The worse of two subjects' exit codes: a usage error (2, or any other), then a failure (1), then
/// a run that ran nothing (5), then success.
pub fn worse(a: ExitCode, b: ExitCode) -> ExitCode {
    let rank = |c: &ExitCode| {
        if *c == ExitCode::SUCCESS {
            0
        } else if *c == ExitCode::from(EXIT_NOTHING_RAN) {
            1
        } else if *c == ExitCode::from(1) {
            2
        } else {
            3
        }
    };
    if rank(&b) > rank(&a) {
        b
    } else {
        a
    }
}

/// How `probelab run` runs each subject.
pub struct RunHow {
    /// Write the goldens instead of comparing.
    pub bless: bool,
    /// A JSON object per probe, then a summary object.
    pub json: bool,
    /// Keep each probe's sandbox.
    pub keep: bool,
    /// Probes side by side (default: the cores).
    pub jobs: Option<usize>,
    /// A run that runs nothing passes instead of exiting 5.
    pub allow_empty: bool,
}

/// `probelab run` on one subject: exit 1 on any failure, 2 on a usage or probe-file error, 5 when no
/// probe ran ([`EXIT_NOTHING_RAN`]) unless `--allow-empty`.
pub fn run_probes(project: &Project, paths: Vec<PathBuf>, subject: &str, how: &RunHow) -> Outcome {
    use crate::suite::{Skip, SkipKind, Status};
    let RunHow { bless, json, keep, jobs, allow_empty } = *how;
    let registry = project.registry();
    // an unknown subject is a usage error, before anything runs (a typo in CI must not pass by skipping)
    let id = registry.parse(subject).usage()?;
    let paths = if paths.is_empty() { vec![project.probes.clone()] } else { paths };
    let probes = super::load_probes(project, &paths).usage()?;
    crate::probe::check_fixture_dirs(&probes, &project.fixtures).usage()?;
    // lanes are threads: never more than the probes, nor than the lab can start
    let jobs = jobs.unwrap_or_else(crate::suite::default_jobs).clamp(1, crate::suite::MAX_JOBS);
    let rt = crate::suite::runtime(jobs).context("cannot start the runtime").usage()?;
    let layout = project.layout(super::engine());
    // under out/, in a directory named after the subject: only a subject that names one plain directory
    let durations = crate::safe_fs::confined_name(subject)
        .ok()
        .filter(|p| p.components().count() == 1)
        .map(|_| project.out.join(subject).join("durations.json"));
    let opts = crate::suite::Options { subject: id, jobs, bless, keep, durations };
    let total = probes.len();
    let (mut passed, mut failed, mut skipped) = (0usize, 0usize, 0usize);
    let mut skips: std::collections::BTreeMap<SkipKind, (usize, String)> = Default::default();
    let began = std::time::Instant::now();
    let id = opts.subject.clone();
    rt.block_on(crate::suite::run_suite(probes, &layout, &opts, |o| {
        if let Status::Skipped(why) = &o.status {
            skipped += 1;
            skips.entry(why.kind.clone()).or_insert((0, why.why.clone())).0 += 1;
            let why = &why.why;
            if json {
                let id = &o.probe.id;
                println!(
                    "{}",
                    serde_json::json!({"probe": id, "subject": subject, "status": "skipped", "reason": why})
                );
            } else {
                println!("skip  {} ({})", o.probe.id, crate::exit::terminal_safe(why));
            }
            return;
        }
        if let Some(ev) = o.report.as_ref().and_then(|r| r.evidence.as_ref()) {
            write_evidence(project, subject, &o.probe.id, ev);
        }
        if o.status.ok() {
            passed += 1;
        } else {
            failed += 1;
        }
        let unconfined = o.probe.unconfined_on(&id);
        if json {
            let mut line = outcome_json(&o, subject);
            if let Some(why) = unconfined {
                line["unconfined"] = serde_json::json!(why);
            }
            println!("{line}");
        } else {
            print_outcome(&o);
            // a probe that opted out of confinement says so on every run
            if let Some(why) = unconfined {
                println!("      ran unconfined: {}", crate::exit::terminal_safe(why));
            }
        }
    }));
    let wall = began.elapsed().as_secs_f64();
    let by_reason: Vec<String> = skips.iter().map(|(k, (n, _))| Skip::counted(k, *n, &id)).collect();
    let ran_nothing = passed + failed == 0;
    if json {
        let by: serde_json::Map<String, serde_json::Value> = skips
            .iter()
            .map(|(k, (n, _))| {
                let key = match k {
                    SkipKind::NotFor => "not-for".to_string(),
                    SkipKind::NotApplicable => "n/a".to_string(),
                    SkipKind::MissingPart(p) => format!("missing:{p}"),
                };
                (key, serde_json::json!(n))
            })
            .collect();
        println!(
            "{}",
            serde_json::json!({"summary": {"passed": passed, "failed": failed, "skipped": skipped, "subject": subject,
                "skipped_by": by, "ran_nothing": ran_nothing, "jobs": jobs, "wall_ms": (wall * 1000.0).round()}})
        );
    } else {
        let reasons = if by_reason.is_empty() { String::new() } else { format!(": {}", by_reason.join(", ")) };
        println!(
            "\n{passed} passed, {failed} failed, {skipped} skipped{reasons} ({total} probes on {subject}, {wall:.1} s, -j {jobs})"
        );
        // what a missing part is and how to get it, once per part
        for (k, (n, why)) in &skips {
            if let SkipKind::MissingPart(part) = k {
                println!("  {n} skipped for a missing host part, {part}: {why}");
            }
        }
    }
    if failed > 0 {
        return Ok(ExitCode::from(1));
    }
    if ran_nothing && !allow_empty {
        let what = if total == 0 {
            format!("no probe was selected ({})", paths_words(&paths))
        } else {
            format!("all {total} probes were skipped ({})", by_reason.join(", "))
        };
        let fix = if skips.keys().any(|k| matches!(k, SkipKind::MissingPart(_))) {
            "install the missing host parts above (scripts/setup installs them)"
        } else {
            "select probes written for this subject"
        };
        eprintln!(
            "probelab run: nothing ran on {subject}: {what}; {fix}, or pass --allow-empty to accept a run that runs nothing (exit {EXIT_NOTHING_RAN})"
        );
        return Ok(ExitCode::from(EXIT_NOTHING_RAN));
    }
    Ok(ExitCode::SUCCESS)
}

/// The probe paths of a run, in words.
pub fn paths_words(paths: &[PathBuf]) -> String {
    paths.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
}

/// An exec probe's evidence, `out/<subject>/<probe>.json`; one that cannot be written is said (the run's
/// verdict stands: the evidence is for reading, the transcript is the golden).
pub fn write_evidence(project: &Project, subject: &str, probe: &str, evidence: &serde_json::Value) {
    let file = project.out.join(subject).join(format!("{probe}.json"));
    // `{:#}`: the Value pretty-printed, as `to_vec_pretty` wrote it (and with no error to drop)
    if let Err(e) = crate::safe_fs::write_inside(&project.out, &file, format!("{evidence:#}").as_bytes()) {
        eprintln!("probelab: cannot write evidence {}: {e}", file.display());
    }
}

/// A probe's line of `probelab run --json`.
pub fn outcome_json(o: &crate::suite::Outcome, subject: &str) -> serde_json::Value {
    let (probe, ms) = (&o.probe, o.duration.as_secs_f64() * 1000.0);
    let mut v = serde_json::json!({
        "probe": probe.id, "subject": subject, "status": o.status.word(), "claims": probe.claims,
        "detail": o.detail, "duration_ms": (ms * 10.0).round() / 10.0,
    });
    let Some(report) = &o.report else {
        v["error"] = serde_json::json!(o.detail);
        return v;
    };
    v["verdicts"] = report.verdicts.iter().map(verdict_json).collect();
    v["kept"] = serde_json::json!(report.kept);
    if let Some(t) = &report.timing {
        let ms = |d: std::time::Duration| (d.as_secs_f64() * 10_000.0).round() / 10.0;
        v["timing_ms"] = serde_json::json!({"run": ms(t.run), "subject": ms(t.subject), "stub": ms(t.stub)});
    }
    v["diverges"] = serde_json::json!(report.diverges);
    v
}

/// A verdict in `probelab run --json`.
pub fn verdict_json(v: &crate::check::Verdict) -> serde_json::Value {
    let mut j = serde_json::json!({"name": v.name, "pass": v.pass, "detail": v.detail});
    // a check of Claude Code's wording: whether its semantic part held, or that it has none
    match v.semantic {
        crate::check::Semantic::Part(held) => j["semantic"] = serde_json::json!(held),
        crate::check::Semantic::WordingOnly => j["wording_only"] = serde_json::json!(true),
        crate::check::Semantic::Whole | crate::check::Semantic::Invariant => {}
    }
    // the whole texts a failed text assertion compared (detail shows them cut)
    if let Some(first) = v.compared.first() {
        j["expected"] = serde_json::json!(first.expected);
        j["actual"] = serde_json::json!(first.actual);
        j["compared"] = serde_json::json!(v.compared);
    }
    j
}

/// A probe's lines of `probelab run`: its status and claims, the detail, what diverges, where it was kept.
pub fn print_outcome(o: &crate::suite::Outcome) {
    use crate::exit::terminal_safe;
    use crate::suite::Status;
    let probe = &o.probe;
    if o.status == Status::Error && o.report.is_none() {
        println!("ERROR {}: {}", probe.id, terminal_safe(&o.detail));
        return;
    }
    let label = match o.status {
        Status::Pass => "pass ",
        Status::Blessed => "bless",
        Status::Fail => "FAIL ",
        Status::GoldenDiff => "DIFF ",
        Status::GoldenMissing => "NEW  ",
        _ => "ERROR",
    };
    println!("{label} {} [{}]", probe.id, probe.claims.join(", "));
    for l in terminal_safe(&o.detail).lines() {
        println!("      {l}");
    }
    if let Some(report) = &o.report {
        for d in &report.diverges {
            println!("      diverges from claim {}", terminal_safe(&d.to_string()));
        }
        if let Some(k) = &report.kept {
            let failed = if report.verdicts.iter().any(|v| !v.compared.is_empty()) { ", failures.json" } else { "" };
            println!("      sandbox kept at {} (record.jsonl, transcript.txt{failed} there)", k.display());
        }
    }
}
