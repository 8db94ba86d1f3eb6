//! Differential tests of the engine (`probelab-rg`, the same program as `probelab rg`) against the real ripgrep 14.1.1: the same arguments, run in the
//! same corpus directory (stdin null, `RIPGREP_CONFIG_PATH` unset, `HOME` an empty directory), must give
//! the same exit code, the same stdout bytes and the same stderr bytes.
//!
//! - `fixed_cases_match_real_ripgrep`: a table of hand-written cases covering every supported flag, alone
//!   and combined, and the edge cases (binary files, CRLF, invalid UTF-8, ignore files, errors).
//! - `random_cases_match_real_ripgrep`: proptest; random small corpora, each searched with
//!   [`COMBOS_PER_CORPUS`] random flag sets (every flag set counts as a case).
//!
//! Only two normalisations are made before comparing: `--json` timings (`"secs"`, `"nanos"`, `"human"`
//! values) are zeroed, and the few cases run without `--sort path` compare their lines sorted.
//!
//! Environment:
//! - `PROBELAB_RG`: the real rg. Default `<cache>/ripgrep-14.1.1/bin/rg`, `<cache>` being
//!   `$PROBELAB_CACHE`, else `$XDG_CACHE_HOME/probelab`, else `~/.cache/probelab` (`scripts/setup`
//!   installs it there). Missing, or not 14.1.1: the tests fail.
//! - `PROBELAB_RG_OURS`: run this executable as `<it> ARGS…` instead of `probelab-rg ARGS…`. Pointing it
//!   at the real rg checks the harness itself: everything must pass real-vs-real.
//! - `PROBELAB_RG_CASES`: how many random cases (flag sets) to compare; default 10000.
//! - `PROBELAB_RG_SEED`: the proptest seed (u64); default random, printed at the end and on failure.
//!
//! `cargo test -p probelab-search --test rg_diff -- --nocapture` shows the counts and timings.

use proptest::prelude::*;
use proptest::sample::{select, Index};
use proptest::strategy::Union;
use proptest::test_runner::{Config, RngSeed, TestCaseError, TestError, TestRunner};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::hash::{BuildHasher, Hasher};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, OnceLock};
use std::time::{Duration, Instant};

const RG_VERSION: &str = "14.1.1";
/// A run that takes longer than this is killed and reported.
const TIMEOUT: Duration = Duration::from_secs(60);
/// Flag sets tried on each generated corpus (process start-up dominates; writing the corpus is cheap).
const COMBOS_PER_CORPUS: usize = 8;
const DEFAULT_CASES: usize = 10_000;

// ---------------------------------------------------------------------------------------------------
// The two programs

fn env_path(var: &str) -> Option<PathBuf> {
    std::env::var_os(var).filter(|v| !v.is_empty()).map(PathBuf::from)
}

fn cache_dir() -> PathBuf {
    if let Some(p) = env_path("PROBELAB_CACHE") {
        return p;
    }
    if let Some(p) = env_path("XDG_CACHE_HOME") {
        return p.join("probelab");
    }
    env_path("HOME").unwrap_or_default().join(".cache/probelab")
}

/// The real ripgrep, checked to be 14.1.1 (once per test binary).
fn real_rg() -> &'static Path {
    static RG: OnceLock<PathBuf> = OnceLock::new();
    RG.get_or_init(|| {
        let path = env_path("PROBELAB_RG").unwrap_or_else(|| cache_dir().join(format!("ripgrep-{RG_VERSION}/bin/rg")));
        if !path.is_file() {
            panic!(
                "the real ripgrep {RG_VERSION} is not at {}: run scripts/setup (it installs it there), \
                 or set PROBELAB_RG to a ripgrep {RG_VERSION} binary",
                path.display()
            );
        }
        let out = Command::new(&path)
            .arg("--version")
            .env_remove("RIPGREP_CONFIG_PATH")
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", path.display()));
        let text = String::from_utf8_lossy(&out.stdout);
        let first = text.lines().next().unwrap_or("");
        if first != format!("ripgrep {RG_VERSION}") {
            panic!(
                "{} says {first:?}, not \"ripgrep {RG_VERSION}\": run scripts/setup, or set PROBELAB_RG \
                 to a ripgrep {RG_VERSION} binary",
                path.display()
            );
        }
        path
    })
}

/// The implementation under test: `probelab-rg` (the same engine as `probelab rg`), or `$PROBELAB_RG_OURS`.
#[derive(Clone, Debug)]
struct Ours {
    exe: PathBuf,
}

impl Ours {
    fn get() -> Ours {
        match env_path("PROBELAB_RG_OURS") {
            Some(exe) => Ours { exe },
            None => Ours { exe: PathBuf::from(env!("CARGO_BIN_EXE_probelab-rg")) },
        }
    }

    fn name(&self) -> String {
        match std::env::var_os("PROBELAB_RG_OURS") {
            Some(_) => format!("{} (PROBELAB_RG_OURS)", self.exe.display()),
            None => "probelab-rg".to_string(),
        }
    }
}

// ---------------------------------------------------------------------------------------------------
// Corpora and runs

/// Files (path relative to the corpus root → bytes), extra empty directories and symbolic links
/// (path → target).
#[derive(Clone, Debug, Default)]
struct Corpus {
    files: BTreeMap<String, Vec<u8>>,
    dirs: Vec<String>,
    links: Vec<(String, String)>,
}

impl Corpus {
    fn file(mut self, path: &str, content: impl AsRef<[u8]>) -> Corpus {
        self.files.insert(path.to_string(), content.as_ref().to_vec());
        self
    }

    fn dir(mut self, path: &str) -> Corpus {
        self.dirs.push(path.to_string());
        self
    }

    fn link(mut self, path: &str, target: &str) -> Corpus {
        self.links.push((path.to_string(), target.to_string()));
        self
    }

    fn write(&self, root: &Path) {
        for d in &self.dirs {
            std::fs::create_dir_all(root.join(d)).unwrap_or_else(|e| panic!("mkdir {d}: {e}"));
        }
        for (path, content) in &self.files {
            let p = root.join(path);
            if let Some(parent) = p.parent() {
                std::fs::create_dir_all(parent).unwrap_or_else(|e| panic!("mkdir for {path}: {e}"));
            }
            std::fs::write(&p, content).unwrap_or_else(|e| panic!("write {path}: {e}"));
        }
        for (path, target) in &self.links {
            std::os::unix::fs::symlink(target, root.join(path)).unwrap_or_else(|e| panic!("link {path}: {e}"));
        }
    }

    fn listing(&self) -> String {
        let mut s = String::new();
        for d in &self.dirs {
            let _ = writeln!(s, "  {d}/  (directory)");
        }
        for (path, content) in &self.files {
            let _ = writeln!(s, "  {path}  ({} bytes)", content.len());
            s.push_str(&block(content));
        }
        for (path, target) in &self.links {
            let _ = writeln!(s, "  {path} -> {target}  (symbolic link)");
        }
        s
    }
}

