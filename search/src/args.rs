//! ripgrep's command line, for the subset of flags the engine serves (GREP-4): the same flag names,
//! short-flag clusters (`-in`, `-A2`), `--flag=value`, flags after positionals, `--` and last-one-wins
//! toggles, so `probelab rg` takes the argv a Grep tool hands to `rg`.

use std::ffi::OsString;
use std::path::PathBuf;

/// What a run does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Print matching lines (the standard printer).
    Standard,
    /// `-l`: paths of files with a match.
    FilesWithMatches,
    /// `--files-without-match`.
    FilesWithoutMatch,
    /// `-c`: matching lines per file.
    Count,
    /// `--count-matches`: matches per file.
    CountMatches,
    /// `--json`: JSON Lines.
    Json,
    /// `--files`: list the files that would be searched.
    Files,
}

/// Case handling.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Case {
    /// `-s` (default).
    Sensitive,
    /// `-i`.
    Insensitive,
    /// `-S`.
    Smart,
}

/// `--sort` / `--sortr`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SortKind {
    /// By path.
    Path,
    /// By modification time.
    Modified,
    /// By access time.
    Accessed,
    /// By creation time.
    Created,
}

/// A type selection (`-t` / `-T`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TypeChange {
    /// `-t NAME`.
    Select(String),
    /// `-T NAME`.
    Negate(String),
}

/// Parsed arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RgArgs {
    /// Patterns (`-e` or the first positional).
    pub patterns: Vec<String>,
    /// Paths (empty = the implicit `./`).
    pub paths: Vec<PathBuf>,
    /// Mode.
    pub mode: Mode,
    /// Case.
    pub case: Case,
    /// `-F`.
    pub fixed_strings: bool,
    /// `-w`.
    pub word: bool,
    /// `-x`.
    pub line_regexp: bool,
    /// `-v`.
    pub invert: bool,
    /// `-o`.
    pub only_matching: bool,
    /// `-n` / `-N` (None = the default for the mode).
    pub line_number: Option<bool>,
    /// `-H` / `-I` (None = the default for the paths).
    pub with_filename: Option<bool>,
    /// `--heading` / `--no-heading` (None = heading only on a terminal).
    pub heading: Option<bool>,
    /// `-m`.
    pub max_count: Option<u64>,
    /// `-A`.
    pub after: Option<usize>,
    /// `-B`.
    pub before: Option<usize>,
    /// `-C`.
    pub context: Option<usize>,
    /// `-g`.
    pub globs: Vec<String>,
    /// `--iglob`.
    pub iglobs: Vec<String>,
    /// `-t` / `-T`.
    pub types: Vec<TypeChange>,
    /// `-U`.
    pub multiline: bool,
    /// `--multiline-dotall`.
    pub multiline_dotall: bool,
    /// `-M` / `--max-columns` (0 = none).
    pub max_columns: Option<u64>,
    /// `--max-columns-preview`.
    pub max_columns_preview: bool,
    /// `--regex-size-limit`.
    pub regex_size_limit: Option<usize>,
    /// `--dfa-size-limit`.
    pub dfa_size_limit: Option<usize>,
    /// `--hidden` / `-.`.
    pub hidden: bool,
    /// `--no-ignore` (every ignore source).
    pub no_ignore: bool,
    /// `--no-ignore-vcs`.
    pub no_ignore_vcs: bool,
    /// `--sort` / `--sortr` (kind, reverse).
    pub sort: Option<(SortKind, bool)>,
    /// `-q`.
    pub quiet: bool,
    /// `-a`.
    pub text: bool,
    /// `-L`.
    pub follow: bool,
    /// `-d`.
    pub max_depth: Option<usize>,
    /// `-j` (None, or 0 given: one per core, at most 12).
    pub threads: Option<usize>,
    /// `--no-messages`.
    pub no_messages: bool,
    /// `--include-zero`.
    pub include_zero: bool,
}

