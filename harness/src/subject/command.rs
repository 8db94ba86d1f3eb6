//! Command subjects: the user's own runtime (or any agent that speaks the Messages API to a base URL),
//! declared in `probelab.toml` — no Rust needed:
//!
//! ```toml
//! [subjects.my-agent]
//! command = ["python3", "{project}/agent.py", "{prompt}"]      # run in the sandbox's cwd
//! env = { ANTHROPIC_BASE_URL = "{base_url}", ANTHROPIC_API_KEY = "sk-test" }
//! dialect = "claude-code"          # its tools are Claude Code's (names, inputs): it runs Claude Code's probes too
//! # or: dialect = "dialects/my-agent.toml"  — its tools in its own names, put in Claude Code's terms by a
//! # dialect file (super::dialect; relative to probelab.toml): Claude Code's probes run on it translated
//! home_files.".config/agent.json" = '{ "baseURL": "{base_url_v1}" }'   # written into HOME before the run
//! cwd_files."agent.toml" = 'url = "{base_url}"'                          # written into the cwd
//! ```
//!
//! Placeholders in `command`, `env` and the files: `{prompt}` (the probe's prompt), `{base_url}` (the
//! stub's root, `http://127.0.0.1:PORT`, as `ANTHROPIC_BASE_URL` and the official SDKs take it),
//! `{base_url_v1}` (the same ending in `/v1`), `{cwd}`, `{home}`, `{sandbox}` (the probe's sandbox),
//! `{project}` (the directory of `probelab.toml`); they are replaced in one pass (a prompt holding
//! `{cwd}` stays as written). The process starts with a clean environment: `PATH` (the lab's), `HOME`,
//! `LANG=C.UTF-8`, `TMPDIR` (in the sandbox), then `env`, then the probe's `[env]` — no key of the
//! lab's environment reaches it. It runs confined like Claude Code ([`crate::confine`]: the host and the
//! project read-only, only the probe's sandbox writable, no network but the stub and the probe's
//! services) unless the probe opts out, and is run like it ([`super::process`]): killed with its whole
//! tree at the deadline or at the record's cap; exit 0 is the end of the conversation, any other exit a
//! failed run with its stderr's last lines. Goldens: `golden/NAME/`.

use super::api::{Conversation, Ended, Subject};
use super::dialect::Dialect;
use super::id::SubjectId;
use futures_util::future::LocalBoxFuture;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use toml::Spanned;

/// The placeholders of a command subject's command, env and files.
pub const PLACEHOLDERS: &[&str] = &["prompt", "base_url", "base_url_v1", "cwd", "home", "sandbox", "project"];

/// The dialects a command subject may speak (the probes of that subject run on it as well).
pub const DIALECTS: &[&str] = &[super::id::CLAUDE_CODE];

/// A command subject as `probelab.toml` declares it, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandSpec {
    /// The argv, placeholders unresolved.
    pub command: Vec<String>,
    /// Its environment (after the clean base), placeholders unresolved.
    pub env: BTreeMap<String, String>,
    /// The subject whose probes it runs too (`claude-code`).
    pub dialect: Option<String>,
    /// The dialect file that puts those probes in its tools' terms (`dialects/NAME.toml`, as written,
    /// and what it says); None: its tools are Claude Code's own.
    pub translation: Option<(String, Arc<Dialect>)>,
    /// Files written into HOME before the run (relative path → template).
    pub home_files: BTreeMap<String, String>,
    /// Files written into the cwd before the run.
    pub cwd_files: BTreeMap<String, String>,
    /// `{project}`: the directory of the project file (a relative program path is taken from here).
    pub project: PathBuf,
    /// `probelab.toml:LINE:COL` of its table.
    pub place: String,
}

