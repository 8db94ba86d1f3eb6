//! A seeded fuzzer of every surface the lab reads (issue 30, item 3): probe files (bounds, paths and
//! placeholders a mutation breaks), `probelab.toml`, golden files and blobs (`review --accept`, the blob
//! store), import input (Claude Code session JSONL) and the CLI's argument vectors — [`CASES`] cases a
//! run at least, in a few seconds of a debug build. It counts, per surface, panics, hangs (a case that
//! does not end within [`HANG`]), wrong successes (input known to be bad that is taken), unpositioned
//! errors (no `file:line:col`, or one outside the file) and writes outside the project, and asserts each
//! is 0. `PROBELAB_FUZZ_SEED` replays a run (its seed is printed).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// In-process cases a run (probe files, probelab.toml, import input, goldens and blobs).
const CASES: usize = 10_000;
/// CLI argument vectors a run (each one process).
const CLI_CASES: usize = 40;
/// A case (or a CLI process) that has not ended by then is a hang.
const HANG: Duration = Duration::from_secs(30);

use crate::common::Rng;

/// What went wrong, per surface.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Counts {
    cases: usize,
    panics: usize,
    hangs: usize,
    wrong_successes: usize,
    unpositioned: usize,
    writes_outside: usize,
}

impl Counts {
    fn bad(&self) -> usize {
        self.panics + self.hangs + self.wrong_successes + self.unpositioned + self.writes_outside
    }
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn files_under(dir: &Path, ext: &str) -> Vec<PathBuf> {
    let mut v = harness::safe_fs::walk_files(dir, &|p| p.to_string_lossy().ends_with(ext)).unwrap_or_default();
    v.sort();
    v
}

/// Whether (line, col) lies inside `text` (1-based; the position just past a line's end counts).
fn inside(text: &str, line: usize, col: usize) -> bool {
    let lines: Vec<&str> = text.split('\n').collect();
    line >= 1 && line <= lines.len() && col >= 1 && col <= lines[line - 1].chars().count() + 1
}

/// `s` cut at a random character boundary.
fn cut(rng: &mut Rng, s: &str) -> String {
    let at = s.char_indices().map(|(i, _)| i).nth(rng.below(s.chars().count().max(1))).unwrap_or(0);
    s[..at].to_string()
}

/// Line-level damage: a line deleted, duplicated, swapped, cut, or junk inserted.
fn damage_lines(rng: &mut Rng, text: &str) -> String {
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let at = rng.below(lines.len());
    match rng.below(5) {
        0 if !lines.is_empty() => {
            lines.remove(at);
        }
        1 if !lines.is_empty() => lines.insert(at, lines[at].clone()),
        2 if !lines.is_empty() => {
            let b = rng.below(lines.len());
            lines.swap(at, b);
        }
        3 if !lines.is_empty() => {
            lines[at] = cut(rng, &lines[at]);
            lines.truncate(at + 1);
        }
        _ => {
            let junk = ["=", "[", "\"", "{", "]]", "x =", "\u{0}", "é = 1", "[[", "'''", "{\"a\":", "null", "\u{202e}"];
            lines.insert(at.min(lines.len()), rng.pick(&junk).to_string());
        }
    }
    lines.join("\n") + "\n"
}

/// One probe-file case: a mutation that must be refused (`true`) or any damage (`false`).
fn probe_case(rng: &mut Rng, text: &str) -> (String, bool) {
    let top = |line: &str| format!("{line}\n{text}");
    let tail = |more: &str| format!("{text}\n{more}\n");
    match rng.below(9) {
        0 => (
            top(&format!(
                "deadline_secs = {}",
                rng.pick(&["0", "86401", "9223372036854775807", "99999999999999999999"])
            )),
            true,
        ),
        1 => {
            let m = rng.pick(&["1e19", "1e300", "-1e300", "inf", "nan", "\"yesterday\"", "[1]"]);
            (tail(&format!("[[fixture.fault]]\nkind = \"touch\"\npath = \"zz\"\nmtime = {m}")), true)
        }
        2 => {
            let p = rng.pick(&["../zz", "/abs/zz", "{home}/../zz", "a/../../zz", ""]);
            (tail(&format!("[[fixture.fault]]\nkind = \"write\"\npath = {p:?}")), true)
        }
        3 => (tail(&format!("[[exec]]\nargv = []\ndeadline_ms = {}", rng.pick(&["0", "18446744073709551615"]))), true),
        4 => {
            // a typo of a placeholder where a tool input makes a path with it
            let lines: Vec<&str> = text.lines().collect();
            let candidates: Vec<usize> = (0..lines.len())
                .filter(|i| lines[*i].contains("\"{cwd}/") && !lines[*i].contains('#') && lines[*i].contains("input"))
                .collect();
            if candidates.is_empty() {
                return (damage_lines(rng, text), false);
            }
            let i = *rng.pick(&candidates);
            let typo = rng.pick(&["{cdw}", "{bogus}", "{Cwd}x", "{cwdd}"]).to_string();
            let mut out: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
            out[i] = out[i].replacen("{cwd}", &typo, 1);
            // `{Cwd}x` is not a placeholder form at all: taken as text, it is no wrong success
            (out.join("\n") + "\n", !typo.starts_with("{C"))
        }
        5 => {
            let event = rng.pick(&["PreToolUSE", "pretooluse", "Bogus", "PostToolUse "]);
            (
                tail(&format!(
                    "[[settings.hooks.\"{event}\"]]\nhooks = [{{ type = \"command\", command = \"true\" }}]"
                )),
                true,
            )
        }
        6 => (tail(&format!("[settings.permissions]\ndefaultMode = {:?}", rng.pick(&["yolo", "", "Default"]))), true),
        7 => (top(&format!("junk_{} = 1", rng.next() % 1000)), true),
        _ => (damage_lines(rng, text), false),
    }
}

fn panicked<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).map_err(|p| {
        p.downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default()
    })
}