impl Default for RgArgs {
    fn default() -> Self {
        RgArgs {
            patterns: Vec::new(),
            paths: Vec::new(),
            mode: Mode::Standard,
            case: Case::Sensitive,
            fixed_strings: false,
            word: false,
            line_regexp: false,
            invert: false,
            only_matching: false,
            line_number: None,
            with_filename: None,
            heading: None,
            max_count: None,
            after: None,
            before: None,
            context: None,
            globs: Vec::new(),
            iglobs: Vec::new(),
            types: Vec::new(),
            multiline: false,
            multiline_dotall: false,
            max_columns: None,
            max_columns_preview: false,
            regex_size_limit: None,
            dfa_size_limit: None,
            hidden: false,
            no_ignore: false,
            no_ignore_vcs: false,
            sort: None,
            quiet: false,
            text: false,
            follow: false,
            max_depth: None,
            threads: None,
            no_messages: false,
            include_zero: false,
        }
    }
}

impl RgArgs {
    /// Lines of context before and after: `-A` / `-B` override `-C` wherever they appear.
    pub fn context_lines(&self) -> (usize, usize) {
        let both = self.context.unwrap_or(0);
        (self.before.unwrap_or(both), self.after.unwrap_or(both))
    }

    fn set_mode(&mut self, new: Mode) {
        // The last mode flag wins, `--files` included (ripgrep 14.1.1's Mode::update in effect).
        self.mode = new;
    }
}

/// One flag of ripgrep's command line that the engine serves, declared once, in [`FLAGS`]: its names,
/// whether it takes a value, its help, and what it does to the arguments. The parser, the help
/// ([`help`]) and every check of a flag's name ([`flag`]) read that table and nothing else.
pub struct Flag {
    /// The long name, without `--`.
    pub long: &'static str,
    /// The short name (`-A`), if it has one.
    pub short: Option<char>,
    /// What it does, in a line.
    pub help: &'static str,
    kind: Kind,
}

/// How a flag is applied.
enum Kind {
    /// A switch (no value).
    Switch(fn(&mut Parsed)),
    /// A flag with a value (`--flag VALUE`, `--flag=VALUE`, `-fVALUE`, `-f VALUE`): the value's name in
    /// the help, and what the value does (given the flag as written, `-m` or `--max-count`, for the
    /// messages).
    Value(&'static str, ApplyValue),
}

/// What a flag's value does to the arguments (given the flag as written, for the messages).
type ApplyValue = fn(&mut Parsed, &str, String) -> Result<(), String>;

impl Flag {
    /// Whether the flag takes a value.
    pub fn takes_value(&self) -> bool {
        matches!(self.kind, Kind::Value(..))
    }

    /// The name of its value in the help (`NUM`), None for a switch.
    pub fn value_name(&self) -> Option<&'static str> {
        match self.kind {
            Kind::Value(name, _) => Some(name),
            Kind::Switch(_) => None,
        }
    }

    /// Applies the flag, written `typed`, with its value (a flag that takes one always has it here).
    fn apply(&self, p: &mut Parsed, typed: &str, value: Option<String>) -> Result<(), String> {
        match self.kind {
            Kind::Switch(f) => {
                f(p);
                Ok(())
            }
            Kind::Value(_, f) => f(p, typed, value.ok_or_else(|| format!("missing value for flag {typed}"))?),
        }
    }
}

/// The arguments while they are parsed: what the flags set, and how many `-u` were given.
struct Parsed {
    a: RgArgs,
    unrestricted: u8,
}

const fn switch(long: &'static str, short: Option<char>, help: &'static str, f: fn(&mut Parsed)) -> Flag {
    Flag { long, short, help, kind: Kind::Switch(f) }
}

const fn value(long: &'static str, short: Option<char>, name: &'static str, help: &'static str, f: ApplyValue) -> Flag {
    Flag { long, short, help, kind: Kind::Value(name, f) }
}

/// A flag ripgrep has and the engine does not serve: its value is read, then the flag is refused
/// (`unrecognized flag`), as ripgrep's own parse would fail only on the flag, not on its value.
fn refused(_: &mut Parsed, typed: &str, _: String) -> Result<(), String> {
    Err(format!("unrecognized flag {typed}"))
}

