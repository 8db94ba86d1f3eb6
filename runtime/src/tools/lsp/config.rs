//! How LSP servers are configured: Claude Code's plugin shape. A probe's `[[plugin]]` table is a plugin
//! manifest (`name`, `version`, `description`, `lspServers`); the built-in subject loads its servers into
//! the session's [`super::manager::LspManager`], the Claude Code subject writes it as a plugin dir
//! (`<dir>/.claude-plugin/plugin.json`) and passes `--plugin-dir <dir>`.
//!
//! ```toml
//! [[plugin]]
//! name = "probe-lsp"
//! lspServers.probe = { command = "{probelab}", args = ["fake-lsp", "--trace", "{sandbox}/lsp-trace.jsonl"],
//!                      extensionToLanguage = { ".probe" = "probe" } }
//! ```
//!
//! Placeholders in `command`, `args` and `env` values: `{probelab}` (this harness's binary, which runs the
//! fake server), `{cwd}`, `{home}`, `{sandbox}`. A server is named `plugin:<plugin>:<server>`, as in the
//! reference; an extension two servers claim goes to the first one configured (the reference warns and
//! keeps the first).

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// One LSP server of a plugin (the reference's `lspServers` entry; its fields, camelCase).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LspServerSpec {
    /// The server's executable (no spaces: arguments go in `args`).
    pub command: String,
    /// Its arguments.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// File extension (with the dot) → LSP language id; at least one.
    pub extension_to_language: BTreeMap<String, String>,
    /// Extra environment of the server process.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// `initializationOptions` of `initialize` (default `{}`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initialization_options: Option<Value>,
    /// Answer to the server's `workspace/configuration` requests, pushed by `didChangeConfiguration`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settings: Option<Value>,
    /// The workspace folder (default: the session's cwd).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace_folder: Option<String>,
    /// Deadline of `initialize`, in milliseconds (default [`super::manager::STARTUP_TIMEOUT_MS`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub startup_timeout: Option<u64>,
    /// Deadline of `shutdown`, in milliseconds (default [`super::manager::SHUTDOWN_TIMEOUT_MS`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shutdown_timeout: Option<u64>,
    /// Restart a crashed server at the next call (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restart_on_crash: Option<bool>,
    /// Crash recoveries before giving up (default [`super::manager::MAX_RESTARTS`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_restarts: Option<u32>,
}

/// What is wrong with a plugin ([`PluginSpec::problem`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PluginProblem {
    /// An empty `name`.
    #[error("a [[plugin]] needs a name")]
    NoName,
    /// A server without a `command`.
    #[error("Server {server} missing required 'command' field")]
    NoCommand {
        /// The server's name in the plugin.
        server: String,
    },
    /// A relative `command` with a space (its arguments belong in `args`).
    #[error("server {server}: Command should not contain spaces. Use args array for arguments.")]
    SpaceInCommand {
        /// The server's name in the plugin.
        server: String,
    },
    /// A server without an `extensionToLanguage` mapping.
    #[error("server {server}: extensionToLanguage must have at least one mapping")]
    NoExtensions {
        /// The server's name in the plugin.
        server: String,
    },
}

/// A probe's `[[plugin]]`: a plugin manifest with its LSP servers.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PluginSpec {
    /// The plugin's name.
    pub name: String,
    /// Its version (default `0.0.1`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// Its description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Its LSP servers by name.
    #[serde(default, rename = "lspServers", skip_serializing_if = "BTreeMap::is_empty")]
    pub lsp_servers: BTreeMap<String, LspServerSpec>,
}

impl PluginSpec {
    /// The same plugin with `f` applied to every command, argument and env value.
    pub fn resolved(&self, f: &dyn Fn(&str) -> String) -> PluginSpec {
        let mut p = self.clone();
        for s in p.lsp_servers.values_mut() {
            s.command = f(&s.command);
            s.args = s.args.iter().map(|a| f(a)).collect();
            s.env = s.env.iter().map(|(k, v)| (k.clone(), f(v))).collect();
            s.workspace_folder = s.workspace_folder.as_deref().map(f);
        }
        p
    }