/// Runs the in-process surfaces; `tick` after each case (the watchdog's proof of progress).
fn in_process(seed: u64, world: &Path, tick: &dyn Fn(&str)) -> (BTreeMap<&'static str, Counts>, Vec<String>) {
    let mut rng = Rng(seed);
    let mut counts: BTreeMap<&'static str, Counts> = BTreeMap::new();
    let mut failures: Vec<String> = Vec::new();
    let probes: Vec<(PathBuf, String)> = files_under(&repo().join("probes"), ".toml")
        .into_iter()
        .map(|f| {
            let t = std::fs::read_to_string(&f).unwrap_or_default();
            (f, t)
        })
        .collect();
    let session_file = repo().join("fixtures/sessions/claude-code-2.1.235.jsonl");
    let session = std::fs::read_to_string(&session_file).unwrap_or_else(|e| panic!("{e}"));
    // the smaller goldens: what is tested is the check before the write, not the size
    let goldens: Vec<String> = files_under(&repo().join("golden/builtin"), ".snap")
        .iter()
        .map(|f| std::fs::read_to_string(f).unwrap_or_default())
        .filter(|t| t.len() < 8_000)
        .collect();
    assert!(goldens.len() > 10, "{} small goldens", goldens.len());
    let project = world.join("project");
    let golden_root = project.join("golden");
    let blobs = golden_root.join("blobs");
    std::fs::create_dir_all(golden_root.join("builtin")).unwrap_or_else(|e| panic!("{e}"));
    std::fs::create_dir_all(&blobs).unwrap_or_else(|e| panic!("{e}"));
    let fail = |failures: &mut Vec<String>, what: String| {
        if failures.len() < 8 {
            failures.push(what);
        }
    };
    let mut spent: BTreeMap<&'static str, Duration> = BTreeMap::new();
    for n in 0..CASES {
        let began = std::time::Instant::now();
        let surface: &'static str = match n % 20 {
            0..=7 => "probe files",
            8..=12 => "probelab.toml",
            13..=15 => "import input",
            _ => "goldens and blobs",
        };
        let c = counts.entry(surface).or_default();
        c.cases += 1;
        match surface {
            "probe files" => {
                let (path, original) = rng.pick(&probes).clone();
                let (text, must_fail) = probe_case(&mut rng, &original);
                match panicked(|| harness::probe::parse(&path, &text)) {
                    Err(p) => {
                        c.panics += 1;
                        fail(&mut failures, format!("probe panic {p}:\n{text}"));
                    }
                    Ok(Ok(_)) if must_fail => {
                        c.wrong_successes += 1;
                        fail(&mut failures, format!("probe taken although bad ({}):\n{text}", path.display()));
                    }
                    Ok(Ok(_)) => {}
                    Ok(Err(e)) => {
                        let placed = e.to_string().starts_with(&format!("{}:{}:{}: ", e.file.display(), e.line, e.col));
                        if !inside(&text, e.line, e.col) || !placed {
                            c.unpositioned += 1;
                            fail(&mut failures, format!("probe error not placed: {e}\n{text}"));
                        }
                    }
                }
            }
            "probelab.toml" => {
                let file = project.join("probelab.toml");
                let base = harness::project::INIT_FILE;
                let (text, must_fail) = match rng.below(4) {
                    0 => (format!("{base}junk_{} = 1\n", rng.next() % 100), true),
                    1 => {
                        let key = rng.pick(&["probes", "golden", "fixtures", "out"]);
                        let v = rng.pick(&["1", "\"\"", "[]", "{}", "true"]);
                        (format!("{key} = {v}\n"), true)
                    }
                    _ => (damage_lines(&mut rng, base), false),
                };
                match panicked(|| harness::project::parse(&file, &text)) {
                    Err(p) => {
                        c.panics += 1;
                        fail(&mut failures, format!("probelab.toml panic {p}:\n{text}"));
                    }
                    Ok(Ok(_)) if must_fail => {
                        c.wrong_successes += 1;
                        fail(&mut failures, format!("probelab.toml taken although bad:\n{text}"));
                    }
                    Ok(Ok(_)) => {}
                    Ok(Err(e)) => {
                        let placed = match &e {
                            harness::project::ProjectError::File(l) => l.file == file && inside(&text, l.line, l.col),
                            _ => false,
                        };
                        if !placed {
                            c.unpositioned += 1;
                            fail(&mut failures, format!("probelab.toml error not placed: {e}\n{text}"));
                        }
                    }
                }
            }
            "import input" => {
                let text = match rng.below(3) {
                    0 => cut(&mut rng, &session),
                    1 => {
                        let mut b = session.clone().into_bytes();
                        for _ in 0..1 + rng.below(4) {
                            let i = rng.below(b.len());
                            b[i] = rng.pick(b"{}[]\",:0a\\\n ").to_owned();
                        }
                        String::from_utf8_lossy(&b).into_owned()
                    }
                    _ => damage_lines(&mut rng, &session),
                };
                match panicked(|| harness::import::import(&session_file, &text, "fz.session")) {
                    Err(p) => {
                        c.panics += 1;
                        fail(&mut failures, format!("import panic {p}"));
                    }
                    Ok(Ok(probe)) => {
                        // what import writes, run must take
                        if let Err(e) = harness::probe::parse(&project.join("probes/fz.toml"), &probe) {
                            c.wrong_successes += 1;
                            fail(&mut failures, format!("import wrote a probe run refuses: {e}\n{probe}"));
                        }
                    }
                    Ok(Err(e)) => {
                        if !e.to_string().starts_with(&session_file.display().to_string()) {
                            c.unpositioned += 1;
                            fail(&mut failures, format!("import error without its file: {e}"));
                        }
                    }
                }
            }
            _ => {
                let good = rng.pick(&goldens).clone();
                let golden = golden_root.join("builtin/x.snap");
                let new = golden_root.join("builtin/x.snap.new");
                let _ = std::fs::write(&golden, &good);
                let pending = match rng.below(3) {
                    0 => cut(&mut rng, &good),
                    1 => damage_lines(&mut rng, &good),
                    _ => good.clone(),
                };
                let _ = std::fs::write(&new, &pending);
                let body = harness::transcript::golden::body(&pending).to_string();
                let accepted = panicked(|| {
                    let p = harness::transcript::review::pending(&golden_root).unwrap_or_default();
                    p.first().map(|p| p.accept(&golden_root).is_ok())
                });
                match accepted {
                    Err(p) => {
                        c.panics += 1;
                        fail(&mut failures, format!("review panic {p}"));
                    }
                    Ok(Some(true)) if harness::transcript::golden::body_problem(&body).is_some() => {
                        c.wrong_successes += 1;
                        fail(&mut failures, format!("a cut-short pending golden was accepted:\n{pending}"));
                    }
                    Ok(Some(false)) if std::fs::read_to_string(&golden).ok().as_deref() != Some(good.as_str()) => {
                        c.wrong_successes += 1;
                        fail(&mut failures, "a refused pending golden changed the golden".into());
                    }
                    _ => {}
                }
                let _ = std::fs::remove_file(&new);
                // a blob: its bytes changed (or not), under its name; and a name of any shape
                let content = format!("{{\"n\": {}}}\n", rng.next() % 1000);
                let name = harness::transcript::sha256(content.as_bytes());
                let mut bytes = content.clone().into_bytes();
                let changed = rng.below(2) == 0;
                if changed {
                    let i = rng.below(bytes.len());
                    bytes[i] = bytes[i].wrapping_add(1 + rng.below(200) as u8);
                }
                let blob = blobs.join(format!("{name}.json"));
                let _ = std::fs::write(&blob, &bytes);
                let odd = blobs.join(rng.pick(&["é", "ü-ünï", "..json", "x", "0123456789abcdé.json"]));
                let _ = std::fs::write(&odd, "x");
                let gc = n % 16 == 0;
                match panicked(|| {
                    let read = harness::transcript::golden::read_blob(&blob);
                    if gc {
                        let _ = harness::transcript::golden::unreferenced_blobs(&golden_root);
                    }
                    read
                }) {
                    Err(p) => {
                        c.panics += 1;
                        fail(&mut failures, format!("blob panic {p}"));
                    }
                    Ok(Ok(t)) if changed && t.as_bytes() != content.as_bytes() => {
                        c.wrong_successes += 1;
                        fail(&mut failures, "a corrupt blob was read as good".into());
                    }
                    _ => {}
                }
                let _ = std::fs::remove_file(&blob);
                let _ = std::fs::remove_file(&odd);
            }
        }
        *spent.entry(surface).or_default() += began.elapsed();
        tick(surface);
    }
    // for the record (never asserted): where the run's time goes
    eprintln!("surface fuzzer: time per surface {spent:?}");
    (counts, failures)
}

