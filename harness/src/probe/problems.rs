//! The passes of [`super::parse_with`] that check a parsed probe file's values against the format's
//! rules, each finding the first mistake of its kind at its place: values, times, fixture, web,
//! settings, placeholders, permission rules.

use super::*;
use crate::located::Problem;
use toml::Spanned;

/// Every value problem of a parsed probe file, the first one found.
pub(crate) fn value_problems(raw: &ProbeFile, text: &str) -> Result<(), Problem> {
    let top = 0..first_header(text).unwrap_or(text.len());
    let deadline = raw.deadline_secs.unwrap_or(DEFAULT_DEADLINE_SECS);
    if !(1..=values::MAX_DEADLINE_SECS).contains(&deadline) {
        let at = key_offset(text, top.clone(), "deadline_secs").unwrap_or(0);
        return Err(Problem::at(at, format!("deadline_secs = {deadline} is out of range"))
            .hint("a deadline is 1 to 86400 seconds (a day)"));
    }
    time_problems(raw, text, deadline)?;
    fixture_problems(raw, text)?;
    web_problems(raw, text)?;
    settings_problems(raw, text)?;
    placeholder_problems(raw, text)
}

/// The times a probe gives within their ranges, and within its deadline: its execs' (and their argv
/// not empty), the built-in's turn limit, the clock's, its checks' durations, the script's waits and
/// delays and its web's (a wait of u64::MAX ms overflowed the stub's clock).
pub(crate) fn time_problems(raw: &ProbeFile, text: &str, deadline: u64) -> Result<(), Problem> {
    for e in &raw.execs {
        let at = e.span().start;
        let region = table_region(text, e.span());
        if e.get_ref().argv.is_empty() {
            let at = key_offset(text, region, "argv").unwrap_or(at);
            return Err(Problem::at(at, "exec argv is empty")
                .hint("argv = [\"{rg}\", \"-n\", \"x\"]: a program and its arguments"));
        }
        if let Some(ms) = e.get_ref().deadline_ms {
            if ms == 0 || ms > deadline * 1000 {
                let at = key_offset(text, region, "deadline_ms").unwrap_or(at);
                let msg = format!("exec deadline_ms = {ms} is out of range: 1 to the probe's deadline ({deadline} s)");
                return Err(Problem::at(at, msg).hint("raise deadline_secs for a longer command"));
            }
        }
    }
    if let Some(n) = raw.subject.builtin.max_turns {
        if !(1..=values::MAX_TURNS).contains(&n) {
            let at = key_offset(text, 0..text.len(), "max_turns").unwrap_or(0);
            return Err(Problem::at(at, format!("max_turns = {n} is out of range")).hint("max_turns is 1 to 100000"));
        }
    }
    if let Some(clock) = &raw.clock {
        if !(0..=values::MAX_PER_REQUEST_MS).contains(&clock.per_request_ms) {
            let at = key_offset(text, 0..text.len(), "per_request").unwrap_or(0);
            let msg = format!("per_request = {} ms is out of range", clock.per_request_ms);
            return Err(Problem::at(at, msg).hint("a request takes 0 to a day of the probe's clock"));
        }
        if clock.max_idle_fires > values::MAX_IDLE_FIRES {
            let at = key_offset(text, 0..text.len(), "max_idle_fires").unwrap_or(0);
            let msg = format!("max_idle_fires = {} is out of range", clock.max_idle_fires);
            return Err(Problem::at(at, msg).hint("max_idle_fires is at most 10000"));
        }
    }
    for c in &raw.checks {
        if let Some(ms) = c.get_ref().max_duration_ms {
            if ms > deadline * 1000 {
                let at = key_offset(text, table_region(text, c.span()), "max_duration_ms").unwrap_or(c.span().start);
                let msg =
                    format!("max_duration_ms = {ms} is out of range: at most the probe's deadline ({deadline} s)");
                return Err(Problem::at(at, msg).hint("a command cannot take longer than the probe's deadline"));
            }
        }
    }
    // the script's times: within the deadline (a wait of u64::MAX ms overflowed the stub's clock)
    let bound_ms = deadline * 1000;
    let turns = raw.turns.iter().chain(raw.conversations.iter().flat_map(|c| &c.turns));
    let mut times = Vec::new();
    for t in turns {
        times.push(("delay_ms", t.delay_ms));
        times.extend(t.wait.as_ref().and_then(|w| w.timeout_ms).map(|ms| ("timeout_ms", ms)));
    }
    times.extend(raw.web.pages.values().map(|p| ("delay_ms", p.delay_ms)));
    if let Some((key, ms)) = times.into_iter().find(|(_, ms)| *ms > bound_ms) {
        let at = key_offset(text, 0..text.len(), key).unwrap_or(0);
        let msg = format!("{key} = {ms} is out of range: at most the probe's deadline ({deadline} s)");
        return Err(Problem::at(at, msg).hint("raise deadline_secs (at most 86400) for a longer wait"));
    }
    Ok(())
}

