//! The output: ripgrep's printers (standard, summary, JSON) set up as ripgrep sets them up, the buffer
//! each file prints into, stdout written in blocks in walk order, and the messages on stderr, each
//! written after all the output that comes before it.

use crate::args::{Mode, RgArgs};
use crate::walk::{Event, Haystack, Walk};
use grep_printer::{JSONBuilder, StandardBuilder, SummaryBuilder, SummaryKind};
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use termcolor::NoColor;

/// A printer's buffer that holds at most `cap` bytes ([`crate::Io::max_output`]): a write past it keeps what
/// fits and fails with [`OutputFull`], which ends the file's search.
pub(crate) struct CapBuf {
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

/// The error of a write past [`crate::Io::max_output`].
#[derive(Debug)]
struct OutputFull;

impl std::fmt::Display for OutputFull {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the caller's output buffer is full")
    }
}

impl std::error::Error for OutputFull {}

/// Whether a search failed because its output reached [`crate::Io::max_output`].
pub(crate) fn output_full(e: &std::io::Error) -> bool {
    e.get_ref().is_some_and(|i| i.is::<OutputFull>())
}

/// Messages on stderr (`rg: ` and the message), none with `--no-messages`; whether one was an error.
pub(crate) struct Messages<'a> {
    stderr: &'a mut dyn Write,
    /// An error was reported: the exit status says so.
    pub(crate) errored: bool,
    quiet: bool,
}

impl<'a> Messages<'a> {
    /// Messages on `stderr`; `quiet`: none are written (`--no-messages`).
    pub(crate) fn new(stderr: &'a mut dyn Write, quiet: bool) -> Messages<'a> {
        Messages { stderr, errored: false, quiet }
    }

    pub(crate) fn warn(&mut self, msg: impl std::fmt::Display) {
        if !self.quiet {
            let _ = writeln!(self.stderr, "rg: {msg}");
        }
    }

    pub(crate) fn error(&mut self, msg: impl std::fmt::Display) {
        self.errored = true;
        if !self.quiet {
            let _ = writeln!(self.stderr, "rg: {msg}");
        }
    }
}

/// Output is handed to stdout in blocks of at least this many bytes (one write per block, not per file).
pub(crate) const OUT_BLOCK: usize = 64 * 1024;

/// Where the outputs go, in order: stdout (in blocks), the exit status's facts, the JSON stats.
pub(crate) struct Output<'o> {
    stdout: &'o mut dyn Write,
    /// Bytes not yet written (fewer than [`OUT_BLOCK`] between writes).
    buf: Vec<u8>,
    /// What the searches found (the exit status's facts, the JSON stats); its `full` is set too when the
    /// output reached [`crate::Io::max_output`]: the run stops after writing what it has.
    pub(crate) facts: Facts,
    printed: bool,
    /// Set when stdout is gone (a closed pipe): the run stops, as ripgrep does.
    pub(crate) broken: bool,
    /// Bytes the output may still take ([`crate::Io::max_output`]).
    pub(crate) room: usize,
    /// Between two non-empty outputs (several search threads: ripgrep's buffer writer puts it there).
    pub(crate) between: Option<Vec<u8>>,
}