/// A corpus written to disk: `<tmp>/c` is the cwd of both programs, `<tmp>/home` their empty `HOME`
/// (so no global gitignore or git config of the machine can play a part).
struct Sandbox {
    _tmp: tempfile::TempDir,
    cwd: PathBuf,
    home: PathBuf,
}

impl Sandbox {
    fn new(corpus: &Corpus) -> Sandbox {
        // A name without a leading dot (tempfile's default is ".tmpXXXX").
        let tmp = tempfile::Builder::new().prefix("rgdiff-").tempdir().unwrap_or_else(|e| panic!("{e}"));
        let cwd = tmp.path().join("c");
        let home = tmp.path().join("home");
        std::fs::create_dir_all(&cwd).unwrap_or_else(|e| panic!("{e}"));
        std::fs::create_dir_all(&home).unwrap_or_else(|e| panic!("{e}"));
        corpus.write(&cwd);
        Sandbox { _tmp: tmp, cwd, home }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Outcome {
    code: Option<i32>,
    stdout: Vec<u8>,
    stderr: Vec<u8>,
    /// Why there is no exit code (signal, timeout, could not start).
    note: Option<String>,
}

impl Outcome {
    fn failed(note: String) -> Outcome {
        Outcome { code: None, stdout: vec![], stderr: vec![], note: Some(note) }
    }

    fn code_text(&self) -> String {
        match (&self.code, &self.note) {
            (Some(c), _) => c.to_string(),
            (None, Some(n)) => format!("none ({n})"),
            (None, None) => "none".to_string(),
        }
    }
}

/// A started process; its output is collected by a thread so that many can run at once.
struct Running {
    rx: mpsc::Receiver<std::io::Result<std::process::Output>>,
    pid: u32,
    started: Instant,
}

enum Started {
    Running(Running),
    Failed(Outcome),
}

fn start(exe: &Path, args: &[String], sb: &Sandbox) -> Started {
    let spawned = Command::new(exe)
        .args(args)
        .current_dir(&sb.cwd)
        .env_remove("RIPGREP_CONFIG_PATH")
        .env_remove("XDG_CONFIG_HOME")
        .env("HOME", &sb.home)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    match spawned {
        Err(e) => Started::Failed(Outcome::failed(format!("could not start {}: {e}", exe.display()))),
        Ok(child) => {
            let pid = child.id();
            let (tx, rx) = mpsc::channel();
            std::thread::spawn(move || {
                let _ = tx.send(child.wait_with_output());
            });
            Started::Running(Running { rx, pid, started: Instant::now() })
        }
    }
}

fn finish(s: Started) -> Outcome {
    let r = match s {
        Started::Failed(o) => return o,
        Started::Running(r) => r,
    };
    let collect = |res: std::io::Result<std::process::Output>, timed_out: bool| match res {
        Ok(out) => Outcome {
            code: if timed_out { None } else { out.status.code() },
            note: if timed_out {
                Some(format!("timed out after {TIMEOUT:?}, killed"))
            } else if out.status.code().is_none() {
                Some(out.status.to_string())
            } else {
                None
            },
            stdout: out.stdout,
            stderr: out.stderr,
        },
        Err(e) => Outcome::failed(format!("waiting for it failed: {e}")),
    };
    match r.rx.recv_timeout(TIMEOUT.saturating_sub(r.started.elapsed())) {
        Ok(res) => collect(res, false),
        Err(_) => {
            // Our own child, by its id.
            let _ = Command::new("kill").arg("-KILL").arg(r.pid.to_string()).status();
            match r.rx.recv_timeout(Duration::from_secs(10)) {
                Ok(res) => collect(res, true),
                Err(_) => Outcome::failed(format!("timed out after {TIMEOUT:?}, could not be killed")),
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------------
// Comparison and reports

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    /// Byte for byte.
    Raw,
    /// The lines of stdout and of stderr compared as sorted multisets (for runs without `--sort path`,
    /// whose order depends on thread scheduling).
    SortedLines,
}

fn json_timing() -> &'static [(regex::bytes::Regex, &'static [u8])] {
    static RE: OnceLock<Vec<(regex::bytes::Regex, &'static [u8])>> = OnceLock::new();
    RE.get_or_init(|| {
        [
            (r#""secs":[0-9]+"#, &br#""secs":0"#[..]),
            (r#""nanos":[0-9]+"#, &br#""nanos":0"#[..]),
            (r#""human":"[0-9]+\.[0-9]+s""#, &br#""human":"0.000000s""#[..]),
        ]
        .into_iter()
        .map(|(re, to)| (regex::bytes::Regex::new(re).unwrap_or_else(|e| panic!("{e}")), to))
        .collect()
    })
}

fn normalise(bytes: &[u8], args: &[String], mode: Mode) -> Vec<u8> {
    let mut out = bytes.to_vec();
    if args.iter().any(|a| a == "--json") {
        for (re, to) in json_timing() {
            out = re.replace_all(&out, *to).into_owned();
        }
    }
    if mode == Mode::SortedLines {
        let mut lines: Vec<&[u8]> = out.split_inclusive(|&b| b == b'\n').collect();
        lines.sort();
        out = lines.concat();
    }
    out
}

/// `None` when the outcomes agree, else a readable report of the case.
fn compare(
    corpus: &Corpus,
    args: &[String],
    mode: Mode,
    real: &Outcome,
    ours: &Outcome,
    ours_name: &str,
) -> Option<String> {
    let (rs, os) = (normalise(&real.stdout, args, mode), normalise(&ours.stdout, args, mode));
    let (re, oe) = (normalise(&real.stderr, args, mode), normalise(&ours.stderr, args, mode));
    let mut what = vec![];
    if real.code != ours.code || real.note.is_some() || ours.note.is_some() {
        what.push("exit code");
    }
    if rs != os {
        what.push("stdout");
    }
    if re != oe {
        what.push("stderr");
    }
    if what.is_empty() {
        return None;
    }
    let mut s = String::new();
    let _ = writeln!(s, "rg vs {ours_name}: different {}", what.join(", "));
    let _ = writeln!(s, "case: rg {}", shell_words(args));
    if mode == Mode::SortedLines {
        let _ = writeln!(s, "(output lines compared sorted: the run is not --sort path)");
    }
    let _ = writeln!(s, "corpus (the cwd of both):");
    s.push_str(&corpus.listing());
    let _ = writeln!(s, "exit code: rg {}, {ours_name} {}", real.code_text(), ours.code_text());
    for (name, r, o, rn, on) in
        [("stdout", &real.stdout, &ours.stdout, &rs, &os), ("stderr", &real.stderr, &ours.stderr, &re, &oe)]
    {
        let _ = writeln!(s, "{name} of rg:");
        s.push_str(&block(r));
        let _ = writeln!(s, "{name} of {ours_name}:");
        s.push_str(&block(o));
        if rn != on {
            let (a, b) = (escaped_lines(rn), escaped_lines(on));
            let diff = similar::TextDiff::from_lines(&a, &b);
            let _ = writeln!(s, "{name} diff (- rg, + {ours_name}):");
            s.push_str(&diff.unified_diff().context_radius(3).header("rg", ours_name).to_string());
        }
    }
    Some(s)
}

/// Bytes as indented lines, each ending with a visible `\n` (or nothing if the text does not end with
/// one); control bytes, invalid UTF-8 and backslashes escaped; runs of 20+ equal characters shortened to
/// `«c×N»`.
fn block(bytes: &[u8]) -> String {
    if bytes.is_empty() {
        return "    (empty)\n".to_string();
    }
    let mut s = String::new();
    let lines: Vec<&[u8]> = bytes.split_inclusive(|&b| b == b'\n').collect();
    let mut i = 0;
    while i < lines.len() {
        let mut j = i + 1;
        while j < lines.len() && lines[j] == lines[i] {
            j += 1;
        }
        if j - i >= 4 {
            let _ = writeln!(s, "    │{}", escape(lines[i]));
            let _ = writeln!(s, "    … the line above {} times in a row", j - i);
        } else {
            for line in &lines[i..j] {
                let _ = writeln!(s, "    │{}", escape(line));
            }
        }
        i = j;
    }
    s
}

fn escaped_lines(bytes: &[u8]) -> String {
    bytes.split_inclusive(|&b| b == b'\n').map(|l| escape(l) + "\n").collect()
}

fn escape(bytes: &[u8]) -> String {
    let mut chars: Vec<String> = vec![];
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            chars.push(match c {
                '\\' => "\\\\".to_string(),
                '\n' => "\\n".to_string(),
                '\r' => "\\r".to_string(),
                '\t' => "\\t".to_string(),
                '\0' => "\\0".to_string(),
                c if c.is_control() => c.escape_unicode().to_string(),
                c => c.to_string(),
            });
        }
        for b in chunk.invalid() {
            chars.push(format!("\\x{b:02x}"));
        }
    }
    let mut s = String::new();
    let mut i = 0;
    while i < chars.len() {
        let mut j = i + 1;
        while j < chars.len() && chars[j] == chars[i] {
            j += 1;
        }
        if j - i >= 20 {
            let _ = write!(s, "«{}×{}»", chars[i], j - i);
        } else {
            for c in &chars[i..j] {
                s.push_str(c);
            }
        }
        i = j;
    }
    s
}

fn shell_words(args: &[String]) -> String {
    args.iter()
        .map(|a| {
            let plain = !a.is_empty() && a.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_./=:,+@%".contains(&b));
            if plain {
                a.clone()
            } else {
                format!("'{}'", a.replace('\'', r"'\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

// ---------------------------------------------------------------------------------------------------
// Fixed cases

/// The 7-line fixture of the `-m 1 -A 2` / `-m 1 -C 2` cases.
const SEVEN: &str = "zero\nMATCH first\nafter one\nafter two\nafter three\nMATCH second\ntail\n";

/// A single line of 1,217 bytes (newline included) with three `foo`s.
fn long_line() -> String {
    let s = format!("foo {} foo {} foo\n", "x".repeat(600), "y".repeat(603));
    assert_eq!(s.len(), 1217);
    s
}

fn basic() -> Corpus {
    let mut big = "foo\n".repeat(20_000).into_bytes();
    big.extend_from_slice(b"\0foo after nul\n");
    Corpus::default()
        .file("seven.txt", SEVEN)
        .file("src/lib.rs", "fn foo() {}\n// foo.bar(baz)\nlet foobar = 1;\nFoo\n")
        .file("src/main.rs", "fn main() { foo(); }\n")
        .file("docs/readme.md", "# Foo\nfoo bar\nsee a.b*c\n")
        .file("notes.txt", "Hello World\nhello world\nfoo\n")
        .file(".hidden.txt", "foo hidden\n")
        .file(".hdir/inner.txt", "foo in hidden dir\n")
        .file("long.txt", long_line())
        .file("bin.dat", b"foo\0bar\nfoo again\n")
        .file("big.bin", big)
        .file("crlf.txt", "foo\r\nbar\r\nfoo bar\r\n")
        .file("utf8bad.txt", b"foo \xff\xfe bar\nplain\n\xffonly\n")
        .file("noeol.txt", "first foo\nlast foo")
}

fn ignores(git: bool) -> Corpus {
    let c = Corpus::default()
        .file(".gitignore", "ignored.txt\n*.log\nbuild/\n")
        .file(".ignore", "secret.txt\n")
        .file("ignored.txt", "foo ignored\n")
        .file("kept.txt", "foo kept\n")
        .file("x.log", "foo log\n")
        .file("build/out.txt", "foo build\n")
        .file("secret.txt", "foo secret\n")
        .file("sub/.gitignore", "!keep.log\n")
        .file("sub/keep.log", "foo keep log\n")
        .file("sub/drop.log", "foo drop log\n")
        .file("sub/.ignore", "local.txt\n")
        .file("sub/local.txt", "foo local\n")
        .file(".hidden-kept.txt", "foo hidden\n");
    if git {
        // An empty `.git` directory is enough for .gitignore files to apply.
        c.dir(".git")
    } else {
        c
    }
}

/// A deeper tree for the walk: ignore files with `/` in their patterns above and inside subtrees, an
/// `.ignore` in a subtree, a link to a directory and a link to an ancestor (a loop with -L).
fn deep() -> Corpus {
    Corpus::default()
        .dir(".git")
        .file(".gitignore", "*.log\n/top.skip\nd/e/f/\n")
        .file("a/.gitignore", "b/c/three.rs\n")
        .file("a/one.rs", "foo one\n")
        .file("a/b/two.rs", "foo two\n")
        .file("a/b/c/three.rs", "foo three\n")
        .file("a/b/c/four.rs", "foo four\n")
        .file("a/b/c/x.log", "foo log\n")
        .file("d/.ignore", "six.md\n")
        .file("d/e/six.md", "foo six\n")
        .file("d/e/seven.rs", "foo seven\n")
        .file("d/e/f/five.rs", "foo five\n")
        .file("g/h/i/j/deep.txt", "foo deep\n")
        .file("top.skip", "foo skip\n")
        .file("top.txt", "foo top\n")
        .link("k", "a")
        .link("a/b/up", "../..")
}

fn git_repo() -> Corpus {
    ignores(true)
}

fn no_git() -> Corpus {
    ignores(false)
}

#[derive(Clone, Debug)]
enum Check {
    Code(i32),
    StdoutHas(&'static str),
    StdoutLacks(&'static str),
    StderrHas(&'static str),
}

/// A case of the table; its checks are made on the real rg's output, to keep the table honest (a case
/// meant to show an ignored file must show it).
struct Fixed {
    corpus: fn() -> Corpus,
    args: Vec<String>,
    mode: Mode,
    checks: Vec<Check>,
}

fn c(corpus: fn() -> Corpus, args: &[&str]) -> Fixed {
    Fixed { corpus, args: args.iter().map(|s| s.to_string()).collect(), mode: Mode::Raw, checks: vec![] }
}

impl Fixed {
    fn sorted(mut self) -> Fixed {
        self.mode = Mode::SortedLines;
        self
    }
    fn code(mut self, code: i32) -> Fixed {
        self.checks.push(Check::Code(code));
        self
    }
    fn has(mut self, s: &'static str) -> Fixed {
        self.checks.push(Check::StdoutHas(s));
        self
    }
    fn lacks(mut self, s: &'static str) -> Fixed {
        self.checks.push(Check::StdoutLacks(s));
        self
    }
    fn err(mut self, s: &'static str) -> Fixed {
        self.checks.push(Check::StderrHas(s));
        self
    }
}

fn table() -> Vec<Fixed> {
    const B: fn() -> Corpus = basic;
    const G: fn() -> Corpus = git_repo;
    const N: fn() -> Corpus = no_git;
    const D: fn() -> Corpus = deep;
    const SP: [&str; 2] = ["--sort", "path"];
    // `s(&[..])` appends `--sort path`.
    let s = |corpus: fn() -> Corpus, args: &[&str]| {
        let mut v = args.to_vec();
        v.extend(SP);
        c(corpus, &v)
    };
    vec![
        // Plain searches; line numbers and file names by default when stdout is not a tty.
        s(B, &["foo"]).code(0).has("notes.txt:foo"),
        c(B, &["MATCH", "seven.txt"]).has("MATCH first"),
        c(B, &["MATCH", "./seven.txt"]),
        s(B, &["foo", "src"]),
        c(B, &["foo", "src"]).sorted(),
        c(B, &["nomatchzz", "seven.txt"]).code(1),
        s(B, &["nomatchzz"]).code(1),
        c(B, &["", "seven.txt"]),
        c(B, &["foo", "noeol.txt"]),
        // -n / -N
        c(B, &["-n", "MATCH", "seven.txt"]).has("2:MATCH first"),
        s(B, &["-n", "foo"]),
        s(B, &["-N", "foo"]),
        c(B, &["-n", "-N", "MATCH", "seven.txt"]),
        c(B, &["-N", "-n", "MATCH", "seven.txt"]),
        c(B, &["-n", "foo", "noeol.txt"]),
        // -i / -S
        c(B, &["-i", "hello", "notes.txt"]).has("Hello World"),
        s(B, &["-i", "FOO"]),
        c(B, &["-S", "hello", "notes.txt"]).has("Hello World"),
        c(B, &["-S", "Hello", "notes.txt"]).lacks("hello world"),
        c(B, &["-S", "-i", "Hello", "notes.txt"]),
        c(B, &["-i", "-S", "Hello", "notes.txt"]),
        c(B, &["-S", r"\sworld", "notes.txt"]),
        c(B, &["-S", r"\sWorld", "notes.txt"]),
        c(B, &["-S", "-F", "hello", "notes.txt"]),
        // -F
        s(B, &["-F", "a.b*c"]).has("a.b*c"),
        s(B, &["a.b*c"]),
        s(B, &["-F", "foo.bar("]),
        s(B, &["-F", "("]),
        c(B, &["-F", "-i", "FOO.BAR(", "src/lib.rs"]),
        c(B, &["-F", "a{1,1000000000}", "seven.txt"]).code(1),
        // -w
        s(B, &["-w", "foo"]),
        c(B, &["-w", "-F", "foo", "src/lib.rs"]),
        c(B, &["-w", "-i", "FOO", "src/lib.rs"]),
        c(B, &["-w", "foo.", "src/lib.rs"]),
        c(B, &["-w", "bar", "crlf.txt"]),
        // -v
        c(B, &["-v", "foo", "seven.txt"]),
        c(B, &["-v", "MATCH", "seven.txt"]),
        c(B, &["-v", "-n", "after", "seven.txt"]),
        c(B, &["-v", "", "seven.txt"]).code(1),
        s(B, &["-v", "-c", "foo"]),
        s(B, &["-v", "-l", "foo"]),
        // -m / --max-count
        s(B, &["-m", "1", "foo"]),
        c(B, &["-m1", "MATCH", "seven.txt"]),
        c(B, &["--max-count", "1", "MATCH", "seven.txt"]),
        c(B, &["--max-count=1", "MATCH", "seven.txt"]),
        c(B, &["-m", "0", "MATCH", "seven.txt"]),
        c(B, &["-m", "1", "-A", "2", "MATCH", "seven.txt"]).has("after two"),
        c(B, &["-m", "1", "-C", "2", "MATCH", "seven.txt"]).has("zero"),
        c(B, &["-m", "1", "-B", "1", "MATCH", "seven.txt"]),
        c(B, &["-m", "1", "-A", "10", "MATCH", "seven.txt"]),
        c(B, &["-m", "1", "-n", "-C", "2", "MATCH", "seven.txt"]),
        c(B, &["-m", "2", "-A", "1", "MATCH", "seven.txt"]),
        s(B, &["-m", "2", "-c", "foo"]),
        c(B, &["-m", "1", "-v", "MATCH", "seven.txt"]),
        c(B, &["-m", "1", "-U", "MATCH.*\\n", "seven.txt"]),
        c(B, &["-m", "abc", "foo"]).code(2),
        // -m 0 exits 1 before the pattern is even compiled.
        c(B, &["-m", "0", "a{1,1000000000}", "seven.txt"]).code(1),
        c(B, &["-m", "0", "(", "seven.txt"]).code(1),
        s(B, &["-m", "0", "--files"]).code(0),
        // -A / -B / -C
        c(B, &["-A", "1", "MATCH", "seven.txt"]),
        c(B, &["-B", "1", "MATCH", "seven.txt"]),
        c(B, &["-C", "1", "MATCH", "seven.txt"]),
        c(B, &["-C", "3", "-n", "MATCH", "seven.txt"]),
        c(B, &["-A", "1", "-B", "2", "-n", "MATCH", "seven.txt"]),
        c(B, &["-C2", "MATCH", "seven.txt"]),
        c(B, &["-A", "1", "-v", "after", "seven.txt"]),
        c(B, &["-C", "1", "-c", "MATCH", "seven.txt"]),
        c(B, &["-C", "1", "-H", "MATCH", "seven.txt"]),
        s(B, &["-C", "1", "foo"]),
        s(B, &["-C", "1", "-n", "--heading", "foo"]),
        c(B, &["-A", "1", "-n", "foo", "crlf.txt"]),
        // -l / -c
        s(B, &["-l", "foo"]).has("notes.txt"),
        c(B, &["-l", "foo", "notes.txt"]),
        s(B, &["-l", "nomatchzz"]).code(1),
        s(B, &["-l", "-c", "foo"]),
        s(B, &["-c", "foo"]),
        c(B, &["-c", "MATCH", "seven.txt"]),
        c(B, &["-c", "-H", "MATCH", "seven.txt"]),
        c(B, &["-c", "nomatchzz", "seven.txt"]).code(1),
        // --files
        s(B, &["--files"]),
        s(B, &["--files", "--hidden"]),
        s(B, &["--files", "-g", "*.rs"]),
        s(B, &["--files", "-t", "rust"]),
        s(B, &["--files", "src"]),
        c(B, &["--files", "notes.txt"]),
        c(B, &["--files", "nope"]).code(2),
        c(B, &["--files", "nope", "notes.txt"]).code(2),
        c(B, &["--files", "("]).code(2),
        s(B, &["--files", "-l"]),
        // -g / --glob
        s(B, &["-g", "*.rs", "foo"]).lacks("notes.txt"),
        s(B, &["-g", "!*.md", "foo"]).lacks("readme.md"),
        s(B, &["--glob", "*.txt", "foo"]),
        s(B, &["--glob=*.txt", "foo"]),
        s(B, &["-g", "src/**", "-g", "!main.rs", "foo"]),
        s(B, &["-g", "*.TXT", "foo"]),
        s(B, &["-g", "*.zz", "foo"]),
        c(B, &["-g", "*.md", "foo", "notes.txt"]),
        s(B, &["-g", "*.txt", "--hidden", "foo"]),
        // -t / --type
        s(B, &["-t", "rust", "foo"]).lacks("notes.txt"),
        s(B, &["-t", "md", "foo"]),
        s(B, &["--type", "txt", "foo"]),
        s(B, &["-t", "rust", "-t", "md", "foo"]),
        s(B, &["-t", "rust", "-g", "!main.rs", "foo"]),
        c(B, &["-t", "nosuchtype", "foo"]).code(2),
        // -U / --multiline / --multiline-dotall
        c(B, &["-U", r"first\nafter", "seven.txt"]).code(0),
        c(B, &["--multiline", r"first\nafter", "seven.txt"]),
        c(B, &["-U", "-n", r"MATCH first\nafter one", "seven.txt"]),
        c(B, &["-U", "first.*one", "seven.txt"]).code(1),
        c(B, &["-U", "--multiline-dotall", "first.*one", "seven.txt"]).code(0),
        c(B, &["--multiline-dotall", "first.*one", "seven.txt"]).code(1),
        c(B, &["-U", "-c", r"o\n", "seven.txt"]),
        c(B, &["-U", "-v", r"first\nafter", "seven.txt"]),
        c(B, &["-U", "-A", "1", r"first\nafter", "seven.txt"]),
        c(B, &["-U", r"foo\r\nbar", "crlf.txt"]),
        c(B, &["-U", r"\n", "seven.txt"]),
        s(B, &["-U", r"foo\s+bar"]),
        c(B, &[r"first\nafter", "seven.txt"]).code(2),
        // --max-columns / --max-columns-preview
        c(B, &["--max-columns", "500", "foo", "long.txt"]).has("Omitted"),
        s(B, &["--max-columns", "500", "-n", "foo"]),
        c(B, &["--max-columns", "10", "--max-columns-preview", "foo", "long.txt"]),
        s(B, &["--max-columns", "10", "--max-columns-preview", "foo"]),
        c(B, &["--max-columns", "1300", "foo", "long.txt"]),
        c(B, &["--max-columns=10", "foo", "notes.txt"]),
        c(B, &["--max-columns", "5", "-C", "1", "MATCH", "seven.txt"]),
        c(B, &["--max-columns", "5", "--max-columns-preview", "-C", "1", "MATCH", "seven.txt"]),
        c(B, &["--max-columns", "0", "foo", "long.txt"]),
        c(B, &["--max-columns", "5", "foo", "utf8bad.txt"]),
        c(B, &["--max-columns", "10", "-c", "foo", "long.txt"]),
        c(B, &["--max-columns-preview", "foo", "long.txt"]),
        c(B, &["--max-columns", "abc", "foo"]).code(2),
        // --regex-size-limit
        c(B, &["a{1,1000000000}", "seven.txt"]).code(2).err("rg: compiled regex exceeds size limit of 104857600"),
        c(B, &["--regex-size-limit", "1K", r"\w{100}", "seven.txt"]).code(2).err("size limit of 1024"),
        c(B, &["--regex-size-limit", "1K", "MATCH", "seven.txt"]).code(0),
        c(B, &["--regex-size-limit", "1M", "MATCH", "seven.txt"]),
        c(B, &["--regex-size-limit", "2G", "a{1,1000000}", "seven.txt"]),
        c(B, &["--regex-size-limit", "1Q", "MATCH", "seven.txt"]).code(2),
        // Invalid regexes
        c(B, &["(", "seven.txt"]).code(2).err("regex parse error"),
        c(B, &["-w", "(", "seven.txt"]).code(2),
        c(B, &["a)", "seven.txt"]).code(2),
        c(B, &["[z-a]", "seven.txt"]).code(2),
        c(B, &[r"\p{Nope}", "seven.txt"]).code(2),
        c(B, &["-F", "(", "seven.txt"]).code(1),
        // --hidden
        s(B, &["foo"]).lacks(".hidden.txt"),
        s(B, &["--hidden", "foo"]).has(".hidden.txt"),
        c(B, &["foo", ".hidden.txt"]),
        s(B, &["foo", ".hdir"]),
        // Ignore files: .gitignore needs a git repo (a `.git` dir), .ignore always applies.
        s(G, &["foo"]).lacks("ignored.txt").lacks("secret.txt"),
        s(G, &["--no-ignore", "foo"]).has("ignored.txt"),
        s(G, &["--files"]),
        s(G, &["--files", "--no-ignore", "--hidden"]),
        s(G, &["--hidden", "foo"]),
        s(G, &["-g", "*.log", "foo"]),
        s(G, &["foo", "sub"]),
        c(G, &["foo", "ignored.txt"]),
        s(G, &["foo", "build"]),
        s(N, &["foo"]).has("ignored.txt").lacks("secret.txt"),
        s(N, &["--no-ignore", "foo"]).has("secret.txt"),
        s(N, &["--files"]),
        // The walk of a deeper tree: ignore files above and in subtrees, globs with path components,
        // --max-depth, links (followed with -L; a loop is an error)
        s(D, &["foo"]).lacks("three.rs").lacks("five.rs").lacks("six.md"),
        s(D, &["--files"]),
        s(D, &["foo", "a"]),
        s(D, &["foo", "a/b"]),
        s(D, &["foo", "d/e"]),
        s(D, &["--no-ignore-vcs", "foo"]),
        s(D, &["-g", "a/b/**", "foo"]),
        s(D, &["-g", "!a/b/c/*", "foo"]),
        s(D, &["-g", "**/c/*.rs", "foo"]),
        s(D, &["-g", "d/e/*", "--files"]),
        s(D, &["--max-depth", "0", "foo"]),
        s(D, &["--max-depth", "1", "foo"]),
        s(D, &["--max-depth", "2", "foo"]),
        s(D, &["--max-depth", "3", "--files"]),
        s(D, &["--max-depth", "2", "-g", "a/**", "foo"]),
        s(D, &["-L", "foo"]).has("k/one.rs").err("File system loop found"),
        s(D, &["-L", "--files"]),
        s(D, &["-L", "--max-depth", "2", "foo"]),
        s(D, &["foo", "k"]),
        c(D, &["foo"]).sorted(),
        c(D, &["-L", "foo"]).sorted(),
        c(D, &["--max-depth", "2", "foo"]).sorted(),
        c(D, &["-g", "a/b/**", "-c", "foo"]).sorted(),
        // Without --sort path: the output order varies, so lines are compared sorted.
        c(B, &["foo"]).sorted(),
        c(B, &["--files"]).sorted(),
        c(B, &["-c", "foo"]).sorted(),
        c(G, &["-l", "foo"]).sorted(),
        // -j: one thread walks and searches as ripgrep -j1 does (its order is the directory's)
        c(B, &["-j1", "foo"]).sorted(),
        c(B, &["-j", "2", "-c", "foo"]).sorted(),
        c(B, &["-j", "x", "foo"]).code(2),
        // --sort path with several paths
        s(B, &["foo", "src", "notes.txt"]),
        s(B, &["foo", "notes.txt", "src/main.rs", "crlf.txt"]),
        c(B, &["--sort", "nope", "foo"]).code(2),
        // --json
        c(B, &["--json", "MATCH", "seven.txt"]),
        c(B, &["--json", "-C", "1", "MATCH", "seven.txt"]).has("\"type\":\"context\""),
        s(B, &["--json", "foo"]),
        c(B, &["--json", "nomatchzz", "seven.txt"]).code(1),
        c(B, &["--json", "foo", "utf8bad.txt"]),
        c(B, &["--json", "foo", "bin.dat"]),
        c(B, &["--json", "foo", "crlf.txt"]),
        c(B, &["--json", "foo", "noeol.txt"]),
        c(B, &["--json", "-v", "MATCH", "seven.txt"]),
        c(B, &["--json", "-m", "1", "-A", "1", "MATCH", "seven.txt"]),
        c(B, &["--json", "-U", r"first\nafter", "seven.txt"]),
        c(B, &["--json", "-i", "-w", "foo", "src/lib.rs"]),
        c(B, &["--json", "--max-columns", "10", "foo", "long.txt"]),
        c(B, &["--json", "-c", "foo", "notes.txt"]),
        c(B, &["--json", "-l", "foo", "notes.txt"]),
        c(B, &["--json", "foo", "nope.txt"]).code(2),
        c(B, &["--json", "", "noeol.txt"]),
        // --heading / --no-heading
        s(B, &["--heading", "foo"]),
        c(B, &["--heading", "foo", "notes.txt"]),
        c(B, &["--heading", "-H", "foo", "notes.txt"]),
        s(B, &["--no-heading", "foo"]),
        s(B, &["--heading", "--no-heading", "foo"]),
        s(B, &["--no-heading", "--heading", "foo"]),
        s(B, &["--heading", "-c", "foo"]),
        s(B, &["--heading", "-l", "foo"]),
        // -H
        c(B, &["-H", "foo", "notes.txt"]).has("notes.txt:foo"),
        c(B, &["-H", "-n", "MATCH", "seven.txt"]),
        c(B, &["-H", "-l", "foo", "notes.txt"]),
        // Errors: missing paths, missing pattern, unknown flag
        c(B, &["foo", "nope.txt"]).code(2).err("nope.txt"),
        c(B, &["foo", "notes.txt", "nope.txt"]).code(2),
        s(B, &["foo", "nope.txt", "src"]),
        c(B, &["foo", "src", "nope.txt"]).sorted().code(2),
        c(B, &["foo", "nope.txt"]).code(2).err("IO error for operation on nope.txt"),
        c(B, &["nomatchzz", "notes.txt", "nope.txt"]),
        c(B, &["foo", "nodir/"]),
        c(B, &[]).code(2),
        c(B, &["-n"]).code(2),
        c(B, &["--no-such-flag", "foo"]).code(2),
        // Binary files: skipped quietly by a directory walk, reported when given explicitly.
        s(B, &["foo"]).lacks("bin.dat"),
        c(B, &["foo", "bin.dat"]).has("binary file matches"),
        c(B, &["bar", "bin.dat"]),
        c(B, &["-c", "foo", "bin.dat"]),
        c(B, &["-l", "foo", "bin.dat"]),
        c(B, &["-H", "-n", "foo", "bin.dat"]),
        c(B, &["-v", "zzz", "bin.dat"]),
        c(B, &["-A", "1", "foo", "bin.dat"]),
        c(B, &["foo", "big.bin"]),
        c(B, &["-c", "foo", "big.bin"]),
        c(B, &["after nul", "big.bin"]),
        s(B, &["-c", "foo", "big.bin", "bin.dat", "notes.txt"]),
        s(B, &["-g", "*.bin", "foo"]),
        s(B, &["-g", "*.bin", "-c", "foo"]),
        c(B, &["--json", "foo", "big.bin"]),
        // CRLF
        c(B, &["foo", "crlf.txt"]),
        c(B, &["foo$", "crlf.txt"]).code(1),
        c(B, &[r"bar\r$", "crlf.txt"]),
        c(B, &["-c", "bar", "crlf.txt"]),
        c(B, &["-v", "bar", "crlf.txt"]),
        c(B, &["--max-columns", "4", "foo", "crlf.txt"]),
        // Invalid UTF-8
        c(B, &["foo", "utf8bad.txt"]),
        c(B, &["only", "utf8bad.txt"]),
        c(B, &["-w", "only", "utf8bad.txt"]),
        c(B, &[r"(?-u:\xff)", "utf8bad.txt"]),
        c(B, &["-v", "foo", "utf8bad.txt"]),
        c(B, &["-i", "ONLY", "utf8bad.txt"]),
    ]
}

/// Starts both programs on a case; the caller finishes them.
fn start_both(args: &[String], sb: &Sandbox, ours: &Ours) -> (Started, Started) {
    let real = start(real_rg(), args, sb);
    let mine = start(&ours.exe, args, sb);
    (real, mine)
}

#[test]
fn a_deleted_cwd_is_refused_as_real_ripgrep_refuses_it() {
    // the engine searched with an empty cwd (`unwrap_or_default`): exit 1 where ripgrep says why and exits 2
    let run = |exe: &Path, args: &[&str]| {
        let dir = tempfile::tempdir().unwrap().keep();
        let out = Command::new("sh")
            .args(["-c", "cd \"$1\" && rmdir \"$1\" && shift && exec env -u PWD \"$@\"", "sh"])
            .arg(&dir)
            .arg(exe)
            .args(args)
            .env_remove("RIPGREP_CONFIG_PATH")
            .stdin(Stdio::null())
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), "x\n").unwrap();
    let abs = file.path().to_string_lossy().into_owned();
    for args in [&["x"][..], &["x", &abs]] {
        let ours = run(&Ours::get().exe, args);
        assert_eq!(ours, run(real_rg(), args), "rg {args:?}");
        assert_eq!(ours.0, Some(2), "rg {args:?}: {ours:?}");
    }
}

#[test]
fn fixed_cases_match_real_ripgrep() {
    let ours = Ours::get();
    let ours_name = ours.name();
    real_rg();
    let started = Instant::now();
    let table = table();
    let mut failures = vec![];
    let mut bad_checks = vec![];
    // Four cases at a time.
    for chunk in table.chunks(4) {
        let runs: Vec<_> = chunk
            .iter()
            .map(|case| {
                let corpus = (case.corpus)();
                let sb = Sandbox::new(&corpus);
                let (r, o) = start_both(&case.args, &sb, &ours);
                (case, corpus, sb, r, o)
            })
            .collect();
        for (case, corpus, _sb, r, o) in runs {
            let (real, mine) = (finish(r), finish(o));
            for check in &case.checks {
                let ok = match check {
                    Check::Code(c) => real.code == Some(*c),
                    Check::StdoutHas(t) => contains(&real.stdout, t),
                    Check::StdoutLacks(t) => !contains(&real.stdout, t),
                    Check::StderrHas(t) => contains(&real.stderr, t),
                };
                if !ok {
                    bad_checks.push(format!(
                        "table case `rg {}`: the real rg fails its check {check:?} (exit {}, stdout:\n{}stderr:\n{})",
                        shell_words(&case.args),
                        real.code_text(),
                        block(&real.stdout),
                        block(&real.stderr)
                    ));
                }
            }
            if let Some(report) = compare(&corpus, &case.args, case.mode, &real, &mine, &ours_name) {
                failures.push((shell_words(&case.args), report));
            }
        }
    }
    eprintln!(
        "rg_diff: {} fixed cases compared in {:.1?}, {} mismatched",
        table.len(),
        started.elapsed(),
        failures.len()
    );
    let mut msg = String::new();
    for b in &bad_checks {
        let _ = writeln!(msg, "{b}");
    }
    if !failures.is_empty() {
        let _ =
            writeln!(msg, "{} of {} fixed cases differ from the real rg {RG_VERSION}:", failures.len(), table.len());
        for (args, _) in &failures {
            let _ = writeln!(msg, "  rg {args}");
        }
        for (_, report) in &failures {
            let _ = writeln!(msg, "\n{report}");
        }
    }
    assert!(msg.is_empty(), "{msg}");
}

fn contains(hay: &[u8], needle: &str) -> bool {
    hay.windows(needle.len()).any(|w| w == needle.as_bytes())
}

// ---------------------------------------------------------------------------------------------------
// Random cases

// File and directory names of generated corpora (repeats weight the choice: hidden ones are rarer).
const NAMES: &[&str] = &["f.txt", "f.txt", "g.rs", "g.rs", "h.md", "README", "k.txt", ".hid"];
const DIRS: &[&str] = &["d", "d", "d", "e", "e", ".h"];
const GLOBS: &[&str] =
    &["*.md", "*.txt", "d/", "e", ".hid", "!g.rs", "!*.txt", "g.*", "/README", "**/h.md", "d/*.rs", "*", ".h/"];
const FLAGS: &[&[&str]] = &[
    &["-n"],
    &["-N"],
    &["-i"],
    &["-S"],
    &["-F"],
    &["-w"],
    &["-v"],
    &["-m", "1"],
    &["-m", "2"],
    &["--max-count=1"],
    &["-m", "0"],
    &["-A", "1"],
    &["-B", "1"],
    &["-C", "1"],
    &["-A", "2"],
    &["-C", "2"],
    &["-l"],
    &["-c"],
    &["--files"],
    &["-g", "*.txt"],
    &["-g", "!*.md"],
    &["-g", "d/**"],
    &["-t", "rust"],
    &["-t", "txt"],
    &["-t", "md"],
    &["-U"],
    &["--multiline-dotall"],
    &["--max-columns", "20"],
    &["--max-columns", "600"],
    &["--max-columns-preview"],
    &["--regex-size-limit", "1K"],
    &["--hidden"],
    &["--no-ignore"],
    &["--json"],
    &["--heading"],
    &["--no-heading"],
    &["-H"],
];
/// The random cases' flags are flags the engine declares (`probelab_search::args::FLAGS`, where each
/// flag is declared once): a name here that is not one is a typo, or a flag the engine lost.
#[test]
fn random_cases_flags_are_declared_flags() {
    for set in FLAGS {
        let name = set[0].split_once('=').map_or(set[0], |(n, _)| n);
        let flag = probelab_search::args::flag(name).unwrap_or_else(|| panic!("{name}: not a declared flag"));
        // a flag that takes a value has it (inline or next), one that does not has none
        let has_value = set.len() == 2 || set[0].contains('=');
        assert_eq!(flag.takes_value(), has_value, "{set:?}");
    }
}

const PATTERNS: &[&str] = &[
    "foo",
    "Foo",
    "bar",
    "MATCH",
    "x",
    "o",
    " ",
    "fo+",
    r"\bbar\b",
    "(?i)match",
    "^x",
    "o$",
    r"foo\s+bar",
    r"o\nb",
    r"\r$",
    "^",
    "",
    "[^ox]",
    "o.*o",
];
const RARE_PATTERNS: &[&str] = &["a{1,1000000000}", "("];

#[derive(Clone, Debug)]
enum PathArg {
    /// One of the corpus's files.
    File(Index),
    /// A directory name (it may not exist in the corpus).
    Dir(usize),
    Missing,
}

#[derive(Clone, Debug)]
struct Combo {
    flags: Vec<&'static [&'static str]>,
    pattern: &'static str,
    paths: Vec<PathArg>,
}

impl Combo {
    fn args(&self, corpus: &Corpus) -> Vec<String> {
        let mut v: Vec<String> = self.flags.iter().flat_map(|f| f.iter().map(|s| s.to_string())).collect();
        v.extend(["--sort".to_string(), "path".to_string()]);
        // `--files` takes no pattern (it would be a path; the fixed table has that case).
        if !self.flags.iter().any(|f| f.contains(&"--files")) {
            v.push(self.pattern.to_string());
        }
        let files: Vec<&String> = corpus.files.keys().collect();
        for p in &self.paths {
            v.push(match p {
                PathArg::File(i) if !files.is_empty() => i.get(&files).to_string(),
                PathArg::File(_) | PathArg::Missing => "missing.txt".to_string(),
                PathArg::Dir(i) => DIRS[*i % DIRS.len()].to_string(),
            });
        }
        v
    }
}

#[derive(Clone, Debug)]
struct Generated {
    corpus: Corpus,
    combos: Vec<Combo>,
}

fn content() -> impl Strategy<Value = Vec<u8>> {
    let w = |s: &'static [u8]| Just(s.to_vec()).boxed();
    let token = Union::new_weighted(vec![
        (6, w(b"foo")),
        (4, w(b"bar")),
        (3, w(b"Foo")),
        (3, w(b"MATCH")),
        (3, w(b"x")),
        (6, w(b" ")),
        (7, w(b"\n")),
        (2, w(b"\r\n")),
        (1, w(b"\0")),
        (1, w(b"\xff")),
        (1, (600usize..700, select(&b"xo "[..])).prop_map(|(n, c)| vec![c; n]).boxed()),
    ]);
    proptest::collection::vec(token, 0..30).prop_map(|v| v.concat())
}

fn corpus() -> impl Strategy<Value = Corpus> {
    let file =
        (proptest::collection::vec(select(DIRS), 0..=2), select(NAMES), content()).prop_map(|(dirs, name, content)| {
            let mut p: Vec<&str> = dirs;
            p.push(name);
            (p.join("/"), content)
        });
    let ignore_file = (
        proptest::collection::vec(select(DIRS), 0..=1),
        select(&[".gitignore", ".ignore"][..]),
        proptest::collection::vec(select(GLOBS), 1..=3),
    )
        .prop_map(|(dirs, name, globs)| {
            let mut p: Vec<&str> = dirs;
            p.push(name);
            (p.join("/"), (globs.join("\n") + "\n").into_bytes())
        });
    let ignores = prop_oneof![
        3 => Just(vec![]),
        1 => proptest::collection::vec(ignore_file, 1..=2),
    ];
    (proptest::collection::vec(file, 1..=5), ignores, any::<bool>()).prop_map(|(files, ignores, git)| {
        let mut c = Corpus::default();
        for (p, content) in files.into_iter().chain(ignores) {
            c.files.insert(p, content);
        }
        if git {
            c.dirs.push(".git".to_string());
        }
        c
    })
}

fn combo() -> impl Strategy<Value = Combo> {
    let pattern = prop_oneof![
        40 => select(PATTERNS),
        1 => select(RARE_PATTERNS),
    ];
    let path = prop_oneof![
        4 => any::<Index>().prop_map(PathArg::File),
        1 => (0..DIRS.len()).prop_map(PathArg::Dir),
        1 => Just(PathArg::Missing),
    ];
    let paths = prop_oneof![
        3 => Just(vec![]),
        1 => proptest::collection::vec(path, 1..=2),
    ];
    (proptest::collection::vec(select(FLAGS), 0..=4), pattern, paths).prop_map(|(flags, pattern, paths)| Combo {
        flags,
        pattern,
        paths,
    })
}

fn generated() -> impl Strategy<Value = Generated> {
    (corpus(), proptest::collection::vec(combo(), COMBOS_PER_CORPUS))
        .prop_map(|(corpus, combos)| Generated { corpus, combos })
}

/// Flag sets compared, and the real rg's exit codes (0, 1, 2, other) over them.
#[derive(Default)]
struct Counts {
    compared: AtomicUsize,
    exit: [AtomicUsize; 4],
}

/// Runs every flag set of `g` (all processes at once), `Err(report)` for the first that differs.
fn check_generated(g: &Generated, ours: &Ours, counts: &Counts) -> Result<(), String> {
    let ours_name = ours.name();
    let sb = Sandbox::new(&g.corpus);
    let runs: Vec<_> = g
        .combos
        .iter()
        .map(|combo| {
            let args = combo.args(&g.corpus);
            let (r, o) = start_both(&args, &sb, ours);
            (args, r, o)
        })
        .collect();
    let mut first = None;
    for (args, r, o) in runs {
        let (real, mine) = (finish(r), finish(o));
        counts.compared.fetch_add(1, Ordering::Relaxed);
        match real.code {
            Some(c @ 0..=2) => counts.exit[c as usize].fetch_add(1, Ordering::Relaxed),
            _ => counts.exit[3].fetch_add(1, Ordering::Relaxed),
        };
        if first.is_none() {
            first = compare(&g.corpus, &args, Mode::Raw, &real, &mine, &ours_name);
        }
    }
    match first {
        None => Ok(()),
        Some(report) => Err(report),
    }
}

#[test]
fn random_cases_match_real_ripgrep() {
    let ours = Ours::get();
    real_rg();
    let wanted: usize = match std::env::var("PROBELAB_RG_CASES") {
        Ok(v) => v.parse().unwrap_or_else(|e| panic!("PROBELAB_RG_CASES={v:?}: {e}")),
        Err(_) => DEFAULT_CASES,
    };
    let seed: u64 = match std::env::var("PROBELAB_RG_SEED") {
        Ok(v) => v.parse().unwrap_or_else(|e| panic!("PROBELAB_RG_SEED={v:?}: {e}")),
        Err(_) => std::collections::hash_map::RandomState::new().build_hasher().finish(),
    };
    let corpora = wanted.div_ceil(COMBOS_PER_CORPUS);
    let config = Config {
        cases: u32::try_from(corpora).unwrap_or(u32::MAX),
        failure_persistence: None,
        rng_seed: RngSeed::Fixed(seed),
        max_shrink_iters: 2_000,
        max_shrink_time: 600_000,
        ..Config::default()
    };
    let mut runner = TestRunner::new(config);
    let counts = Counts::default();
    let started = Instant::now();
    let result = runner.run(&generated(), |g| check_generated(&g, &ours, &counts).map_err(TestCaseError::fail));
    let n = counts.compared.load(Ordering::Relaxed);
    let exits: Vec<usize> = counts.exit.iter().map(|a| a.load(Ordering::Relaxed)).collect();
    match result {
        Ok(()) => eprintln!(
            "rg_diff: {n} random cases compared ({corpora} corpora × {COMBOS_PER_CORPUS} flag sets, \
             seed {seed}) in {:.1?}; the real rg exited 0/1/2/other: {}/{}/{}/{}",
            started.elapsed(),
            exits[0],
            exits[1],
            exits[2],
            exits[3]
        ),
        Err(TestError::Fail(reason, minimal)) => {
            // Run the minimal case again for a fresh, complete report.
            let report = check_generated(&minimal, &ours, &counts)
                .err()
                .unwrap_or_else(|| format!("(passed when run again; the failure was:)\n{reason}"));
            panic!(
                "a random case differs from the real rg {RG_VERSION} (seed {seed}: rerun with \
                 PROBELAB_RG_SEED={seed}; {n} cases compared, shrinking included).\n\
                 Minimal failing case after shrinking:\n{report}"
            );
        }
        Err(TestError::Abort(why)) => panic!("proptest aborted (seed {seed}): {why}"),
    }
}
