//! Third-party agents as subjects (issues 26 and 40): OpenCode and pi (registered kinds) and GitHub
//! Copilot CLI and Qwen Code (command subjects the repository's probelab.toml pins, as their example
//! projects do), installed by version from npm into the cache (scripts/setup installs the pinned
//! versions; `PROBELAB_SKIP_AGENTS=1` skips these tests where they are not installed), run a probe
//! written in Claude Code's tools through their dialects, confined, against the real stub — what happens
//! is Claude Code's, its texts are not (`semantic-only`) — and an agent whose model never answers is
//! killed at the deadline with everything it started. The conformance table's page renders in headless
//! Chromium, the committed one (docs/conformance/table.html) too. A probe's own args and env for a
//! registered agent (`[subject.agent.NAME]`) reach that agent alone.

use crate::common::said;
use std::path::PathBuf;
use std::process::{Command, Output};

/// The pinned agents: the registered kinds at their versions, then the command subjects probelab.toml pins.
const AGENTS: &[&str] = &["opencode@1.18.33", "pi@0.73.1", "copilot", "qwen-code"];

/// The repository's root.
fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The command subjects' dialect files, as the repository's probelab.toml names them.
const DIALECT_FILES: &[&str] =
    &["docs/examples/copilot/dialects/copilot.toml", "docs/examples/qwen-code/dialects/qwen-code.toml"];

fn skip_agents() -> bool {
    if std::env::var("PROBELAB_SKIP_AGENTS").as_deref() == Ok("1") {
        eprintln!("PROBELAB_SKIP_AGENTS=1: the third-party agents' runs are skipped");
        return true;
    }
    false
}

/// A project in a temp dir holding `probe` as probes/p.toml, with a temp dir of its own for sandboxes.
struct Project {
    _dir: tempfile::TempDir,
    root: PathBuf,
    tmp: PathBuf,
}

fn project(probe: &str) -> Project {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let root = dir.path().canonicalize().unwrap_or_else(|e| panic!("{e}"));
    let tmp = root.join("tmp");
    for d in [root.join("probes"), tmp.clone()] {
        std::fs::create_dir_all(d).unwrap_or_else(|e| panic!("{e}"));
    }
    // the repository's command subjects, with their dialect files where its probelab.toml names them
    let config = std::fs::read_to_string(repo().join("probelab.toml")).unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(root.join("probelab.toml"), config).unwrap_or_else(|e| panic!("{e}"));
    for f in DIALECT_FILES {
        std::fs::create_dir_all(root.join(f).parent().unwrap_or(&root)).unwrap_or_else(|e| panic!("{e}"));
        std::fs::copy(repo().join(f), root.join(f)).unwrap_or_else(|e| panic!("{f}: {e}"));
    }
    std::fs::write(root.join("probes/p.toml"), probe).unwrap_or_else(|e| panic!("{e}"));
    Project { _dir: dir, root, tmp }
}

fn probelab(p: &Project, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_probelab"))
        .args(args)
        .current_dir(&p.root)
        .env("TMPDIR", &p.tmp)
        .output()
        .unwrap_or_else(|e| panic!("probelab {args:?}: {e}"))
}

const DIALECT: &str = r#"
id = "agents.dialect"
claims = ["READ-1"]
about = "write, read, edit, grep, glob and bash in Claude Code's tools, put to an agent in its own"
subjects = ["claude-code"]
deadline_secs = 90
[fixture]
files."notes.txt" = "alpha\n"
[[turn]]
tool_use = [{ name = "Write", input = { file_path = "{cwd}/a.txt", content = "hello\nworld\n" } }]
[[turn]]
tool_use = [{ name = "Read", input = { file_path = "{cwd}/a.txt" } }]
[[turn]]
tool_use = [{ name = "Edit", input = { file_path = "{cwd}/a.txt", old_string = "world", new_string = "there" } }]
[[turn]]
tool_use = [{ name = "Grep", input = { pattern = "there" } }]
[[turn]]
tool_use = [{ name = "Glob", input = { pattern = "*.txt" } }]
[[turn]]
tool_use = [{ name = "Bash", input = { command = "cat a.txt", description = "show it" } }]
[[turn]]
text = "done"
[[check]]
file = "a.txt"
equals = "hello\nthere\n"
[[check]]
result = 1
is_error = false
equals = "File created successfully at: {cwd}/a.txt (file state is current in your context — no need to Read it back)"
[[check]]
result = 2
kind = "semantic"
contains = ["hello", "world"]
[[check]]
result = 4
kind = "semantic"
contains = ["a.txt"]
[[check]]
result = 5
kind = "semantic"
contains = ["a.txt", "notes.txt"]
[[check]]
result = 6
kind = "semantic"
is_error = false
contains = ["hello\nthere"]
"#;

