//! `probelab`: run probes, list what exists, write a probe skeleton.
//!
//! Every command that reads probes or goldens works in the project the current directory is in: the
//! nearest ancestor holding a `probelab.toml` or a `probes/` dir (`harness::project`; `probelab init`
//! makes one), never the directory this binary was built in. `--golden DIR` (any command) compares with
//! and blesses into DIR instead of the project's golden dir.
//!
//! - `probelab init [DIR]`: writes `probelab.toml` and the empty `probes/`, `golden/`, `fixtures/`.
//! - `probelab run [PATH...] [--subject builtin|claude-code@V|NAME] [--bless] [--json] [--keep] [-j N]`: runs the probes
//!   (default: all of `probes/`), N at a time (default: the cores; `harness::suite`), prints a line per
//!   probe in probe order (pass / FAIL / golden diff / skip and why) and a summary with the wall time;
//!   `--json` adds each probe's `duration_ms`; exit 1 on any failure, 2 on a usage or probe-file error.
//! - `probelab review [--accept | --reject]`: the pending goldens (`.snap.new`) `cargo test` left,
//!   each shown as a diff and accepted (written as the golden) or rejected (removed), answers on stdin.
//! - `probelab list`: probes (id, claims, file), claims with the probes citing them, subjects.
//! - `probelab new NAME`: writes `NAME.toml` under the project's probes, a commented skeleton that passes.
//! - `probelab import SESSION.jsonl [NAME]`: a probe of a Claude Code session (`harness::import`), written
//!   like `new`'s, its proposed checks marked for review.
//! - `probelab fake-mcp [--trace FILE] [--never-answer]`: the fixture MCP server on stdio
//!   (`harness::fake_mcp`).
//! - `probelab fake-lsp --trace FILE [--mode normal|crash|hang|garbage] [--once]`: the recording fake LSP
//!   server on stdio (`harness::fake_lsp`).
//! - `probelab install SUBJECT...`: the pinned subjects installed (or found in the cache) and prepared,
//!   as their first run would (scripts/setup installs the repository's command subjects so).
//! - `probelab versions [SPEC] [--refresh] [--json]`, `probelab cache [list | gc | rm V]`: the published
//!   Claude Code versions and the install cache (`harness::versions`).
//! - `probelab rg [FLAGS] PATTERN [PATH...]`: the search engine with ripgrep's flags, output and exit
//!   codes (also when this binary is started as `rg`).

