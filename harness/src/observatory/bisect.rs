//! Bisection over versions: for each probe, the first version between a good and a bad one where its
//! behaviour fingerprint or its outcome changes.
//!
//! The candidates are the good version, the versions npm lists between the two that carry the linux-x64
//! binary, and the bad version, in npm's order. Every probe is run on both ends first; a probe whose two
//! ends agree has no change to find. Then, while some probe's interval has a version inside it, the
//! middle of the widest interval is installed and every probe whose interval holds it runs there — so
//! several probes share installs. A version that cannot be installed is skipped (and said), the next
//! one towards the middle taken instead; a run that errors counts as no answer for that probe there.
//! One probe costs at most ⌈log2 n⌉ + 2 installs. The two versions that end a probe's search are
//! adjacent among the candidates and both were run: the change is confirmed on both sides.
//!
//! Each run is kept as a matrix cell (`<out>/<version>/<probe>.json`), so a bisection stopped half-way
//! resumes, and `probelab report` shows what it ran.

use super::{reusable_cell, run_cell, write_cell, Goldens};
use crate::lab::Layout;
use crate::observe::{Observation, Outcome};
use crate::probe::Probe;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

/// What bisection found for one probe.
#[derive(Debug, Clone)]
pub struct Found {
    /// Probe id.
    pub probe: String,
    /// The last version that behaves like the good one, and the first that does not (`None`: the two
    /// ends agree, or no answer could be had).
    pub boundary: Option<(String, String)>,
    /// What differs between the two, layer by layer (empty without a boundary).
    pub diff: String,
    /// Why there is no boundary, when there is none.
    pub note: String,
}

/// What a bisection cost.
#[derive(Debug, Clone, Default)]
pub struct Cost {
    /// Versions installed or found installed, in the order they were first used, with the time their
    /// runs took (install included).
    pub versions: Vec<(String, Duration)>,
    /// Versions skipped: they could not be installed (with why).
    pub skipped: Vec<(String, String)>,
}

fn key(o: &Observation) -> Option<(Outcome, String)> {
    // an error or a broken run is no verdict: a bisection steps over it
    o.outcome.is_verdict().then(|| (o.outcome, o.fingerprint.clone()))
}

struct Ctx<'a> {
    candidates: &'a [String],
    layout: &'a Layout,
    out: &'a Path,
}

/// Runs `who` on candidate `i` (cells already kept are read, not run again).
async fn run_at(
    ctx: &Ctx<'_>,
    i: usize,
    who: &[&Probe],
    seen: &mut BTreeMap<(usize, String), Observation>,
    cost: &mut Cost,
    uninstallable: &mut BTreeMap<usize, String>,
    progress: &mut dyn FnMut(&str),
) {
    let version = ctx.candidates[i].clone();
    let started = Instant::now();
    let mut todo = Vec::new();
    for p in who {
        match reusable_cell(ctx.out, &version, &p.id, &crate::observe::probe_sha256(p)) {
            Some(o) => {
                seen.insert((i, p.id.clone()), o);
            }
            None => todo.push(*p),
        }
    }
    if !todo.is_empty() {
        if let Err(e) = crate::subject::claude_code::install(&version).map_err(|e| e.to_string()) {
            progress(&format!("{version}: skipped, cannot install: {e}"));
            uninstallable.insert(i, e.clone());
            cost.skipped.push((version, e));
            return;
        }
        for p in todo {
            let o = run_cell(p, &version, ctx.layout, Goldens::Compare).await;
            if let Err(e) = write_cell(ctx.out, &o) {
                progress(&format!("{version}: {}", crate::exit::chain(&e)));
            }
            seen.insert((i, p.id.clone()), o);
        }
    }
    let took = started.elapsed();
    let line: Vec<String> = who
        .iter()
        .filter_map(|p| seen.get(&(i, p.id.clone())))
        .map(|o| format!("{} {} {}", o.probe, o.outcome.word(), o.fingerprint.get(..12).unwrap_or("")))
        .collect();
    progress(&format!("{version} ({:.1} s): {}", took.as_secs_f64(), line.join(", ")));
    cost.versions.push((version, took));
}

/// Candidates without both ends: fewer than two versions to bisect over ([`bisect`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("bisect needs a good and a bad version")]
pub struct NoEnds {
    /// How many versions were given.
    pub given: usize,
}