#[test]
fn each_agent_does_what_claude_code_does_in_its_own_tools_and_words() {
    if skip_agents() {
        return;
    }
    let p = project(DIALECT);
    let out_dir = p.root.join("table");
    let run = |agent: &str| {
        let dir = out_dir.to_string_lossy();
        let out = probelab(&p, &["conformance", "--subject", agent, "--claude-code", "none", "-j", "1", "--out", &dir]);
        assert!(out.status.success(), "{agent}: {}", said(&out));
        let json = std::fs::read_to_string(out_dir.join("table.json")).unwrap_or_else(|e| panic!("{e}"));
        let t: harness::conformance::Table = serde_json::from_str(&json).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(t.probes, ["agents.dialect"]);
        (t.columns[0].cells[0].clone(), out)
    };
    for agent in AGENTS {
        let (mut cell, mut out) = run(agent);
        // Qwen Code 0.24.4's shell tool ends a command on the child's `exit` event without waiting for
        // its stdout to close (its child_process path, `exitHandler` when output is not streamed), so on
        // a loaded machine it can answer `Output: (empty)` for `cat a.txt`: 3 runs of 16 at a
        // load of 6. That is the agent's race, which the lab measures as it is; this test is about the
        // lab's dialect, so that one measurement is taken again, once. Any other difference fails.
        if *agent == "qwen-code"
            && cell.mark == harness::conformance::Mark::Differs
            && String::from_utf8_lossy(&out.stderr).contains("Output: (empty)")
        {
            eprintln!("qwen-code lost its shell output (its exit/close race), run again:\n{}", said(&out));
            (cell, out) = run(agent);
        }
        let cell = &cell;
        // the files, the results' is_error and what the reads and searches returned are Claude Code's;
        // the Write's text is not (each agent words it its own way)
        assert_eq!(cell.mark, harness::conformance::Mark::SemanticOnly, "{agent}: {cell:?}\n{}", said(&out));
        assert_eq!(cell.why, "check 2: result 1", "{agent}");
        let left: Vec<_> = std::fs::read_dir(&p.tmp).into_iter().flatten().flatten().map(|e| e.path()).collect();
        assert!(left.is_empty(), "{agent} left in the temp dir: {left:?}");
    }
}

#[test]
fn the_repository_pins_copilot_and_qwen_code_as_their_example_projects_do() {
    // one registration, two files: the example projects are what a user copies, the root's what this
    // repository runs; they may differ only in where the dialect file is
    let table = |path: PathBuf| -> toml::Table {
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        toml::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    };
    let root = table(repo().join("probelab.toml"));
    let subjects = root["subjects"].as_table().unwrap_or_else(|| panic!("no [subjects] in probelab.toml"));
    assert_eq!(subjects.keys().collect::<Vec<_>>(), ["copilot", "qwen-code"]);
    for (name, dialect) in [("copilot", DIALECT_FILES[0]), ("qwen-code", DIALECT_FILES[1])] {
        let example = table(repo().join(format!("docs/examples/{name}/probelab.toml")));
        let mut theirs = example["subjects"][name].as_table().cloned().unwrap_or_else(|| panic!("{name}"));
        let mut ours = subjects[name].as_table().cloned().unwrap_or_else(|| panic!("{name}"));
        assert_eq!(ours.remove("dialect").and_then(|d| d.as_str().map(String::from)).as_deref(), Some(dialect));
        assert_eq!(
            theirs.remove("dialect").and_then(|d| d.as_str().map(String::from)),
            Some(format!("dialects/{name}.toml"))
        );
        assert_eq!(ours, theirs, "[subjects.{name}] of probelab.toml and of docs/examples/{name}/probelab.toml");
    }
}

const SILENT_MODEL: &str = r#"
id = "agents.silent-model"
claims = ["READ-1"]
about = "the model never answers: the agent waits on the stub until the deadline"
subjects = ["claude-code"]
prompt = "MARKER"
deadline_secs = 3
[[turn]]
delay_ms = 3000
text = "too late"
"#;

use crate::common::marked;

