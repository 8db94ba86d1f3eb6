//! Value checks of a probe file that the types alone do not make: numbers within their bounds (the
//! deadline, exec deadlines), fixture files that can be made (a generated file's pattern and size, base64
//! text, a path that stays in the sandbox), exec commands with a program, web pages with an HTTP status,
//! a permission mode and hook events a subject knows, and placeholders a run defines. Each is found when
//! the probe is loaded, placed on its key or value (`file:line:col`), never at run time.

use super::{key_offset, string_offset, table_region, ProbeFile};

/// The longest deadline a probe may set (a day): any run that needs more is a mistake, and a bound keeps
/// the deadline's arithmetic (`now + deadline`) in range.
pub const MAX_DEADLINE_SECS: u64 = 86_400;

/// What a problem is: the offset to place it at, the message, a hint.
pub(super) type Problem = (usize, String, Option<&'static str>);

/// The permission modes of Claude Code's `permissions.defaultMode`.
pub const PERMISSION_MODES: &[&str] = &["default", "acceptEdits", "bypassPermissions", "dontAsk", "plan"];

/// The hook events of Claude Code's settings (`[[settings.hooks.EVENT]]`).
pub const HOOK_EVENTS: &[&str] = &[
    "PreToolUse",
    "PostToolUse",
    "PostToolUseFailure",
    "PermissionRequest",
    "Notification",
    "UserPromptSubmit",
    "SessionStart",
    "SessionEnd",
    "Stop",
    "SubagentStart",
    "SubagentStop",
    "PreCompact",
    "Setup",
    "TeammateIdle",
    "TaskCompleted",
];

/// A path a probe writes in the sandbox (a fixture file, a fault's path): relative to the cwd, or under
/// a leading `{cwd}/`, `{home}/` or `{sandbox}/`, with no `..`, no absolute part and a name.
pub fn sandbox_path_problem(rel: &str) -> Option<String> {
    let rest = ["{cwd}/", "{home}/", "{sandbox}/"].iter().find_map(|p| rel.strip_prefix(p)).unwrap_or(rel);
    let p = std::path::Path::new(rest);
    let normal = p.components().all(|c| matches!(c, std::path::Component::Normal(_) | std::path::Component::CurDir));
    if rest.is_empty() || !normal || p.file_name().is_none() {
        return Some(format!(
            "{rel:?} is not a path in the sandbox: relative to the cwd (or under {{home}}/), without `..`"
        ));
    }
    None
}

/// Every value problem of a parsed probe file, the first one found.
pub(super) fn check(raw: &ProbeFile, text: &str) -> Result<(), Problem> {
    let top = 0..super::first_header(text).unwrap_or(text.len());
    let deadline = raw.deadline_secs.unwrap_or(super::DEFAULT_DEADLINE_SECS);
    if !(1..=MAX_DEADLINE_SECS).contains(&deadline) {
        let at = key_offset(text, top.clone(), "deadline_secs").unwrap_or(0);
        return Err((
            at,
            format!("deadline_secs = {deadline} is out of range"),
            Some("a deadline is 1 to 86400 seconds (a day)"),
        ));
    }
    for e in &raw.execs {
        let at = e.span().start;
        let region = table_region(text, e.span());
        if e.get_ref().argv.is_empty() {
            let at = key_offset(text, region, "argv").unwrap_or(at);
            return Err((
                at,
                "exec argv is empty".into(),
                Some("argv = [\"{rg}\", \"-n\", \"x\"]: a program and its arguments"),
            ));
        }
        if let Some(ms) = e.get_ref().deadline_ms {
            if ms == 0 || ms > deadline * 1000 {
                let at = key_offset(text, region, "deadline_ms").unwrap_or(at);
                let msg = format!("exec deadline_ms = {ms} is out of range: 1 to the probe's deadline ({deadline} s)");
                return Err((at, msg, Some("raise deadline_secs for a longer command")));
            }
        }
    }
    for (rel, spec) in &raw.fixture.files {
        let at = string_offset(text, rel).unwrap_or(0);
        if let Some(why) = sandbox_path_problem(rel) {
            return Err((at, format!("fixture file {why}"), Some("fixture files are written inside the sandbox")));
        }
        if let Some(why) = super::files::spec_problem(spec) {
            return Err((at, format!("fixture file {rel:?}: {why}"), None));
        }
    }
    for f in &raw.fixture.fault {
        let f = f.get_ref();
        if let Some(why) = sandbox_path_problem(&f.path) {
            let at = string_offset(text, &f.path).unwrap_or(f.kind.span().start);
            return Err((at, format!("fixture fault path {why}"), Some("faults change the sandbox only")));
        }
    }
    for (key, page) in &raw.web.pages {
        let at = string_offset(text, key).unwrap_or(0);
        if let Some(s) = page.status {
            if !(100..=999).contains(&s) {
                return Err((
                    at,
                    format!("[web] page {key:?}: status {s} is not an HTTP status"),
                    Some("100 to 999, e.g. 404"),
                ));
            }
        }
        if let Some(why) = page.body.as_ref().and_then(super::files::spec_problem) {
            return Err((at, format!("[web] page {key:?}: {why}"), None));
        }
    }
    if let Err(e) = raw.web.validate() {
        let at = key_offset(text, 0..text.len(), "pages").unwrap_or(0);
        return Err((at, e, None));
    }
    if let Some(mode) = &raw.settings.permissions.default_mode {
        if !PERMISSION_MODES.contains(&mode.as_str()) {
            let at = string_offset(text, mode).unwrap_or(0);
            return Err((
                at,
                format!("permissions.defaultMode {mode:?} is not a permission mode"),
                Some("default, acceptEdits, bypassPermissions, dontAsk or plan"),
            ));
        }
    }
    for event in raw.settings.hooks.keys() {
        if !HOOK_EVENTS.contains(&event.as_str()) {
            let at =
                text.find(&format!("hooks.{event}")).map(|i| i + 6).or_else(|| string_offset(text, event)).unwrap_or(0);
            let near = HOOK_EVENTS.iter().find(|e| e.eq_ignore_ascii_case(event));
            let msg = match near {
                Some(n) => format!("hook event {event:?} is not an event (did you mean {n:?}?)"),
                None => format!("hook event {event:?} is not an event"),
            };
            return Err((at, msg, Some("events: PreToolUse, PostToolUse, UserPromptSubmit, Stop, SubagentStop, …")));
        }
    }
    placeholders(raw, text)
}

/// The `{name}` placeholders of `s` (a lowercase word in braces; `{{capture}}` and `${VAR}` are not
/// placeholders), each with its offset in `s`.
pub fn placeholder_names(s: &str) -> Vec<(usize, &str)> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    for (i, _) in s.match_indices('{') {
        if i > 0 && matches!(b[i - 1], b'{' | b'$') {
            continue;
        }
        let name_len =
            b[i + 1..].iter().take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || **c == b'_').count();
        let end = i + 1 + name_len;
        let starts_lower = b.get(i + 1).is_some_and(u8::is_ascii_lowercase);
        if starts_lower && b.get(end) == Some(&b'}') && b.get(end + 1) != Some(&b'}') {
            out.push((i, &s[i + 1..end]));
        }
    }
    out
}