/// The fixture's files and faults: paths inside the sandbox, file specs that say one thing.
pub(crate) fn fixture_problems(raw: &ProbeFile, text: &str) -> Result<(), Problem> {
    for (rel, spec) in &raw.fixture.files {
        let at = string_offset(text, rel).unwrap_or(0);
        if let Some(why) = values::sandbox_path_problem(rel) {
            return Err(
                Problem::at(at, format!("fixture file {why}")).hint("fixture files are written inside the sandbox")
            );
        }
        if let Some(why) = files::spec_problem(spec) {
            return Err(Problem::at(at, format!("fixture file {rel:?}: {why}")));
        }
    }
    for f in &raw.fixture.fault {
        let f = f.get_ref();
        if let Some(why) = values::sandbox_path_problem(&f.path) {
            let at = string_offset(text, &f.path).unwrap_or(f.kind.span().start);
            return Err(Problem::at(at, format!("fixture fault path {why}")).hint("faults change the sandbox only"));
        }
    }
    Ok(())
}

/// The probe's web: HTTP statuses, body specs, the pages' own rules.
pub(crate) fn web_problems(raw: &ProbeFile, text: &str) -> Result<(), Problem> {
    for (key, page) in &raw.web.pages {
        let at = string_offset(text, key).unwrap_or(0);
        if let Some(s) = page.status {
            if !(100..=999).contains(&s) {
                return Err(Problem::at(at, format!("[web] page {key:?}: status {s} is not an HTTP status"))
                    .hint("100 to 999, e.g. 404"));
            }
        }
        if let Some(why) = page.body.as_ref().and_then(files::spec_problem) {
            return Err(Problem::at(at, format!("[web] page {key:?}: {why}")));
        }
    }
    if let Err(e) = raw.web.validate() {
        let at = key_offset(text, 0..text.len(), "pages").unwrap_or(0);
        return Err(Problem::at(at, crate::exit::chain(&e)));
    }
    Ok(())
}

/// `[settings]`: a permission mode there is, hook events there are.
pub(crate) fn settings_problems(raw: &ProbeFile, text: &str) -> Result<(), Problem> {
    if let Some(mode) = &raw.settings.permissions.default_mode {
        if !values::PERMISSION_MODES.contains(&mode.as_str()) {
            let at = string_offset(text, mode).unwrap_or(0);
            return Err(Problem::at(at, format!("permissions.defaultMode {mode:?} is not a permission mode"))
                .hint("default, acceptEdits, bypassPermissions, dontAsk or plan"));
        }
    }
    for event in raw.settings.hooks.keys() {
        if !values::HOOK_EVENTS.contains(&event.as_str()) {
            let at =
                text.find(&format!("hooks.{event}")).map(|i| i + 6).or_else(|| string_offset(text, event)).unwrap_or(0);
            let near = values::HOOK_EVENTS.iter().find(|e| e.eq_ignore_ascii_case(event));
            let msg = match near {
                Some(n) => format!("hook event {event:?} is not an event (did you mean {n:?}?)"),
                None => format!("hook event {event:?} is not an event"),
            };
            return Err(
                Problem::at(at, msg).hint("events: PreToolUse, PostToolUse, UserPromptSubmit, Stop, SubagentStop, …")
            );
        }
    }
    Ok(())
}

