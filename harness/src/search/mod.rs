//! The search engine: ripgrep's behaviour (GREP-4: the reference's Grep runs ripgrep 14.1.1) rebuilt on
//! the crates ripgrep is made of, pinned to the versions ripgrep 14.1.1 locks — grep-regex,
//! grep-searcher, grep-printer, ignore, globset — and configured the way ripgrep configures them
//! (`crates/core/flags/hiargs.rs` of 14.1.1), so the same flags give the same bytes and exit code.
//! `probelab rg` is this engine as a command; the Grep tool calls it in process.
//!
//! Decisions where ripgrep is not deterministic: the walk is always single-threaded in path order
//! (ripgrep orders results only with `--sort path`; with it the two agree byte for byte). Colour is never
//! used. Memory maps are not used (no `unsafe`); where ripgrep would map a few explicit files, the file is
//! read whole and searched as a slice, which is what ripgrep's map amounts to.

pub mod args;

use args::{Case, Mode, RgArgs, SortKind, TypeChange};
use grep_printer::{JSONBuilder, PathPrinterBuilder, StandardBuilder, SummaryBuilder, SummaryKind};
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
}

struct Messages<'a, 'b> {
    io: &'b mut Io<'a>,
    errored: bool,
    quiet: bool,
}

impl Messages<'_, '_> {
    fn error(&mut self, msg: impl std::fmt::Display) {
        self.errored = true;
        if !self.quiet {
            let _ = writeln!(self.io.stderr, "rg: {msg}");
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
        b.sort_by_file_name(|x, y| x.cmp(y));
    }
    Ok(b)
}

/// One thing to search, as ripgrep's haystack: a walk entry that is a file, or a path given explicitly.
struct Haystack {
    path: PathBuf,
    explicit: bool,
}

fn haystacks(
    a: &RgArgs,
    paths: &[PathBuf],
    strip_dot: bool,
    cwd: &Path,
    msgs: &mut Messages<'_, '_>,
) -> Result<Vec<Haystack>, String> {
    let mut out = Vec::new();
    for result in walker(a, paths, cwd)?.build() {
        let dent = match result {
            Ok(d) => d,
            Err(e) => {
                msgs.error(e);
                continue;
            }
        };
        let ft = dent.file_type();
        let is_dir = ft.is_some_and(|t| t.is_dir()) || (dent.path_is_symlink() && dent.path().is_dir());
        let explicit = dent.depth() == 0 && !is_dir;
        let is_file = ft.is_some_and(|t| t.is_file());
        if !explicit && !is_file {
            continue;
        }
        let path = dent.path();
        let path = if strip_dot && path.starts_with("./") {
            path.strip_prefix("./").unwrap_or(path).to_path_buf()
        } else {
            path.to_path_buf()
        };
        out.push(Haystack { path, explicit });
    }
    if let Some((kind, reverse)) = a.sort {
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
            SortKind::Path if reverse => out.sort_by(|x, y| y.path.cmp(&x.path)),
            SortKind::Path => {}
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
    }
    Ok(out)
}

/// Runs a search (or `--files`) and returns the exit status.
pub fn run(a: &RgArgs, io: &mut Io<'_>) -> u8 {
    let started = Instant::now();
    let mut msgs = Messages { io, errored: false, quiet: a.no_messages };
    let (paths, implicit) =
        if a.paths.is_empty() { (vec![PathBuf::from("./")], true) } else { (a.paths.clone(), false) };
    let is_one_file = !implicit && paths.len() == 1 && (paths[0] == Path::new("-") || !paths[0].is_dir());
    // ripgrep walks in parallel unless it sorts or searches one file, and its parallel walker words a
    // missing root as `PATH: ERROR`; this engine walks sequentially, so it reports those roots itself.
    let parallel = a.sort.is_none() && !is_one_file && std::thread::available_parallelism().map_or(1, |n| n.get()) > 1;
    let paths: Vec<PathBuf> = if parallel {
        let mut kept = Vec::new();
        for p in paths {
            match std::fs::metadata(&p) {
                Err(e) if p != Path::new("-") => msgs.error(format!("{}: {e}", p.display())),
                _ => kept.push(p),
            }
        }
        kept
    } else {
        paths
    };
    if paths.is_empty() {
        return exit_code(false, a.quiet, msgs.errored);
    }
    let cwd = msgs.io.cwd.clone();
    if a.mode == Mode::Files {
        let list = match haystacks(a, &paths, implicit, &cwd, &mut msgs) {
            Ok(l) => l,
            Err(e) => {
                msgs.error(e);
                return EXIT_ERROR;
            }
        };
        let mut printer = PathPrinterBuilder::new().build(NoColor::new(&mut *msgs.io.stdout));
        let matched = !list.is_empty();
        for h in &list {
            if a.quiet {
                break;
            }
            let _ = printer.write(&h.path);
        }
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
    let list = match haystacks(a, &paths, implicit, &cwd, &mut msgs) {
        Ok(l) => l,
        Err(e) => {
            msgs.error(e);
            return EXIT_ERROR;
        }
    };
    let mode = match a.mode {
        // `-v --count-matches` is `-v --count`; `-o --count` is `--count-matches`
        Mode::CountMatches if a.invert => Mode::Count,
        Mode::Count if a.only_matching => Mode::CountMatches,
        m => m,
    };
    let heading = a.heading.unwrap_or(msgs.io.stdout_is_terminal);
    let with_filename = a.with_filename.unwrap_or(!is_one_file);
    let line_number = a.line_number.unwrap_or(match mode {
        Mode::Json => true,
        Mode::Standard => msgs.io.stdout_is_terminal && !a.quiet,
        _ => false,
    });
    let (before, after) = a.context_lines();
    let file_separator = if mode == Mode::Standard {
        if heading {
            Some(Vec::new())
        } else if before > 0 || after > 0 {
            Some(b"--".to_vec())
        } else {
            None
        }
    } else {
        None
    };
    // ripgrep maps a few explicit files; reading them whole is the same search, but only up to a size
    // (a 1 GB file is streamed instead: the same matches, without 1 GB of memory).
    let mmap_like = !implicit
        && paths.len() <= 10
        && paths.iter().all(|p| p.metadata().is_ok_and(|m| m.is_file() && m.len() <= MAX_SLURP_BYTES));
    let kind = match mode {
        _ if a.quiet => Printer::Summary(SummaryKind::Quiet),
        Mode::FilesWithMatches => Printer::Summary(SummaryKind::PathWithMatch),
        Mode::FilesWithoutMatch => Printer::Summary(SummaryKind::PathWithoutMatch),
        Mode::Count => Printer::Summary(SummaryKind::Count),
        Mode::CountMatches => Printer::Summary(SummaryKind::CountMatches),
        Mode::Json => Printer::Json,
        _ => Printer::Standard { heading },
    };
    let plan = Plan { a, matcher: &matcher, kind, with_filename, mmap_like, cancel: msgs.io.cancel };
    // ripgrep searches on as many threads as there are cores unless it sorts, stops at the first match
    // (-q) or searches one file; the output is the same either way (printed here in path order)
    let threads = if a.quiet || is_one_file || a.sort.is_some() || list.len() < 2 {
        1
    } else {
        std::thread::available_parallelism().map_or(1, |n| n.get()).min(12)
    };
    let results = search_all(&plan, searcher(a, line_number), &list, threads, &file_separator);
    let mut matched = false;
    let mut stats = grep_printer::Stats::new();
    let mut printed = false;
    let mut out_buf = Vec::new();
    for (h, r) in list.iter().zip(results) {
        match r.result {
            Ok((m, s)) => {
                matched |= m;
                if let Some(s) = s {
                    stats += &s;
                }
            }
            Err(e) => msgs.error(format!("{}: {e}", h.path.display())),
        }
        if !r.out.is_empty() {
            // Between two files' outputs: "--" after context, an empty line under headings. On one
            // thread the printer writes it itself (and not before a bare "binary file matches" line);
            // on several, ripgrep's buffer writer puts it between any two non-empty outputs.
            if let (true, true, Some(sep)) = (threads > 1, printed, &file_separator) {
                out_buf.extend_from_slice(sep);
                out_buf.push(b'\n');
            }
            printed = true;
            out_buf.extend_from_slice(&r.out);
        }
    }
    if mode == Mode::Json {
        let elapsed = started.elapsed();
        let summary = serde_json::json!({
            "type": "summary",
            "data": {
                "stats": stats,
                "elapsed_total": {"secs": elapsed.as_secs(), "nanos": elapsed.subsec_nanos(), "human": format!("{:0.6}s", elapsed.as_secs_f64())},
            }
        });
        // ripgrep's serde_json keeps keys sorted; ours preserves insertion order.
        let _ = writeln!(out_buf, "{}", sorted_keys(summary));
    }
    let _ = msgs.io.stdout.write_all(&out_buf);
    if implicit && list.is_empty() {
        msgs.error("No files were searched, which means ripgrep probably applied a filter you didn't expect.\nRunning with --debug will show why files are being skipped.");
    }
    exit_code(matched, a.quiet, msgs.errored)
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
}

/// One file's search: its output (printed alone, separators are added between files), whether it
/// matched, its stats (JSON), or the error that stopped it.
struct FileResult {
    out: Vec<u8>,
    result: std::io::Result<(bool, Option<grep_printer::Stats>)>,
}

/// Searches the haystacks on `threads` threads; results come back in the haystacks' order. One thread
/// with -q stops after the first match.
fn search_all(
    plan: &Plan<'_>,
    searcher: Searcher,
    list: &[Haystack],
    threads: usize,
    file_separator: &Option<Vec<u8>>,
) -> Vec<FileResult> {
    if threads <= 1 {
        let mut searcher = searcher;
        // one standard printer for every file, so it places the separators between files itself
        let mut standard = match plan.kind {
            Printer::Standard { heading } => Some(
                standard_builder(plan, heading)
                    .separator_search(file_separator.clone())
                    .build(NoColor::new(Vec::new())),
            ),
            _ => None,
        };
        let mut out = Vec::with_capacity(list.len());
        for h in list {
            let r = search_file(plan, &mut searcher, h, standard.as_mut());
            let stop = plan.a.quiet && matches!(r.result, Ok((true, _)));
            out.push(r);
            if stop {
                break;
            }
        }
        return out;
    }
    let next = std::sync::atomic::AtomicUsize::new(0);
    let slots: Vec<std::sync::Mutex<Option<FileResult>>> = list.iter().map(|_| std::sync::Mutex::new(None)).collect();
    std::thread::scope(|scope| {
        for _ in 0..threads {
            let mut searcher = searcher.clone();
            let (next, slots) = (&next, &slots);
            scope.spawn(move || loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(h) = list.get(i) else { break };
                let r = search_file(plan, &mut searcher, h, None);
                if let Ok(mut slot) = slots[i].lock() {
                    *slot = Some(r);
                }
            });
        }
    });
    slots
        .into_iter()
        .map(|m| {
            m.into_inner()
                .ok()
                .flatten()
                .unwrap_or(FileResult { out: Vec::new(), result: Err(std::io::Error::other("a search thread failed")) })
        })
        .collect()
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

/// Searches one file. With `standard`, the standard printer shared by the files of a single-threaded
/// run is used (and its output taken out afterwards); otherwise a printer of the plan's kind is made.
fn search_file(
    plan: &Plan<'_>,
    searcher: &mut Searcher,
    h: &Haystack,
    standard: Option<&mut grep_printer::Standard<NoColor<Vec<u8>>>>,
) -> FileResult {
    let a = plan.a;
    searcher.set_binary_detection(match (a.text, h.explicit) {
        (true, _) => BinaryDetection::none(),
        (false, true) => BinaryDetection::convert(b'\x00'),
        (false, false) => BinaryDetection::quit(b'\x00'),
    });
    let mut out = Vec::new();
    let result = (|| -> std::io::Result<(bool, Option<grep_printer::Stats>)> {
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
        let w = NoColor::new(&mut out);
        let m = plan.matcher;
        match plan.kind {
            Printer::Summary(kind) => {
                let mut p = SummaryBuilder::new()
                    .exclude_zero(!a.include_zero)
                    .kind(kind)
                    .max_matches(a.max_count)
                    .path(plan.with_filename)
                    .separator_field(b":".to_vec())
                    .build(w);
                let mut sink = p.sink_with_path(m, &h.path);
                input.search(searcher, m, &mut sink)?;
                Ok((sink.has_match(), None))
            }
            Printer::Json => {
                let mut p = JSONBuilder::new().pretty(false).max_matches(a.max_count).always_begin_end(false).build(w);
                let mut sink = p.sink_with_path(m, &h.path);
                input.search(searcher, m, &mut sink)?;
                Ok((sink.has_match(), Some(sink.stats().clone())))
            }
            Printer::Standard { heading } => match standard {
                Some(p) => {
                    let mut sink = p.sink_with_path(m, &h.path);
                    let r = input.search(searcher, m, &mut sink);
                    let matched = sink.has_match();
                    drop(sink);
                    // take what this file printed out of the shared printer's buffer
                    *w.into_inner() = std::mem::take(p.get_mut().get_mut());
                    r.map(|_| (matched, None))
                }
                None => {
                    let mut p = standard_builder(plan, heading).build(w);
                    let mut sink = p.sink_with_path(m, &h.path);
                    input.search(searcher, m, &mut sink)?;
                    Ok((sink.has_match(), None))
                }
            },
        }
    })();
    FileResult { out, result }
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
