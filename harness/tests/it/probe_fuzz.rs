//! A mutation fuzzer of probe files (issue 16): the probes under `probes/`, mutated by a seeded
//! generator — lines deleted, duplicated, swapped; values changed to other types; the text truncated;
//! junk keys and table headers inserted — at least [`MUTATIONS`] per run. The parser must never panic,
//! and every error must carry a `file:line:col` inside the file; an inserted junk key is reported on
//! its own line. `PROBELAB_FUZZ_SEED` replays a run (its seed is printed).

use harness::probe::parse;
use std::path::{Path, PathBuf};

/// Mutated probe files per run.
const MUTATIONS: usize = 10_000;
/// Most mutations applied to one file at once.
const MAX_STACKED: u64 = 3;
/// Values a mutation puts in place of a value (every TOML type, and a few edge cases).
const VALUES: &[&str] = &[
    "1",
    "0",
    "-5",
    "99999999999999999999",
    "1.5",
    "true",
    "\"\"",
    "\"s\"",
    "[]",
    "{}",
    "[1, \"a\"]",
    "{ a = 1 }",
    "'''x'''",
    "1979-05-27",
    "\"{cwd}/../..\"",
    "nan",
];
/// Table headers a mutation inserts.
const HEADERS: &[&str] = &[
    "[[check]]",
    "[fixture]",
    "[[fixture.fault]]",
    "[[turn]]",
    "[settings.permissions]",
    "[stub]",
    "[[exec]]",
    "[mcp_servers.x]",
    "[[plugin]]",
    "[web]",
    "[subject.builtin]",
    "[host]",
    "[clock]",
];

use crate::common::Rng;

fn probe_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            probe_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "toml") {
            out.push(p);
        }
    }
}

/// One mutation of `lines`; returns the line of an inserted junk key, if that was the mutation.
fn mutate(rng: &mut Rng, lines: &mut Vec<String>, name: &str) -> Option<usize> {
    let at = rng.below(lines.len());
    match rng.below(8) {
        0 if !lines.is_empty() => {
            lines.remove(at);
        }
        1 if !lines.is_empty() => {
            let l = lines[at].clone();
            lines.insert(at, l);
        }
        2 if !lines.is_empty() => {
            let other = rng.below(lines.len());
            lines.swap(at, other);
        }
        3 => {
            // a value of another type: the first `key = value` at or after `at`
            let value = VALUES[rng.below(VALUES.len())];
            if let Some(i) = (at..lines.len()).find(|i| lines[*i].contains(" = ")) {
                if let Some((k, _)) = lines[i].split_once(" = ") {
                    lines[i] = format!("{k} = {value}");
                }
            }
        }
        4 if !lines.is_empty() => {
            // truncated within a line (on a character boundary)
            let l = &lines[at];
            let cut = l.char_indices().map(|(i, _)| i).nth(rng.below(l.chars().count() + 1)).unwrap_or(l.len());
            lines[at] = l[..cut].to_string();
            lines.truncate(at + 1);
        }
        5 => {
            // a junk key as the first key of a table: an unknown field on that very line
            let headers: Vec<usize> = (0..lines.len())
                .filter(|i| lines[*i].starts_with('[') && !lines[*i].starts_with("[settings"))
                .collect();
            if !headers.is_empty() {
                let h = headers[rng.below(headers.len())];
                lines.insert(h + 1, format!("{name} = 1"));
                return Some(h + 2);
            }
            lines.insert(0, format!("{name} = 1"));
            return Some(1);
        }
        6 => {
            let h = HEADERS[rng.below(HEADERS.len())];
            lines.insert(at.min(lines.len()), h.to_string());
        }
        _ => {
            let junk = ["=", "[", "\"", "{", "]]", "x =", "= 1", "\u{0}", "é = 1", "[[", "'''"];
            lines.insert(at.min(lines.len()), junk[rng.below(junk.len())].to_string());
        }
    }
    None
}

/// Whether (line, col) lies inside `text` (1-based; the position just past a line's end counts).
fn inside(text: &str, line: usize, col: usize) -> bool {
    let lines: Vec<&str> = text.split('\n').collect();
    line >= 1 && line <= lines.len() && col >= 1 && col <= lines[line - 1].chars().count() + 1
}

#[test]
fn mutated_probe_files_never_panic_and_every_error_is_placed_inside_the_file() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = Vec::new();
    probe_files(&repo.join("probes"), &mut files);
    files.sort();
    assert!(files.len() > 50, "{} probe files", files.len());
    let originals: Vec<(PathBuf, String)> =
        files.iter().map(|f| (f.clone(), std::fs::read_to_string(f).unwrap_or_else(|e| panic!("{e}")))).collect();
    let seed = std::env::var("PROBELAB_FUZZ_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(1) | 1
    });
    eprintln!("probe fuzzer: seed {seed} (PROBELAB_FUZZ_SEED={seed} replays it)");
    let mut rng = Rng(seed);
    let began = std::time::Instant::now();
    let (mut errors, mut parsed, mut failures) = (0usize, 0usize, Vec::new());
    // errors placed at 1:1 (a whole-file error, or a key on the first line): counted, for the record
    let mut at_start = 0usize;
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    for n in 0..MUTATIONS {
        let (path, original) = &originals[rng.below(originals.len())];
        let mut lines: Vec<String> = original.lines().map(str::to_string).collect();
        let stacked = 1 + rng.next() % MAX_STACKED;
        // a junk key's line is only known when it was the last mutation applied (later ones move lines)
        let mut junk = None;
        for k in 0..stacked {
            let name = format!("junk_{n}_{k}");
            junk = mutate(&mut rng, &mut lines, &name).map(|line| (name, line));
        }
        let text = lines.join("\n") + "\n";
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| parse(path, &text)));
        match outcome {
            Err(p) => {
                let why =
                    p.downcast_ref::<String>().cloned().or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()));
                failures.push(format!("panic ({why:?}) on mutation {n} of {}:\n{text}", path.display()));
            }
            Ok(Ok(_)) => parsed += 1,
            Ok(Err(e)) => {
                errors += 1;
                if e.line == 1 && e.col == 1 {
                    at_start += 1;
                }
                let shown = e.to_string();
                if !inside(&text, e.line, e.col)
                    || !shown.starts_with(&format!("{}:{}:{}: ", e.file.display(), e.line, e.col))
                {
                    failures.push(format!("error outside the file on mutation {n}: {shown}\n{text}"));
                }
                if let Some((name, l)) = &junk {
                    if e.message.contains(&format!("unknown field `{name}`")) && e.line != *l {
                        failures.push(format!("junk key of line {l} reported at line {}: {shown}\n{text}", e.line));
                    }
                }
            }
        }
        if failures.len() >= 5 {
            break;
        }
    }
    std::panic::set_hook(hook);
    eprintln!(
        "probe fuzzer: {MUTATIONS} mutations in {:?}: {errors} errors ({at_start} at 1:1), {parsed} parsed, {} failures",
        began.elapsed(),
        failures.len()
    );
    assert!(failures.is_empty(), "seed {seed}:\n{}", failures.join("\n---\n"));
    assert!(errors > MUTATIONS / 4, "only {errors} of {MUTATIONS} mutations were refused: the mutations are too weak");
}
