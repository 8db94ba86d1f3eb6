//! The patch format's pure core (PATCH-1): [`parse`] reads a `*** Begin Patch … *** End Patch` text
//! into file operations ([`FileOp`]), [`seek`] locates a chunk's lines at the four levels of
//! [`Level`], and [`apply_chunks`] computes a file's new text. Strings in, strings out: no file is
//! touched here (the tool, `super`, plans and writes).

const BEGIN: &str = "*** Begin Patch";
const END: &str = "*** End Patch";
/// Adds a file.
pub(super) const ADD: &str = "*** Add File: ";
/// Deletes a file.
pub(super) const DELETE: &str = "*** Delete File: ";
/// Updates a file.
pub(super) const UPDATE: &str = "*** Update File: ";
const MOVE: &str = "*** Move to: ";
const EOF_MARK: &str = "*** End of File";

/// One chunk of an Update.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chunk {
    /// The `@@ text` line, if any.
    pub context: Option<String>,
    /// Context and removed lines, in order.
    pub old: Vec<String>,
    /// Context and added lines, in order.
    pub new: Vec<String>,
    /// For each line of `new`: the index in `old` of the context line it repeats (`None`: added).
    pub keep: Vec<Option<usize>>,
    /// Pinned to the end of the file.
    pub eof: bool,
}

/// One file operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileOp {
    /// Create a file with these contents.
    Add {
        /// Path as written.
        path: String,
        /// Contents (each `+` line and a newline).
        contents: String,
    },
    /// Remove a file.
    Delete {
        /// Path as written.
        path: String,
    },
    /// Change a file (and maybe rename it).
    Update {
        /// Path as written.
        path: String,
        /// New path as written.
        move_to: Option<String>,
        /// Chunks, in file order.
        chunks: Vec<Chunk>,
    },
}

/// How a chunk's lines were found (PATCH-1's four fallback levels, in the order tried).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// Exact.
    Exact = 1,
    /// Ignoring trailing whitespace.
    TrimEnd = 2,
    /// Ignoring leading and trailing whitespace.
    Trim = 3,
    /// Trimmed, Unicode punctuation normalised.
    Punctuation = 4,
}

impl Level {
    /// All, in the order tried.
    pub const ALL: [Level; 4] = [Level::Exact, Level::TrimEnd, Level::Trim, Level::Punctuation];

    /// How the result names it.
    pub fn describe(self) -> &'static str {
        match self {
            Level::Exact => "exact",
            Level::TrimEnd => "ignoring trailing whitespace",
            Level::Trim => "ignoring leading and trailing whitespace",
            Level::Punctuation => "with Unicode punctuation normalised",
        }
    }

    fn same(self, a: &str, b: &str) -> bool {
        match self {
            Level::Exact => a == b,
            Level::TrimEnd => a.trim_end() == b.trim_end(),
            Level::Trim => a.trim() == b.trim(),
            Level::Punctuation => normalise(a.trim()) == normalise(b.trim()),
        }
    }
}

/// Unicode punctuation and spaces mapped to their ASCII look-alikes (level 4).
pub fn normalise(s: &str) -> String {
    s.chars()
        .map(|c| match c {
            '\u{2010}'..='\u{2015}' | '\u{2212}' => '-',
            '\u{2018}'..='\u{201B}' => '\'',
            '\u{201C}'..='\u{201F}' => '"',
            '\u{00A0}' | '\u{2002}'..='\u{200A}' | '\u{202F}' | '\u{205F}' | '\u{3000}' => ' ',
            other => other,
        })
        .collect()
}

/// Finds `pattern` in `lines` at or after `start`: the first level that matches anywhere wins, and
/// within a level the first position (the end of the file first when `eof`).
pub fn seek(lines: &[String], pattern: &[String], start: usize, eof: bool) -> Option<(usize, Level)> {
    if pattern.is_empty() {
        return Some((start.min(lines.len()), Level::Exact));
    }
    if pattern.len() > lines.len() {
        return None;
    }
    let last = lines.len() - pattern.len();
    if start > last {
        return None;
    }
    let at = |i: usize, level: Level| pattern.iter().enumerate().all(|(k, p)| level.same(&lines[i + k], p));
    for level in Level::ALL {
        if eof && at(last, level) {
            return Some((last, level));
        }
        if let Some(i) = (start..=last).find(|&i| at(i, level)) {
            return Some((i, level));
        }
    }
    None
}

