//! A probe file's text parsed and checked: the file read as written, then each kind of mistake found
//! at its file:line:col (the `At` pipeline and the `*_problems` passes), then the [`Probe`].

use super::problems::*;
use super::*;
use crate::located::{line_col, Located, Problem};
use std::path::Path;
use toml::Spanned;

/// Parses a probe file's text (it may name what every project has: [`Known::default`]).
pub fn parse(path: &Path, text: &str) -> Result<Probe, Located> {
    parse_with(path, text, &Known::default())
}

/// Parses a probe file's text; its `subjects` and `diverges` may name `known.subjects`, its `claims`
/// the catalogue's and `known.claims`.
pub fn parse_with(path: &Path, text: &str, known: &Known) -> Result<Probe, Located> {
    let subjects_known: Vec<&str> = known.subjects.iter().map(String::as_str).collect();
    let at = At { path, text };
    let raw: ProbeFile = crate::serde_kind::from_toml(text).map_err(|r| at.toml_error(&r.error, r.kind))?;
    let id = at.id(&raw)?;
    let claims = at.claims(&raw, known)?;
    let diverges = at.diverges(&raw, &claims, &subjects_known)?;
    let requires = at.requires(&raw)?;
    let limits = at.limits(&raw, known)?;
    at.permissions(&raw)?;
    let subjects = at.subjects(&raw, path, &subjects_known)?;
    at.unique_tool_use_ids(&raw)?;
    let script = at.script(&raw, &id)?;
    let main_turns = script.turns.len();
    let tool_uses: usize = script.turns.iter().map(|t| t.tool_use.len()).sum();
    let main_ids: Vec<Option<&str>> = script.turns.iter().flat_map(|t| &t.tool_use).map(|u| u.id.as_deref()).collect();
    let unordered = raw.unordered.as_ref().map(|u| (u.get_ref().clone(), u.span().start)).unwrap_or_default();
    if let Some(n) = unordered.0.iter().find(|n| **n == 0 || **n > tool_uses) {
        return Err(at.err(
            unordered.1,
            format!("unordered names result {n}, but the main conversation scripts {tool_uses} tool_use block(s)"),
            Some("results are numbered from 1 in script order, across turns"),
        ));
    }
    if let Some(why) = &raw.shape_varies {
        if why.get_ref().chars().filter(|c| c.is_alphanumeric()).count() < 2 {
            return Err(at.err(
                why.span().start,
                "shape_varies needs a reason in words".to_string(),
                Some("say what makes the requests' layout vary between runs, e.g. shape_varies = \"a message joins the tool result or comes alone, as it arrives\""),
            ));
        }
    }
    at.fixture_dir(&raw)?;
    let mut faults = Vec::new();
    for f in &raw.fixture.fault {
        faults.push(fault(f.get_ref(), main_turns).map_err(|p| p.locate(path, text))?);
    }
    value_problems(&raw, text).map_err(|p| p.locate(path, text))?;
    if raw.execs.is_empty() == script.turns.is_empty() {
        let msg = if raw.execs.is_empty() {
            "the probe has no [[turn]] and no [[exec]]"
        } else {
            "a probe has [[turn]]s or [[exec]]s, not both"
        };
        let hint = "a loop probe scripts the model with [[turn]]; an exec probe runs [[exec]] commands";
        return Err(at.err(0, msg.into(), Some(hint)));
    }
    at.subject_options(&raw)?;
    at.agent_options(&raw, &subjects_known)?;
    at.fixture_mtimes(&raw)?;
    let plugins = at.plugins(&raw)?;
    let checks = at.checks(&raw, &checks::Names { main_turns, main_ids, execs: raw.execs.len() })?;
    Ok(Probe {
        path: path.to_path_buf(),
        source: text.to_string(),
        id,
        claims,
        about: raw.about,
        subjects,
        prompt: raw.prompt.unwrap_or_else(|| "Run the probe.".into()),
        ask: raw.ask,
        diverges,
        unordered: unordered.0,
        shape_varies: raw.shape_varies.as_ref().map(|w| w.get_ref().clone()),
        deadline_secs: raw.deadline_secs.unwrap_or(DEFAULT_DEADLINE_SECS),
        requires,
        fixture: Fixture { dir: raw.fixture.dir.map(Spanned::into_inner), files: raw.fixture.files, fault: faults },
        settings: raw.settings,
        env: raw.env,
        subject: raw.subject,
        host: raw.host,
        clock: raw.clock,
        mcp_servers: raw.mcp_servers,
        plugins,
        web: raw.web,
        limits,
        script,
        execs: raw.execs.into_iter().map(Spanned::into_inner).collect(),
        checks,
    })
}

