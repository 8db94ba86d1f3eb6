//! Permission rules of the settings (`permissions.allow / ask / deny`, Claude Code's settings.json shape)
//! with the `Tool` and `Tool(pattern)` syntax. Deny wins over ask, ask over allow (PIPE-1, PIPE-2); a
//! `Read(...)` deny also denies writing the same path (EDIT-3); a bare deny removes the tool from the
//! pool before the model sees it (PIPE-6).
//!
//! A path is matched as given and as resolved ([`crate::paths::real_path`]: symlinks, `/proc/self/root`,
//! `..`), so no spelling of a denied file gets past its rule. Path patterns are gitignore-style globs: `//abs/path/**` absolute, `~/x` under HOME, `/x` from the
//! project root (the cwd), `x/**` relative to the cwd (a pattern without `/` matches at any depth).
//! Command patterns (`Bash(git *)`) are globs over the whole command where `*` spans anything.
//!
//! The rules are parsed once per session ([`crate::session::Session::new`]) and kept there for the
//! pipeline and the tools ([`crate::session::Session::rules`]); each rule's globs are compiled once — the
//! command glob when it is parsed, the path glob at its first match and again only when the anchors move
//! (a worktree entered or left) — not on every match (a search walk matches each file it meets).

use crate::settings::PermissionSettings;
use globset::{GlobBuilder, GlobMatcher};
use std::path::PathBuf;

/// What the paths of rules are anchored at, as plain data: HOME (`~/x`) and the project root (`/x`,
/// `x/**`: the cwd, or the active worktree).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Anchors {
    /// HOME.
    pub home: PathBuf,
    /// The project root.
    pub project_root: PathBuf,
}

/// What a permission rule of a tool is matched against.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PermissionSubject {
    /// A file the call reads.
    ReadPath(PathBuf),
    /// A file the call writes (also checked against `Read(...)` deny rules: EDIT-3).
    WritePath(PathBuf),
    /// A shell command.
    Command(String),
    /// Nothing to match beyond the tool name.
    None,
}

/// A parsed rule, its globs compiled once: the command glob when it is parsed, the path glob at its first
/// match and again only when the anchors move (a worktree entered or left, WT-1).
#[derive(Debug, Clone)]
pub struct Rule {
    /// As written in the settings.
    pub text: String,
    /// Tool name.
    pub tool: String,
    /// The pattern inside the parentheses.
    pub pattern: Option<String>,
    /// The pattern as a command glob ([`command_glob`]).
    command: Option<GlobMatcher>,
    /// The pattern as a path glob at the anchors it was last matched at ([`path_glob`]).
    path: PathGlob,
}

/// A rule's path glob and the anchors it was compiled for, shared by the clones of the rule (the
/// session's rules, the walks of a search), with the count of compilations (what the tests hold to one).
#[derive(Debug, Clone, Default)]
struct PathGlob(std::sync::Arc<PathGlobSlot>);

#[derive(Debug, Default)]
struct PathGlobSlot {
    compiled: std::sync::RwLock<Option<(Anchors, Option<GlobMatcher>)>>,
    compilations: std::sync::atomic::AtomicUsize,
}

impl PathGlob {
    /// `hit` of the glob `pattern` stands for at `at` (false when it does not compile), compiled only
    /// when the anchors differ from the last call's.
    fn matches(&self, pattern: &str, at: &Anchors, hit: impl Fn(&GlobMatcher) -> bool) -> bool {
        if let Ok(slot) = self.0.compiled.read() {
            if let Some((_, glob)) = slot.as_ref().filter(|(anchors, _)| anchors == at) {
                return glob.as_ref().is_some_and(&hit);
            }
        }
        let glob = path_glob(pattern, at);
        self.0.compilations.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let matched = glob.as_ref().is_some_and(&hit);
        if let Ok(mut slot) = self.0.compiled.write() {
            *slot = Some((at.clone(), glob));
        }
        matched
    }
}

impl Rule {
    fn new(text: &str, tool: &str, pattern: Option<String>) -> Rule {
        let command = pattern.as_deref().and_then(command_glob);
        Rule { text: text.into(), tool: tool.into(), pattern, command, path: PathGlob::default() }
    }

    /// Whether the rule's path pattern covers `path` at `at` (no pattern: every path).
    fn covers_path(&self, path: &std::path::Path, at: &Anchors) -> bool {
        match &self.pattern {
            None => true,
            Some(pattern) => self.path.matches(pattern, at, |g| g.is_match(path)),
        }
    }
}