impl<'o> Output<'o> {
    pub(crate) fn new(stdout: &'o mut dyn Write, between: Option<Vec<u8>>) -> Output<'o> {
        Output {
            stdout,
            buf: Vec::with_capacity(OUT_BLOCK),
            facts: Facts::new(),
            printed: false,
            broken: false,
            room: usize::MAX,
            between,
        }
    }

    /// Reports an error on stderr after writing out all output that comes before it, so that stdout and
    /// stderr on one descriptor interleave the same way on every run.
    pub(crate) fn error(&mut self, msgs: &mut Messages<'_>, msg: impl std::fmt::Display) {
        self.flush();
        msgs.error(msg);
    }

    /// [`Output::error`] for a warning (the exit status stays).
    pub(crate) fn warn(&mut self, msgs: &mut Messages<'_>, msg: impl std::fmt::Display) {
        self.flush();
        msgs.warn(msg);
    }

    /// Output of one file (sequential runs: of several, separated by the printer already).
    pub(crate) fn emit(&mut self, bytes: &[u8]) {
        let bytes = if bytes.len() > self.room {
            self.facts.full = true;
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
    pub(crate) fn batch(&mut self, msgs: &mut Messages<'_>, done: &BatchDone) {
        self.facts.absorb(&done.facts);
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

    pub(crate) fn flush(&mut self) {
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

/// `--files`: the path of every haystack the walk yields, as ripgrep's path printer writes it without
/// colour (the path's bytes and a newline); with -q, none, and the walk stops at the first. Whether
/// there was one.
pub(crate) fn list_files(
    a: &RgArgs,
    walk: Walk,
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
pub(crate) fn printer(mode: Mode, quiet: bool, heading: bool) -> Printer {
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
pub(crate) fn json_summary(stats: &grep_printer::Stats, elapsed: std::time::Duration) -> String {
    let summary = serde_json::json!({
        "type": "summary",
        "data": {
            "stats": stats,
            "elapsed_total": {"secs": elapsed.as_secs(), "nanos": elapsed.subsec_nanos(), "human": format!("{:0.6}s", elapsed.as_secs_f64())},
        }
    });
    format!("{}\n", sorted_keys(summary))
}

/// What a search thread hands back for one batch.
pub(crate) struct BatchDone {
    /// The outputs of the batch's files in order, `between` placed between two non-empty ones.
    pub(crate) out: Vec<u8>,
    /// Walk and search errors (true) and warnings (false), in order, each with the length `out` had when
    /// it happened.
    pub(crate) errors: Vec<(usize, String, bool)>,
    /// What its searches found; `full`: a file's output reached [`crate::Io::max_output`], the run ends
    /// after this batch.
    pub(crate) facts: Facts,
}

/// What searches found, for the exit status and the JSON stats: whether a line matched, whether a file
/// was searched, the printers' stats, and whether the caller's buffer is full ([`crate::Io::max_output`]).
/// The sequential run folds each file in ([`Facts::record`]); a search thread folds its batch's files,
/// and the writer the batches ([`Facts::absorb`]).
pub(crate) struct Facts {
    pub(crate) matched: bool,
    pub(crate) searched: bool,
    pub(crate) stats: grep_printer::Stats,
    pub(crate) full: bool,
}

impl Facts {
    pub(crate) fn new() -> Facts {
        Facts { matched: false, searched: false, stats: grep_printer::Stats::new(), full: false }
    }

    /// Folds in one file's search; returns its error, to be reported.
    pub(crate) fn record(
        &mut self,
        r: std::io::Result<(bool, Option<grep_printer::Stats>)>,
        h: &Haystack,
    ) -> Option<String> {
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

    /// Folds in another's facts (a batch's).
    pub(crate) fn absorb(&mut self, other: &Facts) {
        self.matched |= other.matched;
        self.searched |= other.searched;
        self.stats += &other.stats;
        self.full |= other.full;
    }
}

/// Which printer a search uses.
#[derive(Clone, Copy)]
pub(crate) enum Printer {
    Standard { heading: bool },
    Summary(SummaryKind),
    Json,
}

/// A search thread's printer, made once and used for every file it searches (each file's output is
/// taken out of its buffer afterwards).
pub(crate) enum FilePrinter {
    Standard(grep_printer::Standard<NoColor<CapBuf>>),
    Summary(grep_printer::Summary<NoColor<CapBuf>>),
    Json(grep_printer::JSON<NoColor<CapBuf>>),
}

impl FilePrinter {
    /// A printer of this kind for these arguments, paths printed or not (`with_filename`), its output
    /// cut at `max_output` ([`crate::Io::max_output`]); `separator`: the standard printer's separator
    /// between files (one thread only).
    pub(crate) fn new(
        a: &RgArgs,
        kind: Printer,
        with_filename: bool,
        max_output: Option<usize>,
        separator: Option<Vec<u8>>,
    ) -> FilePrinter {
        let w = NoColor::new(CapBuf { bytes: Vec::new(), cap: max_output.unwrap_or(usize::MAX) });
        match kind {
            Printer::Standard { heading } => {
                FilePrinter::Standard(standard_builder(a, heading, with_filename).separator_search(separator).build(w))
            }
            Printer::Summary(kind) => FilePrinter::Summary(
                SummaryBuilder::new()
                    .exclude_zero(!a.include_zero)
                    .kind(kind)
                    .max_matches(a.max_count)
                    .path(with_filename)
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
    pub(crate) fn buf(&mut self) -> &mut Vec<u8> {
        match self {
            FilePrinter::Standard(p) => &mut p.get_mut().get_mut().bytes,
            FilePrinter::Summary(p) => &mut p.get_mut().get_mut().bytes,
            FilePrinter::Json(p) => &mut p.get_mut().get_mut().bytes,
        }
    }
}

/// ripgrep's standard printer for these arguments, without the separator between files.
fn standard_builder(a: &RgArgs, heading: bool, with_filename: bool) -> StandardBuilder {
    let mut b = StandardBuilder::new();
    b.heading(heading)
        .max_columns_preview(a.max_columns_preview)
        .max_columns(a.max_columns)
        .max_matches(a.max_count)
        .only_matching(a.only_matching)
        .path(with_filename)
        .per_match_one_line(true)
        .separator_context(b"--".to_vec().into())
        .separator_field_context(b"-".to_vec())
        .separator_field_match(b":".to_vec());
    b
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