use anyhow::Context as _;
use clap::{Parser, Subcommand};
use harness::exit::{finish, Failed as _, Failure, Outcome, Usage as _};
use harness::lab::{golden_step, run_probe, Layout};
use harness::project::Project;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser, Debug)]
#[command(name = "probelab", version, about = "A deterministic replay and verification harness for coding-agent tools")]
struct Cli {
    /// The golden directory to compare with and bless into (default: the project's, see probelab.toml).
    #[arg(long, global = true, value_name = "DIR")]
    golden: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run probes and compare their transcripts with the goldens.
    Run {
        /// Probe files or directories (default: probes/).
        paths: Vec<PathBuf>,
        /// The subject to run them on (default: `builtin`, the newest release's profile, then each
        /// `builtin@V` whose goldens the project keeps, golden/builtin@V/: this repository's 2.1.235).
        #[arg(long)]
        subject: Option<String>,
        /// Write the goldens (and blobs) instead of comparing.
        #[arg(long)]
        bless: bool,
        /// One JSON object per probe on stdout, then a summary object.
        #[arg(long)]
        json: bool,
        /// Keep each probe's sandbox and print where it is.
        #[arg(long)]
        keep: bool,
        /// Probes run side by side (default: the machine's cores); output stays in probe order.
        #[arg(short = 'j', long)]
        jobs: Option<usize>,
        /// A subject on which no probe ran (all skipped, or none selected) passes instead of exiting 5.
        #[arg(long)]
        allow_empty: bool,
    },
    /// Explore two Claude Code releases with the same generated sessions (each side twice) and report
    /// what differs: stable differences by kind (tool results, files, the first request), noise, and
    /// candidate probes for the result differences, minimised (issue 38).
    Discover {
        /// The older release (`2.1.238`).
        a: String,
        /// The newer release (`2.1.239`).
        b: String,
        /// The generator's seed (default 0x38d15c).
        #[arg(long)]
        seed: Option<String>,
        /// Sessions to run (default 3).
        #[arg(long)]
        sessions: Option<usize>,
        /// Where the report and candidate probes go (default target/probelab/discover/A-B).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Report the differences without minimising them.
        #[arg(long)]
        no_minimise: bool,
        /// The report as JSON on stdout.
        #[arg(long)]
        json: bool,
        /// Also write the record its release page shows (docs/discover/releases/B.json: the stable
        /// differences in words) and regenerate the release pages.
        #[arg(long)]
        publish: bool,
        /// Take the report an exploration already wrote in --out (report.json) instead of exploring.
        #[arg(long)]
        reuse: bool,
    },
    /// Semantic diff of two golden sets: directories, or subject names (their golden/<subject>).
    Diff {
        /// Left: a golden directory or a subject (`builtin`, `claude-code@2.1.235`).
        left: String,
        /// Right: the same.
        right: String,
        /// Run both subjects now (their shared probes) instead of reading their goldens.
        #[arg(long)]
        run: bool,
        /// JSON instead of text.
        #[arg(long)]
        json: bool,
        /// Also write a static HTML report.
        #[arg(long)]
        html: Option<PathBuf>,
        /// Every layer of every probe (default: the summary — figures, interface, the changed words of
        /// each tool result whose behaviour differs).
        #[arg(long)]
        full: bool,
    },
    /// List probes, claims and subjects.
    List,
    /// Accept or reject the pending goldens (`.snap.new`) that `cargo test` left: each shown as a diff,
    /// then a(ccept) / r(eject) / s(kip) read from stdin (what `cargo insta review` does, without it).
    Review {
        /// Accept every pending golden without asking.
        #[arg(long, conflicts_with = "reject")]
        accept: bool,
        /// Reject (remove) every pending golden without asking.
        #[arg(long)]
        reject: bool,
    },
    /// Remove the blobs of golden/blobs that no golden names any more (left behind by --bless).
    GcBlobs,
    /// Make this directory (or DIR) a probelab project: probelab.toml and empty probes/, golden/, fixtures/.
    Init {
        /// Where (default: the current directory).
        dir: Option<PathBuf>,
    },
    /// Write a commented probe skeleton to probes/NAME.toml.
    New {
        /// Name, e.g. `read/windows` (the file) — the id becomes `read.windows`.
        name: String,
    },
    /// Make a probe of a Claude Code session transcript (~/.claude/projects/<slug>/<session>.jsonl).
    Import {
        /// The session's JSONL file.
        session: PathBuf,
        /// Name of the probe, like `new`'s (default: `imported/<first 8 chars of the file name>`).
        name: Option<String>,
    },
    /// Serve the fixture MCP server on stdin/stdout (the MCP probes' server).
    FakeMcp {
        /// Append every tools/call and resources/read to this file (JSON lines).
        #[arg(long)]
        trace: Option<PathBuf>,
        /// Read every message and answer none (not even `initialize`): the server that never answers.
        #[arg(long)]
        never_answer: bool,
    },
    /// The conformance table: Claude Code's probes × subjects (pass / semantic-only / differs / n-a),
    /// written as text, JSON and HTML (harness::conformance).
    Conformance {
        /// Probe files or directories (default: probes/); Claude Code's probes among them make the rows.
        paths: Vec<PathBuf>,
        /// Where table.txt, table.json and table.html go.
        #[arg(long, default_value = "target/probelab/conformance")]
        out: PathBuf,
        /// The subjects run (default: builtin and every registered agent at its pinned version).
        #[arg(long = "subject")]
        subjects: Vec<String>,
        /// The Claude Code version whose goldens make its column (default: the newest with goldens;
        /// `none` leaves the column out).
        #[arg(long)]
        claude_code: Option<String>,
        /// Probes run side by side per subject.
        #[arg(short = 'j', long)]
        jobs: Option<usize>,
        /// Also keep the agents' cells in the committed table (docs/conformance/columns/, default
        /// subjects: every pinned agent) and make docs/conformance/table.* again from the committed data.
        #[arg(long)]
        publish: bool,
    },
    /// Install (or find in the cache) the pinned subjects named, and prepare them: what their first run
    /// would do (`claude-code@V`, `opencode@V`, `pi@V`, a command subject with an `install`).
    Install {
        /// The subjects (`copilot`, `opencode@1.18.33`).
        #[arg(required = true)]
        subjects: Vec<String>,
    },
    /// A subject's tool dialect against the tools it sent: which Claude Code tools map and to what,
    /// which the probes call that have no counterpart, which of the agent's tools nothing uses, and the
    /// problems (exit 1 when there is one).
    Dialect {
        #[command(subcommand)]
        what: DialectCommand,
    },
    /// `versions` and `cache`: the published Claude Code versions and their install cache.
    #[command(flatten)]
    Versions(harness::versions::cli::Command),
    /// `matrix`, `report` and `bisect`: probes × versions of the Claude Code subject.
    #[command(flatten)]
    Observatory(harness::observatory::cli::Command),
}

