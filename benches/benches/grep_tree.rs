//! probelab-rg against ripgrep 14.1.1 on a large real source tree, both run as programs the same way
//! (in the tree, no path given, stdin closed, stdout and stderr discarded): a regex, two literals (few
//! and many lines out), `-i` and `-c`, each at the default parallelism and at `-j1` (one thread each).
//! Criterion times each; then two tables give probelab's time over ripgrep's: the same pairs measured
//! again in rounds of one run of each back to back (the median of the rounds' ratios: what a change of
//! load on a shared machine moves least), and the ratio of criterion's medians with the interval their
//! 95% confidence intervals allow, read back from the estimates criterion wrote in this run.
//!
//! probelab-rg is the `probelab-rg-bench` program of this package (`probelab_search::main_stdio`, what
//! `probelab-rg` runs), built with the bench. ripgrep is `$PROBELAB_RG` or the one `scripts/setup` builds.
//! The tree is `$PROBELAB_GREP_TREE`, else cargo's registry sources (`$CARGO_HOME/registry/src`), else
//! the Rust toolchain's library sources; its size (the bytes of the files searched) is printed. Without
//! ripgrep or a tree the bench says why and measures nothing. Before timing, each case is run once by
//! both with `--sort path` and their outputs compared (printed: the same bytes, or how they differ).

mod common;

use common::{criterion_dir, row, Estimate};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::SystemTime;

const CASES: &[(&str, &[&str])] = &[
    ("regex", &["-n", r"fn\s+main"]),
    ("literal", &["-n", "-F", "unsafe impl"]),
    ("literal-many", &["-n", "-F", "Result<"]),
    ("ignore-case", &["-n", "-i", "hashmap"]),
    ("count", &["-c", "impl"]),
];

/// The parallelism: each program's default, and one thread.
const THREADS: &[(&str, &[&str])] = &[("default", &[]), ("j1", &["-j1"])];

/// A tree smaller than this is too small to tell the parallel search's cost from its gain.
const MIN_TREE_BYTES: u64 = 100_000_000;

fn ours() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_probelab-rg-bench"))
}

/// The candidates for the tree, in order of preference.
fn candidates() -> Vec<PathBuf> {
    if let Some(t) = std::env::var_os("PROBELAB_GREP_TREE") {
        return vec![PathBuf::from(t)];
    }
    let mut c = Vec::new();
    let cargo_home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")));
    if let Some(h) = cargo_home {
        c.push(h.join("registry/src"));
    }
    let sysroot = Command::new(std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into()))
        .args(["--print", "sysroot"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()));
    if let Some(s) = sysroot {
        c.push(s.join("lib/rustlib/src"));
    }
    c
}

/// Runs a program in the tree as the bench times it; its exit status and stdout.
fn run(program: &Path, argv: &[&str], tree: &Path) -> (Option<i32>, Vec<u8>) {
    let o = Command::new(program)
        .args(argv)
        .current_dir(tree)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("{}: {e}", program.display()));
    (o.status.code(), o.stdout)
}

/// One timed run: no output kept (to /dev/null, as ripgrep's own benchmarks do).
fn timed(program: &Path, argv: &[&str], tree: &Path) {
    let s = Command::new(program)
        .args(argv)
        .current_dir(tree)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap_or_else(|e| panic!("{}: {e}", program.display()));
    assert!(matches!(s.code(), Some(0 | 1)), "{} {argv:?}: {s}", program.display());
}

/// The files searched in the tree (as `--files` lists them) and their bytes.
fn size(tree: &Path) -> (usize, u64) {
    let (_, list) = run(ours(), &["--files"], tree);
    let paths: Vec<&[u8]> = list.split(|&b| b == b'\n').filter(|l| !l.is_empty()).collect();
    let bytes = paths
        .iter()
        .filter_map(|p| std::fs::metadata(tree.join(String::from_utf8_lossy(p).as_ref())).ok())
        .map(|m| m.len())
        .sum();
    (paths.len(), bytes)
}

/// The two outputs with `--sort path` (deterministic in both): the same, or how they differ.
fn compare(rg: &Path, argv: &[&str], tree: &Path) -> String {
    let sorted: Vec<&str> = ["--sort", "path"].iter().chain(argv).copied().collect();
    let (a, b) = (run(ours(), &sorted, tree), run(rg, &sorted, tree));
    if a == b {
        format!("same output ({} bytes, exit {:?})", a.1.len(), a.0)
    } else {
        format!("OUTPUTS DIFFER: probelab {} bytes exit {:?}, rg {} bytes exit {:?}", a.1.len(), a.0, b.1.len(), b.0)
    }
}

/// Rounds of the back-to-back measurement.
const ROUNDS: usize = 15;

/// What [`paired`] measured.
struct Paired {
    ours_ms: f64,
    rg_ms: f64,
    /// The median of the rounds' ratios (probelab / rg), and its quartiles.
    ratio: f64,
    ratio_q1: f64,
    ratio_q3: f64,
}

