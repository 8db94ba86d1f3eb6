//! The search engine: ripgrep's behaviour (GREP-4: the reference's Grep runs ripgrep 14.1.1) rebuilt on
//! the crates ripgrep is made of, pinned to the versions ripgrep 14.1.1 locks — grep-regex,
//! grep-searcher, grep-printer, ignore, globset — and configured the way ripgrep configures them
//! (`crates/core/flags/hiargs.rs` of 14.1.1), so the same flags give the same bytes and exit code.
//! `probelab rg` (and this crate's `probelab-rg` binary) is this engine as a command; the Grep and Glob
//! tools of probelab-runtime call it in process.
//!
//! Decisions where ripgrep is not deterministic: the walk is always single-threaded in path order
//! (ripgrep orders results only with `--sort path`; with it the two agree byte for byte). Where ripgrep
//! would search in parallel (no sort, not one file, more than one thread: `-j`, else one per core, at
//! most 12) the calling thread walks and hands numbered batches of consecutive files to as many search
//! threads as ripgrep would use, searching batches itself while they queue up, and prints each batch
//! once all before it are printed: the search overlaps the walk as in ripgrep, and the output never
//! depends on thread timing — the same bytes as one thread's, except ripgrep's parallel-only details,
//! kept: the file separator goes between any two non-empty outputs, and the parallel walker's wording of
//! an unreadable entry. Output goes to stdout in blocks, and stdout is written up to the point of each
//! message before the message goes to stderr, so the two streams on one descriptor interleave the same
//! way on every run. Colour is never used. Memory maps are not used (no
//! `unsafe`); where ripgrep would map a few explicit files, the file is read whole and searched as a
//! slice, which is what ripgrep's map amounts to.

pub mod args;

use args::{Case, Mode, RgArgs, SortKind, TypeChange};
use grep_printer::{JSONBuilder, StandardBuilder, SummaryBuilder, SummaryKind};
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;
use termcolor::NoColor;

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

/// A printer's buffer that holds at most `cap` bytes ([`Io::max_output`]): a write past it keeps what
/// fits and fails with [`OutputFull`], which ends the file's search.
struct CapBuf {
    bytes: Vec<u8>,
    cap: usize,
}

impl Write for CapBuf {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        let room = self.cap.saturating_sub(self.bytes.len());
        if b.len() > room {
            self.bytes.extend_from_slice(&b[..room]);
            return Err(std::io::Error::other(OutputFull));
        }
        self.bytes.extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The error of a write past [`Io::max_output`].
#[derive(Debug)]
struct OutputFull;

impl std::fmt::Display for OutputFull {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the caller's output buffer is full")
    }
}

impl std::error::Error for OutputFull {}

/// Whether a search failed because its output reached [`Io::max_output`].
fn output_full(e: &std::io::Error) -> bool {
    e.get_ref().is_some_and(|i| i.is::<OutputFull>())
}

/// A predicate on paths for [`Io::skip`].
pub type Skip = std::sync::Arc<dyn Fn(&Path) -> bool + Send + Sync>;

/// The walk without the haystacks `skip` leaves out.
fn without_skipped(
    walk: Box<dyn Iterator<Item = Event> + Send>,
    skip: Option<Skip>,
    cwd: &Path,
) -> Box<dyn Iterator<Item = Event> + Send> {
    match skip {
        None => walk,
        Some(f) => {
            let cwd = cwd.to_path_buf();
            Box::new(walk.filter(move |e| !matches!(e, Event::Hay(h) if f(&cwd.join(&h.path)))))
        }
    }
}

struct Messages<'a> {
    stderr: &'a mut dyn Write,
    errored: bool,
    quiet: bool,
}

impl Messages<'_> {
    fn warn(&mut self, msg: impl std::fmt::Display) {
        if !self.quiet {
            let _ = writeln!(self.stderr, "rg: {msg}");
        }
    }

    fn error(&mut self, msg: impl std::fmt::Display) {
        self.errored = true;
        if !self.quiet {
            let _ = writeln!(self.stderr, "rg: {msg}");
        }
    }
}

/// A reader that fails once the cancel flag is set (with `TimedOut`: `Interrupted` would be retried
/// forever by `read_to_end` and the searcher).
struct Cancellable<'a, R> {
    inner: R,
    cancel: Option<&'a AtomicBool>,
}

impl<R: Read> Read for Cancellable<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.cancel.is_some_and(|c| c.load(Ordering::Relaxed)) {
            return Err(std::io::Error::new(std::io::ErrorKind::TimedOut, "search cancelled (deadline)"));
        }
        self.inner.read(buf)
    }
}

/// The matcher ripgrep builds for these arguments.
pub fn matcher(a: &RgArgs) -> Result<RegexMatcher, String> {
    let mut b = RegexMatcherBuilder::new();
    b.multi_line(true).unicode(true).octal(false).fixed_strings(a.fixed_strings);
    match a.case {
        Case::Sensitive => b.case_insensitive(false),
        Case::Insensitive => b.case_insensitive(true),
        Case::Smart => b.case_smart(true),
    };
    if a.line_regexp {
        b.whole_line(true);
    } else if a.word {
        b.word(true);
    }
    if a.multiline {
        b.dot_matches_new_line(a.multiline_dotall);
    } else {
        b.line_terminator(Some(b'\n')).dot_matches_new_line(false);
    }
    if let Some(limit) = a.regex_size_limit {
        b.size_limit(limit);
    }
    if let Some(limit) = a.dfa_size_limit {
        b.dfa_size_limit(limit);
    }
    if !a.text {
        b.ban_byte(Some(b'\x00'));
    }
    b.build_many(&a.patterns).map_err(|e| suggest(e.to_string()))
}

fn suggest(msg: String) -> String {
    if msg.contains("the literal") && msg.contains("not allowed") {
        return format!("{msg}\n\nConsider enabling multiline mode with the --multiline flag (or -U for short).\nWhen multiline mode is enabled, new line characters can be matched.");
    }
    if msg.contains("pattern contains \"\\0\"") {
        return format!("{msg}\n\nConsider enabling text mode with the --text flag (or -a for short). Otherwise,\nbinary detection is enabled and matching a NUL byte is impossible.");
    }
    msg
}

fn searcher(a: &RgArgs, line_number: bool) -> Searcher {
    let (before, after) = a.context_lines();
    SearcherBuilder::new()
        .line_terminator(grep_matcher::LineTerminator::byte(b'\n'))
        .invert_match(a.invert)
        .line_number(line_number)
        .multi_line(a.multiline)
        .before_context(before)
        .after_context(after)
        .build()
}