/// Settings whose permissions cannot be read: the session does not start (a fatal error of the run).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RuleError {
    /// A rule that is neither `Tool` nor `Tool(pattern)` (as written).
    #[error("permission rule {0:?} is not `Tool` or `Tool(pattern)`")]
    NotARule(String),
    /// A `permissions.defaultMode` other than the two the runtime knows.
    #[error("permissions.defaultMode {0:?} is not bypassPermissions or default")]
    DefaultMode(String),
}

/// Parses `Tool` or `Tool(pattern)`.
pub fn parse_rule(text: &str) -> Result<Rule, RuleError> {
    let t = text.trim();
    match t.split_once('(') {
        None if !t.is_empty() && t.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') => Ok(Rule::new(t, t, None)),
        Some((tool, rest)) if rest.ends_with(')') && !tool.is_empty() => {
            let pattern = &rest[..rest.len() - 1];
            Ok(Rule::new(t, tool, (!pattern.is_empty()).then(|| pattern.to_string())))
        }
        _ => Err(RuleError::NotARule(text.to_string())),
    }
}

/// The decision and the rule that made it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Allowed (by a rule, or by the default mode).
    Allow(String),
    /// Ask the host.
    Ask(String),
    /// Denied by this rule.
    Deny(String),
}

/// Tools whose path rules are `Edit(...)` rules in the reference (every file-writing tool).
const EDIT_FAMILY: &[&str] = &["Edit", "Write", "NotebookEdit", "MultiEdit"];
/// Tools whose path rules are `Read(...)` rules.
const READ_FAMILY: &[&str] = &["Read", "Grep", "Glob", "LS", "NotebookRead"];

/// The reason of an ask that comes from `permissions.defaultMode = default`, not from a rule.
pub const DEFAULT_MODE_ASK: &str = "permissions.defaultMode = default";

/// How deep `eval` / `sh -c` command strings are followed before the command asks (BASH-2).
pub const MAX_SCRIPT_DEPTH: usize = 8;

/// The rules of a session.
#[derive(Debug, Clone, Default)]
pub struct Rules {
    allow: Vec<Rule>,
    ask: Vec<Rule>,
    deny: Vec<Rule>,
    ask_by_default: bool,
}

impl Rules {
    /// Parses the settings' rules.
    pub fn from_settings(s: &PermissionSettings) -> Result<Rules, RuleError> {
        let parse = |v: &Vec<String>| v.iter().map(|r| parse_rule(r)).collect::<Result<Vec<_>, _>>();
        let ask_by_default = match s.default_mode.as_deref() {
            None | Some("bypassPermissions") => false,
            Some("default") => true,
            Some(other) => return Err(RuleError::DefaultMode(other.to_string())),
        };
        Ok(Rules { allow: parse(&s.allow)?, ask: parse(&s.ask)?, deny: parse(&s.deny)?, ask_by_default })
    }

    /// True when some deny rule with a path pattern applies to the tool (directly or as `Read(...)`):
    /// its walks must leave files out.
    pub fn denies_paths(&self, tool: &str) -> bool {
        self.deny.iter().any(|r| r.pattern.is_some() && family_matches(&r.tool, tool))
    }

    /// A deny rule of the tool's family (`Read(…)` for Read, `Edit(…)` for Edit and Write) covers the path
    /// as given — not only where it leads. The reference's file tools check this lexical match in their
    /// input validation, and a match found only through a symlink in their permission check, each with
    /// its own text (`probes/claude-code/deny-through-symlinks.toml`).
    pub fn denies_as_given(&self, tool: &str, path: &std::path::Path, at: &Anchors) -> bool {
        // the reference's writing tools look up `Edit(…)` rules here (a `Write(…)` one is left to the
        // permission check)
        let ours =
            |r: &Rule| if EDIT_FAMILY.contains(&tool) { r.tool == "Edit" } else { family_matches(&r.tool, tool) };
        self.deny.iter().any(|r| ours(r) && r.covers_path(path, at))
    }

    /// How many path globs the rules have compiled so far: one a rule with a pattern that was matched
    /// against a path, and one more each time the anchors it is matched at move.
    pub fn path_glob_compilations(&self) -> usize {
        (self.allow.iter().chain(&self.ask).chain(&self.deny))
            .map(|r| r.path.0.compilations.load(std::sync::atomic::Ordering::Relaxed))
            .sum()
    }