/// A patch that does not parse: the 1-based line and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    /// Line of the patch text (1-based, after trimming the text).
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

impl std::fmt::Display for ParseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Invalid patch, line {}: {}", self.line, self.message)
    }
}

fn perr(line: usize, message: impl Into<String>) -> ParseError {
    ParseError { line, message: message.into() }
}

fn file_header(line: &str) -> bool {
    let t = line.trim();
    t.starts_with(ADD.trim_end()) || t.starts_with(DELETE.trim_end()) || t.starts_with(UPDATE.trim_end()) || t == END
}

/// Parses a patch into its file operations.
pub fn parse(text: &str) -> Result<Vec<FileOp>, ParseError> {
    let lines: Vec<&str> = text.trim().lines().collect();
    match lines.first() {
        Some(f) if f.trim() == BEGIN => {}
        _ => return Err(perr(1, format!("the first line must be '{BEGIN}'"))),
    }
    if lines.len() < 2 || lines.last().map(|l| l.trim()) != Some(END) {
        return Err(perr(lines.len().max(1), format!("the last line must be '{END}'")));
    }
    let body = &lines[1..lines.len() - 1];
    let mut ops = Vec::new();
    let mut i = 0;
    let n = |i: usize| i + 2; // line number of body[i]
    while i < body.len() {
        let head = body[i].trim();
        if head.is_empty() {
            i += 1;
            continue;
        }
        if let Some(path) = head.strip_prefix(ADD) {
            let path = non_empty(path, n(i))?;
            i += 1;
            let mut contents = String::new();
            while i < body.len() {
                let Some(l) = body[i].strip_prefix('+') else { break };
                contents.push_str(l);
                contents.push('\n');
                i += 1;
            }
            ops.push(FileOp::Add { path, contents });
        } else if let Some(path) = head.strip_prefix(DELETE) {
            ops.push(FileOp::Delete { path: non_empty(path, n(i))? });
            i += 1;
        } else if let Some(path) = head.strip_prefix(UPDATE) {
            let path = non_empty(path, n(i))?;
            let header = n(i);
            i += 1;
            let mut move_to = None;
            if let Some(to) = body.get(i).and_then(|l| l.trim().strip_prefix(MOVE)) {
                move_to = Some(non_empty(to, n(i))?);
                i += 1;
            }
            let mut chunks = Vec::new();
            loop {
                while i < body.len() && body[i].trim().is_empty() {
                    i += 1;
                }
                if i >= body.len() || file_header(body[i]) {
                    break;
                }
                let (chunk, used) = parse_chunk(&body[i..], n(i), chunks.is_empty())?;
                chunks.push(chunk);
                i += used;
            }
            if chunks.is_empty() {
                return Err(perr(header, format!("'*** Update File: {path}' has no chunk")));
            }
            ops.push(FileOp::Update { path, move_to, chunks });
        } else {
            return Err(perr(
                n(i),
                format!(
                    "'{head}' is not a file operation: expected '*** Add File: <path>', '*** Delete File: <path>' or '*** Update File: <path>'"
                ),
            ));
        }
    }
    Ok(ops)
}

fn non_empty(path: &str, line: usize) -> Result<String, ParseError> {
    let p = path.trim();
    if p.is_empty() {
        Err(perr(line, "the path is empty"))
    } else {
        Ok(p.to_string())
    }
}