#[test]
fn an_agent_whose_model_never_answers_is_killed_at_the_deadline_with_all_it_started() {
    if skip_agents() {
        return;
    }
    for agent in AGENTS {
        let marker = format!("silent-model-{}-{}", std::process::id(), agent.replace(['@', '.'], "-"));
        let p = project(&SILENT_MODEL.replace("MARKER", &marker));
        let out = probelab(&p, &["run", "--subject", agent, "--json"]);
        let stdout = String::from_utf8_lossy(&out.stdout);
        let line: serde_json::Value = stdout
            .lines()
            .find_map(|l| {
                serde_json::from_str::<serde_json::Value>(l).ok().filter(|v| v["probe"] == "agents.silent-model")
            })
            .unwrap_or_else(|| panic!("{agent}: no line of the probe: {}", said(&out)));
        assert_eq!(line["status"], "fail", "{agent}: {line}");
        let detail = line["detail"].as_str().unwrap_or_default();
        assert!(
            detail.contains(&format!("{agent} passed the deadline of 3s: killed, with everything it started")),
            "{agent}: {line}"
        );
        let ms = line["duration_ms"].as_f64().unwrap_or(f64::MAX);
        assert!(ms <= 5000.0, "{agent}: the verdict took {ms} ms, past the deadline of 3 s + 2 s");
        assert!(marked(&marker).is_empty(), "{agent} left running: {:?}", marked(&marker));
        let left: Vec<_> = std::fs::read_dir(&p.tmp).into_iter().flatten().flatten().map(|e| e.path()).collect();
        assert!(left.is_empty(), "{agent} left in the temp dir: {left:?}");
    }
}

fn chromium() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("PROBELAB_CHROMIUM") {
        return Some(PathBuf::from(p));
    }
    ["chromium-headless-shell", "chromium", "chromium-browser"].iter().find_map(|name| {
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()).map(|d| d.join(name)).find(|p| p.is_file())
    })
}