    /// True when a bare deny rule names the tool: it never reaches the model (PIPE-6).
    pub fn hides(&self, tool: &str) -> bool {
        self.deny.iter().any(|r| r.tool == tool && r.pattern.is_none())
    }

    /// The decision for a call.
    pub fn decide(&self, tool: &str, subject: &PermissionSubject, read_only: bool, at: &Anchors) -> Decision {
        if let PermissionSubject::Command(c) = subject {
            return self.decide_command(tool, c, read_only, at);
        }
        self.decide_one(tool, subject, read_only, at)
    }

    /// BASH-2: a command is parsed with a real shell grammar and every simple command in it (pipelines,
    /// lists, subshells, substitutions) is matched on its own, in each of its forms
    /// ([`crate::shell::forms`]: as written, its name unquoted, what a wrapper, `eval` or `sh -c` runs):
    /// any denied form denies the whole, any form that asks makes the whole ask, and only a command whose
    /// every part is allowed runs without asking. A command that does not parse asks (it cannot be
    /// checked part by part), and so does a command named by a variable or a substitution (`$T a`) when
    /// some Bash rule could have denied or asked for it: nothing can be matched, so it is never allowed.
    fn decide_command(&self, tool: &str, command: &str, read_only: bool, at: &Anchors) -> Decision {
        self.decide_script(tool, command, read_only, at, 0)
    }

    fn decide_script(&self, tool: &str, command: &str, read_only: bool, at: &Anchors, depth: usize) -> Decision {
        let whole = PermissionSubject::Command(command.to_string());
        let analysis = crate::shell::analyse(command);
        if !analysis.parsed {
            if let Some(r) = self.deny.iter().find(|r| matches(r, tool, &whole, at)) {
                return Decision::Deny(r.text.clone());
            }
            return Decision::Ask(
                "the shell parser (the command does not parse, so it cannot be checked part by part)".into(),
            );
        }
        if analysis.segments.is_empty() {
            return self.decide_one(tool, &PermissionSubject::Command(command.trim().to_string()), read_only, at);
        }
        let guarded = self.guards(tool);
        let mut decisions: Vec<(String, Decision)> = Vec::new();
        for seg in &analysis.segments {
            let mut last = None;
            for form in crate::shell::forms(seg) {
                let (part, d) = match form {
                    crate::shell::Form::Text(t) => {
                        let d = self.decide_one(tool, &PermissionSubject::Command(t.clone()), read_only, at);
                        (t, d)
                    }
                    crate::shell::Form::Script(s) if depth < MAX_SCRIPT_DEPTH => {
                        let d = self.decide_script(tool, &s, read_only, at, depth + 1);
                        (s, d)
                    }
                    crate::shell::Form::Script(s) => (
                        s,
                        Decision::Ask(format!(
                            "the shell parser (command strings nested more than {MAX_SCRIPT_DEPTH} deep)"
                        )),
                    ),
                    crate::shell::Form::Dynamic(why) if guarded || self.ask_by_default => {
                        // `T=touch; $T a` runs `touch a`: matched as that too, as Claude Code 2.1.235 denies it
                        // (`probes/claude-code/bash-deny-bypass.toml`); it still asks when nothing denies
                        for value in assigned_values(seg, &analysis) {
                            let runs = format!("{value}{}", &seg.text[seg.name.len()..]);
                            let d = match depth < MAX_SCRIPT_DEPTH {
                                true => self.decide_script(tool, &runs, read_only, at, depth + 1),
                                false => Decision::Ask(format!(
                                    "the shell parser (command strings nested more than {MAX_SCRIPT_DEPTH} deep)"
                                )),
                            };
                            if !matches!(d, Decision::Allow(_)) {
                                decisions.push((runs, d));
                            }
                        }
                        (
                            seg.text.clone(),
                            Decision::Ask(format!("the shell parser ({why}: no rule can be matched against it)")),
                        )
                    }
                    crate::shell::Form::Dynamic(_) => continue,
                };
                if matches!(d, Decision::Allow(_)) {
                    last = Some((part, d));
                } else {
                    decisions.push((part, d));
                }
            }
            // allowed: as the innermost command it runs is (`timeout 5 rm` is not allowed by `Bash(timeout *)`)
            decisions.extend(last);
        }
        if let Some((p, Decision::Deny(r))) = decisions.iter().find(|(_, d)| matches!(d, Decision::Deny(_))) {
            return match r.contains(" (it matches the part `") {
                true => Decision::Deny(r.clone()),
                false => Decision::Deny(format!("{r} (it matches the part `{p}`)")),
            };
        }
        if let Some((p, Decision::Ask(r))) = decisions.iter().find(|(_, d)| matches!(d, Decision::Ask(_))) {
            return match r.contains(" (for the part `") {
                true => Decision::Ask(r.clone()),
                false => Decision::Ask(format!("{r} (for the part `{p}`)")),
            };
        }
        decisions.into_iter().next().map(|(_, d)| d).unwrap_or_else(|| Decision::Allow("default mode".into()))
    }

