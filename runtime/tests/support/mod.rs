//! Support shared by the integration tests of the runtime (`runtime/tests/it`) and of the lab
//! (`harness/tests/it`, which includes this file by path): a [`Sandbox`] laid out as the lab lays one
//! out — a fresh temp dir, canonical, with `work/` (the cwd) and `home/` (HOME) — with the session and
//! tool contexts built on it, and, when a test fails while it is alive, a dump of what helps to see why
//! (as ripgrep's `tests/util.rs` `Dir` prints the command, cwd, listing, stdout and stderr): the test,
//! the sandbox's paths, every file in it with its size, and each tool call made through
//! [`Sandbox::call`] with its input and result, plus the test's own [`Sandbox::note`]s.

// each test binary uses its own part of this module
#![allow(dead_code)]

use probelab_runtime::builtin::{self, SessionConfig};
use probelab_runtime::model::EstimateTokens;
use probelab_runtime::{Runtime, Tool, ToolContext, ToolError, ToolOutput};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

/// Entries of the listing a failure dump shows at most.
const LISTING_MAX: usize = 200;
/// Characters of a call's result a failure dump shows at most.
const RESULT_MAX_CHARS: usize = 2_000;

/// A test's sandbox: removed when the test ends; dumped on stderr first when the test fails.
pub struct Sandbox {
    dir: tempfile::TempDir,
    /// The sandbox's root (canonical: symlinks such as macOS's `/tmp` resolved), the session's one root.
    pub root: PathBuf,
    /// `root/work`, the session's cwd.
    pub cwd: PathBuf,
    /// `root/home`, the session's HOME.
    pub home: PathBuf,
    log: Mutex<Vec<String>>,
}

impl Sandbox {
    /// A fresh sandbox with `work/` and `home/` created.
    pub fn new() -> Sandbox {
        let dir = tempfile::Builder::new()
            .prefix("probelab-it-")
            .tempdir()
            .unwrap_or_else(|e| panic!("cannot make a sandbox dir: {e}"));
        let root = dir.path().canonicalize().unwrap_or_else(|e| panic!("{}: {e}", dir.path().display()));
        let (cwd, home) = (root.join("work"), root.join("home"));
        for d in [&cwd, &home] {
            std::fs::create_dir_all(d).unwrap_or_else(|e| panic!("{}: {e}", d.display()));
        }
        Sandbox { dir, root, cwd, home, log: Mutex::default() }
    }

    /// Writes `rel` under the cwd (parents created) and returns its path.
    pub fn write(&self, rel: &str, contents: impl AsRef<[u8]>) -> PathBuf {
        let p = self.cwd.join(rel);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).unwrap_or_else(|e| panic!("{}: {e}", parent.display()));
        }
        std::fs::write(&p, contents).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        p
    }

    /// The session configuration of this sandbox as the lab makes one: its cwd, HOME and root, the rest
    /// default (fill in the model, env, plugins, MCP servers with `..sb.config()`).
    pub fn config(&self) -> SessionConfig {
        SessionConfig {
            cwd: self.cwd.clone(),
            home: self.home.clone(),
            roots: vec![self.root.clone()],
            ..SessionConfig::default()
        }
    }

    /// A tool context of this sandbox without a session (token counts estimated).
    pub fn ctx(&self) -> ToolContext {
        ToolContext::for_sandbox(&self.root, Arc::new(EstimateTokens)).unwrap_or_else(|e| panic!("{e}"))
    }

    /// Starts a session (`builtin::start`) with `config`, one of [`Sandbox::config`]'s.
    pub async fn start(&self, config: SessionConfig) -> Runtime {
        self.note(format!("session started: env {:?}", config.env));
        builtin::start(config).await.unwrap_or_else(|e| panic!("the session did not start: {e}"))
    }

    /// Calls `tool` with `input` in `ctx`; the call and its result go into the failure dump.
    pub async fn call(&self, tool: &dyn Tool, input: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let r = tool.call(input.clone(), ctx).await;
        let shown = match &r {
            Ok(ToolOutput::Text(t)) | Ok(ToolOutput::Data { text: t, .. }) => format!("ok: {t}"),
            Ok(ToolOutput::Blocks(b)) => format!("ok: {} blocks {}", b.len(), Value::Array(b.clone())),
            Err(ToolError::Validation(m)) => format!("validation error: {m}"),
            Err(ToolError::Runtime(m)) => format!("runtime error: {m}"),
        };
        let shown = cut(&shown, RESULT_MAX_CHARS).replace('\n', "\n      ");
        self.note(format!("{} {input}\n    → {shown}", tool.name()));
        r
    }

    /// Adds a line to what a failure dump shows.
    pub fn note(&self, line: impl Into<String>) {
        self.log.lock().unwrap_or_else(PoisonError::into_inner).push(line.into());
    }

    /// What a failure dump shows.
    pub fn dump(&self) -> String {
        let test = std::thread::current().name().unwrap_or("<unnamed thread>").to_string();
        let mut files = Vec::new();
        listing(&self.root, &self.root, &mut files);
        let more = files.len().saturating_sub(LISTING_MAX);
        files.truncate(LISTING_MAX);
        if more > 0 {
            files.push(format!("… and {more} more"));
        }
        let log = self.log.lock().unwrap_or_else(PoisonError::into_inner);
        format!(
            "\n===== sandbox of the failed test {test} =====\nroot: {}\ncwd: {}\nhome: {}\n\nfiles ({}):\n  {}\n\ncalls and notes ({}):\n  {}\n=====\n",
            self.root.display(),
            self.cwd.display(),
            self.home.display(),
            files.len(),
            files.join("\n  "),
            log.len(),
            log.join("\n  "),
        )
    }

    /// The temp dir itself (removed with the sandbox).
    pub fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Default for Sandbox {
    fn default() -> Sandbox {
        Sandbox::new()
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("{}", self.dump());
        }
    }
}

/// Every entry under `dir`, relative to `root`, depth first in name order, with its kind and size;
/// symlinks are shown, not followed.
fn listing(root: &Path, dir: &Path, out: &mut Vec<String>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let mut entries: Vec<_> = entries.flatten().collect();
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let path = e.path();
        let rel = path.strip_prefix(root).unwrap_or(&path).display().to_string();
        match std::fs::symlink_metadata(&path) {
            Ok(m) if m.is_dir() => {
                out.push(format!("{rel}/"));
                listing(root, &path, out);
            }
            Ok(m) if m.file_type().is_symlink() => {
                let to = std::fs::read_link(&path).map(|t| t.display().to_string()).unwrap_or_default();
                out.push(format!("{rel} -> {to}"));
            }
            Ok(m) => out.push(format!("{rel} ({} bytes)", m.len())),
            Err(err) => out.push(format!("{rel} (unreadable: {err})")),
        }
    }
}

fn cut(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((i, _)) => format!("{}… ({} chars in all)", &text[..i], text.chars().count()),
        None => text.to_string(),
    }
}

#[test]
fn a_failing_test_dumps_its_sandbox() {
    let sb = Sandbox::new();
    sb.write("dir/f.txt", "hello\n");
    sb.note("a note");
    let dump = sb.dump();
    for want in ["files (4):", "dir/", "dir/f.txt (6 bytes)", "home/", "a note", "a_failing_test_dumps_its_sandbox"] {
        assert!(dump.contains(want), "{want:?} not in {dump}");
    }
    assert_eq!(cut("abcdef", 3), "abc… (6 chars in all)");
    let root = sb.root.clone();
    drop(sb);
    assert!(!root.exists(), "the sandbox is removed with its test");
}