/// [`ROUNDS`] rounds of one timed run of each, back to back (which goes first alternates).
fn paired(rg: &Path, argv: &[&str], tree: &Path) -> Paired {
    let time = |p: &Path| {
        let t = std::time::Instant::now();
        timed(p, argv, tree);
        t.elapsed().as_secs_f64() * 1e3
    };
    let (mut ours_ms, mut rg_ms, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..ROUNDS {
        let (o, r) = if round % 2 == 0 {
            let o = time(ours());
            (o, time(rg))
        } else {
            let r = time(rg);
            (time(ours()), r)
        };
        ours_ms.push(o);
        rg_ms.push(r);
        ratios.push(o / r);
    }
    let at = |v: &mut [f64], q: f64| {
        v.sort_by(f64::total_cmp);
        v[((v.len() - 1) as f64 * q).round() as usize]
    };
    Paired {
        ours_ms: at(&mut ours_ms, 0.5),
        rg_ms: at(&mut rg_ms, 0.5),
        ratio: at(&mut ratios, 0.5),
        ratio_q1: at(&mut ratios, 0.25),
        ratio_q3: at(&mut ratios, 0.75),
    }
}

fn main() {
    let rg = common::rg_path();
    if !rg.exists() {
        println!(
            "grep_tree: skipped: ripgrep 14.1.1 is not at {} (scripts/setup builds it; or set PROBELAB_RG)",
            rg.display()
        );
        return;
    }
    let Some(tree) = candidates().into_iter().find(|t| t.is_dir()) else {
        println!("grep_tree: skipped: no tree to search (set PROBELAB_GREP_TREE; tried {:?})", candidates());
        return;
    };
    let (files, bytes) = size(&tree);
    println!("grep_tree: {} — {files} files, {:.0} MB searched", tree.display(), bytes as f64 / 1e6);
    if bytes < MIN_TREE_BYTES {
        println!(
            "grep_tree: skipped: the tree is under {} MB (set PROBELAB_GREP_TREE to a larger one)",
            MIN_TREE_BYTES / 1_000_000
        );
        return;
    }
    println!(
        "grep_tree: {} cores; ours {}, rg {}",
        std::thread::available_parallelism().map_or(1, |n| n.get()),
        ours().display(),
        rg.display()
    );
    for (name, argv) in CASES {
        println!("grep_tree: {name} {argv:?}: {}", compare(&rg, argv, &tree));
    }
    let out = criterion_dir();
    let since = SystemTime::now();
    let mut c = common::criterion(&out);
    for (name, argv) in CASES {
        let mut g = c.benchmark_group(format!("grep_tree/{name}"));
        for (threads, j) in THREADS {
            let argv: Vec<&str> = j.iter().chain(argv.iter()).copied().collect();
            // alternated, so that a change in the machine's load falls on both
            g.bench_function(format!("probelab-{threads}"), |b| b.iter(|| timed(ours(), &argv, &tree)));
            g.bench_function(format!("rg-14.1.1-{threads}"), |b| b.iter(|| timed(&rg, &argv, &tree)));
        }
        g.finish();
    }
    c.final_summary();

    // The same pairs again, each round one run of each back to back: on a shared machine a change of
    // load between criterion's benchmarks moves its ratio, a pair's two runs see nearly the same load.
    println!(
        "\nprobelab-rg / rg 14.1.1 in {ROUNDS} rounds of one run each, back to back: the median of the rounds' ratios"
    );
    println!("[their interquartile range]; medians of each side's times:");
    println!(
        "{:<20} {:>9} {:>9} {:>18} {:>9} {:>9} {:>18}",
        "case", "probelab", "rg", "default", "pl -j1", "rg -j1", "-j1"
    );
    for (name, argv) in CASES {
        let mut line = format!("{name:<20}");
        for (_, j) in THREADS {
            let argv: Vec<&str> = j.iter().chain(argv.iter()).copied().collect();
            let p = paired(&rg, &argv, &tree);
            line.push_str(&format!(
                " {:>7.1}ms {:>7.1}ms {:>18}",
                p.ours_ms,
                p.rg_ms,
                format!("{:.2}x [{:.2}, {:.2}]", p.ratio, p.ratio_q1, p.ratio_q3)
            ));
        }
        println!("{line}");
    }

    let est = |group: &str, f: &str| Estimate::read(&out, group, Some(f), since);
    println!("\nprobelab-rg / rg 14.1.1: ratios of criterion's medians above, [interval from their 95% CIs];");
    println!("< 1 means probelab is faster; tree {} ({:.0} MB, {files} files):", tree.display(), bytes as f64 / 1e6);
    println!(
        "{:<20} {:>9} {:>9} {:>20} {:>9} {:>9} {:>20}",
        "case", "probelab", "rg", "default", "pl -j1", "rg -j1", "-j1"
    );
    for (name, _) in CASES {
        let g = format!("grep_tree/{name}");
        row(
            name,
            &[
                (est(&g, "probelab-default"), est(&g, "rg-14.1.1-default")),
                (est(&g, "probelab-j1"), est(&g, "rg-14.1.1-j1")),
            ],
        );
    }
}