/// The project the current directory is in (`harness::project`), its golden dir replaced by `--golden`.
fn project(golden: Option<PathBuf>) -> Result<Project, Failure> {
    let cwd = std::env::current_dir().context("the current directory").usage()?;
    let mut p = Project::find(&cwd).usage()?;
    if let Some(g) = golden {
        p.golden = cwd.join(g);
    }
    Ok(p)
}

/// This binary: the built-in engine of exec probes.
fn engine() -> PathBuf {
    std::env::current_exe().unwrap_or_else(|_| PathBuf::from("probelab"))
}

fn main() -> ExitCode {
    harness::probe::placeholders::this_is_probelab();
    // `probelab rg ARGS` — or this binary started with argv0 `rg` — is the search engine, with
    // ripgrep's own command line (not clap's).
    let argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let argv0_is_rg = argv.first().and_then(|a| std::path::Path::new(a).file_name()).is_some_and(|n| n == "rg");
    if argv0_is_rg || argv.get(1).is_some_and(|a| a == "rg") {
        return rg(&argv[if argv0_is_rg { 1 } else { 2 }..]);
    }
    if argv.get(1).is_some_and(|a| a == "measure") {
        // probelab measure --out FILE -- ARGV...
        let (Some(out), Some(dd)) = (argv.get(3), argv.get(4)) else {
            eprintln!("usage: probelab measure --out FILE -- COMMAND [ARGS...]");
            return ExitCode::from(2);
        };
        if argv[2] != "--out" || dd != "--" {
            eprintln!("usage: probelab measure --out FILE -- COMMAND [ARGS...]");
            return ExitCode::from(2);
        }
        return harness::subject::exec::measure(std::path::Path::new(out), &argv[5..]);
    }
    if argv.get(1).is_some_and(|a| a == probelab_runtime::confine::ns::SUBCOMMAND) {
        // the namespaces backend's launcher: first, while this process has one thread (a user
        // namespace is refused to a process with more)
        return ExitCode::from(probelab_runtime::confine::ns::main(&argv[2..]));
    }
    if argv.get(1).is_some_and(|a| a == probelab_runtime::confine::ns::HOLD_SUBCOMMAND) {
        // a confined session's holder (runtime confine::start_session)
        return ExitCode::from(probelab_runtime::confine::ns::hold_main());
    }
    if argv.get(1).is_some_and(|a| a == probelab_runtime::confine::RELAY_SUBCOMMAND) {
        // inside a confined subject's namespace: its loopback ports, relayed to the lab
        let code = probelab_runtime::confine::relay_main(&argv[2..]);
        return ExitCode::from(code.clamp(0, 255) as u8);
    }
    if argv.get(1).is_some_and(|a| a == "fake-lsp") {
        let args: Vec<String> = argv[2..].iter().map(|a| a.to_string_lossy().into_owned()).collect();
        return match harness::fake_lsp::parse_args(&args) {
            Ok(opts) => ExitCode::from(harness::fake_lsp::serve(&opts, &args).clamp(0, 255) as u8),
            Err(e) => {
                eprintln!("probelab fake-lsp: {e}\n{}", harness::fake_lsp::USAGE);
                ExitCode::from(2)
            }
        };
    }
    let cli = Cli::parse();
    let needs_project = !matches!(cli.command, Command::Init { .. } | Command::FakeMcp { .. } | Command::Versions(_));
    let project = if needs_project {
        match project(cli.golden) {
            Ok(p) => p,
            Err(f) => return finish("probelab", Err(f)),
        }
    } else {
        Project::default_at(std::path::Path::new("."))
    };
    let p = &project;
    match cli.command {
        Command::Run { paths, subject, bless, json, keep, jobs, allow_empty } => supervised(|| {
            let subjects = subject.map_or_else(|| harness::suite::default_subjects(&p.golden), |s| vec![s]);
            let how = RunHow { bless, json, keep, jobs, allow_empty };
            // each subject in turn, against its goldens; the worst exit code is the run's
            subjects
                .iter()
                .map(|s| finish("probelab run", run_probes(p, paths.clone(), s, &how)))
                .fold(ExitCode::SUCCESS, worse)
        }),
        Command::List => finish("probelab list", list(p)),
        Command::GcBlobs => finish("probelab gc-blobs", gc_blobs(p)),
        Command::Review { accept, reject } => finish("probelab review", review(p, accept, reject)),
        Command::Diff { left, right, run, json, html, full } => {
            finish("probelab diff", diff(p, &left, &right, run, json, html.as_deref(), full))
        }
        Command::Init { dir } => finish("probelab init", init(dir)),
        Command::New { name } => finish("probelab new", new(p, &name)),
        Command::Import { session, name } => finish("probelab import", import(p, &session, name)),
        Command::FakeMcp { trace, never_answer } => finish("probelab fake-mcp", fake_mcp(trace, never_answer)),
        Command::Install { subjects } => finish("probelab install", install(p, &subjects)),
        Command::Conformance { paths, out, subjects, claude_code, jobs, publish } => {
            let sel = harness::conformance::Selection { paths, subjects, claude_code, publish };
            let layout = p.layout(engine());
            supervised(|| finish("probelab conformance", harness::conformance::run(p, &layout, &out, sel, jobs)))
        }
        Command::Versions(c) => c.run(),
        Command::Dialect { what: DialectCommand::Check { name, tools, record } } => supervised(|| {
            finish("probelab dialect check", harness::subject::dialect_cli::check(p, &name, tools, record))
        }),
        Command::Discover { a, b, seed, sessions, out, no_minimise, json, publish, reuse } => {
            let args = DiscoverArgs { seed, sessions, out, minimise: !no_minimise, json, publish, reuse };
            supervised(|| finish("probelab discover", discover(p, &a, &b, args)))
        }
        Command::Observatory(c) => c.run(p, &p.layout(engine())),
    }
}

