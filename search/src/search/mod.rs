//! A run: what ripgrep would do with these arguments (one file or a tree, how many threads, which
//! printer, the defaults that follow stdout), then the search — one file after the other on this
//! thread ([`search_sequential`]), or the walk on this thread and the files in batches on as many
//! threads as ripgrep would use, printed in walk order ([`parallel`]) — and the exit status.
//! The `file` module sets up the matcher and the searcher and searches one file.

pub(crate) mod file;
mod parallel;

use crate::args::{Mode, RgArgs};
use crate::print::{self, list_files, printer, Messages, Output, OUT_BLOCK};
use crate::walk::{self, Event, Skip, Walk};
use file::{matcher, search_file, searcher, Plan};
use grep_searcher::Searcher;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

/// Exit status: a match.
pub const EXIT_MATCH: u8 = 0;
/// Exit status: no match.
pub const EXIT_NO_MATCH: u8 = 1;
/// Exit status: an error (a message on stderr).
pub const EXIT_ERROR: u8 = 2;

/// Largest explicit file read whole (ripgrep's memory-map case); larger files are streamed.
pub const MAX_SLURP_BYTES: u64 = 64 * 1024 * 1024;

/// Where a run writes, and how it may be stopped.
pub struct Io<'a> {
    /// Standard output.
    pub stdout: &'a mut dyn Write,
    /// Standard error (messages prefixed `rg: `).
    pub stderr: &'a mut dyn Write,
    /// Whether stdout is a terminal (defaults for headings and line numbers follow it, like ripgrep's).
    pub stdout_is_terminal: bool,
    /// Directory relative globs are matched from.
    pub cwd: PathBuf,
    /// Set to stop the search between reads (a deadline); the run then ends with an error.
    pub cancel: Option<&'a AtomicBool>,
    /// Files the walk leaves out as if they were not there (given the path joined to `cwd`): the
    /// caller's access rules (a tool runtime's deny rules). Neither searched nor listed, no message.
    pub skip: Option<Skip>,
    /// The most output the caller takes (its buffer): a file whose output passes it stops being
    /// searched there, its output cut at this many bytes, and the run ends as if stdout had closed (no
    /// error). `None`: no limit (ripgrep's).
    pub max_output: Option<usize>,
}

/// Runs a search (or `--files`) and returns the exit status.
pub fn run(a: &RgArgs, io: &mut Io<'_>) -> u8 {
    let started = Instant::now();
    let stdout_is_terminal = io.stdout_is_terminal;
    let cancel = io.cancel;
    let max_output = io.max_output;
    let cwd = io.cwd.clone();
    let skip = io.skip.clone();
    let stdout: &mut dyn Write = &mut *io.stdout;
    let mut msgs = Messages::new(&mut *io.stderr, a.no_messages);
    let (paths, implicit) =
        if a.paths.is_empty() { (vec![PathBuf::from("./")], true) } else { (a.paths.clone(), false) };
    let is_one_file = !implicit && paths.len() == 1 && (paths[0] == Path::new("-") || !paths[0].is_dir());
    // ripgrep's thread count: -j, else one per core (at most 12)
    let rg_threads = a.threads.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()).min(12));
    // ripgrep walks in parallel unless it sorts, searches one file or has one thread, and its parallel
    // walker words a missing root as `PATH: ERROR`; this engine walks sequentially, so it reports those
    // roots itself.
    let parallel = a.sort.is_none() && !is_one_file && rg_threads > 1;
    let paths = if parallel { existing_roots(paths, &mut msgs) } else { paths };
    if paths.is_empty() {
        return exit_code(false, a.quiet, msgs.errored);
    }
    if a.mode == Mode::Files {
        let Some(walk) = haystacks(a, &paths, implicit, (&cwd, skip), parallel, &mut msgs) else { return EXIT_ERROR };
        let matched = list_files(a, walk, Output::new(stdout, None), cancel, &mut msgs);
        return exit_code(matched, a.quiet, msgs.errored);
    }
    // ripgrep decides that no match is possible before it builds the matcher
    if a.max_count == Some(0) || a.patterns.is_empty() {
        return exit_code(false, a.quiet, msgs.errored);
    }
    let matcher = match matcher(a) {
        Ok(m) => m,
        Err(e) => {
            msgs.error(e);
            return EXIT_ERROR;
        }
    };
    let Some(walk) = haystacks(a, &paths, implicit, (&cwd, skip), parallel, &mut msgs) else { return EXIT_ERROR };
    let mode = match a.mode {
        // `-v --count-matches` is `-v --count`; `-o --count` is `--count-matches`
        Mode::CountMatches if a.invert => Mode::Count,
        Mode::Count if a.only_matching => Mode::CountMatches,
        m => m,
    };
    let heading = a.heading.unwrap_or(stdout_is_terminal);
    let with_filename = a.with_filename.unwrap_or(!is_one_file);
    let line_number = a.line_number.unwrap_or(match mode {
        Mode::Json => true,
        Mode::Standard => stdout_is_terminal && !a.quiet,
        _ => false,
    });
    let (before, after) = a.context_lines();
    // between two files' output: a blank line under headings, `--` between blocks of context
    let file_separator = match mode {
        Mode::Standard if heading => Some(Vec::new()),
        Mode::Standard if before > 0 || after > 0 => Some(b"--".to_vec()),
        _ => None,
    };
    // ripgrep maps a few explicit files; reading them whole is the same search, but only up to a size
    // (a 1 GB file is streamed instead: the same matches, without 1 GB of memory).
    let mmap_like = !implicit
        && paths.len() <= 10
        && paths.iter().all(|p| p.metadata().is_ok_and(|m| m.is_file() && m.len() <= MAX_SLURP_BYTES));
    let kind = printer(mode, a.quiet, heading);
    let plan = Plan { a, matcher: &matcher, kind, with_filename, mmap_like, cancel, max_output };
    // ripgrep walks and searches on its N threads alike; this engine walks on one thread that searches
    // too, beside N - 1 search threads: N busy threads, as ripgrep's (N search threads beside the walker
    // were one thread more than the cores, measured 1.05-1.13x ripgrep's time at the default on 2 cores,
    // 1.00-1.03x with N - 1); one thread with -q (it stops at the first match). The output is the same
    // either way (printed here in path order).
    let threads = if a.quiet || !parallel { 1 } else { rg_threads };
    let mut out = Output::new(stdout, if threads > 1 { file_separator.clone() } else { None });
    out.room = max_output.unwrap_or(usize::MAX);
    let searcher = searcher(a, line_number);
    if threads <= 1 {
        search_sequential(&plan, searcher, walk, &file_separator, &mut out, &mut msgs);
    } else {
        parallel::search_parallel(&plan, searcher, walk, threads - 1, &mut out, &mut msgs);
        // (threads > 1 here: at least one search thread beside the walker)
    }
    // (none when the caller's buffer is full: its reader stopped reading)
    if mode == Mode::Json && !out.facts.full {
        let summary = print::json_summary(&out.facts.stats, started.elapsed());
        out.emit(summary.as_bytes());
    }
    out.flush();
    if plan.cancel.is_some_and(|c| c.load(Ordering::Relaxed)) && !msgs.errored {
        // stopped between two files: the run still ends with an error
        msgs.error("search cancelled (deadline)");
    }
    if implicit && !out.facts.searched {
        msgs.error("No files were searched, which means ripgrep probably applied a filter you didn't expect.\nRunning with --debug will show why files are being skipped.");
    }
    exit_code(out.facts.matched, a.quiet, msgs.errored)
}

