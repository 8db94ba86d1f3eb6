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

/// Flags that take a value.
const VALUED_LONG: &[&str] = &[
    "regexp",
    "max-count",
    "after-context",
    "before-context",
    "context",
    "glob",
    "iglob",
    "type",
    "type-not",
    "max-columns",
    "regex-size-limit",
    "dfa-size-limit",
    "sort",
    "sortr",
    "threads",
    "max-depth",
    "color",
    "colors",
    "context-separator",
    "field-match-separator",
    "field-context-separator",
    "path-separator",
];

fn long_takes_value(name: &str) -> bool {
    VALUED_LONG.contains(&name)
}

fn short_takes_value(c: char) -> bool {
    matches!(c, 'e' | 'm' | 'A' | 'B' | 'C' | 'g' | 't' | 'T' | 'M' | 'j' | 'd')
}

fn short_to_long(c: char) -> Option<&'static str> {
    Some(match c {
        'e' => "regexp",
        'm' => "max-count",
        'A' => "after-context",
        'B' => "before-context",
        'C' => "context",
        'g' => "glob",
        't' => "type",
        'T' => "type-not",
        'M' => "max-columns",
        'j' => "threads",
        'd' => "max-depth",
        'n' => "line-number",
        'N' => "no-line-number",
        'i' => "ignore-case",
        's' => "case-sensitive",
        'S' => "smart-case",
        'F' => "fixed-strings",
        'w' => "word-regexp",
        'x' => "line-regexp",
        'v' => "invert-match",
        'o' => "only-matching",
        'l' => "files-with-matches",
        'c' => "count",
        'H' => "with-filename",
        'I' => "no-filename",
        'U' => "multiline",
        'q' => "quiet",
        'a' => "text",
        'L' => "follow",
        '.' => "hidden",
        'u' => "unrestricted",
        _ => return None,
    })
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

/// Applies one flag; `typed` is the flag as written (`-m`, `--max-count`), for error messages.
fn apply(a: &mut RgArgs, name: &str, typed: &str, value: Option<String>, unrestricted: &mut u8) -> Result<(), String> {
    let v = || value.clone().ok_or_else(|| format!("missing value for flag {typed}"));
    match name {
        "regexp" => a.patterns.push(v()?),
        "max-count" => a.max_count = Some(number(typed, &v()?)?),
        "after-context" => a.after = Some(number(typed, &v()?)?),
        "before-context" => a.before = Some(number(typed, &v()?)?),
        "context" => a.context = Some(number(typed, &v()?)?),
        "glob" => a.globs.push(v()?),
        "iglob" => a.iglobs.push(v()?),
        "type" => a.types.push(TypeChange::Select(v()?)),
        "type-not" => a.types.push(TypeChange::Negate(v()?)),
        "max-columns" => {
            let n: u64 = number(typed, &v()?)?;
            a.max_columns = (n > 0).then_some(n);
        }
        "max-columns-preview" => a.max_columns_preview = true,
        "no-max-columns-preview" => a.max_columns_preview = false,
        "regex-size-limit" => {
            a.regex_size_limit = Some(parse_size(&v()?).map_err(|e| format!("error parsing flag {typed}: {e}"))?)
        }
        "dfa-size-limit" => {
            a.dfa_size_limit = Some(parse_size(&v()?).map_err(|e| format!("error parsing flag {typed}: {e}"))?)
        }
        "sort" | "sortr" => {
            let kind = match v()?.as_str() {
                "path" => Some(SortKind::Path),
                "modified" => Some(SortKind::Modified),
                "accessed" => Some(SortKind::Accessed),
                "created" => Some(SortKind::Created),
                "none" => None,
                other => return Err(format!("error parsing flag {typed}: choice '{other}' is unrecognized")),
            };
            a.sort = kind.map(|k| (k, name == "sortr"));
        }
        "threads" => a.threads = Some(number::<usize>(typed, &v()?)?).filter(|&n| n > 0),
        "color" | "colors" => {
            let _ = v()?;
        }
        "max-depth" => a.max_depth = Some(number(typed, &v()?)?),
        "line-number" => a.line_number = Some(true),
        "no-line-number" => a.line_number = Some(false),
        "ignore-case" => a.case = Case::Insensitive,
        "case-sensitive" => a.case = Case::Sensitive,
        "smart-case" => a.case = Case::Smart,
        "fixed-strings" => a.fixed_strings = true,
        "no-fixed-strings" => a.fixed_strings = false,
        "word-regexp" => a.word = true,
        "line-regexp" => a.line_regexp = true,
        "invert-match" => a.invert = true,
        "no-invert-match" => a.invert = false,
        "only-matching" => a.only_matching = true,
        "files-with-matches" => a.set_mode(Mode::FilesWithMatches),
        "files-without-match" => a.set_mode(Mode::FilesWithoutMatch),
        "count" => a.set_mode(Mode::Count),
        "count-matches" => a.set_mode(Mode::CountMatches),
        "json" => a.set_mode(Mode::Json),
        "no-json" => {
            if a.mode == Mode::Json {
                a.mode = Mode::Standard;
            }
        }
        "files" => a.set_mode(Mode::Files),
        "with-filename" => a.with_filename = Some(true),
        "no-filename" => a.with_filename = Some(false),
        "heading" => a.heading = Some(true),
        "no-heading" => a.heading = Some(false),
        "multiline" => a.multiline = true,
        "no-multiline" => a.multiline = false,
        "multiline-dotall" => a.multiline_dotall = true,
        "no-multiline-dotall" => a.multiline_dotall = false,
        "hidden" => a.hidden = true,
        "no-hidden" => a.hidden = false,
        "no-ignore" => a.no_ignore = true,
        "ignore" => a.no_ignore = false,
        "no-ignore-vcs" => a.no_ignore_vcs = true,
        "quiet" => a.quiet = true,
        "text" => a.text = true,
        "no-text" => a.text = false,
        "follow" => a.follow = true,
        "no-follow" => a.follow = false,
        "no-messages" => a.no_messages = true,
        "include-zero" => a.include_zero = true,
        "unrestricted" => {
            *unrestricted += 1;
            match *unrestricted {
                1 => a.no_ignore = true,
                2 => a.hidden = true,
                _ => a.text = true,
            }
        }
        other => return Err(format!("unrecognized flag --{other}")),
    }
    Ok(())
}

/// Parses the arguments after the program name.
pub fn parse(argv: &[OsString]) -> Result<RgArgs, String> {
    let mut a = RgArgs::default();
    let mut positional: Vec<String> = Vec::new();
    let mut unrestricted = 0u8;
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
            let value = if long_takes_value(name) {
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
            apply(&mut a, name, &format!("--{name}"), value, &mut unrestricted)?;
            continue;
        }
        // a cluster of short flags: -in, -A2, -m 1
        let chars: Vec<char> = arg[1..].chars().collect();
        let mut k = 0;
        while k < chars.len() {
            let c = chars[k];
            let name = short_to_long(c).ok_or_else(|| format!("unrecognized flag -{c}"))?;
            if short_takes_value(c) {
                let rest: String = chars[k + 1..].iter().collect();
                let rest = rest.strip_prefix('=').map(str::to_string).unwrap_or(rest);
                let value = if !rest.is_empty() {
                    rest
                } else {
                    let v = args.get(i).cloned().ok_or_else(|| format!("missing value for flag -{c}"))?;
                    i += 1;
                    v
                };
                apply(&mut a, name, &format!("-{c}"), Some(value), &mut unrestricted)?;
                break;
            }
            apply(&mut a, name, &format!("-{c}"), None, &mut unrestricted)?;
            k += 1;
        }
    }
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
}
