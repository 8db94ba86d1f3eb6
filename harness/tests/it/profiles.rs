//! Version profiles (issue 27): every switch of the runtime (`switches::SWITCHES`) holds both sides —
//! its probe, run on `builtin@V` at the last measured version before its `since` and at the first one
//! from it, comes out as the real Claude Code of that version did (the lab's verdict rule: the probe's
//! checks, held to the committed cell where the real version did not pass them, `lab::verdict`). A
//! switch whose probe has no committed cell yet (a probe written with it, measured by
//! `harness/tests/fidelity.rs` against the real releases) is said on stdout and not counted, until the
//! matrix runs the probe.

use harness::lab::{measured, run_probe, verdict, Layout};
use probelab_runtime::profile::{release, Version};
use std::path::PathBuf;

/// The versions with a committed cell of `probe`, oldest first.
fn measured_versions(cells: &std::path::Path, probe: &str) -> Vec<Version> {
    let mut out: Vec<Version> = std::fs::read_dir(cells)
        .unwrap_or_else(|e| panic!("{}: {e}", cells.display()))
        .flatten()
        .filter(|e| e.path().join(format!("{probe}.json")).is_file())
        .filter_map(|e| release(e.file_name().to_str()?))
        .collect();
    out.sort();
    out
}

/// Probes whose verdict at these versions also needs a switch that is not in the runtime yet, with which:
/// skipped (said on stdout) until it is — then this list is empty again.
const PENDING: &[(&str, &str)] = &[];

#[test]
fn each_switch_holds_both_sides_of_its_version() {
    let mut layout = Layout::repo();
    layout.engine = PathBuf::from(env!("CARGO_BIN_EXE_probelab"));
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    layout.golden = tmp.path().to_path_buf();
    let probes = harness::probe::load_all(&[layout.fixtures.join("../probes")]).unwrap_or_else(|e| panic!("{e}"));
    let cells = Layout::repo().cells();
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap_or_else(|e| panic!("{e}"));
    let mut checked = 0;
    let mut uncelled = 0;
    let mut one_sided = 0;
    let mut failed: Vec<String> = Vec::new();
    for switch in probelab_runtime::switches::SWITCHES {
        let probe = probes.iter().find(|p| p.id == switch.probe).unwrap_or_else(|| panic!("{}", switch.probe));
        if let Some((_, why)) = PENDING.iter().find(|(p, _)| *p == switch.probe) {
            println!("profiles: {} ({}) not checked: {why}", switch.name, switch.probe);
            checked += 2;
            continue;
        }
        let since = release(switch.since).unwrap_or_else(|| panic!("{}", switch.since));
        let versions = measured_versions(&cells, switch.probe);
        if versions.is_empty() {
            // a probe the matrix has not run yet (written with the switch; `harness/tests/fidelity.rs`
            // measured it against the real releases): nothing to hold it to until its cells are committed
            println!("profiles: {} ({}) not checked: no committed cell of the probe yet", switch.name, switch.probe);
            uncelled += 1;
            continue;
        }
        let before = versions.iter().rev().find(|v| **v < since);
        let from = versions.iter().find(|v| **v >= since);
        if before.is_none() || from.is_none() {
            // the matrix has run the probe on one side of `since` only (the coverage pass is on its way)
            println!(
                "profiles: {} ({}) checked on one side only: no committed cell on the other",
                switch.name, switch.probe
            );
            one_sided += 1;
        }
        for v in before.into_iter().chain(from) {
            let subject = format!("builtin@{v}");
            let id = harness::subject::SubjectId::parse_registered(&subject).unwrap_or_else(|| panic!("{subject}"));
            if harness::probe::host::missing(&probe.requires_on(&id)).is_some() {
                continue;
            }
            let report = rt.block_on(run_probe(probe, &id, &layout, false)).unwrap_or_else(|e| panic!("{e}"));
            let real = measured(&Layout::repo(), &id, probe).unwrap_or_else(|e| panic!("{e}"));
            let v_ok = verdict(&report, real.as_ref(), &id);
            if let Err(why) = v_ok {
                failed.push(format!("{} ({} since {}): {subject}: {why}", switch.name, switch.probe, switch.since));
            }
            checked += 1;
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n"));
    let both = probelab_runtime::switches::SWITCHES.len() - uncelled - one_sided;
    assert!(checked >= 2 * both + one_sided - 2, "{checked} runs");
    assert!(
        uncelled + one_sided <= 6,
        "{uncelled} switches whose probe has no committed cell, {one_sided} with cells on one side of their version only: run them in the matrix"
    );
}

/// The versions a shell line assigns or passes: `CLAUDE_CODE_VERSIONS="2.1.235 2.1.333"` in scripts/setup,
/// `scripts/matrix-shards 2.1.235,2.1.333 …` in .ci/run.
fn versions_in(text: &str, marker: &str) -> Option<Vec<String>> {
    let line = text.lines().find(|l| l.trim_start().starts_with(marker))?;
    let rest = line.trim_start()[marker.len()..].trim_start_matches(['=', ' ']);
    // a quoted list ("a b") up to its closing quote, else the first word (a,b)
    let list = match rest.strip_prefix('"') {
        Some(quoted) => quoted.split('"').next()?,
        None => rest.split(' ').next()?,
    };
    Some(list.split([',', ' ']).filter(|v| !v.is_empty()).map(str::to_string).collect())
}

#[test]
fn setup_installs_the_reference_and_the_newest_profile_and_ci_shards_exactly_those() {
    // the fidelity generator and bare `builtin` speak for profile::NEWEST, the suite's claude-code probes
    // for the reference: scripts/setup must install both on a fresh machine, and CI's sharded matrix must
    // run on versions setup installed (a third would be a download of ~330 MB in every CI run)
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let setup = std::fs::read_to_string(root.join("scripts/setup")).unwrap_or_else(|e| panic!("{e}"));
    let ci = std::fs::read_to_string(root.join(".ci/run")).unwrap_or_else(|e| panic!("{e}"));
    let installed = versions_in(&setup, "CLAUDE_CODE_VERSIONS")
        .unwrap_or_else(|| panic!("no CLAUDE_CODE_VERSIONS= in scripts/setup"));
    let want = [harness::subject::id::REFERENCE_VERSION, probelab_runtime::profile::NEWEST];
    assert_eq!(installed, want, "scripts/setup's CLAUDE_CODE_VERSIONS");
    let sharded =
        versions_in(&ci, "scripts/matrix-shards").unwrap_or_else(|| panic!("no scripts/matrix-shards line in .ci/run"));
    assert_eq!(sharded, want, ".ci/run's matrix-shards versions");
    // the reader itself: a list that names another version is told apart
    assert_eq!(
        versions_in("CLAUDE_CODE_VERSIONS=\"2.1.235 2.1.332\"\n", "CLAUDE_CODE_VERSIONS"),
        Some(vec!["2.1.235".to_string(), "2.1.332".to_string()])
    );
    assert_eq!(
        versions_in("scripts/matrix-shards 2.1.1,2.1.2 3 'x'", "scripts/matrix-shards"),
        Some(vec!["2.1.1".into(), "2.1.2".into()])
    );
}
