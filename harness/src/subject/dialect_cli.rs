//! `probelab dialect check NAME`: a subject's dialect against the tools it sent ([`super::dialect::report`]),
//! for a registered agent (its dialect and the tools its pinned version sent, compiled in) or a command
//! subject's dialect file (the tools recorded beside it, or recorded now with `--record`).

use super::dialect::{report, Dialect};
use crate::exit::{Failed as _, Failure, Outcome, Usage as _};
use crate::project::Project;
use anyhow::Context as _;
use std::path::PathBuf;
use std::process::ExitCode;

/// `probelab dialect check NAME`: exit 1 on a problem of the dialect, 2 on a usage error.
pub fn check(project: &Project, name: &str, tools: Option<PathBuf>, record: bool) -> Outcome {
    let registry = project.registry();
    let read_tools = |text: &str, origin: &str| -> Result<Vec<serde_json::Value>, Failure> {
        let v: serde_json::Value =
            serde_json::from_str(text).map_err(|e| Failure::msg(2, format!("{origin}: not JSON: {e}")))?;
        v.get("tools")
            .and_then(serde_json::Value::as_array)
            .cloned()
            .ok_or_else(|| Failure::msg(2, format!("{origin}: no \"tools\" array")))
    };
    let from_file = |p: &std::path::Path| -> Result<Vec<serde_json::Value>, Failure> {
        let text = std::fs::read_to_string(p).map_err(|e| Failure::msg(2, format!("{}: {e}", p.display())))?;
        read_tools(&text, &p.display().to_string())
    };
    let (dialect, origin, recorded): (Dialect, String, Vec<serde_json::Value>) = if let Some(spec) =
        crate::subject::AGENTS.iter().find(|a| a.kind == name)
    {
        let d = Dialect::parse(spec.dialect.0, spec.dialect.1).usage()?;
        let t = match &tools {
            Some(p) => from_file(p)?,
            None => read_tools(spec.recorded_tools.1, spec.recorded_tools.0)?,
        };
        (d, spec.dialect.0.to_string(), t)
    } else {
        let spec = registry.command(name).ok_or_else(|| {
                let agents: Vec<&str> = crate::subject::AGENTS.iter().map(|a| a.kind).collect();
                Failure::msg(
                    2,
                    format!(
                        "{name:?} has no dialect: the agents with one are {}, and a command subject declares one with dialect = \"dialects/{name}.toml\" in probelab.toml",
                        agents.join(", ")
                    ),
                )
            })?;
        let Some((file, d)) = spec.translation.clone() else {
            return Err(Failure::msg(
                2,
                format!("subject {name} speaks Claude Code's tools as they are: it has no dialect file to check"),
            ));
        };
        let beside = project.root.join(file.trim_end_matches(".toml").to_string() + ".tools.json");
        let t = match (&tools, record) {
                (Some(p), _) => from_file(p)?,
                (None, true) => {
                    let t = record_tools(project, name)?;
                    let body = serde_json::json!({"agent": name, "tools": t});
                    let text = serde_json::to_string_pretty(&body).unwrap_or_default() + "\n";
                    std::fs::write(&beside, text).map_err(|e| Failure::msg(1, format!("{}: {e}", beside.display())))?;
                    eprintln!("dialect: recorded the {} tools {name} sent into {}", t.len(), project.show(&beside));
                    t
                }
                (None, false) if beside.is_file() => from_file(&beside)?,
                (None, false) => {
                    return Err(Failure::msg(
                        2,
                        format!(
                            "no tool list of {name} at {}: `probelab dialect check {name} --record` runs it once against the stub and writes it there (or --tools FILE)",
                            project.show(&beside)
                        ),
                    ))
                }
            };
        (d.as_ref().clone(), file, t)
    };
    // the tools the project's probes call (none yet in a new project: then no such line)
    let probes = match crate::probe::load_all_with(std::slice::from_ref(&project.probes), &project.known()) {
        Err(crate::probe::LoadError::NoProbeFiles { .. }) => Vec::new(),
        other => other.usage()?,
    };
    let reference = crate::subject::SubjectId::reference();
    let mut called: Vec<String> = probes
        .iter()
        .filter(|p| p.applies_to(&reference))
        .flat_map(crate::conformance::tools_called)
        // an MCP server's tools are the probe's own, given to Claude Code's --mcp-config
        .filter(|t| !t.starts_with("mcp__"))
        .collect();
    called.sort();
    called.dedup();
    let (text, ok) = report(&dialect, &origin, &recorded, &called);
    print!("{text}");
    Ok(if ok { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

/// The tools a command subject sends: it is run once, confined, against the stub playing one text turn;
/// the tools of its first request that has any.
fn record_tools(project: &Project, name: &str) -> Result<Vec<serde_json::Value>, Failure> {
    let text = format!(
        "id = \"dialect.record\"\nclaims = [\"PIPE-1\"]\nabout = \"the tools {name} sends\"\nsubjects = [\"{name}\"]\nprompt = \"Say done.\"\n[[turn]]\ntext = \"done\"\n"
    );
    let probe = crate::probe::parse_with(std::path::Path::new("dialect-record.toml"), &text, &project.known())
        .map_err(|e| Failure::msg(1, e))?;
    let registry = project.registry();
    let id = registry.parse(name).usage()?;
    let subject = registry.prepare(&id).usage()?;
    let rt = crate::suite::runtime(1).context("cannot start the runtime").usage()?;
    let run = rt
        .block_on(crate::run::run_conversation(&probe, subject.as_ref(), &project.fixtures))
        .with_context(|| format!("{name} could not be run"))
        .failed()?;
    let requests = stub_messages::record::Requests::new(&run.exchanges);
    (0..run.exchanges.len())
        .filter_map(|i| requests.field(i, "tools").and_then(serde_json::Value::as_array))
        .find(|t| !t.is_empty())
        .cloned()
        .ok_or_else(|| {
            Failure::msg(
                1,
                format!("{name} sent no request with tools ({} exchanges with the stub)", run.exchanges.len()),
            )
        })
}