/// Edits (insertions, deletions, substitutions, swaps of neighbours) from `a` to `b`.
fn distance(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            d[i][j] = (d[i - 1][j] + 1).min(d[i][j - 1] + 1).min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d[i][j] = d[i][j].min(d[i - 2][j - 2] + 1);
            }
        }
    }
    d[a.len()][b.len()]
}

/// The placeholder a name is one edit away from (`cdw` → `cwd`).
fn near(name: &str) -> Option<&'static str> {
    super::placeholders::PLACEHOLDERS.iter().copied().find(|p| name.len() >= 3 && distance(name, p) <= 1)
}

/// Every placeholder a probe writes is one a run defines ([`super::placeholders::PLACEHOLDERS`], `{rg}` as
/// an exec's program): in waits, fixture and fault paths, link targets, exec argv, server commands and
/// check targets any other `{word}` is an error, in tool inputs one that starts a path or stands beside a
/// `/` (`{bogus}/f.txt`); in every other text (a tool's code, the texts a check expects, which may hold
/// the subject's own braces, `EnterWorktree({path})`) a word one edit from a placeholder (`{cdw}`).
fn placeholders(raw: &ProbeFile, text: &str) -> Result<(), Problem> {
    const HINT: Option<&str> =
        Some("placeholders are {cwd} {home} {sandbox} {probelab} {web} {artifact} ({rg}: an exec's program)");
    let defined = |n: &str| super::placeholders::PLACEHOLDERS.contains(&n);
    let place = |name: &str| text.find(&format!("{{{name}}}")).unwrap_or(0);
    let strict = |s: &str, rg: bool| -> Result<(), Problem> {
        for (_, name) in placeholder_names(s) {
            if !(defined(name) || rg && name == "rg") {
                let msg = match near(name) {
                    Some(p) => format!("{{{name}}} is not a placeholder (did you mean {{{p}}}?)"),
                    None => format!("{{{name}}} is not a placeholder"),
                };
                return Err((place(name), msg, HINT));
            }
        }
        Ok(())
    };
    let loose = |s: &str| -> Result<(), Problem> {
        for (_, name) in placeholder_names(s) {
            if let Some(p) = near(name).filter(|_| !defined(name)) {
                return Err((place(name), format!("{{{name}}} is not a placeholder (did you mean {{{p}}}?)"), HINT));
            }
        }
        Ok(())
    };
    // a tool input's text may hold braces of its own (code a Write writes, `f"{name}"`): there a `{word}`
    // is a placeholder where a path starts with it or it stands beside a `/`
    let in_input = |s: &str| -> Result<(), Problem> {
        for (at, name) in placeholder_names(s) {
            let end = at + name.len() + 2;
            let path_like = at == 0 || s[..at].ends_with('/') || s[end..].starts_with('/');
            if path_like {
                strict(&s[at..end], false)?;
            }
        }
        loose(s)
    };
    fn strings<'v>(v: &'v serde_json::Value, out: &mut Vec<&'v str>) {
        match v {
            serde_json::Value::String(s) => out.push(s),
            serde_json::Value::Array(a) => a.iter().for_each(|x| strings(x, out)),
            serde_json::Value::Object(o) => o.iter().for_each(|(k, x)| {
                out.push(k);
                strings(x, out)
            }),
            _ => {}
        }
    }
    let mut tool_inputs = Vec::new();
    let mut inputs = Vec::new();
    let turns = raw.turns.iter().chain(raw.conversations.iter().flat_map(|c| &c.turns));
    for t in turns {
        for u in &t.tool_use {
            strings(&u.input, &mut tool_inputs);
        }
        if let Some(w) = &t.wait {
            inputs.extend(w.file.as_deref());
            inputs.extend(w.contains.as_deref());
        }
    }
    inputs.extend(raw.fixture.files.keys().map(String::as_str));
    for f in &raw.fixture.fault {
        inputs.push(&f.get_ref().path);
        inputs.extend(f.get_ref().target.as_ref().map(|t| t.get_ref().as_str()));
    }
    let servers: Vec<serde_json::Value> = raw
        .mcp_servers
        .values()
        .filter_map(|s| serde_json::to_value(s).ok())
        .chain(raw.plugins.iter().filter_map(|p| serde_json::to_value(p.get_ref()).ok()))
        .collect();
    for v in &servers {
        strings(v, &mut inputs);
    }
    for c in &raw.checks {
        let c = c.get_ref();
        inputs.extend(c.file.as_deref());
        inputs.extend(c.lsp.as_deref());
    }
    for s in tool_inputs {
        in_input(s)?;
    }
    for s in inputs {
        strict(s, false)?;
    }
    for e in &raw.execs {
        for a in &e.get_ref().argv {
            strict(a, true)?;
        }
    }
    for c in &raw.checks {
        let c = c.get_ref();
        fn many(v: &Option<super::OneOrMany>) -> Vec<&str> {
            v.as_ref().map(|m| m.items()).unwrap_or_default()
        }
        let mut texts: Vec<&str> =
            [&c.equals, &c.matches, &c.stderr_equals].into_iter().flatten().map(String::as_str).collect();
        texts.extend(many(&c.contains));
        texts.extend(many(&c.not_contains));
        texts.extend(many(&c.stderr_contains));
        let mut wants = Vec::new();
        for j in &c.json {
            if let Some(v) = &j.equals {
                strings(v, &mut wants);
            }
        }
        for t in texts.into_iter().chain(wants) {
            loose(t)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    fn err(text: &str) -> String {
        super::super::parse(Path::new("p.toml"), text).err().map(|e| e.to_string()).unwrap_or_else(|| "parsed".into())
    }

    const OK: &str = "id = \"x.y\"\nclaims = [\"READ-1\"]\nabout = \"a\"\n[[turn]]\ntool_use = [{ name = \"Read\", input = { file_path = \"{cwd}/f\" } }]\n[[turn]]\ntext = \"done\"\n";
    const EXEC: &str = "id = \"x.y\"\nclaims = [\"READ-1\"]\nabout = \"a\"\n[[exec]]\nargv = [\"true\"]\n[[check]]\nexec = 1\nexit = 0\n";

    #[test]
    fn numbers_out_of_range_are_errors_at_their_key() {
        let e = err(&OK.replace("about = \"a\"\n", "about = \"a\"\ndeadline_secs = 9223372036854775807\n"));
        assert!(e.starts_with("p.toml:4:1: deadline_secs = 9223372036854775807 is out of range"), "{e}");
        let e = err(&OK.replace("about = \"a\"\n", "about = \"a\"\ndeadline_secs = 0\n"));
        assert!(e.starts_with("p.toml:4:1: deadline_secs = 0 is out of range"), "{e}");
        let e = err(&EXEC.replace("argv = [\"true\"]\n", "argv = [\"true\"]\ndeadline_ms = 18446744073709551615\n"));
        assert!(e.starts_with("p.toml:6:1: exec deadline_ms = 18446744073709551615 is out of range"), "{e}");
        let e = err(&EXEC.replace("argv = [\"true\"]\n", "argv = [\"true\"]\ndeadline_ms = 61000\n"));
        assert!(e.contains("exec deadline_ms = 61000 is out of range"), "{e}");
        assert_eq!(err(&EXEC.replace("argv = [\"true\"]\n", "argv = [\"true\"]\ndeadline_ms = 60000\n")), "parsed");
        let e = err(&format!("{OK}[fixture]\nfiles.\"f\" = {{ text = \"x\", mtime = 1e19 }}\n"));
        assert!(e.starts_with("p.toml:9:7: fixture file \"f\": mtime 1e19 is after the year 9999"), "{e}");
        let e = err(&format!("{OK}[[fixture.fault]]\nkind = \"touch\"\npath = \"f\"\nmtime = 1e300\n"));
        assert!(e.starts_with("p.toml:11:9: fixture fault touch \"f\": mtime 1e300 is after"), "{e}");
    }

    #[test]
    fn fixture_and_exec_values_are_errors_at_load() {
        let files = |v: &str| err(&format!("{OK}[fixture]\nfiles.{v}\n"));
        let e = files("\"f\" = { repeat = \"\", bytes = 3 }");
        assert!(e.starts_with("p.toml:9:7: fixture file \"f\": generated file: repeat is empty"), "{e}");
        let e = files("\"f\" = { repeat = \"x\", bytes = 1073741825 }");
        assert!(e.starts_with("p.toml:9:7: fixture file \"f\": generated file: bytes = 1073741825 is more"), "{e}");
        let e = files("\"f\" = { base64 = \"!!!\" }");
        assert!(e.starts_with("p.toml:9:7: fixture file \"f\": base64 file:"), "{e}");
        for bad in ["/abs", "../x", "a/../../x", "{home}/../x", ""] {
            let e = files(&format!("{bad:?} = \"x\""));
            assert!(e.starts_with(&format!("p.toml:9:7: fixture file {bad:?} is not a path in the sandbox")), "{e}");
        }
        assert_eq!(files("\"{home}/.claude/x\" = \"x\""), "parsed");
        let e = err(&format!("{OK}[[fixture.fault]]\nkind = \"write\"\npath = \"../x\"\n"));
        assert!(e.starts_with("p.toml:10:8: fixture fault path \"../x\" is not a path in the sandbox"), "{e}");
        let e = err(&EXEC.replace("argv = [\"true\"]", "argv = []"));
        assert!(e.starts_with("p.toml:5:1: exec argv is empty"), "{e}");
        let e = err(&format!("{OK}[web]\npages.\"/a\" = {{ status = 0, body = \"x\" }}\n"));
        assert!(e.starts_with("p.toml:9:7: [web] page \"/a\": status 0 is not an HTTP status"), "{e}");
        let e = err(&format!("{OK}[settings.permissions]\ndefaultMode = \"yolo\"\n"));
        assert!(e.starts_with("p.toml:9:15: permissions.defaultMode \"yolo\" is not a permission mode"), "{e}");
        let hook = "[[settings.hooks.PreToolUSE]]\nhooks = [{ type = \"command\", command = \"true\" }]\n";
        let e = err(&format!("{OK}{hook}"));
        assert!(
            e.starts_with("p.toml:8:18: hook event \"PreToolUSE\" is not an event (did you mean \"PreToolUse\"?)"),
            "{e}"
        );
        assert_eq!(err(&format!("{OK}{}", hook.replace("USE", "Use"))), "parsed");
    }

    #[test]
    fn a_placeholder_no_run_defines_is_an_error_at_load() {
        let e = err(&OK.replace("{cwd}/f", "{bogus}/f"));
        assert!(e.starts_with("p.toml:5:53: {bogus} is not a placeholder\n  hint:"), "{e}");
        let e = err(&OK.replace("{cwd}/f", "{cdw}/f"));
        assert!(e.starts_with("p.toml:5:53: {cdw} is not a placeholder (did you mean {cwd}?)"), "{e}");
        // in an expected text only a near miss: the subject's own braces are text
        let check = |t: &str| err(&format!("{OK}[[check]]\nresult = 1\ncontains = {t:?}\n"));
        assert!(check("at {hom}/x").contains("{hom} is not a placeholder (did you mean {home}?)"));
        assert_eq!(check("EnterWorktree({path}) {name} {{task}} ${T} {}"), "parsed");
        let e = err(&format!("{OK}[[check]]\nfile = \"{{sandbx}}/x\"\nexists = true\n"));
        assert!(e.contains("{sandbx} is not a placeholder (did you mean {sandbox}?)"), "{e}");
        assert!(err(&EXEC.replace("[\"true\"]", "[\"{rg}\", \"{cwd}\"]")) == "parsed");
        assert!(err(&EXEC.replace("[\"true\"]", "[\"{rg}\", \"{rgg}\"]")).contains("{rgg} is not a placeholder"));
        assert_eq!(err(&OK.replace("{cwd}/f", "{{cap}} ${HOME} {A} {}")), "parsed");
        // a tool's own braces (code a Write writes) are text; a path made of an unknown word is not
        assert_eq!(err(&OK.replace("{cwd}/f", "print(f'{name}')")), "parsed");
        assert!(err(&OK.replace("{cwd}/f", "a {bogus}/f")).contains("{bogus} is not a placeholder"));
    }
}