/// `probelab install SUBJECT...`: each subject installed (or found) and prepared, a line each saying
/// what it is; exit 2 on a subject that is not one, 1 when one cannot be installed.
fn install(project: &Project, subjects: &[String]) -> Outcome {
    let registry = project.registry();
    let ids = subjects.iter().map(|s| registry.parse(s)).collect::<Result<Vec<_>, _>>().usage()?;
    for id in &ids {
        let subject = registry.prepare(id).map_err(|e| Failure::msg(1, format!("{id}: {e}")))?;
        println!("{id}: {}", subject.description());
    }
    Ok(ExitCode::SUCCESS)
}

/// `probelab discover A B`: exit 0 when the releases were compared (whatever differs: the report says),
/// 1 when no session could be compared (every run broke) or a release cannot be installed, 2 on a usage
/// error.
#[allow(clippy::too_many_arguments)]
/// `probelab discover`'s options.
struct DiscoverArgs {
    seed: Option<String>,
    sessions: Option<usize>,
    out: Option<PathBuf>,
    minimise: bool,
    json: bool,
    publish: bool,
    reuse: bool,
}

fn discover(project: &Project, a: &str, b: &str, args: DiscoverArgs) -> Outcome {
    use harness::discover;
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
    let layout = project.layout(engine());
    let docs = harness::observatory::watch::Docs::under(&project.root);
    if publish {
        // a page compares a release with the one before it in the matrix: only that pair is its record
        let m = docs.matrix_of_cells().map_err(|e| Failure::msg(2, e))?;
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
        let ca = harness::subject::claude_code::install(a).failed()?;
        let cb = harness::subject::claude_code::install(b).failed()?;
        let rt = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .context("cannot start the runtime")
            .failed()?;
        let mut report = rt.block_on(discover::explore(&ca, &cb, &opts, &layout, &|m| eprintln!("discover: {m}")));
        // A and B not neighbours: each candidate bisected to the first release that shows it
        if !report.candidates.is_empty() {
            let releases = harness::observatory::cli::between(a, b).map_err(|e| Failure::msg(1, e))?;
            let cells = opts.out.join("bisect");
            rt.block_on(discover::bisect_candidates(&mut report, &releases, &layout, &cells, &|m| {
                eprintln!("discover: {m}")
            }))
            .map_err(|e| Failure::msg(1, e))?;
        }
        report
    };
    if publish {
        let written =
            discover::write_published(&docs.explored, &discover::published(&report)).map_err(|e| Failure::msg(1, e))?;
        let probes = load_probes(project, std::slice::from_ref(&project.probes)).usage()?;
        harness::observatory::watch::republish_page(&docs, &layout, &probes, b).map_err(|e| Failure::msg(1, e))?;
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

fn init(dir: Option<PathBuf>) -> Outcome {
    let dir = dir.unwrap_or_else(|| PathBuf::from("."));
    for m in harness::project::init(&dir).usage()? {
        println!("wrote {}", m.display());
    }
    println!("next: probelab new NAME (a probe skeleton), probelab run --bless (its first golden), probelab run");
    Ok(ExitCode::SUCCESS)
}

fn fake_mcp(trace: Option<PathBuf>, never_answer: bool) -> Outcome {
    if never_answer {
        harness::fake_mcp::never_answer();
        return Ok(ExitCode::SUCCESS);
    }
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build();
    let rt = rt.context("cannot start the runtime").usage()?;
    rt.block_on(harness::fake_mcp::serve_stdio(trace)).map_err(|e| Failure::msg(1, e))?;
    Ok(ExitCode::SUCCESS)
}

/// Runs `f` as the supervised worker: SIGINT / SIGTERM / a SIGKILL of this process leave nothing behind
/// (harness::cleanup), and nothing a probe started outlives the run (orphans come to the worker: it is
/// their subreaper).
fn supervised(f: impl FnOnce() -> ExitCode) -> ExitCode {
    if let harness::cleanup::Role::Supervised(code) = harness::cleanup::supervise() {
        return code;
    }
    let code = f();
    // a stop signal ends the run (its subject killed) and exits with 128 + the signal: not this code
    while harness::cleanup::stopping() {
        std::thread::park();
    }
    probelab_runtime::process::kill_own_descendants();
    code
}

/// `probelab run`'s exit code when a subject ran no probe: every selected probe skipped, or none
/// selected (pytest's 5: "no tests were collected"). `--allow-empty` makes it 0.
const EXIT_NOTHING_RAN: u8 = 5;

/// The worse of two subjects' exit codes: a usage error (2, or any other), then a failure (1), then
/// a run that ran nothing (5), then success.
fn worse(a: ExitCode, b: ExitCode) -> ExitCode {
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
struct RunHow {
    bless: bool,
    json: bool,
    keep: bool,
    jobs: Option<usize>,
    allow_empty: bool,
}

/// `probelab run` on one subject: exit 1 on any failure, 2 on a usage or probe-file error, 5 when no
/// probe ran ([`EXIT_NOTHING_RAN`]) unless `--allow-empty`.
fn run_probes(project: &Project, paths: Vec<PathBuf>, subject: &str, how: &RunHow) -> Outcome {
    use harness::suite::{Skip, SkipKind, Status};
    let RunHow { bless, json, keep, jobs, allow_empty } = *how;
    let registry = project.registry();
    // an unknown subject is a usage error, before anything runs (a typo in CI must not pass by skipping)
    let id = registry.parse(subject).usage()?;
    let paths = if paths.is_empty() { vec![project.probes.clone()] } else { paths };
    let probes = load_probes(project, &paths).usage()?;
    harness::probe::check_fixture_dirs(&probes, &project.fixtures).usage()?;
    // lanes are threads: never more than the probes, nor than the lab can start
    let jobs = jobs.unwrap_or_else(harness::suite::default_jobs).clamp(1, harness::suite::MAX_JOBS);
    let rt = harness::suite::runtime(jobs).context("cannot start the runtime").usage()?;
    let layout = project.layout(engine());
    // under out/, in a directory named after the subject: only a subject that names one plain directory
    let durations = harness::safe_fs::confined_name(subject)
        .ok()
        .filter(|p| p.components().count() == 1)
        .map(|_| project.out.join(subject).join("durations.json"));
    let opts = harness::suite::Options { subject: id, jobs, bless, keep, durations };
    let total = probes.len();
    let (mut passed, mut failed, mut skipped) = (0usize, 0usize, 0usize);
    let mut skips: std::collections::BTreeMap<SkipKind, (usize, String)> = Default::default();
    let began = std::time::Instant::now();
    let id = opts.subject.clone();
    rt.block_on(harness::suite::run_suite(probes, &layout, &opts, |o| {
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
                println!("skip  {} ({})", o.probe.id, harness::exit::terminal_safe(why));
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
                println!("      ran unconfined: {}", harness::exit::terminal_safe(why));
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
fn paths_words(paths: &[PathBuf]) -> String {
    paths.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
}

/// An exec probe's evidence, `out/<subject>/<probe>.json`; one that cannot be written is said (the run's
/// verdict stands: the evidence is for reading, the transcript is the golden).
fn write_evidence(project: &Project, subject: &str, probe: &str, evidence: &serde_json::Value) {
    let file = project.out.join(subject).join(format!("{probe}.json"));
    // `{:#}`: the Value pretty-printed, as `to_vec_pretty` wrote it (and with no error to drop)
    if let Err(e) = harness::safe_fs::write_inside(&project.out, &file, format!("{evidence:#}").as_bytes()) {
        eprintln!("probelab: cannot write evidence {}: {e}", file.display());
    }
}

/// A probe's line of `probelab run --json`.
fn outcome_json(o: &harness::suite::Outcome, subject: &str) -> serde_json::Value {
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
fn verdict_json(v: &harness::check::Verdict) -> serde_json::Value {
    let mut j = serde_json::json!({"name": v.name, "pass": v.pass, "detail": v.detail});
    // a check of Claude Code's wording: whether its semantic part held, or that it has none
    match v.semantic {
        harness::check::Semantic::Part(held) => j["semantic"] = serde_json::json!(held),
        harness::check::Semantic::WordingOnly => j["wording_only"] = serde_json::json!(true),
        harness::check::Semantic::Whole | harness::check::Semantic::Invariant => {}
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
fn print_outcome(o: &harness::suite::Outcome) {
    use harness::exit::terminal_safe;
    use harness::suite::Status;
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

/// `probelab dialect ...`.
#[derive(Subcommand, Debug)]
enum DialectCommand {
    /// Check NAME's dialect (a registered agent's, or a command subject's dialect file).
    Check {
        /// The subject (`opencode`, `pi`, or a command subject with `dialect = "dialects/NAME.toml"`).
        name: String,
        /// The tool list to check against (`{"tools": [...]}` or a request body); default: the one
        /// recorded beside the dialect file (`dialects/NAME.tools.json`), the pinned version's for an agent.
        #[arg(long)]
        tools: Option<PathBuf>,
        /// Run the command subject once against the stub (one turn, text only), take the tools of its
        /// first request that has some and write them beside the dialect file, then check.
        #[arg(long)]
        record: bool,
    },
}

/// The probes under `paths`, whose `subjects` may name the project's subjects.
fn load_probes(project: &Project, paths: &[PathBuf]) -> Result<Vec<harness::probe::Probe>, harness::probe::LoadError> {
    harness::probe::load_all_with(paths, &project.known())
}

/// `probelab diff`: exit 2 on any error.
fn diff(
    project: &Project,
    left: &str,
    right: &str,
    run_now: bool,
    json: bool,
    html: Option<&std::path::Path>,
    full: bool,
) -> Outcome {
    let probes = load_probes(project, std::slice::from_ref(&project.probes)).usage()?;
    diff_of(project, &probes, (left, right), run_now, json, html, full).usage()?;
    Ok(ExitCode::SUCCESS)
}

/// `probelab diff`: its errors carry what was being done (`{e:#}` prints them outermost first).
fn diff_of(
    project: &Project,
    probes: &[harness::probe::Probe],
    (left, right): (&str, &str),
    run_now: bool,
    json: bool,
    html: Option<&std::path::Path>,
    full: bool,
) -> anyhow::Result<()> {
    use harness::transcript::diff::{diff_dirs_with, render_html, render_summary, render_text, unordered_ids};
    let golden = project.golden.clone();
    let tmp = tempfile::tempdir()?;
    // --run: a side that names a directory of goldens is read as it is (`golden/claude-code@2.1.333`),
    // a subject is run; a probe whose `requires` are missing here on either side is run on neither
    let is_dir = |name: &str| PathBuf::from(name).is_dir();
    let registry = project.registry();
    let parse = |name: &str| if is_dir(name) { Ok(None) } else { registry.parse(name).map(Some) };
    let (lid, rid) = match (parse(left), parse(right)) {
        (Ok(l), Ok(r)) if run_now => (l, r),
        (Err(e), _) | (_, Err(e)) if run_now => return Err(anyhow::Error::msg(e)),
        _ => (None, None),
    };
    let mut skipped: Vec<String> = Vec::new();
    let mut shared: Vec<&harness::probe::Probe> = Vec::new();
    for p in probes {
        let ids: Vec<&harness::subject::SubjectId> = lid.iter().chain(rid.iter()).collect();
        if !ids.iter().all(|id| p.applies_to(id)) {
            continue;
        }
        match ids.iter().find_map(|id| harness::probe::host::missing(&p.requires_on(id))) {
            Some(why) => skipped.push(format!("{} ({why})", p.id)),
            None => shared.push(p),
        }
    }
    if !skipped.is_empty() {
        println!("skipped on both sides, their requirements missing here: {}", skipped.join(", "));
    }
    let side = |name: &str| -> Result<PathBuf, String> {
        if run_now && !is_dir(name) {
            let dir = tmp.path().join(name);
            let layout = Layout { golden: dir.clone(), ..project.layout(engine()) };
            let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().map_err(|e| e.to_string())?;
            for p in &shared {
                let report = rt.block_on(run_probe(p, name, &layout, false))?;
                golden_step(&report, &Layout { golden: tmp.path().to_path_buf(), ..layout.clone() }, true)?;
            }
            Ok(tmp.path().join(name))
        } else {
            let p = PathBuf::from(name);
            Ok(if p.is_dir() { p } else { golden.join(name) })
        }
    };
    let (l, r) = (side(left).map_err(anyhow::Error::msg)?, side(right).map_err(anyhow::Error::msg)?);
    let blobs =
        if run_now && !(is_dir(left) || is_dir(right)) { tmp.path().join("blobs") } else { golden.join("blobs") };
    // a blob is what its name (its SHA-256) says, or the comparison is not to be trusted
    let corrupt = harness::transcript::golden::corrupt_blobs(&blobs);
    if !corrupt.is_empty() {
        for (p, why) in &corrupt {
            eprintln!("probelab diff: {}: {why}", p.display());
        }
        anyhow::bail!("{} corrupt blob(s): run the probes with --bless to write them again", corrupt.len());
    }
    // results a probe marks `unordered` compare as sets of lines, as in the behaviour fingerprint
    let unordered =
        probes.iter().filter(|p| !p.unordered.is_empty()).map(|p| (p.id.clone(), unordered_ids(p))).collect();
    let mut d = diff_dirs_with(&l, &r, &blobs, &unordered).map_err(anyhow::Error::msg)?;
    // two measured Claude Code versions: behaviour is judged by the observatory's committed cells (the
    // timeline's fingerprints), the goldens are the evidence
    let version = |dir: &std::path::Path| {
        dir.file_name().and_then(|n| n.to_str()).and_then(|n| n.strip_prefix("claude-code@")).map(str::to_string)
    };
    if let (false, Some(a), Some(b)) = (run_now, version(&l), version(&r)) {
        let docs = harness::observatory::watch::Docs::under(&project.root);
        if docs.cells.is_dir() {
            match docs.matrix_of_cells() {
                Ok(m) => m.judge(&mut d, &a, &b),
                Err(e) => {
                    eprintln!("probelab diff: the committed cells are not used ({e}): behaviour judged by the goldens")
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

fn rg(args: &[std::ffi::OsString]) -> ExitCode {
    ExitCode::from(probelab_search::main_stdio(args))
}

/// `probelab review`: exit 2 when the pending goldens cannot be listed, 1 when one cannot be accepted or
/// rejected.
fn review(project: &Project, accept_all: bool, reject_all: bool) -> Outcome {
    use std::io::{BufRead, Write};
    let pending = harness::transcript::review::pending(&project.golden);
    let pending = pending.with_context(|| project.golden.display().to_string()).usage()?;
    if pending.is_empty() {
        println!("no pending goldens (.snap.new) under {}", project.golden.display());
        return Ok(ExitCode::SUCCESS);
    }
    let (mut accepted, mut rejected, mut skipped) = (0usize, 0usize, 0usize);
    let mut answers = std::io::stdin().lock().lines();
    for (i, p) in pending.iter().enumerate() {
        println!("[{}/{}] {}", i + 1, pending.len(), project.show(&p.golden));
        let choice = if accept_all {
            'a'
        } else if reject_all {
            'r'
        } else {
            match p.diff() {
                Ok(d) => print!("{d}"),
                Err(e) => eprintln!("probelab review: {}: {e}", p.new.display()),
            }
            print!("accept (a), reject (r), skip (s)? ");
            let _ = std::io::stdout().flush();
            // no more answers (end of input): the rest are skipped, left pending
            let answer = answers.next().and_then(Result::ok).unwrap_or_else(|| "s".into());
            answer.trim().chars().next().unwrap_or('s').to_ascii_lowercase()
        };
        let done = match choice {
            'a' => p.accept(&project.golden).map(|()| accepted += 1),
            'r' => p.reject().map(|()| rejected += 1),
            _ => {
                skipped += 1;
                Ok(())
            }
        };
        done.with_context(|| p.golden.display().to_string()).failed()?;
    }
    println!("{accepted} accepted, {rejected} rejected, {skipped} skipped");
    Ok(ExitCode::SUCCESS)
}

/// `probelab gc-blobs`: exit 2 when the goldens cannot be read, 1 when a blob cannot be removed.
fn gc_blobs(project: &Project) -> Outcome {
    let golden = project.golden.clone();
    let unused = harness::transcript::golden::unreferenced_blobs(&golden);
    let unused = unused.with_context(|| golden.display().to_string()).usage()?;
    for p in &unused {
        std::fs::remove_file(p).with_context(|| p.display().to_string()).failed()?;
    }
    println!("removed {} unreferenced blob(s) from {}", unused.len(), golden.join("blobs").display());
    Ok(ExitCode::SUCCESS)
}

/// `probelab list`: exit 2 on a probe-file error, 1 when stdout cannot be written (a reader that stops
/// early, `probelab list | head`, is no error: no panic on the broken pipe).
fn list(project: &Project) -> Outcome {
    let probes = load_probes(project, std::slice::from_ref(&project.probes)).usage()?;
    use std::fmt::Write as _;
    let mut out = String::from("probes:\n");
    for p in &probes {
        let subjects = p.subjects.join(",");
        let _ = writeln!(out, "  {:<40} {:<24} {:<12} {}", p.id, p.claims.join(","), subjects, project.show(&p.path));
    }
    out.push_str("claims:\n");
    for c in harness::claims::all().into_iter().chain(project.claims.iter().cloned()) {
        let by: Vec<&str> = probes.iter().filter(|p| p.claims.contains(&c.id)).map(|p| p.id.as_str()).collect();
        let summary: String = c.summary.chars().take(70).collect();
        let _ = writeln!(out, "  {:<8} {:<3} {:<72} {}", c.id, by.len(), summary, by.join(" "));
    }
    out.push_str("subjects:\n");
    out.push_str(&project.registry().listing());
    match std::io::Write::write_all(&mut std::io::stdout().lock(), out.as_bytes()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e).context("cannot write").failed(),
        _ => Ok(ExitCode::SUCCESS),
    }
}

const SKELETON: &str = r#"# A probe: a scripted conversation, the subject runs the tools, the stub records the wire.
# Format: harness/src/probe/mod.rs. Run it: probelab run probes/NAME.toml --bless (first time), then probelab run.
id = "ID"
claims = ["READ-1"]                       # claim ids from docs/claims.md
about = "What this probe shows, in one line"
# subjects = ["builtin"]                  # default: DEFAULT_SUBJECTS

[fixture]
files."f.txt" = "one\ntwo\nthree\n"

# [settings]                              # Claude Code settings.json shape
# permissions = { deny = ["Read(secrets/**)"] }

[[turn]]                                  # the model's 1st answer; {cwd} is the sandbox's cwd
tool_use = [{ name = "Read", input = { file_path = "{cwd}/f.txt" } }]

[[turn]]
text = "done"

[[check]]                                 # result = N (N-th scripted tool_use) | result = "ID" (a tool_use given id = "ID") | request = N | file = "path"
result = 1
is_error = false
contains = "1\tone\n2\ttwo"
"#;

/// `probelab import`: exit 2 on a session that cannot be read or imported, 1 when what import made does
/// not parse (a bug of import).
fn import(project: &Project, session: &std::path::Path, name: Option<String>) -> Outcome {
    // a regular file within the cap: a FIFO or /dev/zero is refused before it is opened
    let text = harness::safe_fs::read_capped(session, harness::safe_fs::MAX_DATA_BYTES)
        .and_then(|b| String::from_utf8(b).map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e)))
        .with_context(|| session.display().to_string())
        .usage()?;
    let stem: String = session.file_stem().map(|s| s.to_string_lossy().chars().take(8).collect()).unwrap_or_default();
    let name = name.unwrap_or_else(|| format!("imported/{stem}"));
    let rel = probe_name(&name).map_err(|e| Failure::msg(2, e))?;
    let id = rel.replace('/', ".");
    let probe = harness::import::import(session, &text, &id).usage()?;
    // what import writes, `run` must take: checked with the parser before it is written
    let file = project.probes.join(format!("{rel}.toml"));
    if let Err(e) = harness::probe::parse(&file, &probe) {
        let why = format!("the probe made of {} does not parse (a bug of import): {e}", session.display());
        return Err(Failure::msg(1, why));
    }
    write_probe(project, &rel, &probe)
}

/// A probe's name as `new` and `import` take it (`read/window`, `.toml` optional): a path under probes/,
/// never outside it, whose id is path-safe.
fn probe_name(name: &str) -> Result<String, String> {
    let rel = name.strip_suffix(".toml").unwrap_or(name);
    harness::safe_fs::confined_name(rel)?;
    let id = rel.replace('/', ".");
    if !id.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_')) {
        return Err(format!(
            "{name:?}: a probe name is [A-Za-z0-9._-] in /-separated parts (its id names golden files)"
        ));
    }
    Ok(rel.to_string())
}

/// Writes `probes/REL.toml` (never over an existing file, never outside probes/, no link followed).
fn write_probe(project: &Project, rel: &str, text: &str) -> Outcome {
    let path = project.probes.join(format!("{rel}.toml"));
    if std::fs::symlink_metadata(&path).is_ok() {
        return Err(Failure::msg(2, format!("{} exists already", path.display())));
    }
    let written = harness::safe_fs::write_inside(&project.probes, &path, text.as_bytes());
    written.with_context(|| path.display().to_string()).usage()?;
    println!("wrote {}", path.display());
    Ok(ExitCode::SUCCESS)
}

fn new(project: &Project, name: &str) -> Outcome {
    let rel = probe_name(name).map_err(|e| Failure::msg(2, e))?;
    let id = rel.replace('/', ".");
    let text =
        SKELETON.replace("\"ID\"", &format!("{id:?}")).replace("DEFAULT_SUBJECTS", harness::probe::DEFAULT_SUBJECTS);
    write_probe(project, &rel, &text)
}
