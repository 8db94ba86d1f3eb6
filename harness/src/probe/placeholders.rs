//! The names of a run's placeholders and the probelab binary `{probelab}` stands for: a leaf, so the
//! parser can validate a `matches` regex before any sandbox exists ([`placeholders_as_literals`]) and the
//! sandbox can resolve them ([`super::sandbox`]).

use std::path::{Path, PathBuf};

/// The `{probelab}` placeholder's name: the probelab binary (its `fake-mcp` and `fake-lsp` subcommands
/// are the fixture servers of MCP and LSP probes).
pub const PROBELAB: &str = "probelab";
/// Every placeholder a run resolves: the sandbox's three, `{probelab}`, and those the run's services
/// add (`{web}`, `{artifact}`).
pub const PLACEHOLDERS: &[&str] = &["cwd", "home", "sandbox", PROBELAB, "web", "artifact"];

/// `re` with each placeholder replaced by `literal` (checked to be a regex literal by the caller): how a
/// probe's `matches` is validated before any run has its values.
pub fn placeholders_as_literals(re: &str, literal: &str) -> String {
    PLACEHOLDERS.iter().fold(re.to_string(), |out, name| out.replace(&format!("{{{name}}}"), literal))
}

/// `re` with the former spelling of a placeholder read as the placeholder: `\{cwd}` (a backslash before
/// the brace, which the rule before placeholders became escaped literals needed) is `{cwd}`, the same
/// literal. Only an odd run of backslashes escapes the brace: `\\{cwd}` is a literal backslash, then the
/// placeholder, and stays as written.
pub fn old_spelling_read(re: &str) -> String {
    let mut out = String::with_capacity(re.len());
    let mut backslashes = 0;
    for (i, ch) in re.char_indices() {
        let placeholder =
            ch == '{' && PLACEHOLDERS.iter().any(|n| re[i + 1..].strip_prefix(n).is_some_and(|r| r.starts_with('}')));
        if placeholder && backslashes % 2 == 1 {
            out.pop();
        }
        backslashes = if ch == '\\' { backslashes + 1 } else { 0 };
        out.push(ch);
    }
    out
}

/// Env override of the probelab binary `{probelab}` names.
pub const ENV_PROBELAB_BIN: &str = "PROBELAB_BIN";

/// The running executable, when it is the `probelab` CLI (set by its `main`, whatever the file is
/// called: a copy named `probelab-main` is still the lab, and is the relay and `{probelab}` of its runs).
static THIS_IS_PROBELAB: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();

/// Called by the CLI's `main`: this process is the probelab binary.
pub fn this_is_probelab() {
    if let Ok(exe) = std::env::current_exe() {
        let _ = THIS_IS_PROBELAB.set(exe);
    }
}

/// The probelab binary: `$PROBELAB_BIN`, else this executable when it is the CLI (whatever its file's
/// name) or is named probelab, else the `probelab` beside or above it (a test binary in
/// `target/<profile>/deps/`).
pub fn probelab_binary() -> PathBuf {
    if let Some(p) = std::env::var_os(ENV_PROBELAB_BIN) {
        return PathBuf::from(p);
    }
    if let Some(p) = THIS_IS_PROBELAB.get() {
        return p.clone();
    }
    let Ok(exe) = std::env::current_exe() else { return PathBuf::from("probelab") };
    if exe.file_stem().is_some_and(|n| n == "probelab") {
        return exe;
    }
    let dir = exe.parent().unwrap_or(Path::new("."));
    [dir.join("probelab"), dir.join("..").join("probelab")]
        .into_iter()
        .find(|p| p.is_file())
        .unwrap_or_else(|| PathBuf::from("probelab"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_former_spelling_of_a_placeholder_is_the_placeholder() {
        assert_eq!(old_spelling_read(r"^read \{cwd}/x"), "^read {cwd}/x");
        assert_eq!(old_spelling_read(r"\{web} and \{home}/é\{sandbox}"), "{web} and {home}/é{sandbox}");
        // a literal backslash before the placeholder, and escaped braces that are no placeholder, stay
        assert_eq!(old_spelling_read(r"\\{cwd}"), r"\\{cwd}");
        assert_eq!(old_spelling_read(r"\\\{cwd}"), r"\\{cwd}");
        assert_eq!(old_spelling_read(r"a\{2}\{other}\{cwd\}"), r"a\{2}\{other}\{cwd\}");
    }

    #[test]
    fn a_probe_in_the_former_spelling_parses_and_matches_the_path() {
        let text = "id = \"x.y\"\nclaims = [\"READ-1\"]\nabout = \"a\"\n[[turn]]\n\
                    tool_use = [{ name = \"Read\", input = { file_path = \"{cwd}/f\" } }]\n[[turn]]\ntext = \"done\"\n\
                    [[check]]\nresult = 1\nmatches = '^read \\{cwd}/subdir'\n";
        let probe = super::super::parse(Path::new("p.toml"), text).unwrap_or_else(|e| panic!("{e}"));
        let re = probe.checks[0].0.text.matches.clone().unwrap_or_default();
        assert_eq!(re, "^read {cwd}/subdir", "the same literal as the current spelling (matched: sandbox.rs)");
    }
}
