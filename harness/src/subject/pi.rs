//! pi by version (`--subject pi@0.73.1`): the npm package `@mariozechner/pi-coding-agent`, a Node
//! program (`dist/cli.js`, run by `node` ≥ 20.6). Configured against the stub with `baseUrl` for its
//! `anthropic` provider in `~/.pi/agent/models.json` (written into the sandbox's HOME) and
//! `ANTHROPIC_API_KEY`, and run as `pi -p --provider anthropic --model claude-sonnet-4-5 --tools
//! read,bash,edit,write,grep,find,ls "<prompt>"` (grep and find only with `--tools`; they run `rg` and
//! `fd` ≥ 10). `PI_OFFLINE=1`: its tool manager would otherwise download `rg` / `fd` from GitHub when
//! they are missing (npm runs no install script here either: its dependencies koffi and protobufjs have
//! install scripts). Its tools: `dialects/pi.toml`.

use super::agent::{write_config, AgentSpec, Launched, Start};
use super::error::ConverseError;

/// The version the conformance table runs.
pub const PINNED: &str = "0.73.1";

/// Its install: the package's CLI script.
pub static PACKAGE: crate::versions::Kind = crate::versions::Kind {
    dir: "pi",
    package: "@mariozechner/pi-coding-agent",
    program: "node_modules/@mariozechner/pi-coding-agent/dist/cli.js",
    version_line: "{v}",
    // 0.73.1 with its 188 dependencies: 204 MB, measured
    install_size: 215_000_000,
    claude_code: false,
    also: &[],
};

/// The agent.
pub static SPEC: AgentSpec = AgentSpec {
    kind: "pi",
    install: &PACKAGE,
    dialect: ("harness/dialects/pi.toml", include_str!("../../dialects/pi.toml")),
    recorded_tools: ("harness/dialects/pi.tools.json", include_str!("../../dialects/pi.tools.json")),
    requires: &["node", "rg", "fd"],
    launch,
};

fn launch(s: &Start<'_>) -> Result<Launched, ConverseError> {
    let models = serde_json::json!({"providers": {"anthropic": {"baseUrl": s.base_url}}});
    let text =
        serde_json::to_string_pretty(&models).map_err(|source| ConverseError::Json { what: "models.json", source })?;
    write_config(&s.c.sandbox.home, ".pi/agent/models.json", &text)?;
    let args = ["-p", "--provider", "anthropic", "--model", "claude-sonnet-4-5", "--tools"]
        .iter()
        .map(|a| a.to_string())
        .chain(["read,bash,edit,write,grep,find,ls".to_string(), s.c.probe.prompt.clone()])
        .collect();
    Ok((args, vec![("PI_OFFLINE".into(), "1".into())]))
}

/// Its registration ([`super::REGISTERED`]).
pub const REGISTRATION: super::api::Registration = super::api::Registration {
    kind: super::id::SubjectKind::Agent(SPEC.kind),
    versioned: super::api::Versioned::Required,
    usage: "pi@V",
    about: "pi at version V (npm @mariozechner/pi-coding-agent), installed into the cache; Claude Code's probes in its dialect",
    speaks: Some(super::id::CLAUDE_CODE),
    pinned: Some(PINNED),
    prepare: |id| super::agent::Agent::prepare(&SPEC, id),
};