/// `--sort` / `--sortr`'s value.
fn sort_kind(typed: &str, v: &str) -> Result<Option<SortKind>, String> {
    Ok(match v {
        "path" => Some(SortKind::Path),
        "modified" => Some(SortKind::Modified),
        "accessed" => Some(SortKind::Accessed),
        "created" => Some(SortKind::Created),
        "none" => None,
        other => return Err(format!("error parsing flag {typed}: choice '{other}' is unrecognized")),
    })
}

/// Every flag the engine reads, each declared once (a test checks that no long or short name is
/// declared twice), grouped as ripgrep's help groups them: matching, what is searched, what is printed.
pub static FLAGS: &[Flag] = &[
    // patterns and how they match
    value("regexp", Some('e'), "PATTERN", "A pattern to search for (any number of times).", |p, _, v| {
        p.a.patterns.push(v);
        Ok(())
    }),
    switch("fixed-strings", Some('F'), "Treat the patterns as literal strings.", |p| p.a.fixed_strings = true),
    switch("no-fixed-strings", None, "Treat the patterns as regexes (the default).", |p| p.a.fixed_strings = false),
    switch("ignore-case", Some('i'), "Search case insensitively.", |p| p.a.case = Case::Insensitive),
    switch("case-sensitive", Some('s'), "Search case sensitively (the default).", |p| p.a.case = Case::Sensitive),
    switch("smart-case", Some('S'), "Case insensitive unless a pattern has an uppercase letter.", |p| {
        p.a.case = Case::Smart
    }),
    switch("word-regexp", Some('w'), "Only matches surrounded by word boundaries.", |p| p.a.word = true),
    switch("line-regexp", Some('x'), "Only matches of whole lines.", |p| p.a.line_regexp = true),
    switch("invert-match", Some('v'), "Print the lines that do not match.", |p| p.a.invert = true),
    switch("no-invert-match", None, "Print the lines that match (the default).", |p| p.a.invert = false),
    switch("multiline", Some('U'), "Let matches span lines.", |p| p.a.multiline = true),
    switch("no-multiline", None, "Matches stay on one line (the default).", |p| p.a.multiline = false),
    switch("multiline-dotall", None, "With -U, `.` matches line terminators too.", |p| p.a.multiline_dotall = true),
    switch("no-multiline-dotall", None, "`.` does not match line terminators (the default).", |p| {
        p.a.multiline_dotall = false
    }),
    value("regex-size-limit", None, "NUM+SUFFIX?", "Size limit of the compiled regex.", |p, t, v| {
        p.a.regex_size_limit = Some(parse_size(&v).map_err(|e| format!("error parsing flag {t}: {e}"))?);
        Ok(())
    }),
    value("dfa-size-limit", None, "NUM+SUFFIX?", "Size limit of the regex DFA's cache.", |p, t, v| {
        p.a.dfa_size_limit = Some(parse_size(&v).map_err(|e| format!("error parsing flag {t}: {e}"))?);
        Ok(())
    }),
    // what is searched
    value("glob", Some('g'), "GLOB", "Include or (`!GLOB`) exclude files and directories.", |p, _, v| {
        p.a.globs.push(v);
        Ok(())
    }),
    value("iglob", None, "GLOB", "--glob, case insensitively.", |p, _, v| {
        p.a.iglobs.push(v);
        Ok(())
    }),
    value("type", Some('t'), "TYPE", "Only search files of this type.", |p, _, v| {
        p.a.types.push(TypeChange::Select(v));
        Ok(())
    }),
    value("type-not", Some('T'), "TYPE", "Do not search files of this type.", |p, _, v| {
        p.a.types.push(TypeChange::Negate(v));
        Ok(())
    }),
    switch("hidden", Some('.'), "Search hidden files and directories.", |p| p.a.hidden = true),
    switch("no-hidden", None, "Skip hidden files and directories (the default).", |p| p.a.hidden = false),
    switch("no-ignore", None, "Do not respect ignore files.", |p| p.a.no_ignore = true),
    switch("ignore", None, "Respect ignore files (the default).", |p| p.a.no_ignore = false),
    switch("no-ignore-vcs", None, "Do not respect .gitignore and the other VCS ignore files.", |p| {
        p.a.no_ignore_vcs = true
    }),
    switch("unrestricted", Some('u'), "-u: --no-ignore; -uu: and --hidden; -uuu: and --text.", |p| {
        p.unrestricted += 1;
        match p.unrestricted {
            1 => p.a.no_ignore = true,
            2 => p.a.hidden = true,
            _ => p.a.text = true,
        }
    }),
    switch("text", Some('a'), "Search binary files as if they were text.", |p| p.a.text = true),
    switch("no-text", None, "Binary detection (the default).", |p| p.a.text = false),
    switch("follow", Some('L'), "Follow symbolic links.", |p| p.a.follow = true),
    switch("no-follow", None, "Do not follow symbolic links (the default).", |p| p.a.follow = false),
    value("max-depth", Some('d'), "NUM", "Descend at most NUM directories.", |p, t, v| {
        p.a.max_depth = Some(number(t, &v)?);
        Ok(())
    }),
    value("sort", None, "SORTBY", "Sort the results (path, modified, accessed, created, none).", |p, t, v| {
        p.a.sort = sort_kind(t, &v)?.map(|k| (k, false));
        Ok(())
    }),
    value("sortr", None, "SORTBY", "--sort, in reverse.", |p, t, v| {
        p.a.sort = sort_kind(t, &v)?.map(|k| (k, true));
        Ok(())
    }),
    value("threads", Some('j'), "NUM", "Threads to search with (0: one per core, at most 12).", |p, t, v| {
        p.a.threads = Some(number::<usize>(t, &v)?).filter(|&n| n > 0);
        Ok(())
    }),
    // what is printed
    switch("files-with-matches", Some('l'), "Print the paths of files with a match.", |p| {
        p.a.set_mode(Mode::FilesWithMatches)
    }),
    switch("files-without-match", None, "Print the paths of files without a match.", |p| {
        p.a.set_mode(Mode::FilesWithoutMatch)
    }),
    switch("count", Some('c'), "Print the number of matching lines of each file.", |p| p.a.set_mode(Mode::Count)),
    switch("count-matches", None, "Print the number of matches of each file.", |p| p.a.set_mode(Mode::CountMatches)),
    switch("json", None, "Print results as JSON Lines.", |p| p.a.set_mode(Mode::Json)),
    switch("no-json", None, "Do not print JSON (the default).", |p| {
        if p.a.mode == Mode::Json {
            p.a.mode = Mode::Standard;
        }
    }),
    switch("files", None, "Print the files that would be searched, and search none.", |p| p.a.set_mode(Mode::Files)),
    switch("quiet", Some('q'), "Print nothing; exit 0 on the first match.", |p| p.a.quiet = true),
    switch("only-matching", Some('o'), "Print only the matched parts of lines.", |p| p.a.only_matching = true),
    value("max-count", Some('m'), "NUM", "Stop searching a file after NUM matching lines.", |p, t, v| {
        p.a.max_count = Some(number(t, &v)?);
        Ok(())
    }),
    value("after-context", Some('A'), "NUM", "Print NUM lines after each match.", |p, t, v| {
        p.a.after = Some(number(t, &v)?);
        Ok(())
    }),
    value("before-context", Some('B'), "NUM", "Print NUM lines before each match.", |p, t, v| {
        p.a.before = Some(number(t, &v)?);
        Ok(())
    }),
    value("context", Some('C'), "NUM", "Print NUM lines before and after each match.", |p, t, v| {
        p.a.context = Some(number(t, &v)?);
        Ok(())
    }),
    switch("line-number", Some('n'), "Print line numbers.", |p| p.a.line_number = Some(true)),
    switch("no-line-number", Some('N'), "Do not print line numbers.", |p| p.a.line_number = Some(false)),
    switch("with-filename", Some('H'), "Print the path of each match.", |p| p.a.with_filename = Some(true)),
    switch("no-filename", Some('I'), "Never print paths.", |p| p.a.with_filename = Some(false)),
    switch("heading", None, "Print each file's path above its matches.", |p| p.a.heading = Some(true)),
    switch("no-heading", None, "Print each file's path on every match line.", |p| p.a.heading = Some(false)),
    value("max-columns", Some('M'), "NUM", "Omit lines longer than NUM bytes (0: no limit).", |p, t, v| {
        let n: u64 = number(t, &v)?;
        p.a.max_columns = (n > 0).then_some(n);
        Ok(())
    }),
    switch("max-columns-preview", None, "Print the start of a line longer than --max-columns.", |p| {
        p.a.max_columns_preview = true
    }),
    switch("no-max-columns-preview", None, "Omit a line longer than --max-columns (the default).", |p| {
        p.a.max_columns_preview = false
    }),
    switch("include-zero", None, "With -c, also print files with no match.", |p| p.a.include_zero = true),
    switch("no-messages", None, "Print no error messages.", |p| p.a.no_messages = true),
    value("color", None, "WHEN", "Accepted and ignored: colour is never used.", |_, _, _| Ok(())),
    value("colors", None, "COLOR_SPEC", "Accepted and ignored: colour is never used.", |_, _, _| Ok(())),
    value("context-separator", None, "SEPARATOR", "Not served (refused after its value).", refused),
    value("field-match-separator", None, "SEPARATOR", "Not served (refused after its value).", refused),
    value("field-context-separator", None, "SEPARATOR", "Not served (refused after its value).", refused),
    value("path-separator", None, "SEPARATOR", "Not served (refused after its value).", refused),
];