impl CommandSpec {
    /// One line about it (`command python3 agent.py {prompt}`).
    pub fn about(&self) -> String {
        let dialect = match (&self.translation, &self.dialect) {
            (Some((file, _)), _) => format!(", dialect {file}"),
            (None, Some(d)) => format!(", dialect {d}"),
            (None, None) => String::new(),
        };
        format!("command {}{dialect}", self.command.join(" "))
    }
}

/// `[subjects.NAME]` as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawCommand {
    command: Spanned<Vec<Spanned<String>>>,
    #[serde(default)]
    env: BTreeMap<String, Spanned<String>>,
    #[serde(default)]
    dialect: Option<Spanned<String>>,
    #[serde(default)]
    home_files: BTreeMap<Spanned<String>, Spanned<String>>,
    #[serde(default)]
    cwd_files: BTreeMap<Spanned<String>, Spanned<String>>,
}

/// A mistake in a command subject's table: the byte offset in the project file, what, how to fix it.
pub(crate) type Problem = (usize, String, Option<String>);

/// Checks one `[subjects.NAME]` table (`name` with its span, `place` made by the caller from an offset).
pub(crate) fn check(
    name: &Spanned<String>,
    raw: RawCommand,
    project: &Path,
    place: impl Fn(usize) -> String,
) -> Result<CommandSpec, Problem> {
    if !super::id::valid_name(name.get_ref()) {
        return Err((
            name.span().start,
            format!("{:?} cannot name a subject", name.get_ref()),
            Some("lower-case letters, digits, - and _, starting with a letter; not builtin or claude-code".into()),
        ));
    }
    let hint_placeholders = || {
        Some(format!("placeholders: {}", PLACEHOLDERS.iter().map(|p| format!("{{{p}}}")).collect::<Vec<_>>().join(" ")))
    };
    let known = |s: &Spanned<String>| -> Result<(), Problem> {
        match unknown_placeholder(s.get_ref()) {
            Some(p) => Err((s.span().start, format!("unknown placeholder {{{p}}}"), hint_placeholders())),
            None => Ok(()),
        }
    };
    if raw.command.get_ref().is_empty() || raw.command.get_ref()[0].get_ref().trim().is_empty() {
        return Err((
            raw.command.span().start,
            "an empty command".into(),
            Some("the program and its arguments: [\"python3\", \"{project}/agent.py\", \"{prompt}\"]".into()),
        ));
    }
    for a in raw.command.get_ref() {
        known(a)?;
    }
    for v in raw.env.values() {
        known(v)?;
    }
    let mut translation = None;
    if let Some(d) = &raw.dialect {
        if d.get_ref().ends_with(".toml") {
            let dialect = dialect_file(name.get_ref(), d.get_ref(), project).map_err(|e| (d.span().start, e, None))?;
            translation = Some((d.get_ref().clone(), Arc::new(dialect)));
        } else if !DIALECTS.contains(&d.get_ref().as_str()) {
            return Err((
                d.span().start,
                format!("unknown dialect {:?}", d.get_ref()),
                Some(format!(
                    "the dialects are: {}, or a dialect file of the project's (\"dialects/{}.toml\")",
                    DIALECTS.join(", "),
                    name.get_ref()
                )),
            ));
        }
    }
    let mut files = [BTreeMap::new(), BTreeMap::new()];
    for (i, table) in [&raw.home_files, &raw.cwd_files].into_iter().enumerate() {
        for (path, template) in table {
            let p = Path::new(path.get_ref());
            let inside =
                !p.as_os_str().is_empty() && p.components().all(|c| matches!(c, std::path::Component::Normal(_)));
            if !inside {
                return Err((
                    path.span().start,
                    format!("{:?} is not a path inside the directory", path.get_ref()),
                    Some("a relative path without `..` (`.config/agent.json`)".into()),
                ));
            }
            known(template)?;
            files[i].insert(path.get_ref().clone(), template.get_ref().clone());
        }
    }
    let [home_files, cwd_files] = files;
    Ok(CommandSpec {
        command: raw.command.get_ref().iter().map(|a| a.get_ref().clone()).collect(),
        env: raw.env.iter().map(|(k, v)| (k.clone(), v.get_ref().clone())).collect(),
        dialect: raw.dialect.map(|d| {
            if translation.is_some() {
                super::id::CLAUDE_CODE.to_string()
            } else {
                d.get_ref().clone()
            }
        }),
        translation,
        home_files,
        cwd_files,
        project: project.to_path_buf(),
        place: place(name.span().start),
    })
}