/// Bisects `probes` over `candidates` (good first, bad last, npm order). `progress` hears a line per
/// version run.
pub async fn bisect(
    probes: &[Probe],
    candidates: &[String],
    layout: &Layout,
    out: &Path,
    progress: &mut dyn FnMut(&str),
) -> Result<(Vec<Found>, Cost), NoEnds> {
    if candidates.len() < 2 {
        return Err(NoEnds { given: candidates.len() });
    }
    let n = candidates.len();
    let mut cost = Cost::default();
    let mut seen: BTreeMap<(usize, String), Observation> = BTreeMap::new();
    let mut uninstallable: BTreeMap<usize, String> = BTreeMap::new();
    // each probe's interval (lo, hi): lo behaves like the good end, hi like the bad end
    let mut open: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    let mut found: BTreeMap<String, Found> = BTreeMap::new();
    let all: Vec<&Probe> = probes.iter().collect();
    let ctx = Ctx { candidates, layout, out };
    run_at(&ctx, 0, &all, &mut seen, &mut cost, &mut uninstallable, progress).await;
    run_at(&ctx, n - 1, &all, &mut seen, &mut cost, &mut uninstallable, progress).await;
    for p in probes {
        match unchanged_between_the_ends(&p.id, &seen, candidates) {
            Some(note) => {
                found.insert(p.id.clone(), Found { probe: p.id.clone(), boundary: None, diff: String::new(), note });
            }
            None => {
                open.insert(p.id.clone(), (0, n - 1));
            }
        }
    }
    while let Some(mid) = next_version(&open, &uninstallable) {
        let who: Vec<&Probe> =
            probes.iter().filter(|p| open.get(&p.id).is_some_and(|(lo, hi)| *lo < mid && mid < *hi)).collect();
        run_at(&ctx, mid, &who, &mut seen, &mut cost, &mut uninstallable, progress).await;
        if uninstallable.contains_key(&mid) {
            continue;
        }
        narrow(&who, mid, &seen, &mut open, &mut uninstallable);
    }
    for (id, (lo, hi)) in open {
        let f = boundary(id.clone(), (lo, hi), &seen, &uninstallable, candidates);
        found.insert(id, f);
    }
    Ok((probes.iter().filter_map(|p| found.remove(&p.id)).collect(), cost))
}

/// Why a probe has nothing to bisect: no answer at an end, or both ends behave the same (None: they
/// differ, the probe is bisected).
fn unchanged_between_the_ends(
    probe: &str,
    seen: &BTreeMap<(usize, String), Observation>,
    candidates: &[String],
) -> Option<String> {
    let n = candidates.len();
    let good = seen.get(&(0, probe.to_string())).and_then(key);
    let bad = seen.get(&(n - 1, probe.to_string())).and_then(key);
    match (&good, &bad) {
        (None, _) => Some(format!("no answer on the good version {}", candidates[0])),
        (_, None) => Some(format!("no answer on the bad version {}", candidates[n - 1])),
        (Some(g), Some(b)) if g == b => Some(format!(
            "{} and {} behave the same ({} {})",
            candidates[0],
            candidates[n - 1],
            g.0.word(),
            &g.1.get(..12).unwrap_or("")
        )),
        _ => None,
    }
}

/// The version to run next: in the widest open interval (ties: the first probe id), the untried,
/// installable version nearest its middle; None when no interval has one left.
fn next_version(open: &BTreeMap<String, (usize, usize)>, uninstallable: &BTreeMap<usize, String>) -> Option<usize> {
    let pick = open
        .iter()
        .filter_map(|(id, (lo, hi))| {
            let inside: Vec<usize> = (lo + 1..*hi).filter(|i| !uninstallable.contains_key(i)).collect();
            if inside.is_empty() {
                return None;
            }
            let mid = (lo + hi) / 2;
            // the untried version nearest the middle
            let best = inside.iter().copied().min_by_key(|i| (i.abs_diff(mid), *i))?;
            Some((hi - lo, id.clone(), best))
        })
        .max_by_key(|(w, id, _)| (*w, std::cmp::Reverse(id.clone())));
    pick.map(|(_, _, mid)| mid)
}

/// Halves the interval of each probe run at `mid`: the upper half where `mid` behaves as the interval's
/// good end, the lower half otherwise; a probe without an answer there marks `mid` as not runnable (the
/// versions around it are tried).
fn narrow(
    who: &[&Probe],
    mid: usize,
    seen: &BTreeMap<(usize, String), Observation>,
    open: &mut BTreeMap<String, (usize, usize)>,
    uninstallable: &mut BTreeMap<usize, String>,
) {
    for p in who {
        let Some((lo, hi)) = open.get(&p.id).copied() else { continue };
        let good = seen.get(&(lo, p.id.clone())).and_then(key);
        match seen.get(&(mid, p.id.clone())).and_then(key) {
            // no answer here: try the versions around it (the run is kept; this one is skipped)
            None => {
                uninstallable.entry(mid).or_insert_with(|| "the run errored".into());
            }
            Some(k) if Some(&k) == good.as_ref() => {
                open.insert(p.id.clone(), (mid, hi));
            }
            Some(_) => {
                open.insert(p.id.clone(), (lo, mid));
            }
        }
    }
}

