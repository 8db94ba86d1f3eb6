//! OpenCode by version (`--subject opencode@1.18.33`): the npm package `opencode-ai`, whose platform
//! package `opencode-linux-x64` carries the native program (the package's postinstall only links it;
//! npm runs no install script here). Configured against the stub the way its users point it at a
//! gateway — `provider.anthropic.options.baseURL` (ending in `/v1`) in its config file, written into
//! the sandbox's HOME (`~/.config/opencode/opencode.json`) — and run as
//! `opencode run --dangerously-skip-permissions "<prompt>"` in the sandbox's cwd, with its model and
//! plugin downloads, update checks and sharing turned off. It sends a title request (a side request
//! without tools) before the conversation; its grep and glob run `rg`. Its tools: `dialects/opencode.toml`.

use super::agent::{write_config, AgentSpec, Launched, Start, DUMMY_KEY};
use super::error::ConverseError;

/// The version the conformance table runs.
pub const PINNED: &str = "1.18.33";

/// Its install: the native program of the linux-x64 platform package.
pub static PACKAGE: crate::versions::Kind = crate::versions::Kind {
    dir: "opencode",
    package: "opencode-ai",
    program: "node_modules/opencode-linux-x64/bin/opencode",
    version_line: "{v}",
    // 1.18.33 with its two linux-x64 platform packages (x64 and x64-baseline): 370 MB, measured
    install_size: 380_000_000,
    claude_code: false,
    also: &[],
};

/// The agent.
pub static SPEC: AgentSpec = AgentSpec {
    kind: "opencode",
    install: &PACKAGE,
    dialect: ("harness/dialects/opencode.toml", include_str!("../../dialects/opencode.toml")),
    recorded_tools: ("harness/dialects/opencode.tools.json", include_str!("../../dialects/opencode.tools.json")),
    requires: &["rg"],
    launch,
};

fn launch(s: &Start<'_>) -> Result<Launched, ConverseError> {
    let config = serde_json::json!({
        "$schema": "https://opencode.ai/config.json",
        "provider": {"anthropic": {"options": {"baseURL": format!("{}/v1", s.base_url), "apiKey": DUMMY_KEY}}},
        "model": "anthropic/claude-sonnet-4-5",
        "small_model": "anthropic/claude-haiku-4-5",
        "autoupdate": false,
        "share": "disabled",
    });
    let text = serde_json::to_string_pretty(&config)
        .map_err(|source| ConverseError::Json { what: "opencode.json", source })?;
    write_config(&s.c.sandbox.home, ".config/opencode/opencode.json", &text)?;
    let off = [
        "OPENCODE_DISABLE_AUTOUPDATE",
        "OPENCODE_DISABLE_MODELS_FETCH",
        "OPENCODE_DISABLE_DEFAULT_PLUGINS",
        "OPENCODE_DISABLE_LSP_DOWNLOAD",
        "OPENCODE_DISABLE_SHARE",
        "OPENCODE_DISABLE_CLAUDE_CODE",
    ];
    let env = off.iter().map(|k| (k.to_string(), "1".to_string())).collect();
    Ok((vec!["run".into(), "--dangerously-skip-permissions".into(), s.c.probe.prompt.clone()], env))
}

/// Its registration ([`super::REGISTERED`]).
pub const REGISTRATION: super::api::Registration = super::api::Registration {
    kind: super::id::SubjectKind::Agent(SPEC.kind),
    versioned: super::api::Versioned::Required,
    usage: "opencode@V",
    about: "OpenCode at version V (npm opencode-ai), installed into the cache; Claude Code's probes in its dialect",
    speaks: Some(super::id::CLAUDE_CODE),
    pinned: Some(PINNED),
    prepare: |id| super::agent::Agent::prepare(&SPEC, id),
};
