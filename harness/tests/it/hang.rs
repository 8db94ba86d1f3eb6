//! Every hang ends with a verdict within the probe's deadline + [`OVERRUN_BOUND`] (issue 16): an MCP
//! server that never answers its `initialize` (start-up counts against the deadline), an LSP server that
//! never answers, a hook that never reads its stdin (the payload is written beside the wait, so the
//! hook's own timeout holds), and an endless `[stub] cycle` script (the loop stops at the deadline).
//! Each probe runs through `probelab run --json --subject builtin@2.1.235` (one subject, the reference's
//! profile: the tools the probes call are offered there without a search), timed from outside.

use serde_json::Value;
use std::path::Path;
use std::time::{Duration, Instant};

/// How far past its deadline a hanging run may end (issue 16's acceptance: deadline + 2 s).
const OVERRUN_BOUND: Duration = Duration::from_secs(2);
/// The deadline of the hanging probes.
const DEADLINE_SECS: u64 = 3;

/// Runs `probe` (TOML text) and returns (the probe's JSON line, wall time of the whole command).
fn run(probe: &str) -> (Value, Duration) {
    let d = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let path = d.path().join("hang.toml");
    std::fs::write(&path, probe).unwrap_or_else(|e| panic!("{e}"));
    let began = Instant::now();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_probelab"))
        .args(["run", "--json", "--subject", &format!("builtin@{}", harness::subject::id::REFERENCE_VERSION)])
        .arg(&path)
        .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join(".."))
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    let took = began.elapsed();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout.lines().next().unwrap_or_default();
    let v: Value = serde_json::from_str(line)
        .unwrap_or_else(|e| panic!("{e}: {stdout}\nstderr: {}", String::from_utf8_lossy(&out.stderr)));
    (v, took)
}

/// The verdict named `name` (a prefix) of a probe's JSON line: (pass, detail).
fn verdict(v: &Value, name: &str) -> (bool, String) {
    let all = v["verdicts"].as_array().cloned().unwrap_or_default();
    let found = all.iter().find(|x| x["name"].as_str().is_some_and(|n| n.starts_with(name)));
    let found = found.unwrap_or_else(|| panic!("no verdict {name:?} in {v}"));
    (found["pass"] == true, found["detail"].as_str().unwrap_or_default().to_string())
}

fn within_bound(took: Duration, deadline_secs: u64, v: &Value) {
    let bound = Duration::from_secs(deadline_secs) + OVERRUN_BOUND;
    eprintln!("{}: ended after {took:?} (deadline {deadline_secs} s)", v["probe"]);
    assert!(took <= bound, "{} took {took:?}, more than {bound:?}: {v}", v["probe"]);
}

const DEADLINE_VERDICT: &str = "invariant: the run ended by the model within its deadline";

#[test]
fn an_mcp_server_that_never_answers_ends_the_run_at_its_deadline() {
    let (v, took) = run(&format!(
        "id = \"hang.mcp\"\nclaims = [\"MCP-1\"]\nabout = \"a mute server\"\ndeadline_secs = {DEADLINE_SECS}\n\
         [mcp_servers.mute]\ncommand = \"{{probelab}}\"\nargs = [\"fake-mcp\", \"--never-answer\"]\n\
         [[turn]]\ntext = \"done\"\n"
    ));
    within_bound(took, DEADLINE_SECS, &v);
    let (pass, detail) = verdict(&v, DEADLINE_VERDICT);
    assert!(!pass && detail.contains("passed its deadline of 3s while starting its MCP servers"), "{v}");
}

#[test]
fn an_lsp_server_that_never_answers_ends_the_run_at_its_deadline() {
    // the LSP tool's own request timeout (30 s) is past the deadline: the deadline ends the call
    let (v, took) = run(&format!(
        "id = \"hang.lsp\"\nclaims = [\"LSP-3\"]\nabout = \"a mute server\"\ndeadline_secs = {DEADLINE_SECS}\n\
         [fixture]\nfiles.\"a.probe\" = \"x\\n\"\n[[plugin]]\nname = \"mute\"\n\
         lspServers.probe = {{ command = \"{{probelab}}\", args = [\"fake-lsp\", \"--trace\", \"{{sandbox}}/t.jsonl\", \
         \"--mode\", \"hang\"], extensionToLanguage = {{ \".probe\" = \"probe\" }} }}\n\
         [[turn]]\ntool_use = [{{ name = \"Bash\", input = {{ command = \"true\", description = \"warm-up\" }} }}]\n\
         [[turn]]\ntool_use = [{{ name = \"LSP\", input = {{ operation = \"hover\", filePath = \"{{cwd}}/a.probe\", \
         line = 1, character = 1 }} }}]\n[[turn]]\ntext = \"done\"\n"
    ));
    within_bound(took, DEADLINE_SECS, &v);
    let (pass, detail) = verdict(&v, DEADLINE_VERDICT);
    assert!(!pass && detail.contains("passed its deadline of 3s"), "{v}");
}

