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
use harness::commands;
use harness::exit::{finish, Failure, Usage as _};
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
    /// The commands that take their own raw arguments (the search engine, the fake LSP server, the
    /// launchers the lab starts), run before any project is looked for.
    #[command(flatten)]
    Raw(RawCommand),
    /// `versions` and `cache`: the published Claude Code versions and their install cache.
    #[command(flatten)]
    Versions(harness::versions::cli::Command),
    /// `matrix`, `report` and `bisect`: probes × versions of the Claude Code subject.
    #[command(flatten)]
    Observatory(harness::observatory::cli::Command),
}

/// [`Command::Raw`]'s commands.
#[derive(Subcommand, Debug)]
enum RawCommand {
    /// The search engine with ripgrep's own flags, output and exit codes (`probelab rg -n PATTERN`; also
    /// this binary started as `rg`).
    #[command(disable_help_flag = true, disable_version_flag = true)]
    Rg {
        /// ripgrep's arguments, as ripgrep takes them.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0..)]
        args: Vec<std::ffi::OsString>,
    },
    /// Serve the recording fake LSP server on stdio (`--trace FILE [--mode normal|crash|hang|garbage]
    /// [--once]`; its own parser, harness::fake_lsp).
    #[command(disable_help_flag = true)]
    FakeLsp {
        /// Its arguments.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0..)]
        args: Vec<std::ffi::OsString>,
    },
    /// Run COMMAND and write what exec probes measure of it (argv, output, exit, duration, max RSS) to
    /// FILE (the built-in engine of exec probes).
    #[command(hide = true)]
    Measure {
        /// Where the measurement goes.
        #[arg(long)]
        out: PathBuf,
        /// The command and its arguments, after `--`.
        #[arg(last = true, required = true)]
        argv: Vec<std::ffi::OsString>,
    },
    /// The namespaces backend's launcher (runtime confine::ns): started by the lab, not by hand.
    #[command(name = "confine-ns", hide = true, disable_help_flag = true)]
    ConfineNs {
        /// The launcher's arguments.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0..)]
        args: Vec<std::ffi::OsString>,
    },
    /// A confined session's holder (runtime confine::start_session): started by the lab.
    #[command(name = "confine-hold", hide = true)]
    ConfineHold,
    /// The loopback relay inside a confined subject's namespace (runtime confine): started by the lab.
    #[command(name = "confine-relay", hide = true, disable_help_flag = true)]
    ConfineRelay {
        /// The relay's arguments.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0..)]
        args: Vec<std::ffi::OsString>,
    },
}