/// A probe's boundary: the last version as before and the first that differs, what differs between
/// them, and which versions between them could not be run.
fn boundary(
    probe: String,
    (lo, hi): (usize, usize),
    seen: &BTreeMap<(usize, String), Observation>,
    uninstallable: &BTreeMap<usize, String>,
    candidates: &[String],
) -> Found {
    let (a, b) = (seen.get(&(lo, probe.clone())), seen.get(&(hi, probe.clone())));
    let skipped_between: Vec<&str> =
        (lo + 1..hi).filter(|i| uninstallable.contains_key(i)).map(|i| candidates[i].as_str()).collect();
    let note = if skipped_between.is_empty() {
        String::new()
    } else {
        format!(
            "the change is somewhere in {}..{} ({} could not be run)",
            candidates[lo],
            candidates[hi],
            skipped_between.join(", ")
        )
    };
    let diff = match (a, b) {
        (Some(a), Some(b)) => behaviour_diff(a, b),
        _ => String::new(),
    };
    Found { probe, boundary: Some((candidates[lo].clone(), candidates[hi].clone())), diff, note }
}

/// What differs between two observations of a probe, behaviour first: the outcome, each call's
/// `is_error` and result text (a unified diff), the files, the exec commands; then the other layers in
/// one line each (interface, prompt, request shape).
pub fn behaviour_diff(a: &Observation, b: &Observation) -> String {
    let mut out = Vec::new();
    let (va, vb) = (a.version.as_deref().unwrap_or(&a.subject), b.version.as_deref().unwrap_or(&b.subject));
    if a.outcome != b.outcome {
        out.push(format!("outcome: {} on {va} → {} on {vb} ({})", a.outcome.word(), b.outcome.word(), b.reason));
    }
    let n = a.behaviour.results.len().max(b.behaviour.results.len());
    for i in 0..n {
        let (x, y) = (a.behaviour.results.get(i).cloned().flatten(), b.behaviour.results.get(i).cloned().flatten());
        if x == y {
            continue;
        }
        let tool = x.as_ref().or(y.as_ref()).map(|r| r.tool.clone()).unwrap_or_default();
        out.push(format!("result {} ({tool}):", i + 1));
        match (x, y) {
            (Some(x), Some(y)) => {
                if x.is_error != y.is_error {
                    out.push(format!("  is_error {} → {}", x.is_error, y.is_error));
                }
                if x.text != y.text {
                    let d = similar::TextDiff::from_lines(&x.text, &y.text);
                    out.push(d.unified_diff().context_radius(2).header(va, vb).to_string().trim_end().to_string());
                }
            }
            (x, y) => out.push(format!("  answered on {va}: {}, on {vb}: {}", x.is_some(), y.is_some())),
        }
    }
    for (path, h) in &a.behaviour.files {
        match b.behaviour.files.get(path) {
            None => out.push(format!("file {path}: gone on {vb}")),
            Some(h2) if h2 != h => out.push(format!("file {path}: content differs")),
            _ => {}
        }
    }
    for path in b.behaviour.files.keys().filter(|p| !a.behaviour.files.contains_key(*p)) {
        out.push(format!("file {path}: new on {vb}"));
    }
    for (i, (x, y)) in a.behaviour.execs.iter().zip(&b.behaviour.execs).enumerate() {
        if x != y {
            out.push(format!("exec {}: exit {:?} → {:?}", i + 1, x.exit, y.exit));
        }
    }
    let added: Vec<&String> = b.interface.keys().filter(|k| !a.interface.contains_key(*k)).collect();
    let removed: Vec<&String> = a.interface.keys().filter(|k| !b.interface.contains_key(*k)).collect();
    let changed: Vec<&String> =
        a.interface.iter().filter(|(k, h)| b.interface.get(*k).is_some_and(|h2| h2 != *h)).map(|(k, _)| k).collect();
    if !(added.is_empty() && removed.is_empty() && changed.is_empty()) {
        out.push(format!("interface: tools added {added:?}, removed {removed:?}, changed {changed:?}"));
    }
    if a.prompt != b.prompt {
        out.push(format!("prompt: system {} → {}", a.prompt, b.prompt));
    }
    if a.shape != b.shape {
        let mut d = Vec::new();
        if a.shape.model != b.shape.model {
            d.push(format!("model {} → {}", a.shape.model, b.shape.model));
        }
        if a.shape.max_tokens != b.shape.max_tokens {
            d.push(format!("max_tokens {:?} → {:?}", a.shape.max_tokens, b.shape.max_tokens));
        }
        if a.shape.betas != b.shape.betas {
            d.push(format!("betas {:?} → {:?}", a.shape.betas, b.shape.betas));
        }
        if a.shape.fields != b.shape.fields {
            d.push(format!("fields {:?} → {:?}", a.shape.fields, b.shape.fields));
        }
        if a.shape.tool_fields != b.shape.tool_fields {
            d.push("tool fields differ".into());
        }
        if d.is_empty() {
            d.push("headers differ".into());
        }
        out.push(format!("request shape: {}", d.join("; ")));
    }
    out.join("\n")
}