fn walker(a: &RgArgs, paths: &[PathBuf], cwd: &Path) -> Result<ignore::WalkBuilder, String> {
    let mut b = ignore::WalkBuilder::new(&paths[0]);
    for p in &paths[1..] {
        b.add(p);
    }
    let mut types = ignore::types::TypesBuilder::new();
    types.add_defaults();
    for t in &a.types {
        match t {
            TypeChange::Select(n) => types.select(n),
            TypeChange::Negate(n) => types.negate(n),
        };
    }
    let types = types.build().map_err(|e| e.to_string())?;
    let overrides = if a.globs.is_empty() && a.iglobs.is_empty() {
        ignore::overrides::Override::empty()
    } else {
        let mut o = ignore::overrides::OverrideBuilder::new(cwd);
        for g in &a.globs {
            o.add(g).map_err(|e| e.to_string())?;
        }
        o.case_insensitive(true).map_err(|e| e.to_string())?;
        for g in &a.iglobs {
            o.add(g).map_err(|e| e.to_string())?;
        }
        o.build().map_err(|e| e.to_string())?
    };
    let no_vcs = a.no_ignore || a.no_ignore_vcs;
    b.max_depth(a.max_depth)
        .follow_links(a.follow)
        .threads(1)
        .skip_stdout(a.mode != Mode::Files)
        .overrides(overrides)
        .types(types)
        .hidden(!a.hidden)
        .parents(!a.no_ignore)
        .ignore(!a.no_ignore)
        .git_global(!no_vcs)
        .git_ignore(!no_vcs)
        .git_exclude(!no_vcs)
        .require_git(true);
    if !a.no_ignore {
        b.add_custom_ignore_filename(".rgignore");
    }
    // Single-threaded and deterministic: always in path order (ripgrep does this for --sort path).
    if !matches!(a.sort, Some((_, true)) | Some((SortKind::Modified | SortKind::Accessed | SortKind::Created, _))) {
        // by file name: siblings' paths are their parent's path joined to their names, so comparing the
        // whole paths' bytes orders them as their names, without taking each name out of its path at
        // every comparison (sort_by_file_name's cost, a tenth of the walk)
        b.sort_by_file_path(|x, y| x.as_os_str().cmp(y.as_os_str()));
    }
    Ok(b)
}

/// One thing to search, as ripgrep's haystack: a walk entry that is a file, or a path given explicitly.
struct Haystack {
    path: PathBuf,
    explicit: bool,
}

/// What the walk yields, in order: a haystack, or an error to report at that point.
enum Event {
    Hay(Haystack),
    Error(String),
    /// A problem that does not stop the run nor change its exit status (a bad line in an ignore file).
    Warning(String),
}

/// The walk's events in the order they are searched and reported: streamed in path order, or, for the
/// sorts that need every path first (times, reversed path), collected, sorted and handed out with the
/// walk's errors first (ripgrep reports them while it collects).
/// `parallel`: word errors as ripgrep's parallel walker does.
fn events(
    a: &RgArgs,
    paths: &[PathBuf],
    strip_dot: bool,
    cwd: &Path,
    parallel: bool,
) -> Result<Box<dyn Iterator<Item = Event> + Send>, String> {
    let walk =
        walker(a, paths, cwd)?.build().flat_map(move |result| event(result, strip_dot, parallel).into_iter().flatten());
    let Some((kind, reverse)) = a.sort else { return Ok(Box::new(walk)) };
    if kind == SortKind::Path && !reverse {
        // the walk itself is in path order
        return Ok(Box::new(walk));
    }
    let mut errors = Vec::new();
    let mut out = Vec::new();
    for e in walk {
        match e {
            Event::Hay(h) => out.push(h),
            e => errors.push(e),
        }
    }
    let key = |p: &Path| -> Option<std::time::SystemTime> {
        let m = p.metadata().ok()?;
        match kind {
            SortKind::Path => None,
            SortKind::Modified => m.modified().ok(),
            SortKind::Accessed => m.accessed().ok(),
            SortKind::Created => m.created().ok(),
        }
    };
    match kind {
        SortKind::Path => out.sort_by(|x, y| y.path.cmp(&x.path)),
        _ => {
            let mut keyed: Vec<_> = out.into_iter().map(|h| (key(&h.path), h)).collect();
            keyed.sort_by(|(t1, _), (t2, _)| {
                let o = match (t1, t2) {
                    (Some(a), Some(b)) => a.cmp(b),
                    (Some(_), None) => std::cmp::Ordering::Less,
                    (None, Some(_)) => std::cmp::Ordering::Greater,
                    (None, None) => std::cmp::Ordering::Equal,
                };
                if reverse {
                    o.reverse()
                } else {
                    o
                }
            });
            out = keyed.into_iter().map(|(_, h)| h).collect();
        }
    }
    Ok(Box::new(errors.into_iter().chain(out.into_iter().map(Event::Hay))))
}

/// One walk result as events: the entry's own problem (ripgrep's "ignore message", e.g. a bad glob in the
/// directory's .gitignore), then the haystack (none for what is not searched: directories, special files).
fn event(result: Result<ignore::DirEntry, ignore::Error>, strip_dot: bool, parallel: bool) -> [Option<Event>; 2] {
    let dent = match result {
        Ok(d) => d,
        Err(e) => return [Some(Event::Error(walk_error(e, parallel))), None],
    };
    let warning = dent.error().map(|e| Event::Warning(e.to_string()));
    let ft = dent.file_type();
    let is_dir = ft.is_some_and(|t| t.is_dir()) || (dent.path_is_symlink() && dent.path().is_dir());
    let explicit = dent.depth() == 0 && !is_dir;
    let is_file = ft.is_some_and(|t| t.is_file());
    if !explicit && !is_file {
        return [warning, None];
    }
    let path = if strip_dot && dent.path().starts_with("./") {
        dent.path().strip_prefix("./").map(Path::to_path_buf).unwrap_or_else(|_| dent.into_path())
    } else {
        dent.into_path()
    };
    [warning, Some(Event::Hay(Haystack { path, explicit }))]
}

/// A walk error's text. ripgrep's parallel walker words an entry it cannot read (a broken symlink under
/// -L) `PATH: ERROR`, where the sequential walker this engine uses wraps walkdir's `IO error for operation
/// on PATH: ERROR`; runs ripgrep would make parallel get the parallel wording.
fn walk_error(e: ignore::Error, parallel: bool) -> String {
    if let (true, ignore::Error::WithPath { path, err }) = (parallel, &e) {
        if let ignore::Error::Io(io) = &**err {
            let text = io.to_string();
            if let Some(rest) = text.strip_prefix(&format!("IO error for operation on {}: ", path.display())) {
                return format!("{}: {rest}", path.display());
            }
        }
    }
    e.to_string()
}

/// Output is handed to stdout in blocks of at least this many bytes (one write per block, not per file).
const OUT_BLOCK: usize = 64 * 1024;