/// A probe file being parsed: where its errors point (offsets in its text become line:col), and the
/// steps of [`parse_with`], each a rule of the format checked in the order the errors are reported.
struct At<'a> {
    path: &'a Path,
    text: &'a str,
}

impl At<'_> {
    /// An error at `offset` of the text.
    fn err(&self, offset: usize, message: String, hint: Option<&str>) -> Located {
        let e = Located::at(self.path, self.text, offset, message);
        match hint {
            Some(h) => e.hint(h),
            None => e,
        }
    }

    /// The probe's `[limits]`: each at least 1 and within the project's caps.
    fn limits(&self, raw: &ProbeFile, known: &Known) -> Result<crate::limits::LimitsSpec, Located> {
        let Some(l) = &raw.limits else { return Ok(Default::default()) };
        let Some((key, v, cap)) = l.get_ref().refused(&known.caps) else { return Ok(*l.get_ref()) };
        let at = key_offset(self.text, table_region(self.text, l.span()), key).unwrap_or(l.span().start);
        Err(if cap == 0 {
            self.err(
                at,
                format!("[limits] {key} = 0 leaves the subject nothing"),
                Some("a limit is at least 1; leave the key out for the default"),
            )
        } else {
            self.err(
                at,
                format!("[limits] {key} = {v} is over the project's cap of {cap}"),
                Some("probelab.toml's [limits] sets the caps (by default four times each default limit)"),
            )
        })
    }

    /// The TOML parser's error, on the key it is about, with a hint for the usual mistakes: those the
    /// derive names ([`crate::serde_kind::Kind`]: a key the table does not take, one it lacks).
    fn toml_error(&self, e: &toml::de::Error, kind: Option<crate::serde_kind::Kind>) -> Located {
        use crate::serde_kind::Kind;
        let text = self.text;
        let msg = for_users(e.message().trim_end());
        let span = e.span().unwrap_or(0..0);
        match kind {
            Some(Kind::UnknownField { field, .. }) => {
                // its error spans its whole table (the document, at the top level): on the key
                let region = if span.start == 0 { 0..first_header(text).unwrap_or(text.len()) } else { span.clone() };
                let offset = key_offset(text, region, &field).unwrap_or(span.start);
                self.err(
                    offset,
                    msg,
                    Some("every key of the probe format is in docs/probe-format.md (or `probelab new NAME` for a commented skeleton)"),
                )
            }
            Some(Kind::MissingField { field }) => {
                // the top level's own fields, or a table's (whose error spans that table)
                let top =
                    ["id", "claims", "about"].contains(&field) && (span.start == 0 || first_header(text) == Some(0));
                let hint = if top {
                    "every probe needs id, claims and about"
                } else {
                    "the table needs this key: see its keys in docs/probe-format.md"
                };
                self.err(span.start, msg, Some(hint))
            }
            _ => self.err(span.start, msg, None),
        }
    }

    /// The id: path-safe (it names golden files).
    fn id(&self, raw: &ProbeFile) -> Result<String, Located> {
        let id = raw.id.get_ref().clone();
        if id.is_empty() || !id.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_')) {
            return Err(self.err(
                raw.id.span().start,
                format!("probe id {id:?} must be non-empty [A-Za-z0-9._-]"),
                Some("ids name golden files: keep them path-safe"),
            ));
        }
        Ok(id)
    }

    /// The claims: at least one, each in the catalogue or the project's own.
    fn claims(&self, raw: &ProbeFile, known: &Known) -> Result<Vec<String>, Located> {
        if raw.claims.get_ref().is_empty() {
            return Err(self.err(
                raw.claims.span().start,
                "claims is empty".into(),
                Some("name the claim ids this probe checks (docs/claims.md)"),
            ));
        }
        let mut claims = Vec::new();
        for c in raw.claims.get_ref() {
            if !crate::claims::exists(c.get_ref()) && !known.claims.contains(c.get_ref()) {
                return Err(self.err(
                    c.span().start,
                    format!("claim {:?} is not in the catalogue", c.get_ref()),
                    Some("claim ids are listed in docs/claims.md and the project's own `claims` file (`probelab list` prints them)"),
                ));
            }
            claims.push(c.get_ref().clone());
        }
        Ok(claims)
    }

    /// The divergences: each of a cited claim, on a subject there is.
    fn diverges(
        &self,
        raw: &ProbeFile,
        claims: &[String],
        subjects_known: &[&str],
    ) -> Result<Vec<Divergence>, Located> {
        let mut diverges = Vec::new();
        for d in &raw.diverges {
            let v = d.get_ref();
            if !claims.contains(&v.claim) {
                let msg = format!("diverges names claim {:?}, which this probe does not cite", v.claim);
                return Err(self.err(d.span().start, msg, Some("add it to claims, or name a cited claim")));
            }
            if !subjects_known.contains(&v.subject.as_str()) {
                return Err(self.err(
                    d.span().start,
                    format!("unknown subject {:?}", v.subject),
                    Some(&format!("the subjects are {}", subjects_known.join(", "))),
                ));
            }
            diverges.push(v.clone());
        }
        Ok(diverges)
    }

    /// The host parts required (the probe's and its subjects'): each a part there can be; a probe that
    /// turns the Bash sandbox on requires bubblewrap.
    fn requires(&self, raw: &ProbeFile) -> Result<Vec<String>, Located> {
        let text = self.text;
        let agents = raw.subject.agent.values().flat_map(|o| &o.requires);
        let subject_requires =
            raw.subject.builtin.requires.iter().chain(&raw.subject.claude_code.requires).chain(agents);
        for r in raw.requires.iter().map(|r| (r.get_ref(), r.span().start)).chain(subject_requires.map(|r| (r, 0))) {
            if !host::valid_name(r.0) {
                return Err(self.err(
                    r.1,
                    format!("requires names {:?}, which is not a host part", r.0),
                    Some(
                        "a command on PATH (`curl`), a known part (`bwrap`, `socat`, `chromium`…) or `python3:MODULE`",
                    ),
                ));
            }
        }
        let requires = raw.requires.iter().map(|r| r.get_ref().clone()).collect();
        let needs_bwrap = raw.settings.sandbox.enabled;
        let declares_bwrap =
            raw.requires.iter().map(|r| r.get_ref()).chain(&raw.subject.builtin.requires).any(|r| r == "bwrap");
        if needs_bwrap && !declares_bwrap {
            let at = key_offset(text, 0..text.len(), "enabled").unwrap_or(0);
            return Err(self.err(
                at,
                "the probe turns the Bash sandbox on ([settings.sandbox] enabled) but does not require bubblewrap"
                    .into(),
                Some("add requires = [\"bwrap\"]: where bubblewrap is missing the probe is skipped, not failed"),
            ));
        }
        Ok(requires)
    }

    /// The permission rules of `[settings]`: each one a rule Claude Code reads.
    fn permissions(&self, raw: &ProbeFile) -> Result<(), Located> {
        let text = self.text;
        let perms = &raw.settings.permissions;
        for (list, rules) in [("allow", &perms.allow), ("ask", &perms.ask), ("deny", &perms.deny)] {
            for r in rules {
                if let Err(why) = rule_problem(r) {
                    let at =
                        string_offset(text, r).unwrap_or_else(|| key_offset(text, 0..text.len(), list).unwrap_or(0));
                    let hint = "`Tool` or `Tool(pattern)`: a tool of the pool or of Claude Code, mcp__server__tool; \
                         path patterns are gitignore globs, Bash(cmd:*) / Bash(cmd *), WebFetch(domain:HOST)";
                    return Err(self.err(at, format!("permissions.{list}: {why}"), Some(hint)));
                }
            }
        }
        Ok(())
    }

    /// The subjects the probe runs on: those it names, each one there is, or the default of its place.
    fn subjects(&self, raw: &ProbeFile, path: &Path, subjects_known: &[&str]) -> Result<Vec<String>, Located> {
        let Some(named) = &raw.subjects else { return Ok(default_subjects(path)) };
        let mut subjects = Vec::new();
        for s in named {
            if !subjects_known.contains(&s.get_ref().as_str()) {
                return Err(self.err(
                    s.span().start,
                    format!("unknown subject {:?}", s.get_ref()),
                    Some(&format!(
                        "the subjects are {} (a project's own: [subjects.NAME] in probelab.toml)",
                        subjects_known.join(", ")
                    )),
                ));
            }
            subjects.push(s.get_ref().clone());
        }
        Ok(subjects)
    }

    /// The ids probes give tool_uses name them for checks: unique across the whole script.
    fn unique_tool_use_ids(&self, raw: &ProbeFile) -> Result<(), Located> {
        let mut seen = std::collections::BTreeSet::new();
        let every_turn = raw.turns.iter().chain(raw.conversations.iter().flat_map(|c| &c.turns));
        for id in every_turn.flat_map(|t| &t.tool_use).filter_map(|u| u.id.as_deref()) {
            if !seen.insert(id) {
                let at = self.text.match_indices(&format!("\"{id}\"")).nth(1).map(|(i, _)| i).unwrap_or(0);
                let hint = "an id names one tool_use (checks say result = \"ID\"), and the API refuses repeated ids";
                return Err(self.err(at, format!("tool_use id {id:?} is given twice"), Some(hint)));
            }
        }
        Ok(())
    }

    /// The stub's script of the probe's turns and conversations (its errors on the turn they are about).
    fn script(&self, raw: &ProbeFile, id: &str) -> Result<stub_messages::Script, Located> {
        let (file, turns, conversations) =
            (&self.path.display().to_string(), raw.turns.clone(), raw.conversations.clone());
        stub_messages::Script::from_parts(file, id, turns, conversations, raw.stub.clone()).map_err(|e| {
            let msg = e.0.strip_prefix(&format!("{file}: ")).unwrap_or(&e.0).to_string();
            self.err(
                turn_offset(self.text, &msg).unwrap_or(0),
                msg,
                Some("see the turn format in stub-messages/src/script.rs"),
            )
        })
    }

    /// `[fixture] dir`: a relative path under fixtures/.
    fn fixture_dir(&self, raw: &ProbeFile) -> Result<(), Located> {
        let Some(d) = &raw.fixture.dir else { return Ok(()) };
        let p = Path::new(d.get_ref());
        let escapes = d.get_ref().is_empty()
            || p.components().any(|c| !matches!(c, std::path::Component::Normal(_) | std::path::Component::CurDir));
        if escapes {
            return Err(self.err(
                d.span().start,
                format!("fixture dir {:?} is not a relative path under fixtures/", d.get_ref()),
                Some("name a directory under fixtures/, e.g. dir = \"lsp/pyproj\" (no absolute path, no `..`)"),
            ));
        }
        Ok(())
    }

    /// `[subject]`'s options: an `unconfined` says why, a `session_id` is a UUID.
    fn subject_options(&self, raw: &ProbeFile) -> Result<(), Located> {
        let text = self.text;
        let own = [&raw.subject.unconfined, &raw.subject.builtin.unconfined, &raw.subject.claude_code.unconfined];
        let reasons: Vec<&Option<String>> =
            own.into_iter().chain(raw.subject.agent.values().map(|o| &o.unconfined)).collect();
        // a reason is words: blanks, zero-width and other invisible characters alone say nothing
        let says_nothing = |why: &String| why.chars().filter(|c| c.is_alphanumeric()).count() < 2;
        if reasons.iter().any(|r| r.as_ref().is_some_and(says_nothing)) {
            let blank = regex::Regex::new(r#"(?m)^[ \t]*unconfined[ \t]*=[ \t]*("\s*"|'\s*')"#).ok();
            let key =
                blank.filter(|b| b.is_match(text)).or_else(|| regex::Regex::new(r"(?m)^[ \t]*unconfined[ \t]*=").ok());
            let at = key.and_then(|k| k.find(text)).map(|m| m.start()).unwrap_or(0);
            let hint =
                "say why the subject must run with the host writable, e.g. unconfined = \"measures the host's own /tmp\"";
            return Err(self.err(at, "unconfined needs a reason".into(), Some(hint)));
        }
        if let Some(id) = &raw.subject.session_id {
            if !is_uuid(id) {
                let key = regex::Regex::new(r"(?m)^[ \t]*session_id[ \t]*=").ok();
                let at = key.and_then(|k| k.find(text)).map(|m| m.start()).unwrap_or(0);
                let hint = "Claude Code's --session-id takes a UUID, e.g. \"11111111-2222-4333-8444-555555555555\"";
                return Err(self.err(at, format!("session_id {id:?} is not a UUID"), Some(hint)));
            }
        }
        Ok(())
    }

    /// `[subject.agent.NAME]`: each names a subject there is, other than the built-in runtime and Claude
    /// Code (whose tables are their own).
    fn agent_options(&self, raw: &ProbeFile, subjects_known: &[&str]) -> Result<(), Located> {
        use crate::subject::id::{BUILTIN, CLAUDE_CODE};
        for name in raw.subject.agent.keys() {
            let n = name.get_ref().as_str();
            if n == BUILTIN || n == CLAUDE_CODE {
                return Err(self.err(
                    name.span().start,
                    format!("[subject.agent.{n}]: {n} has a table of its own"),
                    Some(&format!("write [subject.{n}] (its keys are in docs/probe-format.md)")),
                ));
            }
            if !subjects_known.contains(&n) {
                let others: Vec<&str> =
                    subjects_known.iter().copied().filter(|s| *s != BUILTIN && *s != CLAUDE_CODE).collect();
                return Err(self.err(
                    name.span().start,
                    format!("[subject.agent.{n}]: unknown subject {n:?}"),
                    Some(&format!(
                        "the other subjects are {} (a project's own: [subjects.NAME] in probelab.toml)",
                        others.join(", ")
                    )),
                ));
            }
        }
        Ok(())
    }

    /// The fixture files' mtimes: each a time on the fixture's clock.
    fn fixture_mtimes(&self, raw: &ProbeFile) -> Result<(), Located> {
        for (rel, spec) in &raw.fixture.files {
            if let Some(Err(e)) = spec.mtime().map(files::Mtime::time) {
                let at = self.text.find(&format!("\"{rel}\"")).unwrap_or(0);
                let hint = "seconds on the fixture's clock (0 = 2026-01-01T00:00:00Z) or an RFC 3339 time";
                return Err(self.err(at, format!("fixture file {rel:?}: {e}"), Some(hint)));
            }
        }
        Ok(())
    }

    /// The plugins: each one Claude Code would load.
    fn plugins(&self, raw: &ProbeFile) -> Result<Vec<probelab_runtime::config::PluginSpec>, Located> {
        let mut plugins = Vec::new();
        for p in &raw.plugins {
            if let Some(problem) = p.get_ref().problem() {
                let hint = "see `lspServers.NAME` in docs/probe-format.md";
                return Err(self.err(p.span().start, format!("plugin: {problem}"), Some(hint)));
            }
            plugins.push(p.get_ref().clone());
        }
        Ok(plugins)
    }

    /// The checks, typed against what the script names (turns, tool_use ids, execs), each with its line
    /// and column; an error on the key it is about.
    fn checks(&self, raw: &ProbeFile, names: &checks::Names<'_>) -> Result<Vec<(Check, usize, usize)>, Located> {
        let text = self.text;
        let mut out = Vec::new();
        for c in &raw.checks {
            let at = c.span().start;
            let region = table_region(text, c.span());
            let check = c.get_ref().typed(names).map_err(|e| {
                let key_at = |k: &str| key_offset(text, region.clone(), k);
                // a check that asserts nothing: an empty list (`json = []`) reads as absent, and is to blame
                let empty_list = checks::EMPTY_LIST_KEYS.iter().find_map(|k| key_at(k).map(|o| (*k, o)));
                let (at, message) = match (e.key, empty_list) {
                    (Some(k), _) => (key_at(k).unwrap_or(at), e.message),
                    (None, Some((k, o))) if e.asserts_nothing => (o, format!("`{k}` is empty: it asserts nothing")),
                    _ => (at, e.message),
                };
                self.err(at, message, e.hint.as_deref())
            })?;
            let (line, col) = line_col(text, at);
            out.push((check, line, col));
        }
        Ok(out)
    }
}

