//! The search engine against the real ripgrep 14.1.1 on a generated corpus (≥ 200 MB in ≥ 20,000 files,
//! made by a deterministic generator under target/bench-corpus, never committed): literal, regex, -i,
//! context and files-with-matches searches, plus the Grep tool in process. Criterion times each; then a
//! table gives each against ripgrep as the ratio of criterion's medians with the interval their 95%
//! confidence intervals allow, read from the estimates criterion wrote in this run (`estimates.json`):
//! the summary cannot contradict criterion's own figures.
//!
//! ripgrep is `$PROBELAB_RG` or the one `scripts/setup` builds. ripgrep walks with as many threads as
//! there are cores unless it sorts; this engine walks on one thread in path order (and searches on as
//! many), so both `rg` and `rg --sort path` (single-threaded) are shown.
//!
//! The Grep tool is compared with ripgrep given the flags the tool hands to its engine (`--hidden`,
//! `--max-columns 500`, the VCS `--glob !DIR`s, `-l`; a bare `rg -l` is a different search), and the
//! engine alone with those flags is shown too, so the tool's own share can be read off: its shaping (one
//! stat per matched file for the newest-first order, paths made relative, the JSON record).

mod common;

use common::{criterion_dir, row, Estimate};
use probelab_search::{args, run, Io};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::SystemTime;

const FILES: usize = 20_000;
const BYTES_PER_FILE: usize = 10_500;
const WORDS: &[&str] = &[
    "fn", "let", "mut", "self", "return", "match", "impl", "struct", "pub", "use", "crate", "error", "value", "index",
    "buffer", "config", "request", "response", "handler", "state", "Option", "Result", "String", "Vec", "None", "Some",
];

fn real_rg() -> PathBuf {
    let p = common::rg_path();
    assert!(p.exists(), "{} is missing: run scripts/setup", p.display());
    p
}

/// xorshift64*: the same corpus on every machine.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

fn corpus() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/bench-corpus/grep-v1");
    if root.join(".complete").exists() {
        return root;
    }
    let _ = std::fs::remove_dir_all(&root);
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    for i in 0..FILES {
        let dir = root.join(format!("d{:02}/s{:02}", i % 50, (i / 50) % 20));
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
        let mut f = std::io::BufWriter::new(
            std::fs::File::create(dir.join(format!("f{i:05}.rs"))).unwrap_or_else(|e| panic!("{e}")),
        );
        let mut written = 0;
        let mut line_no = 0u64;
        while written < BYTES_PER_FILE {
            line_no += 1;
            let mut line = String::from("    ");
            for _ in 0..(4 + rng.next() % 8) {
                line.push_str(WORDS[(rng.next() % WORDS.len() as u64) as usize]);
                line.push(' ');
            }
            match rng.next() % 400 {
                0 => line.push_str("ERROR: connection reset"),
                1 => line
                    .push_str(&format!("fn handler_{}(state: &mut State) -> Result<(), Error> {{", rng.next() % 1000)),
                2 => line.push_str("Error while reading config"),
                _ => {}
            }
            line.push('\n');
            written += line.len();
            f.write_all(line.as_bytes()).unwrap_or_else(|e| panic!("{e}"));
        }
        let _ = line_no;
    }
    std::fs::write(root.join(".complete"), "").unwrap_or_else(|e| panic!("{e}"));
    root
}

const CASES: &[(&str, &[&str])] = &[
    ("literal", &["ERROR"]),
    ("regex", &[r"fn handler_[0-9]+\("]),
    ("ignore-case", &["-i", "error"]),
    ("context", &["-C", "2", "ERROR"]),
    ("files-with-matches", &["-l", "ERROR"]),
];

fn ours(argv: &[&str], dir: &Path) {
    let mut v: Vec<std::ffi::OsString> = argv.iter().map(std::ffi::OsString::from).collect();
    v.push(dir.into());
    let a = args::parse(&v).unwrap_or_else(|e| panic!("{e}"));
    let (mut out, mut err) = (std::io::sink(), std::io::sink());
    let code = run(
        &a,
        &mut Io {
            stdout: &mut out,
            stderr: &mut err,
            stdout_is_terminal: false,
            cwd: dir.to_path_buf(),
            cancel: None,
            skip: None,
            max_output: None,
        },
    );
    assert_eq!(code, 0);
}