/// Most walk events in one batch handed to a search thread.
const BATCH: usize = 64;

/// Batches per search thread the walk may run ahead of the searches before the walking thread searches
/// too. Deep, so that the search threads never wait on a walk that is itself waiting for a core (on a
/// loaded machine, with 1 per thread the walking thread's searches let them run dry; ripgrep's threads
/// walk and search alike and never wait on each other).
const AHEAD: usize = 32;

/// Fewest walk events in a batch handed out early (while fewer batches are queued than there are
/// search threads): enough that a search thread woken for it does not go back to sleep at once.
const FIRST_BATCH: usize = 16;

/// Where the outputs go, in order: stdout (in blocks), the exit status's facts, the JSON stats.
struct Output<'o> {
    stdout: &'o mut dyn Write,
    /// Bytes not yet written (fewer than [`OUT_BLOCK`] between writes).
    buf: Vec<u8>,
    matched: bool,
    searched: bool,
    stats: grep_printer::Stats,
    printed: bool,
    /// Set when stdout is gone (a closed pipe): the run stops, as ripgrep does.
    broken: bool,
    /// Set when the output reached [`Io::max_output`]: the run stops after writing what it has.
    full: bool,
    /// Bytes the output may still take ([`Io::max_output`]).
    room: usize,
    /// Between two non-empty outputs (several search threads: ripgrep's buffer writer puts it there).
    between: Option<Vec<u8>>,
}

impl<'o> Output<'o> {
    fn new(stdout: &'o mut dyn Write, between: Option<Vec<u8>>) -> Output<'o> {
        Output {
            stdout,
            buf: Vec::with_capacity(OUT_BLOCK),
            matched: false,
            searched: false,
            stats: grep_printer::Stats::new(),
            printed: false,
            broken: false,
            full: false,
            room: usize::MAX,
            between,
        }
    }

    /// A file's search: its facts; its error, to be reported.
    fn result(&mut self, r: std::io::Result<(bool, Option<grep_printer::Stats>)>, h: &Haystack) -> Option<String> {
        self.searched = true;
        match r {
            Ok((m, s)) => {
                self.matched |= m;
                if let Some(s) = s {
                    self.stats += &s;
                }
                None
            }
            // the caller's buffer is full: the run ends as on a closed stdout
            // (something was printed: a match)
            Err(e) if output_full(&e) => {
                self.full = true;
                self.matched = true;
                None
            }
            Err(e) => Some(format!("{}: {e}", h.path.display())),
        }
    }

    /// Reports an error on stderr after writing out all output that comes before it, so that stdout and
    /// stderr on one descriptor interleave the same way on every run.
    fn error(&mut self, msgs: &mut Messages<'_>, msg: impl std::fmt::Display) {
        self.flush();
        msgs.error(msg);
    }

    /// [`Output::error`] for a warning (the exit status stays).
    fn warn(&mut self, msgs: &mut Messages<'_>, msg: impl std::fmt::Display) {
        self.flush();
        msgs.warn(msg);
    }

    /// Output of one file (sequential runs: of several, separated by the printer already).
    fn emit(&mut self, bytes: &[u8]) {
        let bytes = if bytes.len() > self.room {
            self.full = true;
            &bytes[..self.room]
        } else {
            bytes
        };
        self.room -= bytes.len();
        if bytes.is_empty() {
            return;
        }
        self.printed = true;
        if self.buf.len() + bytes.len() < OUT_BLOCK {
            self.buf.extend_from_slice(bytes);
            return;
        }
        self.flush();
        self.write(bytes);
    }

    /// A batch's output and errors, in order; `between` goes before its first output if anything was
    /// printed before (the search thread put it between the batch's own files).
    fn batch(&mut self, msgs: &mut Messages<'_>, done: &BatchDone) {
        self.matched |= done.matched;
        self.searched |= done.searched;
        self.stats += &done.stats;
        let mut first = true;
        let mut at = 0;
        let ends = done.errors.iter().map(|(end, _, _)| *end).chain([done.out.len()]);
        for (i, end) in ends.enumerate() {
            let bytes = &done.out[at..end];
            at = end;
            if !bytes.is_empty() {
                if let (true, true, Some(sep)) = (first, self.printed, self.between.clone()) {
                    self.emit(&[sep.as_slice(), b"\n"].concat());
                }
                first = false;
                self.emit(bytes);
            }
            match done.errors.get(i) {
                Some((_, e, true)) => self.error(msgs, e),
                Some((_, e, false)) => self.warn(msgs, e),
                None => {}
            }
        }
    }

    fn write(&mut self, bytes: &[u8]) {
        if !self.broken && !bytes.is_empty() {
            if let Err(e) = self.stdout.write_all(bytes) {
                self.broken = e.kind() == std::io::ErrorKind::BrokenPipe;
            }
        }
    }

    fn flush(&mut self) {
        let buf = std::mem::take(&mut self.buf);
        self.write(&buf);
        self.buf = buf;
        self.buf.clear();
    }
}

/// A path's bytes as ripgrep prints them (on Unix, the raw bytes).
fn path_bytes(p: &Path) -> std::borrow::Cow<'_, [u8]> {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        std::borrow::Cow::Borrowed(p.as_os_str().as_bytes())
    }
    #[cfg(not(unix))]
    {
        match p.to_string_lossy() {
            std::borrow::Cow::Borrowed(s) => std::borrow::Cow::Borrowed(s.as_bytes()),
            std::borrow::Cow::Owned(s) => std::borrow::Cow::Owned(s.into_bytes()),
        }
    }
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
    let mut msgs = Messages { stderr: &mut *io.stderr, errored: false, quiet: a.no_messages };
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
    // ripgrep searches on as many threads as it walks with; this engine walks on one and searches on as
    // many as ripgrep would, except with -q (it stops at the first match); the output is the same either
    // way (printed here in path order)
    let threads = if a.quiet || !parallel { 1 } else { rg_threads };
    let mut out = Output::new(stdout, if threads > 1 { file_separator.clone() } else { None });
    out.room = max_output.unwrap_or(usize::MAX);
    let searcher = searcher(a, line_number);
    if threads <= 1 {
        search_sequential(&plan, searcher, walk, &file_separator, &mut out, &mut msgs);
    } else {
        search_parallel(&plan, searcher, walk, threads, &mut out, &mut msgs);
    }
    // (none when the caller's buffer is full: its reader stopped reading)
    if mode == Mode::Json && !out.full {
        let summary = json_summary(&out.stats, started.elapsed());
        out.emit(summary.as_bytes());
    }
    out.flush();
    if plan.cancel.is_some_and(|c| c.load(Ordering::Relaxed)) && !msgs.errored {
        // stopped between two files: the run still ends with an error
        msgs.error("search cancelled (deadline)");
    }
    if implicit && !out.searched {
        msgs.error("No files were searched, which means ripgrep probably applied a filter you didn't expect.\nRunning with --debug will show why files are being skipped.");
    }
    exit_code(out.matched, a.quiet, msgs.errored)
}

