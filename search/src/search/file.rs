//! One file's search: the matcher and the searcher ripgrep builds for the arguments
//! (`crates/core/flags/hiargs.rs` of 14.1.1), what every file's search shares ([`Plan`]), and the
//! search of one haystack into its printer — read as a stream, or whole (ripgrep's memory map).

use crate::args::{Case, RgArgs};
use crate::print::{FilePrinter, Printer};
use crate::walk::Haystack;
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink};
use std::io::Read;
use std::sync::atomic::{AtomicBool, Ordering};

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

/// The matcher's error with ripgrep's hint of the flag that would allow the pattern.
fn suggest(msg: String) -> String {
    if msg.contains("the literal") && msg.contains("not allowed") {
        return format!("{msg}\n\nConsider enabling multiline mode with the --multiline flag (or -U for short).\nWhen multiline mode is enabled, new line characters can be matched.");
    }
    if msg.contains("pattern contains \"\\0\"") {
        return format!("{msg}\n\nConsider enabling text mode with the --text flag (or -a for short). Otherwise,\nbinary detection is enabled and matching a NUL byte is impossible.");
    }
    msg
}

/// The searcher ripgrep builds for these arguments (binary detection is set per file).
pub(crate) fn searcher(a: &RgArgs, line_number: bool) -> Searcher {
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

/// What every file's search shares.
pub(crate) struct Plan<'a> {
    pub(crate) a: &'a RgArgs,
    pub(crate) matcher: &'a RegexMatcher,
    pub(crate) kind: Printer,
    pub(crate) with_filename: bool,
    pub(crate) mmap_like: bool,
    pub(crate) cancel: Option<&'a AtomicBool>,
    pub(crate) max_output: Option<usize>,
}

impl Plan<'_> {
    /// Whether the caller has cancelled the run (its deadline).
    pub(crate) fn cancelled(&self) -> bool {
        self.cancel.is_some_and(|c| c.load(Ordering::Relaxed))
    }

    /// A printer for one search thread; `separator`: the standard printer's between files (one thread
    /// only).
    pub(crate) fn printer(&self, separator: Option<Vec<u8>>) -> FilePrinter {
        FilePrinter::new(self.a, self.kind, self.with_filename, self.max_output, separator)
    }
}

/// Searches one file with this thread's matcher, searcher and printer (the output stays in the
/// printer's buffer).
pub(crate) fn search_file(
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