    /// The command a refusal of `command` names, as Claude Code 2.1.235 words it: the part between
    /// top-level pipes that is denied on its own (`echo xa | xargs touch` → `xargs touch`, `true | touch
    /// p` → `touch p`), else the whole command (`touch ran && git push`, `T=touch; $T a`): measured by
    /// `probes/claude-code/bash-deny-bypass.toml` and `probes/claude-code/bash-permissions.toml`.
    pub fn denied_part<'c>(&self, tool: &str, command: &'c str, at: &Anchors) -> std::borrow::Cow<'c, str> {
        let parts = crate::shell::analyse(command).pipe_parts;
        if parts.len() > 1 {
            if let Some(p) =
                parts.into_iter().find(|p| matches!(self.decide_script(tool, p, false, at, 0), Decision::Deny(_)))
            {
                return std::borrow::Cow::Owned(p);
            }
        }
        std::borrow::Cow::Borrowed(command)
    }

    /// Some deny or ask rule names the tool: an unmatchable command could get past it.
    fn guards(&self, tool: &str) -> bool {
        self.deny.iter().chain(&self.ask).any(|r| family_matches(&r.tool, tool))
    }

    fn decide_one(&self, tool: &str, subject: &PermissionSubject, read_only: bool, at: &Anchors) -> Decision {
        let hit = |rules: &[Rule]| rules.iter().find(|r| matches(r, tool, subject, at)).map(|r| r.text.clone());
        if let Some(r) = hit(&self.deny) {
            return Decision::Deny(r);
        }
        // EDIT-3: a path denied for Read cannot be written either.
        if let PermissionSubject::WritePath(p) = subject {
            let as_read = PermissionSubject::ReadPath(p.clone());
            if let Some(r) = self.deny.iter().find(|r| r.tool == "Read" && matches(r, "Read", &as_read, at)) {
                return Decision::Deny(r.text.clone());
            }
        }
        if let Some(r) = hit(&self.ask) {
            return Decision::Ask(r);
        }
        if let Some(r) = hit(&self.allow) {
            return Decision::Allow(r);
        }
        if self.ask_by_default && !read_only {
            Decision::Ask(DEFAULT_MODE_ASK.into())
        } else {
            Decision::Allow("default mode".into())
        }
    }
}

/// The literal values a segment named by a variable (`$T`, `${T}`) may run as: what the command assigns
/// to that variable ([`crate::shell::Analysis::values`]).
fn assigned_values<'a>(seg: &crate::shell::Segment, analysis: &'a crate::shell::Analysis) -> Vec<&'a str> {
    let name = seg.name.strip_prefix('$').map(|n| n.strip_prefix('{').and_then(|n| n.strip_suffix('}')).unwrap_or(n));
    match name {
        Some(name) if !name.is_empty() && seg.text.starts_with(&seg.name) => {
            analysis.values.iter().filter(|(n, _)| n == name).map(|(_, v)| v.as_str()).collect()
        }
        _ => Vec::new(),
    }
}

fn family_matches(rule_tool: &str, tool: &str) -> bool {
    rule_tool == tool
        || (rule_tool == "Edit" && EDIT_FAMILY.contains(&tool))
        || (rule_tool == "Read" && READ_FAMILY.contains(&tool))
}