/// The DOM headless Chromium builds of the page at `page`.
fn dump_dom(browser: &std::path::Path, page: &std::path::Path) -> String {
    let url = format!("file://{}", page.canonicalize().unwrap_or_else(|e| panic!("{}: {e}", page.display())).display());
    let out = Command::new(browser)
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--dump-dom"])
        .arg(&url)
        .output()
        .unwrap_or_else(|e| panic!("cannot start {}: {e}", browser.display()));
    assert!(out.status.success(), "chromium failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn the_conformance_table_renders_in_headless_chromium() {
    // a table of every mark, rendered; then the committed one (docs/conformance/, made from the agents'
    // committed columns and Claude Code's goldens: conformance::published)
    use harness::conformance::{Cell, Column, Mark, Table};
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let dir = dir.path();
    let marks = [Mark::Pass, Mark::SemanticOnly, Mark::WordingOnly, Mark::Differs, Mark::NA];
    let subjects = ["builtin", "claude-code@2.1.334"].iter().chain(AGENTS);
    let columns: Vec<Column> = subjects
        .map(|s| {
            let cells = marks.iter().map(|m| Cell { mark: *m, why: format!("{} why", m.word()) }).collect();
            Column::new(s, "run", cells, 0)
        })
        .collect();
    let tools = [&["Read"][..], &["Read", "Write"], &["Write"], &["Bash"], &["Read"]];
    let t = Table {
        probes: ["p.a", "p.b", "p.c", "p.d", "p.e"].map(String::from).to_vec(),
        tools: tools.iter().map(|ts| ts.iter().map(|t| t.to_string()).collect()).collect(),
        columns,
    };
    std::fs::write(dir.join("table.html"), t.html()).unwrap_or_else(|e| panic!("{e}"));
    let back: Table =
        serde_json::from_str(&serde_json::to_string(&t).unwrap_or_default()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(back, t, "the table's JSON reads back");
    let Some(browser) = chromium() else {
        panic!("no headless Chromium found (chromium-headless-shell); run scripts/setup, or set PROBELAB_CHROMIUM")
    };
    let dom = dump_dom(&browser, &dir.join("table.html"));
    assert!(dom.contains("<table id=\"summary\">") && dom.contains("<table id=\"cells\">"), "{dom}");
    assert!(dom.contains("<table id=\"per-tool\">") && dom.contains("<td>Read</td><td>2/2 of 3</td>"), "{dom}");
    assert!(dom.contains("wording-only<br><small>wording-only why</small>"), "the reason is in the cell: {dom}");
    for agent in AGENTS {
        assert!(dom.contains(&format!("<th>{agent}</th>")), "no column for {agent} in the page the browser built");
    }
    let rows = dom.matches("<tr><td>").count();
    // summaries, the per-tool roll-up (Bash, Read, Write), the cells
    assert_eq!(rows, t.columns.len() + 3 + t.probes.len(), "the browser's table rows");
    // the committed table: Claude Code's column and every pinned agent's, a row per probe of the catalogue
    let committed = repo().join("docs/conformance/table.json");
    let json = std::fs::read_to_string(&committed).unwrap_or_else(|e| panic!("{}: {e}", committed.display()));
    let t: Table = serde_json::from_str(&json).unwrap_or_else(|e| panic!("{e}"));
    let dom = dump_dom(&browser, &committed.with_extension("html"));
    assert!(dom.contains("<th>claude-code@"), "no Claude Code column in the committed page");
    for agent in AGENTS {
        assert!(dom.contains(&format!("<th>{agent}</th>")), "no column for {agent} in the committed page");
    }
    let rows = dom.matches("<tr><td>").count();
    assert_eq!(rows, t.columns.len() + t.per_tool().len() + t.probes.len(), "the committed page's rows");
    assert!(t.probes.len() > 100, "the committed table covers the catalogue: {} rows", t.probes.len());
}

/// A probe's own args and env for each registered agent (`[subject.agent.NAME]`): each table names a
/// model the agent's launch does not (its args go after the launch's, so the later `--model` wins) and
/// a mark of its own, and the Bash prints the mark the agent's shell was given.
const OPTIONS: &str = r#"
id = "agents.options"
claims = ["READ-1"]
about = "a probe's own args and env for one agent reach that agent alone"
subjects = ["claude-code"]
deadline_secs = 90
[subject.agent.opencode]
args = ["--model", "anthropic/claude-haiku-4-5"]
env = { PROBELAB_MARK = "for-opencode" }
[subject.agent.pi]
args = ["--model", "claude-haiku-4-5"]
env = { PROBELAB_MARK = "for-pi" }
[[turn]]
tool_use = [{ name = "Bash", input = { command = "echo \"mark=$PROBELAB_MARK.\"", description = "show the mark" } }]
[[turn]]
text = "done"
[[check]]
result = 1
kind = "semantic"
is_error = false
contains = ["mark="]
[[check]]
request = 1
kind = "semantic"
json = [{ pointer = "/model", equals = "claude-haiku-4-5" }]
"#;

#[test]
fn a_probe_s_args_and_env_for_a_registered_agent_reach_that_agent_alone() {
    if skip_agents() {
        return;
    }
    // the registered kinds: the command subjects' options are tested in command_subject.rs
    for agent in AGENTS.iter().filter(|a| a.contains('@')) {
        let kind = agent.split('@').next().unwrap_or_default();
        let p = project(OPTIONS);
        let golden = p.root.join("golden");
        let out = probelab(&p, &["run", "--subject", agent, "--bless", "--golden", &golden.to_string_lossy()]);
        assert!(out.status.success(), "{agent}: {}", said(&out));
        let snap = std::fs::read_to_string(golden.join(agent).join("agents.options.snap"))
            .unwrap_or_else(|e| panic!("{agent}: {e}\n{}", said(&out)));
        // its own mark, not the other agent's, nor none
        assert!(snap.contains(&format!("mark=for-{kind}.")), "{agent}:\n{snap}");
        // its main conversation on the model its table's args named (the launch's is claude-sonnet-4-5)
        assert!(snap.contains("model: claude-haiku-4-5,"), "{agent}:\n{snap}");
        assert!(!snap.contains("model: claude-sonnet-4-5"), "{agent}:\n{snap}");

        // without its table, the same probe: the launch's model, and no mark
        let header = format!("[subject.agent.{kind}]");
        let mut skip = 0_u8;
        let without: Vec<&str> = OPTIONS
            .lines()
            .filter(|l| {
                // the header and its two keys
                if *l == header {
                    skip = 3;
                }
                let keep = skip == 0;
                skip = skip.saturating_sub(1);
                keep
            })
            .collect();
        assert!(!without.join("\n").contains(&header), "{without:?}");
        let p = project(&without.join("\n"));
        let out = probelab(&p, &["run", "--subject", agent, "--json"]);
        assert!(!out.status.success(), "{agent} without its table: {}", said(&out));
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.contains("claude-sonnet-4-5"), "{agent} without its table: {}", said(&out));
    }
}