fn parse_chunk(lines: &[&str], line_no: usize, first: bool) -> Result<(Chunk, usize), ParseError> {
    let mut chunk = Chunk { context: None, old: Vec::new(), new: Vec::new(), keep: Vec::new(), eof: false };
    let mut used = 0;
    let head = lines[0];
    if head.trim_end() == "@@" {
        used = 1;
    } else if let Some(ctx) = head.strip_prefix("@@ ") {
        chunk.context = Some(ctx.to_string());
        used = 1;
    } else if !first {
        return Err(perr(line_no, format!("expected a chunk starting with '@@', got '{head}'")));
    }
    let mut body_lines = 0;
    while used < lines.len() {
        let l = lines[used];
        if l == EOF_MARK || l.trim() == EOF_MARK {
            if body_lines == 0 {
                return Err(perr(line_no + used, "'*** End of File' ends a chunk that has no lines"));
            }
            chunk.eof = true;
            used += 1;
            break;
        }
        if file_header(l) || (body_lines > 0 && l.starts_with("@@")) {
            break;
        }
        match l.chars().next() {
            None | Some(' ') => {
                let text = l.get(1..).unwrap_or_default().to_string();
                chunk.keep.push(Some(chunk.old.len()));
                chunk.old.push(text.clone());
                chunk.new.push(text);
            }
            Some('-') => chunk.old.push(l[1..].to_string()),
            Some('+') => {
                chunk.keep.push(None);
                chunk.new.push(l[1..].to_string());
            }
            Some(_) => {
                if body_lines == 0 {
                    return Err(perr(
                        line_no + used,
                        format!("'{l}' is not a chunk line: every line starts with ' ' (context), '-' (removed) or '+' (added)"),
                    ));
                }
                break;
            }
        }
        body_lines += 1;
        used += 1;
    }
    if body_lines == 0 {
        return Err(perr(line_no, "the chunk has no lines"));
    }
    // trailing blank lines are separators, not context
    while chunk.old.last().is_some_and(String::is_empty)
        && chunk.new.last().is_some_and(String::is_empty)
        && lines.get(used - 1).is_some_and(|l| l.is_empty())
    {
        chunk.old.pop();
        chunk.new.pop();
        chunk.keep.pop();
        used -= 1;
    }
    Ok((chunk, used))
}

/// A fuzzy match to report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fuzz {
    /// 1-based chunk.
    pub chunk: usize,
    /// The level that matched.
    pub level: Level,
}

/// A chunk that does not fit the file (`chunk` is 1-based).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ApplyError {
    /// Its `@@` context line is not in the file.
    #[error("chunk {chunk}: the context line '@@ {context}' is not in {path}")]
    NoContext {
        /// The chunk.
        chunk: usize,
        /// Its context line.
        context: String,
        /// The file.
        path: String,
    },
    /// Its old lines are not in the file, even fuzzily.
    #[error("chunk {chunk}: these lines are not in {path} (after line {after}), even ignoring whitespace and Unicode punctuation:\n{}", old.join("\n"))]
    NoMatch {
        /// The chunk.
        chunk: usize,
        /// The file.
        path: String,
        /// The line the search started after.
        after: usize,
        /// Its old lines.
        old: Vec<String>,
    },
}