/// Reads and checks the project's dialect file `rel` (relative to the project's directory) of the
/// subject `name`: parsed with its own file:line:col, its `agent` the subject's name.
fn dialect_file(name: &str, rel: &str, project: &Path) -> Result<Dialect, String> {
    let p = Path::new(rel);
    if p.is_absolute() || p.components().any(|c| matches!(c, std::path::Component::ParentDir)) {
        return Err(format!("dialect file {rel:?} must be a path inside the project (dialects/{name}.toml)"));
    }
    let path = project.join(p);
    let bytes = crate::safe_fs::read_capped(&path, 1 << 20).map_err(|e| format!("dialect file {rel}: {e}"))?;
    let text = String::from_utf8(bytes).map_err(|_| format!("dialect file {rel}: not UTF-8"))?;
    let d = Dialect::parse(rel, &text).map_err(|e| format!("dialect file {e}"))?;
    if d.agent != name {
        return Err(format!("dialect file {rel}: agent = {:?}, but it is the dialect of subject {name:?}", d.agent));
    }
    Ok(d)
}

/// The first `{word}` in `s` that is not a placeholder (JSON braces, `{ "a": 1 }`, are not words).
fn unknown_placeholder(s: &str) -> Option<&str> {
    let mut rest = s;
    while let Some(i) = rest.find('{') {
        let after = &rest[i + 1..];
        if let Some(j) = after.find('}') {
            let word = &after[..j];
            let is_word = !word.is_empty() && word.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            if is_word && !PLACEHOLDERS.contains(&word) {
                return Some(word);
            }
        }
        rest = after;
    }
    None
}