/// The walk of the roots (`skip`'s haystacks left out); None when it cannot be built, said on `msgs`.
fn haystacks(
    a: &RgArgs,
    paths: &[PathBuf],
    implicit: bool,
    (cwd, skip): (&Path, Option<Skip>),
    parallel: bool,
    msgs: &mut Messages<'_>,
) -> Option<Walk> {
    match walk::events(a, paths, implicit, (cwd, skip), parallel) {
        Ok(w) => Some(w),
        Err(e) => {
            msgs.error(e);
            None
        }
    }
}

/// The roots that are there; each one that is not is said as ripgrep's parallel walker words it
/// (`PATH: ERROR`) and left out (`-`, stdin, is always there).
fn existing_roots(paths: Vec<PathBuf>, msgs: &mut Messages<'_>) -> Vec<PathBuf> {
    let mut kept = Vec::new();
    for p in paths {
        match std::fs::metadata(&p) {
            Err(e) if p != Path::new("-") => msgs.error(format!("{}: {e}", p.display())),
            _ => kept.push(p),
        }
    }
    kept
}

/// Walks and searches on this thread, one file after the other (ripgrep's single-threaded search); one
/// printer serves every file (the standard printer places the separators between files itself) and its
/// buffer goes to stdout whenever it holds a block. With -q it stops after the first match.
fn search_sequential(
    plan: &Plan<'_>,
    mut searcher: Searcher,
    walk: Walk,
    file_separator: &Option<Vec<u8>>,
    out: &mut Output<'_>,
    msgs: &mut Messages<'_>,
) {
    let mut printer = plan.printer(file_separator.clone());
    for e in walk {
        if plan.cancelled() || out.broken || out.facts.full {
            break;
        }
        // (message, whether it is an error)
        let note = match e {
            Event::Error(e) => Some((e, true)),
            Event::Warning(e) => Some((e, false)),
            Event::Hay(h) => {
                let r = search_file(plan, plan.matcher, &mut searcher, &h, &mut printer);
                let stop = plan.a.quiet && matches!(r, Ok((true, _)));
                let error = out.facts.record(r, &h).map(|e| (e, true));
                if stop {
                    out.emit(printer.buf());
                    if let Some((e, _)) = error {
                        out.error(msgs, e);
                    }
                    return;
                }
                error
            }
        };
        if note.is_some() || printer.buf().len() >= OUT_BLOCK {
            out.emit(printer.buf());
            printer.buf().clear();
        }
        match note {
            Some((e, true)) => out.error(msgs, e),
            Some((e, false)) => out.warn(msgs, e),
            None => {}
        }
    }
    out.emit(printer.buf());
}

fn exit_code(matched: bool, quiet: bool, errored: bool) -> u8 {
    if matched && (quiet || !errored) {
        EXIT_MATCH
    } else if errored {
        EXIT_ERROR
    } else {
        EXIT_NO_MATCH
    }
}