    /// A problem a probe author must fix (an empty name, a server without extensions, a command with a
    /// space), in the reference's words where it has them.
    pub fn problem(&self) -> Option<PluginProblem> {
        if self.name.trim().is_empty() {
            return Some(PluginProblem::NoName);
        }
        for (n, s) in &self.lsp_servers {
            let server = n.clone();
            if s.command.is_empty() {
                return Some(PluginProblem::NoCommand { server });
            }
            if s.command.contains(' ') && !s.command.starts_with('/') {
                return Some(PluginProblem::SpaceInCommand { server });
            }
            if s.extension_to_language.is_empty() {
                return Some(PluginProblem::NoExtensions { server });
            }
        }
        None
    }

    /// The manifest Claude Code reads (`.claude-plugin/plugin.json`), servers under `lspServers`.
    pub fn manifest(&self) -> Value {
        let mut v = serde_json::json!({
            "name": self.name,
            "version": self.version.clone().unwrap_or_else(|| "0.0.1".into()),
            "description": self.description.clone().unwrap_or_else(|| format!("probelab plugin {}", self.name)),
        });
        if let (Some(o), Ok(servers)) = (v.as_object_mut(), serde_json::to_value(&self.lsp_servers)) {
            if !self.lsp_servers.is_empty() {
                o.insert("lspServers".into(), servers);
            }
        }
        v
    }

    /// Writes the plugin dir under `root` (`root/<name>/.claude-plugin/plugin.json`) and returns it.
    pub fn write_dir(&self, root: &Path) -> std::io::Result<PathBuf> {
        let safe: String = self
            .name
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() || matches!(c, '-' | '_') { c } else { '_' })
            .collect();
        let dir = root.join(safe);
        std::fs::create_dir_all(dir.join(".claude-plugin"))?;
        let text = serde_json::to_string_pretty(&self.manifest()).map_err(std::io::Error::other)?;
        std::fs::write(dir.join(".claude-plugin").join("plugin.json"), text)?;
        Ok(dir)
    }
}

/// A configured server: its name (`plugin:<plugin>:<server>`) and spec.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerConfig {
    /// `plugin:<plugin>:<server>`.
    pub name: String,
    /// The spec.
    pub spec: LspServerSpec,
}

/// Every server of these plugins, in order.
pub fn servers(plugins: &[PluginSpec]) -> Vec<ServerConfig> {
    plugins
        .iter()
        .flat_map(|p| {
            p.lsp_servers
                .iter()
                .map(move |(n, s)| ServerConfig { name: format!("plugin:{}:{n}", p.name), spec: s.clone() })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plugin() -> PluginSpec {
        toml::from_str(
            "name = \"probe-lsp\"\nlspServers.probe = { command = \"{probelab}\", args = [\"fake-lsp\", \"--trace\", \"{sandbox}/t\"], extensionToLanguage = { \".probe\" = \"probe\" } }\n",
        )
        .unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn plugins_parse_resolve_and_write_the_reference_manifest() {
        let p = plugin().resolved(&|s| s.replace("{probelab}", "/bin/probelab").replace("{sandbox}", "/sb"));
        assert_eq!(p.problem(), None);
        let d = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let dir = p.write_dir(d.path()).unwrap_or_else(|e| panic!("{e}"));
        let text = std::fs::read_to_string(dir.join(".claude-plugin/plugin.json")).unwrap_or_else(|e| panic!("{e}"));
        let v: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(v["lspServers"]["probe"]["command"], "/bin/probelab");
        assert_eq!(v["lspServers"]["probe"]["args"][2], "/sb/t");
        assert_eq!(v["lspServers"]["probe"]["extensionToLanguage"][".probe"], "probe");
        assert_eq!(servers(&[p])[0].name, "plugin:probe-lsp:probe");
    }

    #[test]
    fn bad_servers_are_named() {
        let mut p = plugin();
        p.lsp_servers.values_mut().for_each(|s| s.extension_to_language.clear());
        assert_eq!(
            p.problem().map(|m| m.to_string()).as_deref(),
            Some("server probe: extensionToLanguage must have at least one mapping")
        );
        let mut p = plugin();
        p.lsp_servers.values_mut().for_each(|s| s.command = "my server".into());
        assert_eq!(
            p.problem().map(|m| m.to_string()).as_deref(),
            Some("server probe: Command should not contain spaces. Use args array for arguments.")
        );
        p.lsp_servers.values_mut().for_each(|s| s.command.clear());
        assert_eq!(
            p.problem().map(|m| m.to_string()).as_deref(),
            Some("Server probe missing required 'command' field")
        );
        p.name.clear();
        assert_eq!(p.problem().map(|m| m.to_string()).as_deref(), Some("a [[plugin]] needs a name"));
    }
}