fn matches(rule: &Rule, tool: &str, subject: &PermissionSubject, at: &Anchors) -> bool {
    if !family_matches(&rule.tool, tool) {
        return false;
    }
    let Some(pattern) = &rule.pattern else {
        return true;
    };
    match subject {
        // as given and as the OS resolves it (a symlink, `/proc/self/root/…`, `a/../b`): a rule on
        // `secrets/**` covers `link-to-secrets/key` too
        PermissionSubject::ReadPath(p) | PermissionSubject::WritePath(p) => rule.path.matches(pattern, at, |g| {
            g.is_match(p) || crate::paths::real_path(p).is_some_and(|real| real != *p && g.is_match(&real))
        }),
        PermissionSubject::Command(c) => rule.command.as_ref().is_some_and(|g| g.is_match(c.trim())),
        PermissionSubject::None => false,
    }
}

/// The absolute glob a path pattern stands for.
pub fn path_glob(pattern: &str, at: &Anchors) -> Option<GlobMatcher> {
    let abs = if let Some(rest) = pattern.strip_prefix("//") {
        format!("/{rest}")
    } else if let Some(rest) = pattern.strip_prefix("~/") {
        format!("{}/{rest}", at.home.display())
    } else if let Some(rest) = pattern.strip_prefix('/') {
        format!("{}/{rest}", at.project_root.display())
    } else if let Some(name) = pattern.strip_suffix("/**").filter(|n| !n.is_empty() && !n.contains('/')) {
        // `name/**`: Claude Code 2.1.235 keeps it as `name` in its gitignore-style matcher, where a bare
        // name matches at any depth — `Read(secrets/**)` covers `inner/secrets/x.txt` too (measured:
        // `probes/read/deny-bypass.toml`, a path through a link up to the sandbox matched as given)
        format!("{}/**/{name}/**", at.project_root.display())
    } else if pattern.contains('/') {
        format!("{}/{pattern}", at.project_root.display())
    } else {
        format!("{}/**/{pattern}", at.project_root.display())
    };
    let abs = if abs.ends_with('/') { format!("{abs}**") } else { abs };
    // `dir/**` covers the directory itself too: searching or listing it would show what it holds
    let abs = match abs.strip_suffix("/**") {
        Some(dir) if !dir.is_empty() => format!("{{{dir},{dir}/**}}"),
        _ => abs,
    };
    GlobBuilder::new(&abs).literal_separator(true).build().ok().map(|g| g.compile_matcher())
}