/// The declared flag written `name`: `--long` or `-s` (what a test, or another table of flag names,
/// checks its names against).
pub fn flag(name: &str) -> Option<&'static Flag> {
    match name.strip_prefix("--") {
        Some(long) => long_flag(long),
        None => {
            let mut c = name.strip_prefix('-')?.chars();
            match (c.next(), c.next()) {
                (Some(c), None) => short_flag(c),
                _ => None,
            }
        }
    }
}

fn long_flag(long: &str) -> Option<&'static Flag> {
    FLAGS.iter().find(|f| f.long == long)
}

fn short_flag(c: char) -> Option<&'static Flag> {
    FLAGS.iter().find(|f| f.short == Some(c))
}

/// The flags the engine serves, one a line (`  -A, --after-context NUM  Print NUM lines after each
/// match.`), in [`FLAGS`]' order. Not ripgrep's `--help` (which the engine does not serve).
pub fn help() -> String {
    let names: Vec<String> = FLAGS
        .iter()
        .map(|f| {
            let short = f.short.map_or("    ".to_string(), |c| format!("-{c}, "));
            let value = f.value_name().map_or(String::new(), |v| format!(" {v}"));
            format!("{short}--{}{value}", f.long)
        })
        .collect();
    let width = names.iter().map(|n| n.chars().count()).max().unwrap_or(0);
    FLAGS.iter().zip(names).map(|(f, n)| format!("  {n:width$}  {}\n", f.help)).collect()
}

