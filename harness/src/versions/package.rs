//! The npm package of the Claude Code subject, and where its installs are cached.

use std::path::PathBuf;

/// The npm package.
pub const PACKAGE: &str = "@anthropic-ai/claude-code";
/// The platform package that holds the native binary on this machine.
pub const PLATFORM_PACKAGE: &str = "@anthropic-ai/claude-code-linux-x64";
/// The cache root: `$PROBELAB_CACHE`, else `$XDG_CACHE_HOME/probelab`, else `~/.cache/probelab`.
pub fn cache_root() -> PathBuf {
    std::env::var_os("PROBELAB_CACHE")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("XDG_CACHE_HOME").map(|x| PathBuf::from(x).join("probelab")))
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/probelab")))
        .unwrap_or_else(|| PathBuf::from(".cache/probelab"))
}