/// Files under `world` but outside `project` (what a case wrote where it must not).
fn outside(world: &Path, project: &Path) -> Vec<PathBuf> {
    let all = harness::safe_fs::walk_files(world, &|_| true).unwrap_or_default();
    all.into_iter().filter(|p| !p.starts_with(project)).collect()
}

/// The CLI's argument vectors, in a project inside `world`.
fn cli(seed: u64, world: &Path) -> (Counts, Vec<String>) {
    let mut rng = Rng(seed ^ 0x9e37_79b9);
    let project = world.join("cli");
    std::fs::create_dir_all(&project).unwrap_or_else(|e| panic!("{e}"));
    let mut c = Counts::default();
    let mut failures = Vec::new();
    let run = |args: &[String]| -> Option<std::process::Output> {
        let child = std::process::Command::new(env!("CARGO_BIN_EXE_probelab"))
            .args(args)
            .current_dir(&project)
            .env("TMPDIR", world.join("cli-tmp"))
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .ok()?;
        let pid = child.id();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(child.wait_with_output());
        });
        match rx.recv_timeout(HANG) {
            Ok(out) => out.ok(),
            Err(_) => {
                let _ =
                    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), nix::sys::signal::Signal::SIGKILL);
                None
            }
        }
    };
    std::fs::create_dir_all(world.join("cli-tmp")).unwrap_or_else(|e| panic!("{e}"));
    let init = run(&["init".to_string()]);
    assert!(init.is_some_and(|o| o.status.success()), "probelab init");
    let session = repo().join("fixtures/sessions/claude-code-2.1.235.jsonl").display().to_string();
    let names = ["../x", "../../x", "/tmp/../x", "a/../../x", "", ".", "ok/name", "x y", "é", "a//b", "-x", "a.toml"];
    // (not `/` as a path to run: a walk of the whole file system is slow, not wrong)
    let values = ["0", "-1", "20000", "99999999999999999999", "", "x", "/dev/zero", "..", "probes", "é", "-"];
    for n in 0..CLI_CASES {
        let args: Vec<String> = match rng.below(9) {
            0 => vec!["new".into(), rng.pick(&names).to_string()],
            1 => vec!["import".into(), session.clone(), rng.pick(&names).to_string()],
            2 => vec!["import".into(), rng.pick(&["/dev/zero", "/", "/dev/null", ".", "nope"]).to_string()],
            3 => vec!["run".into(), "-j".into(), rng.pick(&values).to_string(), rng.pick(&values).to_string()],
            4 => vec!["list".into()],
            5 => vec!["gc-blobs".into()],
            6 => vec!["review".into(), rng.pick(&["--accept", "--reject", "--accept"]).to_string()],
            7 => vec!["diff".into(), rng.pick(&values).to_string(), rng.pick(&values).to_string()],
            _ => {
                let mut v = vec![rng.pick(&["run", "list", "new", "review", "--golden", "-j"]).to_string()];
                for _ in 0..rng.below(4) {
                    v.push(rng.pick(&values).to_string());
                }
                v
            }
        };
        c.cases += 1;
        match run(&args) {
            None => {
                c.hangs += 1;
                failures.push(format!("cli case {n} {args:?} hung (or did not start)"));
            }
            Some(out) => {
                use std::os::unix::process::ExitStatusExt;
                if out.status.code() == Some(101) || out.status.signal().is_some() {
                    c.panics += 1;
                    failures.push(format!(
                        "cli case {n} {args:?}: {:?}\n{}",
                        out.status,
                        String::from_utf8_lossy(&out.stderr)
                    ));
                }
                let escaping = ["new", "import"].contains(&args[0].as_str())
                    && args
                        .get(if args[0] == "new" { 1 } else { 2 })
                        .is_some_and(|a| a.contains("..") || a.starts_with('/'));
                if escaping && out.status.success() {
                    c.wrong_successes += 1;
                    failures.push(format!("cli case {n} {args:?} succeeded"));
                }
            }
        }
    }
    // the in-process surfaces' own project is not the CLI's to write, nor theirs to judge here
    let out: Vec<PathBuf> = outside(world, &project)
        .into_iter()
        .filter(|p| !p.starts_with(world.join("project")) && !p.starts_with(world.join("cli-tmp")))
        .collect();
    c.writes_outside = out.len();
    if !out.is_empty() {
        failures.push(format!("written outside the project: {out:?}"));
    }
    (c, failures)
}