/// A deserializer's message as a probe's author reads it: the forms a value may take instead of serde's
/// "data did not match any variant of untagged enum X", numbers without the width they were read at.
fn for_users(msg: &str) -> String {
    const FORMS: &[(&str, &str)] = &[
        (
            "ResultRef",
            "a result is a number (result = 2: the 2nd scripted tool_use) or a tool_use's id (result = \"edit\")",
        ),
        ("OneOrMany", "the value is a string or a list of strings"),
        (
            "FileSpec",
            "a file is a string, { text = … }, { repeat = …, bytes = N } or { base64 = … } (each table may add mtime)",
        ),
        ("Mtime", "an mtime is seconds on the fixture's clock (a number) or an RFC 3339 time (a string)"),
    ];
    let mut out = msg.to_string();
    if let Some(i) = out.find("data did not match any variant of untagged enum ") {
        let rest = &out[i + "data did not match any variant of untagged enum ".len()..];
        let name: String = rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
        let forms = FORMS.iter().find(|(n, _)| *n == name).map(|(_, f)| f.to_string());
        let forms = forms.unwrap_or_else(|| "the value has none of the forms this key takes".to_string());
        out = format!("{}{forms}{}", &out[..i], &rest[name.len()..]);
    }
    for width in [" as i128", " as u128", " as i64", " as u64", " as f64"] {
        out = out.replace(width, "");
    }
    // TOML's integers are 64-bit: a longer one is read as a number of no type at all
    if let Some(n) = out.strip_prefix("invalid type: integer `").and_then(|r| r.strip_suffix("`, expected any value")) {
        out = format!("integer {n} is out of range (at most 9223372036854775807)");
    }
    out
}