fn theirs(rg: &Path, argv: &[&str], dir: &Path) {
    let s = Command::new(rg)
        .args(argv)
        .arg(dir)
        .current_dir(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(s.code(), Some(0));
}

fn main() {
    let dir = corpus();
    let rg = real_rg();
    let out = criterion_dir();
    let since = SystemTime::now();
    let mut c = common::criterion(&out);
    for (name, argv) in CASES {
        let sorted: Vec<&str> = ["--sort", "path"].iter().chain(argv.iter()).copied().collect();
        let mut g = c.benchmark_group(format!("grep/{name}"));
        g.bench_function("probelab", |b| b.iter(|| ours(argv, &dir)));
        g.bench_function("probelab-sorted", |b| b.iter(|| ours(&sorted, &dir)));
        g.bench_function("rg-14.1.1-sorted", |b| b.iter(|| theirs(&rg, &sorted, &dir)));
        g.bench_function("rg-14.1.1", |b| b.iter(|| theirs(&rg, argv, &dir)));
        g.finish();
    }
    // `-l` with the flags the Grep tool hands its engine, for the engine and for ripgrep
    let mut tool_argv =
        vec!["--hidden".to_string(), "--max-columns".into(), probelab_runtime::limits::GREP_MAX_COLUMNS.to_string()];
    for d in probelab_runtime::limits::VCS_DIRS {
        tool_argv.extend(["--glob".to_string(), format!("!{d}")]);
    }
    tool_argv.extend(["-l".to_string(), "ERROR".into()]);
    let tool_argv: Vec<&str> = tool_argv.iter().map(String::as_str).collect();
    let mut g = c.benchmark_group("grep/tool-flags");
    g.bench_function("probelab", |b| b.iter(|| ours(&tool_argv, &dir)));
    g.bench_function("rg-14.1.1", |b| b.iter(|| theirs(&rg, &tool_argv, &dir)));
    g.finish();
    // The Grep tool in process (the same engine plus result shaping), files_with_matches.
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap_or_else(|e| panic!("{e}"));
    let ctx = probelab_runtime::ToolContext {
        cwd: dir.clone(),
        home: dir.clone(),
        roots: vec![dir.clone()],
        session_id: "bench".into(),
        env: Default::default(),
        read_state: Default::default(),
        tokens: std::sync::Arc::new(probelab_runtime::model::EstimateTokens),
        shell: Default::default(),
        sandbox: Default::default(),
        call_id: None,
        session: Default::default(),
    };
    let grep = probelab_benches::tool("Grep");
    let grep_tool = || {
        let out = rt.block_on(grep.call(serde_json::json!({"pattern": "ERROR"}), &ctx));
        assert!(out.is_ok());
    };
    c.bench_function("grep/tool-files-with-matches", |b| b.iter(grep_tool));
    c.final_summary();

    // The table is criterion's own estimates of this run, read back from its files: a ratio is of the
    // two medians above, with the interval their 95% confidence intervals allow — no second
    // measurement that could disagree with them.
    let est = |group: &str, f: Option<&str>| Estimate::read(&out, group, f, since);
    println!("\nratios of criterion's medians above, [interval from their 95% CIs]; < 1 means probelab is faster;");
    println!("'sorted' = --sort path, one thread each:");
    println!(
        "{:<20} {:>9} {:>9} {:>20} {:>9} {:>9} {:>20}",
        "case", "probelab", "rg", "ratio", "pl sort", "rg sort", "ratio"
    );
    for (name, _) in CASES {
        let g = format!("grep/{name}");
        row(
            name,
            &[
                (est(&g, Some("probelab")), est(&g, Some("rg-14.1.1"))),
                (est(&g, Some("probelab-sorted")), est(&g, Some("rg-14.1.1-sorted"))),
            ],
        );
    }
    let rg_tool = est("grep/tool-flags", Some("rg-14.1.1"));
    row("-l, the tool's flags", &[(est("grep/tool-flags", Some("probelab")), rg_tool)]);
    row("Grep tool -l", &[(est("grep/tool-files-with-matches", None), rg_tool)]);
}
