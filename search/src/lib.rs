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
//!
//! The crate's modules, each with one job, in the order they depend on each other (none on a later one):
//! [`args`] reads the command line; `walk` finds the haystacks (ignore rules, types, globs, sorting);
//! `print` formats and writes the output and the messages; `search` plans a run and searches —
//! matcher and searcher set-up, one file at a time or in parallel batches printed in order. This file
//! is the façade: the public API, and the engine as a command.

pub mod args;
mod print;
mod search;
mod walk;

pub use search::file::matcher;
pub use search::{run, Io, EXIT_ERROR, EXIT_MATCH, EXIT_NO_MATCH, MAX_SLURP_BYTES};
pub use walk::Skip;

use std::io::Write;
use std::path::PathBuf;

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
    use std::path::Path;
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