/// Replaces the placeholders of `s` in one pass (a value holding a placeholder is not expanded again).
pub fn resolve(s: &str, values: &BTreeMap<&str, String>) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find('{') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        let hit = after.find('}').and_then(|j| values.get(&after[..j]).map(|v| (j, v)));
        match hit {
            Some((j, v)) => {
                out.push_str(v);
                rest = &after[j + 1..];
            }
            None => {
                out.push('{');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// A command subject, set up (nothing to install: the program is the user's).
#[derive(Debug, Clone)]
pub struct Command {
    id: SubjectId,
    spec: Arc<CommandSpec>,
}

impl Command {
    /// The subject `id` runs `spec`.
    pub fn new(id: SubjectId, spec: Arc<CommandSpec>) -> Command {
        Command { id, spec }
    }

    /// The command for one conversation: placeholders resolved, files written, a clean environment.
    fn command(&self, c: &Conversation<'_>) -> Result<tokio::process::Command, String> {
        let sb = c.sandbox;
        let values: BTreeMap<&str, String> = [
            ("prompt", c.probe.prompt.clone()),
            ("base_url", c.base_url.trim_end_matches('/').to_string()),
            ("base_url_v1", format!("{}/v1", c.base_url.trim_end_matches('/'))),
            ("cwd", sb.cwd.display().to_string()),
            ("home", sb.home.display().to_string()),
            ("sandbox", sb.root.display().to_string()),
            ("project", self.spec.project.display().to_string()),
        ]
        .into_iter()
        .collect();
        for (dir, files) in [(&sb.home, &self.spec.home_files), (&sb.cwd, &self.spec.cwd_files)] {
            for (rel, template) in files {
                let path = dir.join(rel);
                let text = resolve(template, &values);
                probelab_runtime::nofollow::write(std::slice::from_ref(&sb.root), &path, text.as_bytes())
                    .map_err(|e| format!("{}: {e}", path.display()))?;
            }
        }
        if self.spec.dialect.as_deref() == Some(super::id::CLAUDE_CODE) && self.spec.translation.is_none() {
            super::api::write_claude_settings(c.probe, sb)?;
        }
        let tmp = sb.root.join("tmp");
        std::fs::create_dir_all(&tmp).map_err(|e| format!("cannot create {}: {e}", tmp.display()))?;
        let argv: Vec<String> = self.spec.command.iter().map(|a| resolve(a, &values)).collect();
        let program = PathBuf::from(&argv[0]);
        // a relative path with a directory part is the project's (`bin/agent`); a bare name is looked up on PATH
        let program = if program.is_relative() && program.components().count() > 1 {
            self.spec.project.join(program)
        } else {
            program
        };
        // confined by the lab unless the probe opted out (crate::confine): bubblewrap, then the program;
        // the project (its program, `{project}/agent.py`) visible read-only, wherever it is (under /tmp)
        let confine = c.confine.clone().map(|mut cf| {
            cf.visible.push(self.spec.project.clone());
            cf
        });
        let base: probelab_runtime::confine::Env = vec![
            ("PATH".into(), std::env::var_os("PATH").unwrap_or_default()),
            ("HOME".into(), sb.home.clone().into()),
            ("LANG".into(), "C.UTF-8".into()),
            ("TMPDIR".into(), tmp.clone().into()),
        ];
        let own = self.spec.env.iter().map(|(k, v)| (k.clone(), resolve(v, &values)));
        let vars = probelab_runtime::confine::with_env(probelab_runtime::confine::with_env(base, own), sb.env(c.probe));
        Ok(probelab_runtime::confine::command(confine.as_ref(), &program, &argv[1..], &sb.cwd, &vars))
    }
}

impl Subject for Command {
    fn id(&self) -> &SubjectId {
        &self.id
    }

    fn description(&self) -> String {
        format!("subject {}, {}", self.id.name, self.spec.about())
    }

    fn adjust_script(&self, _probe: &crate::probe::Probe, script: &mut stub_messages::Script) {
        if let Some((_, d)) = &self.spec.translation {
            d.translate(script);
        }
    }

    fn unsupported(&self, probe: &crate::probe::Probe) -> Option<String> {
        let (_, d) = self.spec.translation.as_ref()?;
        super::agent::unsupported(d, probe)
    }

    fn dialect(&self) -> Option<&Dialect> {
        self.spec.translation.as_ref().map(|(_, d)| d.as_ref())
    }

    fn converse<'a>(&'a self, c: Conversation<'a>) -> LocalBoxFuture<'a, Result<Ended, String>> {
        Box::pin(async move {
            let name = &self.id.name;
            let cmd = self.command(&c)?;
            let what = format!("subject {name} ({})", self.spec.command.join(" "));
            let ended = super::process::run(cmd, &what, c.until, c.stop).await?;
            let extra = serde_json::Map::from_iter([("command".to_string(), serde_json::json!(self.spec.command))]);
            Ok(ended.ended(name, c.probe.deadline_secs, extra))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_resolve_in_one_pass_and_json_braces_stay() {
        let v: BTreeMap<&str, String> =
            [("prompt", "see {cwd}".to_string()), ("cwd", "/s/work".to_string())].into_iter().collect();
        assert_eq!(resolve("{prompt} in {cwd}", &v), "see {cwd} in /s/work");
        assert_eq!(resolve("{\"a\": {\"b\": \"{cwd}\"}}", &v), "{\"a\": {\"b\": \"/s/work\"}}");
        assert_eq!(resolve("{nope} {", &v), "{nope} {");
        assert_eq!(unknown_placeholder("{ \"a\": \"{home}\" } {base_url_v1}"), None);
        assert_eq!(unknown_placeholder("x {base-url} {baseurl}"), Some("baseurl"));
    }
}