/// `1K` / `2M` / `1G` / plain bytes, as ripgrep reads sizes.
pub fn parse_size(s: &str) -> Result<usize, String> {
    let s = s.trim();
    let (num, mult) = match s.chars().last() {
        Some('K') | Some('k') => (&s[..s.len() - 1], 1usize << 10),
        Some('M') | Some('m') => (&s[..s.len() - 1], 1usize << 20),
        Some('G') | Some('g') => (&s[..s.len() - 1], 1usize << 30),
        _ => (s, 1),
    };
    let bad = || {
        format!("invalid size: invalid format for size '{s}', which should be a non-empty sequence of digits followed by an optional 'K', 'M' or 'G' suffix")
    };
    if num.is_empty() || !num.chars().all(|c| c.is_ascii_digit()) {
        return Err(bad());
    }
    let n: usize = num.parse().map_err(|_| bad())?;
    n.checked_mul(mult).ok_or_else(|| format!("invalid size: size too big in '{s}'"))
}

fn number<T: std::str::FromStr>(flag: &str, v: &str) -> Result<T, String>
where
    T::Err: std::fmt::Display,
{
    v.parse::<T>().map_err(|e| format!("error parsing flag {flag}: value is not a valid number: {e}"))
}

/// Parses the arguments after the program name.
pub fn parse(argv: &[OsString]) -> Result<RgArgs, String> {
    let mut p = Parsed { a: RgArgs::default(), unrestricted: 0 };
    let mut positional: Vec<String> = Vec::new();
    let args: Vec<String> = argv.iter().map(|s| s.to_string_lossy().into_owned()).collect();
    let mut i = 0;
    let mut only_positional = false;
    while i < args.len() {
        let arg = &args[i];
        i += 1;
        if only_positional || arg == "-" || !arg.starts_with('-') {
            positional.push(arg.clone());
            continue;
        }
        if arg == "--" {
            only_positional = true;
            continue;
        }
        if let Some(long) = arg.strip_prefix("--") {
            let (name, inline) = match long.split_once('=') {
                Some((n, v)) => (n, Some(v.to_string())),
                None => (long, None),
            };
            let flag = long_flag(name);
            let value = if flag.is_some_and(Flag::takes_value) {
                match inline {
                    Some(v) => Some(v),
                    None => {
                        let v = args.get(i).cloned().ok_or_else(|| format!("missing value for flag --{name}"))?;
                        i += 1;
                        Some(v)
                    }
                }
            } else {
                if inline.is_some() {
                    return Err(format!("flag --{name} does not take a value"));
                }
                None
            };
            let flag = flag.ok_or_else(|| format!("unrecognized flag --{name}"))?;
            flag.apply(&mut p, &format!("--{name}"), value)?;
            continue;
        }
        // a cluster of short flags: -in, -A2, -m 1
        let chars: Vec<char> = arg[1..].chars().collect();
        let mut k = 0;
        while k < chars.len() {
            let c = chars[k];
            let flag = short_flag(c).ok_or_else(|| format!("unrecognized flag -{c}"))?;
            if flag.takes_value() {
                let rest: String = chars[k + 1..].iter().collect();
                let rest = rest.strip_prefix('=').map(str::to_string).unwrap_or(rest);
                let value = if !rest.is_empty() {
                    rest
                } else {
                    let v = args.get(i).cloned().ok_or_else(|| format!("missing value for flag -{c}"))?;
                    i += 1;
                    v
                };
                flag.apply(&mut p, &format!("-{c}"), Some(value))?;
                break;
            }
            flag.apply(&mut p, &format!("-{c}"), None)?;
            k += 1;
        }
    }
    let mut a = p.a;
    let mut positional = positional.into_iter();
    if a.patterns.is_empty() && a.mode != Mode::Files {
        match positional.next() {
            Some(p) => a.patterns.push(p),
            None => return Err("ripgrep requires at least one pattern to execute a search".into()),
        }
    }
    a.paths = positional.map(PathBuf::from).collect();
    Ok(a)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(args: &[&str]) -> RgArgs {
        parse(&args.iter().map(OsString::from).collect::<Vec<_>>()).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn clusters_values_and_positionals() {
        let a = p(&["-inA2", "MATCH", "dir", "-m", "1", "--max-columns=500", "--", "-x"]);
        assert_eq!(a.case, Case::Insensitive);
        assert_eq!(a.line_number, Some(true));
        assert_eq!(a.after, Some(2));
        assert_eq!(a.max_count, Some(1));
        assert_eq!(a.max_columns, Some(500));
        assert_eq!(a.patterns, ["MATCH"]);
        assert_eq!(a.paths, [PathBuf::from("dir"), PathBuf::from("-x")]);
    }

    #[test]
    fn last_toggle_wins_and_context_overrides() {
        let a = p(&["-n", "-N", "-C", "3", "-A", "1", "x"]);
        assert_eq!(a.line_number, Some(false));
        assert_eq!(a.context_lines(), (3, 1));
        assert_eq!(p(&["-l", "--files"]).mode, Mode::Files);
        assert_eq!(p(&["--files", "-l", "x"]).mode, Mode::FilesWithMatches);
        assert_eq!(p(&["-l", "--json", "x"]).mode, Mode::Json);
        assert_eq!(parse_size("1K"), Ok(1024));
    }

    #[test]
    fn threads_zero_is_the_default() {
        assert_eq!(p(&["-j3", "x"]).threads, Some(3));
        assert_eq!(p(&["--threads=1", "x"]).threads, Some(1));
        assert_eq!(p(&["-j", "0", "x"]).threads, None);
        assert_eq!(p(&["x"]).threads, None);
    }

    #[test]
    fn errors() {
        assert!(parse(&[OsString::from("--bogus"), OsString::from("x")]).is_err());
        let e = parse(&["-m", "x", "p"].map(OsString::from)).err().unwrap_or_default();
        assert_eq!(e, "error parsing flag -m: value is not a valid number: invalid digit found in string");
        assert!(parse_size("1Q").err().unwrap_or_default().starts_with("invalid size: invalid format for size '1Q'"));
        assert_eq!(parse(&[]).err().as_deref(), Some("ripgrep requires at least one pattern to execute a search"));
    }

    #[test]
    fn each_flag_is_declared_once() {
        let mut longs = std::collections::BTreeSet::new();
        let mut shorts = std::collections::BTreeSet::new();
        for f in FLAGS {
            assert!(longs.insert(f.long), "--{} is declared twice", f.long);
            if let Some(c) = f.short {
                assert!(shorts.insert(c), "-{c} is declared twice (the second time for --{})", f.long);
            }
            assert!(
                f.long.len() > 1
                    && !f.long.starts_with('-')
                    && f.long.chars().all(|c| c.is_ascii_lowercase() || c == '-'),
                "--{}: not a long name",
                f.long
            );
            assert!(!f.help.is_empty(), "--{}: no help", f.long);
            // each flag is found by its names, and is the flag it was declared as
            assert!(flag(&format!("--{}", f.long)).is_some_and(|g| std::ptr::eq(f, g)), "--{}", f.long);
            if let Some(c) = f.short {
                assert!(flag(&format!("-{c}")).is_some_and(|g| std::ptr::eq(f, g)), "-{c}");
            }
        }
        assert!(flag("--bogus").is_none() && flag("-Z").is_none() && flag("-in").is_none() && flag("A").is_none());
    }

    #[test]
    fn every_flag_parses_and_is_in_the_help() {
        let help = help();
        for f in FLAGS {
            let mut argv = vec![format!("--{}", f.long)];
            argv.extend(f.value_name().map(|v| if v == "SORTBY" { "path" } else { "1" }.to_string()));
            argv.push("pattern".into());
            let r = parse(&argv.iter().map(OsString::from).collect::<Vec<_>>());
            let refused = f.help.starts_with("Not served");
            assert_eq!(r.is_err(), refused, "--{}: {r:?}", f.long);
            let value = f.value_name().map(|v| format!(" {v}")).unwrap_or_default();
            assert!(help.contains(&format!("--{}{value} ", f.long)), "--{} not in the help:\n{help}", f.long);
        }
        assert_eq!(help.lines().count(), FLAGS.len());
    }

    #[test]
    fn values_of_flags_that_take_none_and_flags_not_served() {
        let e = |args: &[&str]| parse(&args.iter().map(OsString::from).collect::<Vec<_>>()).err().unwrap_or_default();
        assert_eq!(e(&["--hidden=yes", "x"]), "flag --hidden does not take a value");
        assert_eq!(e(&["--bogus=1", "x"]), "flag --bogus does not take a value");
        assert_eq!(e(&["--bogus", "x"]), "unrecognized flag --bogus");
        assert_eq!(e(&["-iZ", "x"]), "unrecognized flag -Z");
        assert_eq!(e(&["x", "-A"]), "missing value for flag -A");
        assert_eq!(e(&["x", "--context"]), "missing value for flag --context");
        // a separator flag: its value is read, then the flag is refused
        assert_eq!(e(&["--context-separator=x", "x"]), "unrecognized flag --context-separator");
        assert_eq!(e(&["x", "--path-separator"]), "missing value for flag --path-separator");
        assert_eq!(e(&["--sort", "size", "x"]), "error parsing flag --sort: choice 'size' is unrecognized");
        assert_eq!(p(&["--sortr=path", "x"]).sort, Some((SortKind::Path, true)));
        assert_eq!(p(&["--sort", "none", "x"]).sort, None);
        assert_eq!(p(&["--color", "always", "x"]).patterns, ["x"]);
        let u = p(&["-uu", "x"]);
        assert_eq!((u.no_ignore, u.hidden, u.text), (true, true, false));
        assert!(p(&["-uuu", "x"]).text);
    }
}