fn command_glob(pattern: &str) -> Option<GlobMatcher> {
    // Legacy `git:*` means the prefix `git`.
    let p = pattern.strip_suffix(":*").map(|p| format!("{p}*")).unwrap_or_else(|| pattern.to_string());
    // `git *` also matches the bare `git`.
    let p = p.strip_suffix(" *").map(|base| format!("{{{base},{base} *}}")).unwrap_or(p);
    GlobBuilder::new(&p).literal_separator(false).build().ok().map(|g| g.compile_matcher())
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Place {
        cwd: PathBuf,
        at: Anchors,
    }

    fn ctx() -> ((), Place) {
        let cwd = PathBuf::from("/sb/work");
        ((), Place { cwd: cwd.clone(), at: Anchors { home: "/sb/home".into(), project_root: cwd } })
    }

    fn rules(allow: &[&str], ask: &[&str], deny: &[&str]) -> Rules {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect();
        Rules::from_settings(&PermissionSettings { allow: s(allow), ask: s(ask), deny: s(deny), default_mode: None })
            .unwrap_or_default()
    }

    /// The rules' globs are compiled once for the session, not on every match (a search walk matches
    /// every file it meets): again only when the anchors move, and the clones (the walk's) share them.
    #[test]
    fn path_globs_compile_once_per_anchors() {
        let (_d, c) = ctx();
        let r = rules(&["Read(docs/**)"], &["Edit(src/**)"], &["Read(secrets/**)", "Bash(rm *)"]);
        for i in 0..50 {
            let p = PermissionSubject::ReadPath(c.cwd.join(format!("f{i}")));
            assert!(matches!(r.decide("Read", &p, true, &c.at), Decision::Allow(_)));
            let p = PermissionSubject::WritePath(c.cwd.join(format!("src/f{i}")));
            assert!(matches!(r.clone().decide("Edit", &p, false, &c.at), Decision::Ask(_)));
        }
        // Read(secrets/**) and Read(docs/**), once each; Edit(src/**) once; Bash's is a command glob
        assert_eq!(r.path_glob_compilations(), 3);
        let moved = Anchors { home: c.at.home.clone(), project_root: c.cwd.join(".claude/worktrees/w") };
        let p = PermissionSubject::ReadPath(moved.project_root.join("secrets/k"));
        assert_eq!(r.decide("Read", &p, true, &moved), Decision::Deny("Read(secrets/**)".into()));
        assert_eq!(r.path_glob_compilations(), 4);
        let p = PermissionSubject::Command("rm -rf x".into());
        assert_eq!(
            r.decide("Bash", &p, false, &c.at),
            Decision::Deny("Bash(rm *) (it matches the part `rm -rf x`)".into())
        );
        assert_eq!(r.path_glob_compilations(), 4);
    }

    #[test]
    fn deny_beats_ask_beats_allow_and_read_deny_covers_writes() {
        let (_d, c) = ctx();
        let r = rules(&["Read"], &["Edit(docs/**)"], &["Read(secrets/**)"]);
        let secret = c.cwd.join("secrets/k.txt");
        assert_eq!(
            r.decide("Read", &PermissionSubject::ReadPath(secret.clone()), true, &c.at),
            Decision::Deny("Read(secrets/**)".into())
        );
        assert_eq!(
            r.decide("Edit", &PermissionSubject::WritePath(secret), false, &c.at),
            Decision::Deny("Read(secrets/**)".into())
        );
        assert_eq!(
            r.decide("Write", &PermissionSubject::WritePath(c.cwd.join("docs/a.md")), false, &c.at),
            Decision::Ask("Edit(docs/**)".into())
        );
        assert_eq!(
            r.decide("Read", &PermissionSubject::ReadPath(c.cwd.join("a")), true, &c.at),
            Decision::Allow("Read".into())
        );
    }

    #[test]
    fn name_slash_globstar_matches_at_any_depth_and_as_given_is_lexical() {
        let (_d, c) = ctx();
        let r = rules(&[], &[], &["Read(secrets/**)", "Edit(a/b/**)", "Write(w/**)"]);
        let read = |p: &str| r.decide("Read", &PermissionSubject::ReadPath(c.cwd.join(p)), true, &c.at);
        // `secrets/**` is the bare name `secrets`, at any depth (Claude Code 2.1.235, read.deny-bypass)
        for p in ["secrets", "secrets/k", "inner/secrets/x.txt", "up/work/secrets/k"] {
            assert!(matches!(read(p), Decision::Deny(_)), "{p}");
        }
        assert!(matches!(read("secretsx/k"), Decision::Allow(_)));
        // a rule with a slash inside its name part stays anchored at the project root
        let edit = |p: &str| r.decide("Edit", &PermissionSubject::WritePath(c.cwd.join(p)), false, &c.at);
        assert!(matches!(edit("a/b/c"), Decision::Deny(_)));
        assert!(matches!(edit("x/a/b/c"), Decision::Allow(_)));
        // as given: the tool's own family (the writing tools look at Edit rules only)
        assert!(r.denies_as_given("Read", &c.cwd.join("inner/secrets/x"), &c.at));
        assert!(r.denies_as_given("Write", &c.cwd.join("a/b/x"), &c.at));
        assert!(!r.denies_as_given("Write", &c.cwd.join("w/x"), &c.at));
        assert!(!r.denies_as_given("Edit", &c.cwd.join("secrets/x"), &c.at));
    }

    #[test]
    fn bare_name_pattern_matches_at_any_depth_and_bash_prefixes() {
        let (_d, c) = ctx();
        let r = rules(&[], &[], &["Read(.env)", "Bash(git push:*)", "Bash(rm *)"]);
        assert!(matches!(
            r.decide("Read", &PermissionSubject::ReadPath(c.cwd.join("a/b/.env")), true, &c.at),
            Decision::Deny(_)
        ));
        assert!(matches!(
            r.decide("Bash", &PermissionSubject::Command("git push origin".into()), false, &c.at),
            Decision::Deny(_)
        ));
        assert!(matches!(r.decide("Bash", &PermissionSubject::Command("rm".into()), false, &c.at), Decision::Deny(_)));
        assert!(matches!(
            r.decide("Bash", &PermissionSubject::Command("git status".into()), false, &c.at),
            Decision::Allow(_)
        ));
        assert!(!r.hides("Read"));
        assert!(rules(&[], &[], &["Write"]).hides("Write"));
        assert_eq!(
            parse_rule("Bad(").map(|r| r.text).map_err(|e| e.to_string()),
            Err("permission rule \"Bad(\" is not `Tool` or `Tool(pattern)`".to_string())
        );
        let mode = PermissionSettings { default_mode: Some("plan".into()), ..PermissionSettings::default() };
        assert_eq!(
            Rules::from_settings(&mode).map(|_| ()).map_err(|e| e.to_string()),
            Err("permissions.defaultMode \"plan\" is not bypassPermissions or default".to_string())
        );
    }

    /// Issue 16: every way of spelling or wrapping `touch` that reached the shell past `Bash(touch:*)`,
    /// plus those Claude Code 2.1.235 let through (`probes/claude-code/bash-deny-bypass.toml`).
    #[test]
    fn bash_deny_rules_see_through_quotes_wrappers_and_variables() {
        let (_d, c) = ctx();
        let r = rules(&[], &[], &["Bash(touch:*)"]);
        let decide = |cmd: &str| r.decide("Bash", &PermissionSubject::Command(cmd.into()), false, &c.at);
        let denied = [
            "touch a",
            "\"touch\" a",
            "t''ouch a",
            "\\touch a",
            "'touch' a",
            "env touch a",
            "env -i FOO=1 touch a",
            "command touch a",
            "echo x | xargs touch",
            "echo x | xargs -n1 touch",
            "time touch a",
            "time -p touch a",
            "nice touch a",
            "nice -n 5 touch a",
            "timeout 5 touch a",
            "timeout -s KILL 5 touch a",
            "exec touch a",
            "nohup touch a",
            "stdbuf -o0 touch a",
            "/usr/bin/touch a",
            "FOO=1 touch a",
            "echo ok && touch a",
            "(touch a)",
            "{ touch a; }",
            "f() { touch a; }; f",
            "xargs -a /dev/null touch",
            "eval touch a",
            "bash -c 'touch a'",
            "sh -c \"touch a\"",
            "env T=1 nice timeout 5 touch a",
            "command -p touch a",
            "eval 'bash -c \"nohup touch a\"'",
        ];
        for cmd in denied {
            assert!(
                matches!(decide(cmd), Decision::Deny(ref t) if t.starts_with("Bash(touch:*)")),
                "{cmd:?}: {:?}",
                decide(cmd)
            );
        }
        // a variable the command sets is matched as its value (the reference denies `T=touch; $T a`)
        for cmd in ["T=touch; $T a", "T=touch && ${T} a", "T=ls; T=touch; $T a"] {
            assert!(
                matches!(decide(cmd), Decision::Deny(ref t) if t.starts_with("Bash(touch:*)")),
                "{cmd:?}: {:?}",
                decide(cmd)
            );
        }
        for cmd in ["T=ls; $T a", "$(echo touch) a", "`echo touch` a", "\"$T\" a", "env $T a", "$T a"] {
            assert!(matches!(decide(cmd), Decision::Ask(_)), "{cmd:?}: {:?}", decide(cmd));
        }
        for cmd in ["ls touch", "echo touch", "git status", "nice ls", "grep -r touch ."] {
            assert!(matches!(decide(cmd), Decision::Allow(_)), "{cmd:?}: {:?}", decide(cmd));
        }
        // the refusal names the top-level pipe part that is denied, else the whole command
        let part = |cmd: &str| r.denied_part("Bash", cmd, &c.at).into_owned();
        assert_eq!(part("echo xa | xargs touch"), "xargs touch");
        assert_eq!(part("true | touch p"), "touch p");
        assert_eq!(part("echo ok && touch a"), "echo ok && touch a");
        assert_eq!(part("T=touch; $T a"), "T=touch; $T a");
        // without any Bash rule a variable as the name has nothing to get past
        assert!(matches!(
            rules(&[], &[], &["Read(x)"]).decide("Bash", &PermissionSubject::Command("$T a".into()), false, &c.at),
            Decision::Allow(_)
        ));
        // an allow rule for the wrapper does not allow what it runs
        let allow = Rules::from_settings(&PermissionSettings {
            allow: vec!["Bash(timeout:*)".into()],
            deny: vec!["Bash(rm:*)".into()],
            ..PermissionSettings::default()
        })
        .unwrap_or_default();
        assert!(matches!(
            allow.decide("Bash", &PermissionSubject::Command("timeout 5 rm -rf x".into()), false, &c.at),
            Decision::Deny(_)
        ));
    }
}