/// The new contents of a file after its chunks, and the fuzzy matches used.
pub fn apply_chunks(original: &str, chunks: &[Chunk], path: &str) -> Result<(String, Vec<Fuzz>), ApplyError> {
    let mut lines: Vec<String> = original.split('\n').map(str::to_string).collect();
    if lines.last().is_some_and(String::is_empty) {
        lines.pop();
    }
    let mut cursor = 0;
    let mut edits: Vec<(usize, usize, Vec<String>)> = Vec::new();
    let mut fuzz = Vec::new();
    for (k, c) in chunks.iter().enumerate() {
        let mut worst = Level::Exact;
        let mut anchored = false;
        if let Some(ctx) = &c.context {
            match seek(&lines, std::slice::from_ref(ctx), cursor, false) {
                Some((i, level)) => {
                    cursor = i + 1;
                    worst = worst.max(level);
                    anchored = true;
                }
                None => {
                    return Err(ApplyError::NoContext { chunk: k + 1, context: ctx.clone(), path: path.to_string() })
                }
            }
        }
        if c.old.is_empty() {
            let at = if anchored && !c.eof { cursor } else { lines.len() };
            edits.push((at, 0, c.new.clone()));
            if worst > Level::Exact {
                fuzz.push(Fuzz { chunk: k + 1, level: worst });
            }
            continue;
        }
        let mut old = c.old.clone();
        let mut new = c.new.clone();
        let mut keep = c.keep.clone();
        let mut found = seek(&lines, &old, cursor, c.eof);
        if found.is_none() && old.last().is_some_and(String::is_empty) {
            old.pop();
            if new.last().is_some_and(String::is_empty) && keep.last().is_some_and(Option::is_some) {
                new.pop();
                keep.pop();
            }
            found = seek(&lines, &old, cursor, c.eof);
        }
        match found {
            Some((i, level)) => {
                worst = worst.max(level);
                // context lines keep the file's own text: a fuzzy match rewrites only what the chunk changes
                let new = new
                    .into_iter()
                    .zip(keep.iter().copied().chain(std::iter::repeat(None)))
                    .map(|(n, k)| match k {
                        Some(k) if k < old.len() => lines.get(i + k).cloned().unwrap_or(n),
                        _ => n,
                    })
                    .collect();
                edits.push((i, old.len(), new));
                cursor = i + old.len();
            }
            None => {
                return Err(ApplyError::NoMatch {
                    chunk: k + 1,
                    path: path.to_string(),
                    after: cursor,
                    old: c.old.clone(),
                })
            }
        }
        if worst > Level::Exact {
            fuzz.push(Fuzz { chunk: k + 1, level: worst });
        }
    }
    for (at, len, new) in edits.into_iter().rev() {
        lines.splice(at..at + len, new);
    }
    let mut out = lines.join("\n");
    if !lines.is_empty() {
        out.push('\n');
    }
    Ok((out, fuzz))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn v(lines: &[&str]) -> Vec<String> {
        lines.iter().map(|s| s.to_string()).collect()
    }

    fn update(chunks: &str) -> Vec<Chunk> {
        let text = format!("*** Begin Patch\n*** Update File: f\n{chunks}\n*** End Patch");
        match parse(&text).unwrap_or_else(|e| panic!("{e}")).remove(0) {
            FileOp::Update { chunks, .. } => chunks,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn level_1_exact() {
        let (out, fuzz) =
            apply_chunks("a\nb\nc\n", &update("@@\n a\n-b\n+B\n c"), "f").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(out, "a\nB\nc\n");
        assert!(fuzz.is_empty());
    }

    #[test]
    fn level_2_ignores_trailing_whitespace() {
        let (out, fuzz) =
            apply_chunks("a  \nb\t\nc\n", &update("@@\n a\n-b\n+B"), "f").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(out, "a  \nB\nc\n");
        assert_eq!(fuzz, vec![Fuzz { chunk: 1, level: Level::TrimEnd }]);
    }

    #[test]
    fn level_3_ignores_both_ends() {
        let (out, fuzz) =
            apply_chunks("  a\n\tb\nc\n", &update("@@\n a\n-b\n+B"), "f").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(out, "  a\nB\nc\n");
        assert_eq!(fuzz, vec![Fuzz { chunk: 1, level: Level::Trim }]);
    }

    #[test]
    fn level_4_normalises_unicode_punctuation() {
        let file = "say \u{201C}hi\u{201D} \u{2014} it\u{2019}s\u{00A0}ok\nend\n";
        let (out, fuzz) = apply_chunks(file, &update("@@\n-say \"hi\" - it's ok\n+say hello\n end"), "f")
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(out, "say hello\nend\n");
        assert_eq!(fuzz, vec![Fuzz { chunk: 1, level: Level::Punctuation }]);
    }

    #[test]
    fn an_exact_match_later_beats_a_fuzzy_one_earlier() {
        assert_eq!(seek(&v(&["x ", "x"]), &v(&["x"]), 0, false), Some((1, Level::Exact)));
    }

    #[test]
    fn context_line_and_eof_locate_chunks() {
        let file = "fn a() {\n  x\n}\nfn b() {\n  x\n}\n";
        let (out, _) = apply_chunks(file, &update("@@ fn b() {\n-  x\n+  y"), "f").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(out, "fn a() {\n  x\n}\nfn b() {\n  y\n}\n");
        let (out, _) =
            apply_chunks("x\nx\n", &update("@@\n-x\n+y\n*** End of File"), "f").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(out, "x\ny\n");
        let (out, _) = apply_chunks("a\nb\n", &update("@@\n+c"), "f").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(out, "a\nb\nc\n");
        let (out, _) = apply_chunks("a\nb\n", &update("@@ a\n+a2"), "f").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(out, "a\na2\nb\n");
    }

    #[test]
    fn parses_every_operation() {
        let ops = parse(
            "*** Begin Patch\n*** Add File: n.txt\n+one\n+\n*** Delete File: d.txt\n*** Update File: u.txt\n*** Move to: m.txt\n@@ ctx\n keep\n-old\n+new\n*** End of File\n*** End Patch\n",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            ops,
            vec![
                FileOp::Add { path: "n.txt".into(), contents: "one\n\n".into() },
                FileOp::Delete { path: "d.txt".into() },
                FileOp::Update {
                    path: "u.txt".into(),
                    move_to: Some("m.txt".into()),
                    chunks: vec![Chunk {
                        context: Some("ctx".into()),
                        old: v(&["keep", "old"]),
                        new: v(&["keep", "new"]),
                        keep: vec![Some(0), None],
                        eof: true
                    }]
                }
            ]
        );
    }

    #[test]
    fn parse_refusals_name_the_line() {
        let cases = [
            ("bad", "Invalid patch, line 1: the first line must be '*** Begin Patch'"),
            ("*** Begin Patch\n*** Add File: a\n+x", "Invalid patch, line 3: the last line must be '*** End Patch'"),
            ("*** Begin Patch\n*** Frobnicate: a\n*** End Patch", "Invalid patch, line 2: '*** Frobnicate: a' is not a file operation: expected '*** Add File: <path>', '*** Delete File: <path>' or '*** Update File: <path>'"),
            ("*** Begin Patch\n*** Update File: a\n*** End Patch", "Invalid patch, line 2: '*** Update File: a' has no chunk"),
            ("*** Begin Patch\n*** Update File: a\n@@\n*** End Patch", "Invalid patch, line 3: the chunk has no lines"),
            ("*** Begin Patch\n*** Update File: a\n@@\n x\nbad\n*** End Patch", "Invalid patch, line 5: expected a chunk starting with '@@', got 'bad'"),
            ("*** Begin Patch\n*** Update File: a\n@@\nbad\n*** End Patch", "Invalid patch, line 4: 'bad' is not a chunk line: every line starts with ' ' (context), '-' (removed) or '+' (added)"),
            ("*** Begin Patch\n*** Delete File:  \n*** End Patch", "Invalid patch, line 2: '*** Delete File:' is not a file operation: expected '*** Add File: <path>', '*** Delete File: <path>' or '*** Update File: <path>'"),
        ];
        for (text, want) in cases {
            assert_eq!(parse(text).err().map(|e| e.to_string()).as_deref(), Some(want), "{text:?}");
        }
    }

    /// A patch of one Update made from the line diff of `a` and `b` (3 lines of context).
    fn diff_patch(a: &str, b: &str) -> String {
        let diff = similar::TextDiff::from_lines(a, b);
        let mut out = String::from("*** Begin Patch\n*** Update File: f.txt\n");
        for group in diff.grouped_ops(3) {
            out.push_str("@@\n");
            for op in group {
                for ch in diff.iter_changes(&op) {
                    let sign = match ch.tag() {
                        similar::ChangeTag::Equal => ' ',
                        similar::ChangeTag::Delete => '-',
                        similar::ChangeTag::Insert => '+',
                    };
                    out.push(sign);
                    out.push_str(ch.value().trim_end_matches('\n'));
                    out.push('\n');
                }
            }
        }
        out.push_str("*** End Patch\n");
        out
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]
        /// Applying the diff of two texts to the first gives the second (the first's lines are distinct,
        /// so every chunk's context is unique; the second's are drawn from them and new ones).
        #[test]
        fn applying_a_diff_gives_the_second_text(
            a in proptest::sample::subsequence((0..40).map(|i| format!("line {i}")).collect::<Vec<_>>(), 0..25)
                .prop_shuffle(),
            b in proptest::collection::vec((0..60u32).prop_map(|i| format!("line {i}")), 0..25),
        ) {
            let a = a.iter().map(|l| format!("{l}\n")).collect::<String>();
            let b = b.iter().map(|l| format!("{l}\n")).collect::<String>();
            prop_assume!(a != b);
            let chunks = match parse(&diff_patch(&a, &b)).map_err(|e| TestCaseError::fail(e.to_string()))?.remove(0) {
                FileOp::Update { chunks, .. } => chunks,
                other => return Err(TestCaseError::fail(format!("{other:?}"))),
            };
            let (out, fuzz) = apply_chunks(&a, &chunks, "f.txt").map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert_eq!(out, b);
            prop_assert!(fuzz.is_empty());
        }
    }
}