#[test]
fn a_hook_that_never_reads_its_stdin_still_times_out() {
    // a payload far larger than a pipe holds, and a hook that sleeps instead of reading it: the hook's
    // timeout (1 s) ends it, the Write goes on, the run passes long before its deadline
    let content = "x".repeat(300_000);
    let deadline = 30;
    let (v, took) = run(&format!(
        "id = \"hang.hook\"\nclaims = [\"PIPE-1\"]\nabout = \"a deaf hook\"\ndeadline_secs = {deadline}\n\
         [[settings.hooks.PreToolUse]]\nmatcher = \"Write\"\n\
         hooks = [{{ type = \"command\", command = \"sleep 60\", timeout = 1 }}]\n\
         [[turn]]\ntool_use = [{{ name = \"Write\", input = {{ file_path = \"{{cwd}}/big.txt\", content = \"{content}\" }} }}]\n\
         [[turn]]\ntext = \"done\"\n[[check]]\nresult = 1\nis_error = false\n[[check]]\nfile = \"big.txt\"\n\
         contains = \"xxxx\"\n"
    ));
    let bound = Duration::from_secs(1) + OVERRUN_BOUND;
    eprintln!("hang.hook: ended after {took:?} (hook timeout 1 s)");
    assert!(took <= bound, "took {took:?}, more than {bound:?}: {v}");
    let verdicts = v["verdicts"].as_array().cloned().unwrap_or_default();
    assert!(verdicts.len() >= 6 && verdicts.iter().all(|x| x["pass"] == true), "{v}");
}

#[test]
fn an_endless_cycle_script_ends_at_its_deadline() {
    let (v, took) = run(&format!(
        "id = \"hang.cycle\"\nclaims = [\"BASH-5\"]\nabout = \"an endless script\"\ndeadline_secs = {DEADLINE_SECS}\n\
         [stub]\ncycle = true\n[subject.builtin]\nmax_turns = 100000\n\
         [[turn]]\ntool_use = [{{ name = \"Bash\", input = {{ command = \"head -c 20000 /dev/zero | tr '\\\\0' x\", \
         description = \"out\" }} }}]\n"
    ));
    within_bound(took, DEADLINE_SECS, &v);
    let (pass, detail) = verdict(&v, DEADLINE_VERDICT);
    assert!(!pass && (detail.contains("passed its deadline") || detail.contains("passed its cap")), "{v}");
}

#[test]
fn an_endless_cycle_script_ends_at_the_record_cap_before_a_long_deadline() {
    // a tool the profile offers (a call of a tool it lacks makes the run not applicable, a pass whatever
    // else happened: the matrix's rule, lab::not_applicable); its input is refused (an unknown key)
    // the record stores each request by prefix (its new messages): each turn's call carries a 500 KB input,
    // in the response, its events and the next request's new message, so the record grows by ~1.5 MB a
    // turn until its cap ends the run (the request, ~10 MB then, is still under the stub's body limit)
    let deadline = 120;
    let pad = "x".repeat(500_000);
    let (v, took) = run(&format!(
        "id = \"hang.cycle-cap\"\nclaims = [\"BASH-5\"]\nabout = \"an endless script\"\ndeadline_secs = {deadline}\n\
         [stub]\ncycle = true\n[subject.builtin]\nmax_turns = 100000\n\
         [[turn]]\ntool_use = [{{ name = \"Read\", input = {{ file_path = \"{{cwd}}/none\", pad = \"{pad}\" }} }}]\n"
    ));
    eprintln!("hang.cycle-cap: ended after {took:?} (deadline {deadline} s)");
    let (pass, detail) = verdict(&v, DEADLINE_VERDICT);
    assert!(!pass && detail.contains(&format!("passed its cap of {} bytes", harness::run::RECORD_CAP_BYTES)), "{v}");
    assert!(took < Duration::from_secs(deadline), "{took:?}");
}
