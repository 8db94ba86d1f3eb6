//! `probelab discover A B`: two releases explored with the same generated sessions, the report
//! written, and optionally published.

use crate::exit::{Failed as _, Failure, Outcome, Usage as _};
use crate::project::Project;
use anyhow::Context as _;
use std::path::PathBuf;
use std::process::ExitCode;

/// `probelab discover`'s options.
pub struct DiscoverArgs {
    /// The generator's seed, as written (decimal, or hex with 0x; default [`crate::discover::DEFAULT_SEED`]).
    pub seed: Option<String>,
    /// Sessions to run (default [`crate::discover::DEFAULT_SESSIONS`]).
    pub sessions: Option<usize>,
    /// Where the report and candidates go (default `out/discover/A-B`).
    pub out: Option<PathBuf>,
    /// Minimise the differences into candidate probes.
    pub minimise: bool,
    /// The report as JSON on stdout.
    pub json: bool,
    /// Also write the published record and B's page.
    pub publish: bool,
    /// Take the report already in `out` instead of exploring.
    pub reuse: bool,
}

/// `probelab discover A B`: exit 0 when the releases were compared (whatever differs: the report says),
/// 1 when no session could be compared (every run broke) or a release cannot be installed, 2 on a usage
/// error.
pub fn discover(project: &Project, a: &str, b: &str, args: DiscoverArgs) -> Outcome {
    use crate::discover;
    let DiscoverArgs { seed, sessions, out, minimise, json, publish, reuse } = args;
    let seed = match seed {
        None => discover::DEFAULT_SEED,
        Some(s) => {
            let t = s.trim();
            t.strip_prefix("0x")
                .map_or_else(|| t.parse().ok(), |h| u64::from_str_radix(h, 16).ok())
                .ok_or_else(|| Failure::msg(2, format!("--seed {s:?} is not a number (decimal, or hex with 0x)")))?
        }
    };
    let (va, vb) = (semver::Version::parse(a), semver::Version::parse(b));
    let (va, vb) = match (va, vb) {
        (Ok(x), Ok(y)) => (x, y),
        _ => return Err(Failure::msg(2, format!("{a} and {b} must be versions, e.g. 2.1.238 2.1.239"))),
    };
    if va >= vb {
        return Err(Failure::msg(2, format!("{a} is not older than {b}: write the older release first")));
    }
    let out = out.unwrap_or_else(|| project.out.join("discover").join(format!("{a}-{b}")));
    let opts =
        discover::Options { seed, sessions: sessions.unwrap_or(discover::DEFAULT_SESSIONS).max(1), out, minimise };
    let layout = project.layout(super::engine());
    let docs = crate::observatory::watch::Docs::under(&project.root);
    if publish {
        // a page compares a release with the one before it in the matrix: only that pair is its record
        let m = docs.matrix_of_cells().usage()?;
        let before = m.versions.iter().position(|v| v == b).and_then(|i| i.checked_sub(1)).map(|i| &m.versions[i]);
        if before.map(String::as_str) != Some(a) {
            return Err(Failure::msg(
                2,
                format!(
                    "--publish: {b}'s page compares it with {}; publish the exploration of that pair",
                    before.map_or_else(
                        || "no measured release (it is not in the committed matrix)".to_string(),
                        |v| v.clone()
                    )
                ),
            ));
        }
    }
    let mut report = if reuse {
        // an exploration already made (scripts/discover-all's pass): its report, never a run
        let path = opts.out.join("report.json");
        let bytes = std::fs::read(&path).with_context(|| format!("--reuse: {}", path.display())).usage()?;
        let r: discover::Report =
            serde_json::from_slice(&bytes).with_context(|| format!("--reuse: {}", path.display())).usage()?;
        if (r.a.as_str(), r.b.as_str()) != (a, b) {
            return Err(Failure::msg(
                2,
                format!("--reuse: {} explored {} → {}, not {a} → {b}", path.display(), r.a, r.b),
            ));
        }
        r
    } else {
        let ca = crate::subject::claude_code::install(a).failed()?;
        let cb = crate::subject::claude_code::install(b).failed()?;
        let rt = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .context("cannot start the runtime")
            .failed()?;
        let mut report = rt.block_on(discover::explore(&ca, &cb, &opts, &layout, &|m| eprintln!("discover: {m}")));
        // A and B not neighbours: each candidate bisected to the first release that shows it
        if !report.candidates.is_empty() {
            let releases = crate::observatory::cli::between(a, b).failed()?;
            let cells = opts.out.join("bisect");
            rt.block_on(discover::bisect_candidates(&mut report, &releases, &layout, &cells, &|m| {
                eprintln!("discover: {m}")
            }))
            .map_err(|e| Failure::msg(1, e))?;
        }
        report
    };
    if publish {
        let probes = super::load_probes(project, std::slice::from_ref(&project.probes)).usage()?;
        // each finding told from what the catalogue's goldens of the pair show (the matrix's cells judge)
        let m = docs.matrix_of_cells().usage()?;
        let shown = discover::probe_diff(&layout, &probes, &m, a, b).failed()?;
        let written = discover::write_published(&docs.explored, &discover::published(&report, shown.as_ref()))
            .map_err(|e| Failure::msg(1, e))?;
        crate::observatory::watch::republish_page(&docs, &layout, &probes, b).map_err(|e| Failure::msg(1, e))?;
        eprintln!("discover: wrote {} and docs/changes/{b}.md", project.show(&written));
    }
    let known = project.root.join("docs/discover/known-changes.toml");
    if known.is_file() {
        report.recall = discover::recall(&report, &discover::known_changes(&known).map_err(|e| Failure::msg(2, e))?);
    }
    std::fs::create_dir_all(&opts.out).with_context(|| opts.out.display().to_string()).failed()?;
    let text = discover::render(&report);
    let as_json = serde_json::to_string_pretty(&report).context("the report as JSON").failed()?;
    std::fs::write(opts.out.join("report.md"), &text).with_context(|| opts.out.display().to_string()).failed()?;
    std::fs::write(opts.out.join("report.json"), &as_json).with_context(|| opts.out.display().to_string()).failed()?;
    if json {
        println!("{as_json}");
    } else {
        print!("{text}");
        println!(
            "
(report.md, report.json and the candidates in {})",
            opts.out.display()
        );
    }
    let compared = report.sessions.saturating_sub(
        report
            .broken
            .iter()
            .filter(|b| b.starts_with("session "))
            .map(|b| b.split(' ').nth(1).unwrap_or(""))
            .collect::<std::collections::BTreeSet<_>>()
            .len(),
    );
    if compared == 0 {
        return Err(Failure::msg(
            1,
            format!("no session could be compared: every one broke ({})", report.broken.join("; ")),
        ));
    }
    Ok(ExitCode::SUCCESS)
}