/// Every placeholder a probe writes is one a run defines ([`placeholders::PLACEHOLDERS`], `{rg}` as
/// an exec's program): in waits, fixture and fault paths, link targets, exec argv, server commands and
/// check targets any other `{word}` is an error, in tool inputs one that starts a path or stands beside a
/// `/` (`{bogus}/f.txt`); in every other text (a tool's code, the texts a check expects, which may hold
/// the subject's own braces, `EnterWorktree({path})`) a word one edit from a placeholder (`{cdw}`).
pub(crate) fn placeholder_problems(raw: &ProbeFile, text: &str) -> Result<(), Problem> {
    const HINT: &str = "placeholders are {cwd} {home} {sandbox} {probelab} {web} {artifact} ({rg}: an exec's program)";
    let defined = |n: &str| placeholders::PLACEHOLDERS.contains(&n);
    let place = |name: &str| text.find(&format!("{{{name}}}")).unwrap_or(0);
    let strict = |s: &str, rg: bool| -> Result<(), Problem> {
        for (_, name) in values::placeholder_names(s) {
            if !(defined(name) || rg && name == "rg") {
                let msg = match values::near(name) {
                    Some(p) => format!("{{{name}}} is not a placeholder (did you mean {{{p}}}?)"),
                    None => format!("{{{name}}} is not a placeholder"),
                };
                return Err(Problem::at(place(name), msg).hint(HINT));
            }
        }
        Ok(())
    };
    let loose = |s: &str| -> Result<(), Problem> {
        for (_, name) in values::placeholder_names(s) {
            if let Some(p) = values::near(name).filter(|_| !defined(name)) {
                return Err(Problem::at(
                    place(name),
                    format!("{{{name}}} is not a placeholder (did you mean {{{p}}}?)"),
                )
                .hint(HINT));
            }
        }
        Ok(())
    };
    // a tool input's text may hold braces of its own (code a Write writes, `f"{name}"`): there a `{word}`
    // is a placeholder where a path starts with it or it stands beside a `/`
    let in_input = |s: &str| -> Result<(), Problem> {
        for (at, name) in values::placeholder_names(s) {
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
            inputs.extend(w.needles());
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
    inputs.extend(raw.checks.iter().flat_map(|c| c.get_ref().paths()));
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
    for c in raw.checks.iter().map(Spanned::get_ref) {
        let mut texts = c.expected_texts();
        c.json.iter().filter_map(|j| j.equals.as_ref()).for_each(|v| strings(v, &mut texts));
        texts.into_iter().try_for_each(loose)?;
    }
    Ok(())
}

/// `8-4-4-4-12` hex digits.
pub(crate) fn is_uuid(s: &str) -> bool {
    let parts: Vec<&str> = s.split('-').collect();
    parts.len() == 5
        && parts.iter().zip([8, 4, 4, 4, 12]).all(|(p, n)| p.len() == n && p.chars().all(|c| c.is_ascii_hexdigit()))
}

/// Why a permission rule cannot be used, read as the runtime reads it: not `Tool` / `Tool(pattern)`, a
/// tool no subject has (a rule that would never match), or a pattern that does not compile.
pub(crate) fn rule_problem(text: &str) -> Result<(), String> {
    let rule = probelab_runtime::permissions::parse_rule(text).map_err(|e| e.to_string())?;
    let tool = rule.tool.as_str();
    static POOL: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    let pool =
        POOL.get_or_init(|| probelab_runtime::builtin::registry().names().into_iter().map(str::to_string).collect());
    let known = pool.iter().any(|n| n == tool) || REFERENCE_ONLY_TOOLS.contains(&tool) || tool.starts_with("mcp__");
    if !known {
        return Err(format!("rule {text:?} names {tool:?}, which is not a tool (the rule would never match)"));
    }
    let Some(pattern) = rule.pattern.as_deref() else { return Ok(()) };
    let glob = |p: &str| globset::Glob::new(p).map(|_| ()).map_err(|e| format!("rule {text:?}: {e}"));
    match tool {
        "Bash" => glob(pattern.strip_suffix(":*").unwrap_or(pattern)),
        "WebFetch" => match pattern.strip_prefix("domain:") {
            Some(host) if !host.is_empty() => glob(host),
            _ => Err(format!("rule {text:?}: a WebFetch pattern is domain:HOST")),
        },
        t if ["Read", "Edit", "Write", "NotebookEdit", "MultiEdit", "Grep", "Glob", "LS", "NotebookRead"]
            .contains(&t) =>
        {
            let at = probelab_runtime::permissions::Anchors { home: "/h".into(), project_root: "/p".into() };
            probelab_runtime::permissions::path_glob(pattern, &at)
                .map(|_| ())
                .ok_or_else(|| format!("rule {text:?}: {pattern:?} is not a valid glob"))
        }
        _ => Ok(()),
    }
}

/// The offset of `s` written as a TOML basic or literal string (`"s"`, `'s'`).
pub(crate) fn string_offset(text: &str, s: &str) -> Option<usize> {
    let basic = toml::Value::String(s.to_string()).to_string();
    text.find(&basic).or_else(|| text.find(&format!("'{s}'")))
}

/// The offset of the first table header (`[x]`, `[[x]]` at a line's start).
pub(crate) fn first_header(text: &str) -> Option<usize> {
    let mut at = 0;
    for line in text.split_inclusive('\n') {
        if line.starts_with('[') {
            return Some(at);
        }
        at += line.len();
    }
    None
}

/// Where the turn a script error names (`conversation "main", turn 3: …`) is written: the N-th
/// `[[turn]]` of the main conversation, or the N-th `[[conversation.turn]]` after the conversation's
/// `name`; else its conversation's name.
pub(crate) fn turn_offset(text: &str, msg: &str) -> Option<usize> {
    let rest = msg.strip_prefix("conversation ")?;
    let (name, rest) = rest.split_once(", turn ")?;
    let name: String = serde_json::from_str(name).ok()?;
    let n: usize = rest.split(|c: char| !c.is_ascii_digit()).next()?.parse().ok()?;
    let (from, header) = if name == stub_messages::script::MAIN {
        (0, "[[turn]]")
    } else {
        (string_offset(text, &name)?, "[[conversation.turn]]")
    };
    let mut at = from;
    let mut seen = 0;
    for line in text[from..].split_inclusive('\n') {
        if line.trim_end() == header {
            seen += 1;
            if seen == n {
                return Some(at);
            }
        }
        at += line.len();
    }
    (from > 0).then_some(from)
}

/// The text of the table that starts at `span` (a `[[check]]` entry's span is its header): up to the
/// next line that opens a table, or the end.
pub(crate) fn table_region(text: &str, span: std::ops::Range<usize>) -> std::ops::Range<usize> {
    let start = span.start.min(text.len());
    let body = text[start..].find('\n').map(|i| start + i + 1).unwrap_or(text.len());
    let mut end = text.len();
    let mut at = body;
    for line in text[body..].split_inclusive('\n') {
        if line.trim_start().starts_with('[') && !line.trim_start().starts_with("[ ") {
            end = at;
            break;
        }
        at += line.len();
    }
    start..end.max(span.end.min(text.len()))
}

/// The offset of `key` as a TOML key (`key =`, at a line's start or after `{` / `,`) within `span`.
pub(crate) fn key_offset(text: &str, span: std::ops::Range<usize>, key: &str) -> Option<usize> {
    let end = span.end.min(text.len());
    let start = span.start.min(end);
    let slice = text.get(start..end)?;
    let mut from = 0;
    while let Some(i) = slice.get(from..).and_then(|s| s.find(key)) {
        let at = from + i;
        let before = slice[..at].trim_end_matches([' ', '\t']);
        let after = slice[at + key.len()..].trim_start_matches([' ', '\t']);
        let starts = before.is_empty() || before.ends_with(['\n', '{', ',', '[', ']']);
        if starts && after.starts_with('=') {
            return Some(start + at);
        }
        from = at + key.len();
    }
    None
}