/// A `[[fixture.fault]]` checked against its kind: the keys it takes, its turn, its mode. Errors are
/// placed on the offending key.
fn fault(f: &RawFault, main_turns: usize) -> Result<FsFault, Problem> {
    let kinds_hint = "kind is write (content) | delete | mkdir | chmod (mode) | symlink (target) | touch (mtime)";
    let kind = f.kind.get_ref().as_str();
    let Some((_, takes)) = FAULT_KINDS.iter().find(|(k, _)| *k == kind) else {
        return Err(
            Problem::at(f.kind.span().start, format!("fixture fault kind {kind:?} is unknown")).hint(kinds_hint)
        );
    };
    let given = [("content", f.content.as_ref()), ("mode", f.mode.as_ref()), ("target", f.target.as_ref())];
    for (key, v) in given {
        if let Some(v) = v.filter(|_| !takes.contains(&key)) {
            return Err(
                Problem::at(v.span().start, format!("`{key}` does not apply to a {kind:?} fault")).hint(kinds_hint)
            );
        }
    }
    if let Some(m) = &f.mtime {
        if kind != "touch" {
            return Err(
                Problem::at(m.span().start, format!("`mtime` does not apply to a {kind:?} fault")).hint(kinds_hint)
            );
        }
        m.get_ref().time().map_err(|e| {
            Problem::at(m.span().start, format!("fixture fault touch {:?}: {}", f.path, crate::exit::chain(&e)))
        })?;
    }
    if let Some(t) = f.at_turn.as_ref().filter(|t| *t.get_ref() == 0 || *t.get_ref() > main_turns) {
        let msg = format!("fixture fault at_turn {} names no main turn (there are {main_turns})", t.get_ref());
        return Err(Problem::at(t.span().start, msg).hint("at_turn N: before the N-th [[turn]] is served (1-based)"));
    }
    let op = match kind {
        "write" => FaultOp::Write { content: f.content.as_ref().map(|c| c.get_ref().clone()).unwrap_or_default() },
        "delete" => FaultOp::Delete,
        "mkdir" => FaultOp::Mkdir,
        "chmod" => {
            let text = f.mode.as_ref().map(|m| m.get_ref().as_str()).unwrap_or("0644");
            let mode = u32::from_str_radix(text.trim_start_matches("0o"), 8).ok().filter(|m| *m <= 0o7777);
            let Some(mode) = mode else {
                let at = f.mode.as_ref().map(|m| m.span().start).unwrap_or(f.kind.span().start);
                return Err(
                    Problem::at(at, format!("chmod mode {text:?} is not an octal mode")).hint("e.g. mode = \"0444\"")
                );
            };
            FaultOp::Chmod { mode }
        }
        "touch" => FaultOp::Touch { mtime: f.mtime.as_ref().map(|m| m.get_ref().clone()) },
        _ => match &f.target {
            Some(t) => FaultOp::Symlink { target: t.get_ref().clone() },
            None => return Err(Problem::at(f.kind.span().start, "a symlink fault needs a target").hint(kinds_hint)),
        },
    };
    Ok(FsFault { at_turn: f.at_turn.as_ref().map(|t| *t.get_ref()), path: f.path.clone(), op })
}