/// The walk of the roots (`skip`'s haystacks left out); None when it cannot be built, said on `msgs`.
fn haystacks(
    a: &RgArgs,
    paths: &[PathBuf],
    implicit: bool,
    (cwd, skip): (&Path, Option<Skip>),
    parallel: bool,
    msgs: &mut Messages<'_>,
) -> Option<Box<dyn Iterator<Item = Event> + Send>> {
    match events(a, paths, implicit, cwd, parallel) {
        Ok(w) => Some(without_skipped(w, skip, cwd)),
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

/// `--files`: the path of every haystack the walk yields, as ripgrep's path printer writes it without
/// colour (the path's bytes and a newline); with -q, none, and the walk stops at the first. Whether
/// there was one.
fn list_files(
    a: &RgArgs,
    walk: Box<dyn Iterator<Item = Event> + Send>,
    mut out: Output<'_>,
    cancel: Option<&AtomicBool>,
    msgs: &mut Messages<'_>,
) -> bool {
    let mut matched = false;
    for e in walk {
        if cancel.is_some_and(|c| c.load(Ordering::Relaxed)) || out.broken {
            break;
        }
        match e {
            Event::Error(e) => out.error(msgs, e),
            Event::Warning(e) => out.warn(msgs, e),
            Event::Hay(h) => {
                matched = true;
                if a.quiet {
                    break;
                }
                out.emit(&path_bytes(&h.path));
                out.emit(b"\n");
            }
        }
    }
    out.flush();
    matched
}

/// The printer of a search mode (-q: the quiet summary, whatever the mode).
fn printer(mode: Mode, quiet: bool, heading: bool) -> Printer {
    match mode {
        _ if quiet => Printer::Summary(SummaryKind::Quiet),
        Mode::FilesWithMatches => Printer::Summary(SummaryKind::PathWithMatch),
        Mode::FilesWithoutMatch => Printer::Summary(SummaryKind::PathWithoutMatch),
        Mode::Count => Printer::Summary(SummaryKind::Count),
        Mode::CountMatches => Printer::Summary(SummaryKind::CountMatches),
        Mode::Json => Printer::Json,
        _ => Printer::Standard { heading },
    }
}

/// `--json`'s last line: the stats and the time taken, keys sorted as ripgrep's serde_json keeps them
/// (ours preserves insertion order).
fn json_summary(stats: &grep_printer::Stats, elapsed: std::time::Duration) -> String {
    let summary = serde_json::json!({
        "type": "summary",
        "data": {
            "stats": stats,
            "elapsed_total": {"secs": elapsed.as_secs(), "nanos": elapsed.subsec_nanos(), "human": format!("{:0.6}s", elapsed.as_secs_f64())},
        }
    });
    format!("{}\n", sorted_keys(summary))
}

fn cancelled(plan: &Plan<'_>) -> bool {
    plan.cancel.is_some_and(|c| c.load(Ordering::Relaxed))
}

/// Walks and searches on this thread, one file after the other (ripgrep's single-threaded search); one
/// printer serves every file (the standard printer places the separators between files itself) and its
/// buffer goes to stdout whenever it holds a block. With -q it stops after the first match.
fn search_sequential(
    plan: &Plan<'_>,
    mut searcher: Searcher,
    walk: Box<dyn Iterator<Item = Event> + Send>,
    file_separator: &Option<Vec<u8>>,
    out: &mut Output<'_>,
    msgs: &mut Messages<'_>,
) {
    let mut printer = FilePrinter::new(plan, file_separator.clone());
    for e in walk {
        if cancelled(plan) || out.broken || out.full {
            break;
        }
        // (message, whether it is an error)
        let note = match e {
            Event::Error(e) => Some((e, true)),
            Event::Warning(e) => Some((e, false)),
            Event::Hay(h) => {
                let r = search_file(plan, plan.matcher, &mut searcher, &h, &mut printer);
                let stop = plan.a.quiet && matches!(r, Ok((true, _)));
                let error = out.result(r, &h).map(|e| (e, true));
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

/// What a search thread hands back for one batch.
struct BatchDone {
    /// The outputs of the batch's files in order, `between` placed between two non-empty ones.
    out: Vec<u8>,
    /// Walk and search errors (true) and warnings (false), in order, each with the length `out` had when
    /// it happened.
    errors: Vec<(usize, String, bool)>,
    matched: bool,
    searched: bool,
    stats: grep_printer::Stats,
    /// A file's output reached [`Io::max_output`]: the run ends after this batch.
    full: bool,
}

/// Walks on this thread (in path order) while `threads` threads search what it finds. The walk is cut
/// into numbered batches of consecutive events and queued; while more than [`AHEAD`] batches per search
/// thread wait, this thread searches the oldest itself rather than walk further ahead, and once the
/// walk is done it searches what is left. Between batches it writes every batch done whose
/// predecessors are all written, so the output is the same as one thread's whatever the timing.
///
/// What it costs: the walk (a third of a search's time on a source tree) is the one step no other thread
/// can do, so this thread does little else while the search threads keep up; it takes finished batches
/// off a channel between batches, never woken for each (a separate writer thread and a search thread
/// woken for every single-file batch made thousands of futex waits a run, ripgrep a few dozen).
fn search_parallel(
    plan: &Plan<'_>,
    searcher: Searcher,
    walk: Box<dyn Iterator<Item = Event> + Send>,
    threads: usize,
    out: &mut Output<'_>,
    msgs: &mut Messages<'_>,
) {
    let queue = WorkQueue::default();
    let (done_tx, done_rx) = std::sync::mpsc::channel::<(usize, BatchDone)>();
    let stop = AtomicBool::new(false);
    let spare: std::sync::Mutex<Vec<Vec<u8>>> = std::sync::Mutex::new(Vec::new());
    let between = out.between.clone();
    let shared = Shared { plan, queue: &queue, stop: &stop, spare: &spare, between: &between };
    let sh = &shared;
    std::thread::scope(|scope| {
        for _ in 0..threads {
            let done_tx = done_tx.clone();
            let searcher = searcher.clone();
            scope.spawn(move || {
                let mut worker = Worker::new(plan, searcher);
                while let Some((index, batch)) = sh.queue.pop() {
                    if let Some(done) = worker.search(sh, batch) {
                        if done_tx.send((index, done)).is_err() {
                            sh.stop.store(true, Ordering::Relaxed);
                        }
                    }
                }
            });
        }
        drop(done_tx);
        let mut writer = InOrder { done_rx, pending: std::collections::BTreeMap::new(), next: 0 };
        feed(sh, walk, threads, Worker::new(plan, searcher), &mut writer, out, msgs);
        // the walk and this thread's searches are done: write the rest as the search threads finish it
        writer.finish(sh, out, msgs);
    });
}

/// What the walker and the search threads of one parallel search share.
struct Shared<'s, 'a> {
    plan: &'s Plan<'a>,
    queue: &'s WorkQueue,
    /// Set when the output stops (stdout gone, the caller's buffer full): no more walking or searching.
    stop: &'s AtomicBool,
    /// Output buffers written out, for the search threads to fill again.
    spare: &'s std::sync::Mutex<Vec<Vec<u8>>>,
    /// Between two non-empty outputs ([`Output::between`]).
    between: &'s Option<Vec<u8>>,
}

/// The batches cut by the walker and not yet taken by a thread, oldest first.
#[derive(Default)]
struct WorkQueue {
    state: std::sync::Mutex<WorkState>,
    /// Signalled when a batch is queued (and a thread waits) or the walk ends.
    ready: std::sync::Condvar,
    /// How many batches are queued, for the walker to look at without the lock.
    len: std::sync::atomic::AtomicUsize,
}

#[derive(Default)]
struct WorkState {
    batches: std::collections::VecDeque<(usize, Vec<Event>)>,
    /// The walk has ended: nothing more will be queued.
    closed: bool,
    /// Search threads waiting for a batch.
    waiting: usize,
}

impl WorkQueue {
    fn state(&self) -> std::sync::MutexGuard<'_, WorkState> {
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn push(&self, job: (usize, Vec<Event>)) {
        let mut s = self.state();
        s.batches.push_back(job);
        self.len.store(s.batches.len(), Ordering::Relaxed);
        if s.waiting > 0 {
            self.ready.notify_one();
        }
    }

    /// The walk has ended: a thread waiting for a batch that will not come gets none.
    fn close(&self) {
        self.state().closed = true;
        self.ready.notify_all();
    }

    /// The oldest batch, waiting for one while the walk goes on (`wait`); None when there is none (and,
    /// waiting, the walk has ended).
    fn pop_or(&self, wait: bool) -> Option<(usize, Vec<Event>)> {
        let mut s = self.state();
        loop {
            if let Some(job) = s.batches.pop_front() {
                self.len.store(s.batches.len(), Ordering::Relaxed);
                return Some(job);
            }
            if s.closed || !wait {
                return None;
            }
            s.waiting += 1;
            s = self.ready.wait(s).unwrap_or_else(std::sync::PoisonError::into_inner);
            s.waiting -= 1;
        }
    }

    fn pop(&self) -> Option<(usize, Vec<Event>)> {
        self.pop_or(true)
    }

    fn len(&self) -> usize {
        self.len.load(Ordering::Relaxed)
    }
}

/// A thread's own matcher (a clone: a shared one's cache pool is slow off its owner thread), searcher
/// and printer, made once and used for every batch the thread searches.
struct Worker {
    matcher: RegexMatcher,
    searcher: Searcher,
    printer: FilePrinter,
}

impl Worker {
    fn new(plan: &Plan<'_>, searcher: Searcher) -> Worker {
        Worker { matcher: plan.matcher.clone(), searcher, printer: FilePrinter::new(plan, None) }
    }

    /// Searches a batch taken from the queue, its output in the batch's; None once the output has
    /// stopped (the batch is only taken off the queue, so that nothing waits on it).
    fn search(&mut self, sh: &Shared<'_, '_>, batch: Vec<Event>) -> Option<BatchDone> {
        if sh.stop.load(Ordering::Relaxed) {
            return None;
        }
        let mut done =
            search_batch(sh.plan, &self.matcher, &mut self.searcher, &mut self.printer, batch, sh.between, sh.stop);
        let fresh = sh.spare.lock().ok().and_then(|mut s| s.pop()).unwrap_or_default();
        done.out = std::mem::replace(self.printer.buf(), fresh);
        Some(done)
    }
}

/// The walker of a parallel search, also a searcher and the writer: queues the walk's events in numbered
/// batches (a batch goes out when it holds [`BATCH`] events, or [`FIRST_BATCH`] while fewer than
/// `searchers` are queued); searches the oldest queued batch itself whenever more than [`AHEAD`] per
/// search thread were queued, then what is left once the walk is done; writes what is done after each batch it queues.
/// Stops walking at a cancel or when the output stops; the queue is closed on every way out.
fn feed(
    sh: &Shared<'_, '_>,
    walk: Box<dyn Iterator<Item = Event> + Send>,
    searchers: usize,
    mut worker: Worker,
    writer: &mut InOrder,
    out: &mut Output<'_>,
    msgs: &mut Messages<'_>,
) {
    let mut index = 0;
    let mut batch = Vec::new();
    for e in walk {
        if sh.stop.load(Ordering::Relaxed) || cancelled(sh.plan) {
            // (what was cut so far is not searched)
            batch.clear();
            break;
        }
        batch.push(e);
        let queued = sh.queue.len();
        if batch.len() >= BATCH || (queued < searchers && batch.len() >= FIRST_BATCH) {
            sh.queue.push((index, std::mem::take(&mut batch)));
            index += 1;
            if queued > searchers * AHEAD {
                // the search threads are far behind: search rather than walk further ahead
                if let Some((i, job)) = sh.queue.pop_or(false) {
                    if let Some(done) = worker.search(sh, job) {
                        writer.add(sh, i, done, out, msgs);
                    }
                }
            }
            writer.take_done(sh, out, msgs);
        }
    }
    if !batch.is_empty() {
        sh.queue.push((index, batch));
    }
    sh.queue.close();
    while let Some((i, job)) = sh.queue.pop_or(false) {
        if let Some(done) = worker.search(sh, job) {
            writer.add(sh, i, done, out, msgs);
        }
        writer.take_done(sh, out, msgs);
    }
}

/// Searches one batch's haystacks into `printer`'s buffer (taken out by the caller as the batch's
/// output), `between` placed between two files that printed; its walk errors and warnings, and each
/// search error after what its file printed. A file whose output fills the caller's buffer sets `stop`.
fn search_batch(
    plan: &Plan<'_>,
    matcher: &RegexMatcher,
    searcher: &mut Searcher,
    printer: &mut FilePrinter,
    batch: Vec<Event>,
    between: &Option<Vec<u8>>,
    stop: &AtomicBool,
) -> BatchDone {
    let mut done = BatchDone {
        out: Vec::new(),
        errors: Vec::new(),
        matched: false,
        searched: false,
        stats: grep_printer::Stats::new(),
        full: false,
    };
    for e in batch {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        let h = match e {
            Event::Error(e) => {
                done.errors.push((printer.buf().len(), e, true));
                continue;
            }
            Event::Warning(e) => {
                done.errors.push((printer.buf().len(), e, false));
                continue;
            }
            Event::Hay(h) => h,
        };
        let start = printer.buf().len();
        let r = search_file(plan, matcher, searcher, &h, printer);
        done.searched = true;
        match r {
            Ok((m, s)) => {
                done.matched |= m;
                if let Some(s) = s {
                    done.stats += &s;
                }
            }
            Err(e) if output_full(&e) => {
                done.full = true;
                done.matched = true;
                stop.store(true, Ordering::Relaxed);
            }
            Err(e) => done.errors.push((usize::MAX, format!("{}: {e}", h.path.display()), true)),
        }
        let buf = printer.buf();
        if let (Some(sep), true) = (between, start > 0 && buf.len() > start) {
            buf.splice(start..start, sep.iter().copied().chain([b'\n']));
        }
        // a search error comes after what the file printed
        let end = buf.len();
        if let Some(last) = done.errors.last_mut().filter(|(at, _, _)| *at == usize::MAX) {
            last.0 = end;
        }
    }
    done
}

/// Writes the batches to `out` in walk order as they are done (they come in any order: each once all
/// before it are), giving their buffers back for the search threads to fill again; when stdout is gone
/// or the caller's buffer is full, sets `stop` (the walk and the searches stop at their next step).
struct InOrder {
    /// Batches the search threads have done.
    done_rx: std::sync::mpsc::Receiver<(usize, BatchDone)>,
    /// Batches done and not yet written (one before them is not done).
    pending: std::collections::BTreeMap<usize, BatchDone>,
    /// The batch to write next.
    next: usize,
}

impl InOrder {
    fn add(
        &mut self,
        sh: &Shared<'_, '_>,
        index: usize,
        done: BatchDone,
        out: &mut Output<'_>,
        msgs: &mut Messages<'_>,
    ) {
        if out.broken || out.full {
            return;
        }
        self.pending.insert(index, done);
        while let Some(mut done) = self.pending.remove(&self.next) {
            self.next += 1;
            out.batch(msgs, &done);
            out.full |= done.full;
            done.out.clear();
            if let Ok(mut s) = sh.spare.lock() {
                s.push(done.out);
            }
            if out.broken || out.full {
                sh.stop.store(true, Ordering::Relaxed);
                return;
            }
        }
    }

    /// Writes what the search threads have done so far (without waiting).
    fn take_done(&mut self, sh: &Shared<'_, '_>, out: &mut Output<'_>, msgs: &mut Messages<'_>) {
        while let Ok((index, done)) = self.done_rx.try_recv() {
            self.add(sh, index, done, out, msgs);
        }
    }

    /// Writes the rest, as the search threads finish it.
    fn finish(mut self, sh: &Shared<'_, '_>, out: &mut Output<'_>, msgs: &mut Messages<'_>) {
        while let Ok((index, done)) = self.done_rx.recv() {
            self.add(sh, index, done, out, msgs);
        }
    }
}

/// Which printer a search uses.
#[derive(Clone, Copy)]
enum Printer {
    Standard { heading: bool },
    Summary(SummaryKind),
    Json,
}

/// What every file's search shares.
struct Plan<'a> {
    a: &'a RgArgs,
    matcher: &'a RegexMatcher,
    kind: Printer,
    with_filename: bool,
    mmap_like: bool,
    cancel: Option<&'a AtomicBool>,
    max_output: Option<usize>,
}

/// A search thread's printer, made once and used for every file it searches (each file's output is
/// taken out of its buffer afterwards).
enum FilePrinter {
    Standard(grep_printer::Standard<NoColor<CapBuf>>),
    Summary(grep_printer::Summary<NoColor<CapBuf>>),
    Json(grep_printer::JSON<NoColor<CapBuf>>),
}

impl FilePrinter {
    /// `separator`: the standard printer's separator between files (one thread only).
    fn new(plan: &Plan<'_>, separator: Option<Vec<u8>>) -> FilePrinter {
        let a = plan.a;
        let w = NoColor::new(CapBuf { bytes: Vec::new(), cap: plan.max_output.unwrap_or(usize::MAX) });
        match plan.kind {
            Printer::Standard { heading } => {
                FilePrinter::Standard(standard_builder(plan, heading).separator_search(separator).build(w))
            }
            Printer::Summary(kind) => FilePrinter::Summary(
                SummaryBuilder::new()
                    .exclude_zero(!a.include_zero)
                    .kind(kind)
                    .max_matches(a.max_count)
                    .path(plan.with_filename)
                    .separator_field(b":".to_vec())
                    .build(w),
            ),
            Printer::Json => FilePrinter::Json(
                JSONBuilder::new().pretty(false).max_matches(a.max_count).always_begin_end(false).build(w),
            ),
        }
    }

    /// What was printed and not yet taken out (the printer keeps its own count of bytes ever written,
    /// so emptying this does not change where it puts separators).
    fn buf(&mut self) -> &mut Vec<u8> {
        match self {
            FilePrinter::Standard(p) => &mut p.get_mut().get_mut().bytes,
            FilePrinter::Summary(p) => &mut p.get_mut().get_mut().bytes,
            FilePrinter::Json(p) => &mut p.get_mut().get_mut().bytes,
        }
    }
}

fn standard_builder(plan: &Plan<'_>, heading: bool) -> StandardBuilder {
    let a = plan.a;
    let mut b = StandardBuilder::new();
    b.heading(heading)
        .max_columns_preview(a.max_columns_preview)
        .max_columns(a.max_columns)
        .max_matches(a.max_count)
        .only_matching(a.only_matching)
        .path(plan.with_filename)
        .per_match_one_line(true)
        .separator_context(b"--".to_vec().into())
        .separator_field_context(b"-".to_vec())
        .separator_field_match(b":".to_vec());
    b
}

/// Searches one file with this thread's matcher, searcher and printer (the output stays in the
/// printer's buffer).
fn search_file(
    plan: &Plan<'_>,
    matcher: &RegexMatcher,
    searcher: &mut Searcher,
    h: &Haystack,
    printer: &mut FilePrinter,
) -> std::io::Result<(bool, Option<grep_printer::Stats>)> {
    let a = plan.a;
    searcher.set_binary_detection(match (a.text, h.explicit) {
        (true, _) => BinaryDetection::none(),
        (false, true) => BinaryDetection::convert(b'\x00'),
        (false, false) => BinaryDetection::quit(b'\x00'),
    });
    (|| -> std::io::Result<(bool, Option<grep_printer::Stats>)> {
        let mut input: Box<dyn SearchInput> = if plan.mmap_like && h.explicit {
            let mut bytes = Vec::new();
            Cancellable { inner: std::fs::File::open(&h.path)?, cancel: plan.cancel }.read_to_end(&mut bytes)?;
            if bytes.is_empty() {
                Box::new(ReaderInput(Box::new(std::io::empty())))
            } else {
                Box::new(SliceInput(bytes))
            }
        } else {
            Box::new(ReaderInput(Box::new(Cancellable { inner: std::fs::File::open(&h.path)?, cancel: plan.cancel })))
        };
        let m = matcher;
        match printer {
            FilePrinter::Summary(p) => {
                let mut sink = p.sink_with_path(m, &h.path);
                input.search(searcher, m, &mut sink)?;
                Ok((sink.has_match(), None))
            }
            FilePrinter::Json(p) => {
                let mut sink = p.sink_with_path(m, &h.path);
                input.search(searcher, m, &mut sink)?;
                Ok((sink.has_match(), Some(sink.stats().clone())))
            }
            FilePrinter::Standard(p) => {
                let mut sink = p.sink_with_path(m, &h.path);
                input.search(searcher, m, &mut sink)?;
                Ok((sink.has_match(), None))
            }
        }
    })()
}

/// The value with every object's keys in sorted order (how ripgrep's own serde_json prints them).
fn sorted_keys(v: serde_json::Value) -> serde_json::Value {
    match v {
        serde_json::Value::Object(m) => {
            let mut entries: Vec<_> = m.into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            serde_json::Value::Object(entries.into_iter().map(|(k, v)| (k, sorted_keys(v))).collect())
        }
        serde_json::Value::Array(a) => serde_json::Value::Array(a.into_iter().map(sorted_keys).collect()),
        other => other,
    }
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

/// A file's bytes, searched as a reader or (ripgrep's memory-map case) as one slice.
trait SearchInput {
    fn search(&mut self, s: &mut Searcher, m: &RegexMatcher, sink: &mut dyn DynSink) -> std::io::Result<()>;
}

/// Object-safe view of a [`Sink`] (the printers' sinks are distinct types).
trait DynSink {
    fn search_reader(&mut self, s: &mut Searcher, m: &RegexMatcher, r: &mut dyn Read) -> std::io::Result<()>;
    fn search_slice(&mut self, s: &mut Searcher, m: &RegexMatcher, bytes: &[u8]) -> std::io::Result<()>;
}

impl<S: Sink> DynSink for S
where
    S::Error: Into<std::io::Error>,
{
    fn search_reader(&mut self, s: &mut Searcher, m: &RegexMatcher, r: &mut dyn Read) -> std::io::Result<()> {
        s.search_reader(m, r, self).map_err(Into::into)
    }
    fn search_slice(&mut self, s: &mut Searcher, m: &RegexMatcher, bytes: &[u8]) -> std::io::Result<()> {
        s.search_slice(m, bytes, self).map_err(Into::into)
    }
}

struct ReaderInput<'a>(Box<dyn Read + 'a>);
struct SliceInput(Vec<u8>);

impl SearchInput for ReaderInput<'_> {
    fn search(&mut self, s: &mut Searcher, m: &RegexMatcher, sink: &mut dyn DynSink) -> std::io::Result<()> {
        sink.search_reader(s, m, &mut self.0)
    }
}

impl SearchInput for SliceInput {
    fn search(&mut self, s: &mut Searcher, m: &RegexMatcher, sink: &mut dyn DynSink) -> std::io::Result<()> {
        sink.search_slice(s, m, &self.0)
    }
}

/// Parses `argv` (after the program name) and runs; parse errors are reported like ripgrep's.
pub fn main_with(argv: &[std::ffi::OsString], io: &mut Io<'_>) -> u8 {
    match args::parse(argv) {
        Ok(a) => run(&a, io),
        Err(e) => {
            let _ = writeln!(io.stderr, "rg: {e}");
            EXIT_ERROR
        }
    }
}

/// The engine as a command on the process's own stdio and cwd: what `probelab rg`, the `probelab-rg`
/// binary and the probelab binary started as `rg` all run. Returns ripgrep's exit status.
pub fn main_stdio(argv: &[std::ffi::OsString]) -> u8 {
    use std::io::IsTerminal;
    let stdout = std::io::stdout();
    let stderr = std::io::stderr();
    let mut out = stdout.lock();
    let mut err = stderr.lock();
    let a = match args::parse(argv) {
        Ok(a) => a,
        Err(e) => {
            let _ = writeln!(err, "rg: {e}");
            return EXIT_ERROR;
        }
    };
    let cwd = match current_dir() {
        Ok(cwd) => cwd,
        Err(e) => {
            let _ = writeln!(err, "rg: failed to get current working directory: {e}\ndid your CWD get deleted?");
            return EXIT_ERROR;
        }
    };
    let mut io = Io {
        stdout_is_terminal: std::io::stdout().is_terminal(),
        stdout: &mut out,
        stderr: &mut err,
        cwd,
        cancel: None,
        skip: None,
        max_output: None,
    };
    run(&a, &mut io)
}

/// The process's cwd as ripgrep 14.1.1 finds it: `getcwd`, else a non-empty `$PWD`, else `getcwd`'s
/// error (a deleted cwd: the search is refused, not run against an empty path).
fn current_dir() -> std::io::Result<PathBuf> {
    std::env::current_dir().or_else(|e| std::env::var_os("PWD").filter(|p| !p.is_empty()).map(PathBuf::from).ok_or(e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;
    use std::rc::Rc;

    /// A writer shared by stdout and stderr, to see how the two interleave.
    #[derive(Clone, Default)]
    struct Shared(Rc<RefCell<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.borrow_mut().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// Searches `dir` (given as the path); returns (exit, stdout, stderr, both on one writer).
    fn rg(dir: &Path, argv: &[&str]) -> (u8, Vec<u8>, Vec<u8>, Vec<u8>) {
        let mut v: Vec<std::ffi::OsString> = argv.iter().map(std::ffi::OsString::from).collect();
        v.push(dir.into());
        let a = args::parse(&v).unwrap_or_else(|e| panic!("{e}"));
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let code = run(
            &a,
            &mut Io {
                stdout: &mut out,
                stderr: &mut err,
                stdout_is_terminal: false,
                cwd: dir.into(),
                cancel: None,
                skip: None,
                max_output: None,
            },
        );
        let both = Shared::default();
        let (mut o, mut e) = (both.clone(), both.clone());
        let code2 = run(
            &a,
            &mut Io {
                stdout: &mut o,
                stderr: &mut e,
                stdout_is_terminal: false,
                cwd: dir.into(),
                cancel: None,
                skip: None,
                max_output: None,
            },
        );
        assert_eq!(code, code2);
        let both = both.0.borrow().clone();
        (code, out, err, both)
    }

    /// 600 files in 12 directories: matches, misses, binary files, and a bad glob in one .gitignore
    /// half-way through the walk.
    fn corpus() -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        std::fs::create_dir(d.path().join(".git")).unwrap_or_else(|e| panic!("{e}"));
        for i in 0..600 {
            let dir = d.path().join(format!("d{:02}", i % 12));
            std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
            let mut text = String::new();
            for j in 0..(i * 7 % 40) {
                text.push_str(match (i + j) % 5 {
                    0 => "a needle here\n",
                    1 => "NEEDLE twice needle\n",
                    _ => "nothing to see\n",
                });
            }
            if i % 29 == 0 {
                text.push('\0');
            }
            std::fs::write(dir.join(format!("f{i:03}.txt")), text).unwrap_or_else(|e| panic!("{e}"));
        }
        std::fs::write(d.path().join("d06/.gitignore"), "[\n*.skip\n").unwrap_or_else(|e| panic!("{e}"));
        d
    }

    #[test]
    fn output_is_in_path_order_and_the_same_on_every_run() {
        let d = corpus();
        let cases: &[&[&str]] = &[
            &["needle"],
            &["-i", "needle"],
            &["-n", "-C", "1", "needle"],
            &["--heading", "-o", "needle"],
            &["-c", "needle"],
            &["-l", "needle"],
            &["--files-without-match", "needle"],
            &["--json", "-m", "2", "needle"],
            &["--files"],
            &["-v", "-A", "2", "x"],
        ];
        let zero_times = regex::Regex::new(r#""(secs|nanos|human)":[^,}]*"#).unwrap_or_else(|e| panic!("{e}"));
        let norm = |b: &[u8]| zero_times.replace_all(&String::from_utf8_lossy(b), "$1").into_owned();
        for argv in cases {
            let first = rg(d.path(), argv);
            assert!(!first.1.is_empty(), "{argv:?}: no output");
            assert!(
                String::from_utf8_lossy(&first.2).contains("d06/.gitignore: line 1: error parsing glob '['"),
                "{argv:?}: {}",
                String::from_utf8_lossy(&first.2)
            );
            for _ in 0..4 {
                let again = rg(d.path(), argv);
                assert_eq!(first.0, again.0, "{argv:?}: exit");
                assert_eq!(norm(&first.1), norm(&again.1), "{argv:?}: stdout");
                assert_eq!(first.2, again.2, "{argv:?}: stderr");
                assert_eq!(norm(&first.3), norm(&again.3), "{argv:?}: stdout and stderr together");
            }
            // the same as one thread walking in path order (ripgrep's --sort path)
            let sorted: Vec<&str> = ["--sort", "path"].iter().chain(argv.iter()).copied().collect();
            let one = rg(d.path(), &sorted);
            assert_eq!((first.0, norm(&first.1), &first.2), (one.0, norm(&one.1), &one.2), "{argv:?} vs --sort path");
            assert_eq!(norm(&first.3), norm(&one.3), "{argv:?} vs --sort path, together");
            // more search threads than cores: the same again
            let three: Vec<&str> = ["-j3"].iter().chain(argv.iter()).copied().collect();
            let three = rg(d.path(), &three);
            assert_eq!((first.0, norm(&first.1), &first.2), (three.0, norm(&three.1), &three.2), "{argv:?} vs -j3");
            assert_eq!(norm(&first.3), norm(&three.3), "{argv:?} vs -j3, together");
        }
    }

    #[test]
    fn max_output_cuts_the_output_and_stops_the_search_without_an_error() {
        let d = corpus();
        let big = d.path().join("big.log");
        std::fs::write(&big, "needle in a line\n".repeat(200_000)).unwrap_or_else(|e| panic!("{e}"));
        let run_capped = |argv: &[&str], path: &Path, cap: Option<usize>| {
            let mut v: Vec<std::ffi::OsString> = argv.iter().map(std::ffi::OsString::from).collect();
            v.push(path.into());
            let a = args::parse(&v).unwrap_or_else(|e| panic!("{e}"));
            let (mut out, mut err) = (Vec::new(), Vec::new());
            let io = &mut Io {
                stdout: &mut out,
                stderr: &mut err,
                stdout_is_terminal: false,
                cwd: d.path().into(),
                cancel: None,
                skip: None,
                max_output: cap,
            };
            let code = run(&a, io);
            (code, out, err)
        };
        for (argv, path) in [(&["--json", "needle"][..], big.as_path()), (&["-n", "needle"][..], d.path())] {
            let (_, whole, _) = run_capped(argv, path, None);
            let (code, cut, err) = run_capped(argv, path, Some(100_000));
            assert_eq!(cut.len(), 100_000, "{argv:?}");
            assert_eq!(cut[..], whole[..100_000], "{argv:?}: the first bytes of the whole output");
            assert_eq!(code, 0, "{argv:?}");
            assert!(
                !String::from_utf8_lossy(&err).contains("buffer"),
                "{argv:?}: no error: {}",
                String::from_utf8_lossy(&err)
            );
        }
    }

    #[cfg(unix)]
    #[test]
    fn a_broken_link_is_worded_as_ripgreps_walker_words_it() {
        let d = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(d.path().join("a.txt"), "needle\n").unwrap_or_else(|e| panic!("{e}"));
        std::os::unix::fs::symlink("/nonexistent/x", d.path().join("b.txt")).unwrap_or_else(|e| panic!("{e}"));
        let parallel = std::thread::available_parallelism().map_or(1, |n| n.get()) > 1;
        let (code, out, err, _) = rg(d.path(), &["-L", "needle"]);
        let (a, b) = (d.path().join("a.txt"), d.path().join("b.txt"));
        assert_eq!((code, String::from_utf8_lossy(&out)), (EXIT_ERROR, format!("{}:needle\n", a.display()).into()));
        if parallel {
            assert_eq!(
                String::from_utf8_lossy(&err),
                format!("rg: {}: No such file or directory (os error 2)\n", b.display())
            );
        }
        // -j2: ripgrep's parallel walker's wording on any number of cores
        let (_, _, err, _) = rg(d.path(), &["-j2", "-L", "needle"]);
        assert_eq!(
            String::from_utf8_lossy(&err),
            format!("rg: {}: No such file or directory (os error 2)\n", b.display())
        );
        // one thread (sorted, or -j1): ripgrep's sequential walker, which words it otherwise
        for one in [&["--sort", "path", "-L", "needle"][..], &["-j1", "-L", "needle"]] {
            let (_, _, err, _) = rg(d.path(), one);
            assert_eq!(
                String::from_utf8_lossy(&err),
                format!(
                    "rg: {b}: IO error for operation on {b}: No such file or directory (os error 2)\n",
                    b = b.display()
                ),
                "{one:?}"
            );
        }
    }
}
