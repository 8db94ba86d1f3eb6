//! The session's settings as plain data, in Claude Code's settings.json shape (the subset the runtime
//! honours): permission rules, hooks, the Bash sandbox; how the host answers an ask; env flags as the
//! reference reads them. A leaf: everything else reads these types, they read nothing of the runtime.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The settings of a session, in Claude Code's settings.json shape (the subset the runtime honours).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Settings {
    /// Permission rules.
    #[serde(default)]
    pub permissions: PermissionSettings,
    /// Hooks by event.
    #[serde(default)]
    pub hooks: HookSettings,
    /// The Bash sandbox (bubblewrap).
    #[serde(default, skip_serializing_if = "is_default")]
    pub sandbox: SandboxSettings,
}

fn is_default<T: Default + PartialEq>(v: &T) -> bool {
    *v == T::default()
}

/// How the host answers an `ask` (scripted by the probe; nobody is there to click).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AskAnswer {
    /// Refuse (the default: no human present).
    #[default]
    Deny,
    /// Allow.
    Allow,
}

/// The text the reference sends when the host rejects an ask.
pub const REJECTED: &str = "The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it was a file edit, the new_string was NOT written to the file). STOP what you are doing and wait for the user to tell you how to proceed.";

/// An env flag as Claude Code reads one: `1`, `true`, `yes`, `on` are true; `0`, `false`, `no`, `off` are
/// false (case-insensitive); anything else, or unset, is `None`.
pub fn env_flag(env: &BTreeMap<String, String>, key: &str) -> Option<bool> {
    match env.get(key)?.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Some(true),
        "0" | "false" | "no" | "off" => Some(false),
        _ => None,
    }
}

/// The `permissions` table of the settings.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PermissionSettings {
    /// Rules that allow without asking.
    #[serde(default)]
    pub allow: Vec<String>,
    /// Rules that ask the host (the probe answers).
    #[serde(default)]
    pub ask: Vec<String>,
    /// Rules that deny.
    #[serde(default)]
    pub deny: Vec<String>,
    /// `bypassPermissions` (default: no rule → allowed, like the reference run with permission bypass)
    /// or `default` (no rule → read-only calls allowed, the others ask).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_mode: Option<String>,
}

/// One matcher group.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HookGroup {
    /// Tool names separated by `|`; empty or `*` = every tool.
    #[serde(default)]
    pub matcher: String,
    /// Commands, run in order.
    pub hooks: Vec<HookCommand>,
}

/// One command hook.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HookCommand {
    /// Always `command`.
    #[serde(rename = "type")]
    pub kind: String,
    /// Shell command.
    pub command: String,
    /// Seconds (default 60).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<u64>,
}

/// The `hooks` table of the settings (event name → groups).
pub type HookSettings = BTreeMap<String, Vec<HookGroup>>;

/// `settings.sandbox`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SandboxSettings {
    /// Confine Bash commands.
    #[serde(default)]
    pub enabled: bool,
    /// A call's `dangerouslyDisableSandbox: true` is honoured (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow_unsandboxed_commands: Option<bool>,
    /// Network stays on inside the sandbox (not a key of Claude Code's `sandbox` table, which allows
    /// network by domain; left out of the written settings.json when false).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub allow_network: bool,
    /// Claude Code's `failIfUnavailable` (refuse to start without a working sandbox; its default is to
    /// warn and run unsandboxed). Written for Claude Code; the built-in runtime always fails the call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fail_if_unavailable: Option<bool>,
    /// Claude Code's `enableWeakerNestedSandbox` (its sandbox inside containers without user namespaces
    /// of its own). Written for Claude Code; the built-in runtime's bubblewrap call does not need it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enable_weaker_nested_sandbox: Option<bool>,
}

impl Settings {
    /// These settings with the project's `<cwd>/.claude/settings.json` added, as Claude Code reads it at
    /// start: its permission rules after these, its hooks after these (event by event), its sandbox table
    /// when these have none. Only `permissions`, `hooks` and `sandbox` are read, other keys are left
    /// alone; a file that is missing, not JSON, holds a `null` or one of them in another shape adds
    /// nothing (the reference ignores a settings file it cannot validate). Measured by
    /// `probes/claude-code/tasks-completed-hook.toml` (its hooks come as that file, on both subjects).
    pub fn with_project_file(mut self, cwd: &std::path::Path) -> Settings {
        let Ok(text) = std::fs::read_to_string(cwd.join(".claude").join("settings.json")) else {
            return self;
        };
        let Ok(serde_json::Value::Object(v)) = serde_json::from_str::<serde_json::Value>(&text) else {
            return self;
        };
        // a `null` anywhere makes the reference ignore the whole file (measured: docs/runtime.md, Bash)
        fn has_null(v: &serde_json::Value) -> bool {
            match v {
                serde_json::Value::Null => true,
                serde_json::Value::Array(a) => a.iter().any(has_null),
                serde_json::Value::Object(o) => o.values().any(has_null),
                _ => false,
            }
        }
        if v.values().any(has_null) {
            return self;
        }
        let part = |k: &str| v.get(k).cloned().unwrap_or(serde_json::Value::Null);
        let permissions = match part("permissions") {
            serde_json::Value::Null => PermissionSettings::default(),
            p => match serde_json::from_value::<PermissionSettings>(p) {
                Ok(p) => p,
                Err(_) => return self,
            },
        };
        let hooks = match part("hooks") {
            serde_json::Value::Null => HookSettings::default(),
            h => match serde_json::from_value::<HookSettings>(h) {
                Ok(h) => h,
                Err(_) => return self,
            },
        };
        let sandbox = match part("sandbox") {
            serde_json::Value::Null => None,
            s => match serde_json::from_value::<SandboxSettings>(s) {
                Ok(s) => Some(s),
                Err(_) => return self,
            },
        };
        self.permissions.allow.extend(permissions.allow);
        self.permissions.ask.extend(permissions.ask);
        self.permissions.deny.extend(permissions.deny);
        if self.permissions.default_mode.is_none() {
            self.permissions.default_mode = permissions.default_mode;
        }
        for (event, groups) in hooks {
            self.hooks.entry(event).or_default().extend(groups);
        }
        if let Some(s) = sandbox.filter(|_| self.sandbox == SandboxSettings::default()) {
            self.sandbox = s;
        }
        self
    }
}

#[cfg(test)]
mod project_file_tests {
    use super::*;

    #[test]
    fn the_project_file_adds_rules_and_hooks_and_a_bad_one_nothing() {
        let d = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let mut base = Settings::default();
        base.permissions.deny.push("Bash(rm:*)".into());
        assert_eq!(base.clone().with_project_file(d.path()), base, "no file");
        std::fs::create_dir_all(d.path().join(".claude")).unwrap_or_else(|e| panic!("{e}"));
        let file = d.path().join(".claude/settings.json");
        std::fs::write(
            &file,
            r#"{"model": "x", "permissions": {"deny": ["Write"]}, "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "true"}]}]}}"#,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let merged = base.clone().with_project_file(d.path());
        assert_eq!(merged.permissions.deny, ["Bash(rm:*)", "Write"]);
        assert_eq!(merged.hooks.get("Stop").map(Vec::len), Some(1));
        std::fs::write(
            &file,
            r#"{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "true", "timeout": null}]}]}}"#,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(base.clone().with_project_file(d.path()), base, "a file in another shape adds nothing");
    }
}