impl RawCommand {
    fn run(self) -> ExitCode {
        match self {
            // the namespaces backend's launcher: while this process has one thread (a user namespace is
            // refused to a process with more; parsing the arguments starts none)
            RawCommand::ConfineNs { args } => ExitCode::from(probelab_runtime::confine::ns::main(&args)),
            // a confined session's holder (runtime confine::start_session)
            RawCommand::ConfineHold => ExitCode::from(probelab_runtime::confine::ns::hold_main()),
            // inside a confined subject's namespace: its loopback ports, relayed to the lab
            RawCommand::ConfineRelay { args } => {
                ExitCode::from(probelab_runtime::confine::relay_main(&args).clamp(0, 255) as u8)
            }
            RawCommand::Measure { out, argv } => harness::subject::exec::measure(&out, &argv),
            RawCommand::Rg { args } => rg(&args),
            RawCommand::FakeLsp { args } => {
                let args: Vec<String> = args.iter().map(|a| a.to_string_lossy().into_owned()).collect();
                match harness::fake_lsp::parse_args(&args) {
                    Ok(opts) => ExitCode::from(harness::fake_lsp::serve(&opts, &args).clamp(0, 255) as u8),
                    Err(e) => {
                        eprintln!("probelab fake-lsp: {e}\n{}", harness::fake_lsp::USAGE);
                        ExitCode::from(2)
                    }
                }
            }
        }
    }
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

fn main() -> ExitCode {
    harness::probe::placeholders::this_is_probelab();
    // this binary started with argv0 `rg` is the search engine, with ripgrep's own command line (not
    // clap's): no subcommand to name

    let argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let argv0_is_rg = argv.first().and_then(|a| std::path::Path::new(a).file_name()).is_some_and(|n| n == "rg");
    if argv0_is_rg {
        return rg(&argv[1..]);
    }
    let cli = Cli::parse();
    let needs_project =
        !matches!(cli.command, Command::Init { .. } | Command::FakeMcp { .. } | Command::Versions(_) | Command::Raw(_));
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
        Command::Run { paths, subject, bless, json, keep, jobs, allow_empty } => commands::supervised(|| {
            let subjects = subject.map_or_else(|| harness::suite::default_subjects(&p.golden), |s| vec![s]);
            let how = commands::run::RunHow { bless, json, keep, jobs, allow_empty };
            // each subject in turn, against its goldens; the worst exit code is the run's
            subjects
                .iter()
                .map(|s| finish("probelab run", commands::run::run_probes(p, paths.clone(), s, &how)))
                .fold(ExitCode::SUCCESS, commands::run::worse)
        }),
        Command::List => finish("probelab list", commands::project::list(p)),
        Command::GcBlobs => finish("probelab gc-blobs", commands::project::gc_blobs(p)),
        Command::Review { accept, reject } => finish("probelab review", commands::project::review(p, accept, reject)),
        Command::Diff { left, right, run, json, html, full } => {
            finish("probelab diff", commands::diff::diff(p, &left, &right, run, json, html.as_deref(), full))
        }
        Command::Init { dir } => finish("probelab init", commands::project::init(dir)),
        Command::New { name } => finish("probelab new", commands::project::new(p, &name)),
        Command::Import { session, name } => finish("probelab import", commands::project::import(p, &session, name)),
        Command::FakeMcp { trace, never_answer } => {
            finish("probelab fake-mcp", commands::project::fake_mcp(trace, never_answer))
        }
        Command::Install { subjects } => finish("probelab install", commands::project::install(p, &subjects)),
        Command::Conformance { paths, out, subjects, claude_code, jobs, publish } => {
            let sel = harness::conformance::Selection { paths, subjects, claude_code, publish };
            let layout = p.layout(commands::engine());
            commands::supervised(|| {
                finish("probelab conformance", harness::conformance::run(p, &layout, &out, sel, jobs))
            })
        }
        Command::Versions(c) => c.run(),
        Command::Dialect { what: DialectCommand::Check { name, tools, record } } => commands::supervised(|| {
            finish("probelab dialect check", harness::subject::dialect_cli::check(p, &name, tools, record))
        }),
        Command::Discover { a, b, seed, sessions, out, no_minimise, json, publish, reuse } => {
            let args =
                commands::discover::DiscoverArgs { seed, sessions, out, minimise: !no_minimise, json, publish, reuse };
            commands::supervised(|| finish("probelab discover", commands::discover::discover(p, &a, &b, args)))
        }
        Command::Observatory(c) => c.run(p, &p.layout(commands::engine())),
        Command::Raw(raw) => raw.run(),
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

fn rg(args: &[std::ffi::OsString]) -> ExitCode {
    ExitCode::from(probelab_search::main_stdio(args))
}

#[cfg(test)]
mod tests {
    use super::Cli;
    use clap::CommandFactory;

    #[test]
    fn the_launchers_the_runtime_starts_are_subcommands_by_the_names_it_uses() {
        let cli = Cli::command();
        for name in [
            probelab_runtime::confine::ns::SUBCOMMAND,
            probelab_runtime::confine::ns::HOLD_SUBCOMMAND,
            probelab_runtime::confine::RELAY_SUBCOMMAND,
            "rg",
            "measure",
            "fake-lsp",
        ] {
            assert!(cli.find_subcommand(name).is_some(), "no subcommand {name}");
        }
        cli.debug_assert();
    }

    #[test]
    fn raw_subcommands_take_their_arguments_as_written() {
        use clap::Parser;
        let cli = Cli::try_parse_from(["probelab", "rg", "-n", "--json", "fn\\s+main", "src"])
            .unwrap_or_else(|e| panic!("{e}"));
        let super::Command::Raw(super::RawCommand::Rg { args }) = cli.command else { panic!("not rg") };
        assert_eq!(args, ["-n", "--json", "fn\\s+main", "src"]);
        let cli = Cli::try_parse_from(["probelab", "rg", "--help"]).unwrap_or_else(|e| panic!("{e}"));
        assert!(
            matches!(cli.command, super::Command::Raw(super::RawCommand::Rg { args }) if args == ["--help"]),
            "rg's own --help"
        );
        let cli = Cli::try_parse_from(["probelab", "measure", "--out", "m.json", "--", "rg", "-c", "x"])
            .unwrap_or_else(|e| panic!("{e}"));
        let super::Command::Raw(super::RawCommand::Measure { out, argv }) = cli.command else { panic!("not measure") };
        assert_eq!((out.to_str(), argv), (Some("m.json"), vec!["rg".into(), "-c".into(), "x".into()]));
        assert!(Cli::try_parse_from(["probelab", "measure", "--", "x"]).is_err(), "--out is required");
    }
}