#[test]
fn every_surface_holds_under_fuzzed_input() {
    let seed = std::env::var("PROBELAB_FUZZ_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(1) | 1
    });
    eprintln!("surface fuzzer: seed {seed} (PROBELAB_FUZZ_SEED={seed} replays it)");
    // on a RAM file system where there is one: the goldens' cases are file operations
    let shm = Path::new("/dev/shm");
    let world = if shm.is_dir() { tempfile::tempdir_in(shm) } else { tempfile::tempdir() };
    let world = world.unwrap_or_else(|e| panic!("{e}"));
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    // the in-process surfaces on a thread of their own: a case that does not end is a hang, not a stuck test
    let (tick_tx, tick_rx) = std::sync::mpsc::channel::<&'static str>();
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    let w = world.path().to_path_buf();
    std::thread::spawn(move || {
        let tick = move |s: &str| {
            let _ = tick_tx.send(if s == "probe files" { "probe files" } else { "other" });
        };
        let _ = done_tx.send(in_process(seed, &w, &tick));
    });
    let mut last = "start";
    let (mut counts, mut failures) = loop {
        if let Ok(r) = done_rx.try_recv() {
            break r;
        }
        match tick_rx.recv_timeout(HANG) {
            Ok(s) => last = s,
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                break done_rx.recv_timeout(HANG).unwrap_or_else(|_| panic!("the fuzzer's thread died after {last}"));
            }
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                std::panic::set_hook(hook);
                panic!("seed {seed}: a case hung (no progress for {HANG:?}; last surface {last})");
            }
        }
    };
    std::panic::set_hook(hook);
    let project = world.path().join("project");
    let stray = outside(world.path(), &project)
        .into_iter()
        .filter(|p| !p.starts_with(world.path().join("cli")) && !p.starts_with(world.path().join("cli-tmp")))
        .count();
    counts.entry("goldens and blobs").or_default().writes_outside += stray;
    let began = std::time::Instant::now();
    let (cli_counts, cli_failures) = cli(seed, world.path());
    eprintln!("surface fuzzer: CLI arguments in {:?}", began.elapsed());
    counts.insert("CLI arguments", cli_counts);
    failures.extend(cli_failures);
    let total: usize = counts.values().map(|c| c.cases).sum();
    for (surface, c) in &counts {
        eprintln!(
            "surface fuzzer: {surface}: {} cases, {} panics, {} hangs, {} wrong successes, {} unpositioned errors, {} writes outside",
            c.cases, c.panics, c.hangs, c.wrong_successes, c.unpositioned, c.writes_outside
        );
    }
    assert!(total >= CASES, "{total} cases");
    let bad: usize = counts.values().map(Counts::bad).sum();
    assert_eq!(bad, 0, "seed {seed}: {counts:#?}\n{}", failures.join("\n---\n"));
}
