//! Value checks of a probe file that the types alone do not make: numbers within their bounds (the
//! deadline, exec deadlines), fixture files that can be made (a generated file's pattern and size, base64
//! text, a path that stays in the sandbox), exec commands with a program, web pages with an HTTP status,
//! a permission mode and hook events a subject knows, and placeholders a run defines. Each is found when
//! the probe is loaded, placed on its key or value (`file:line:col`), never at run time. The bounds and
//! the word-level helpers are here; the walk over a parsed file is the parser's (`probe::value_problems`).

/// The longest deadline a probe may set (a day): any run that needs more is a mistake, and a bound keeps
/// the deadline's arithmetic (`now + deadline`) in range.
pub const MAX_DEADLINE_SECS: u64 = 86_400;

/// The most turns a probe lets the built-in loop take (`[subject.builtin] max_turns`): a long session of
/// real use is a few hundred; the bound keeps a typo (a stray digit) from a run that never ends.
pub const MAX_TURNS: usize = 100_000;

/// The longest virtual time one model request may take on a probe's clock (`[clock] per_request`): a day.
pub const MAX_PER_REQUEST_MS: i64 = 86_400_000;

/// The most jobs an idle session may fire (`[clock] max_idle_fires`).
pub const MAX_IDLE_FIRES: usize = 10_000;

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
pub fn near(name: &str) -> Option<&'static str> {
    super::placeholders::PLACEHOLDERS.iter().copied().find(|p| name.len() >= 3 && distance(name, p) <= 1)
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
    fn turns_clock_and_duration_bounds_are_errors_at_their_key() {
        let e = err(&format!("{OK}[subject.builtin]\nmax_turns = 99999999999\n"));
        assert!(e.starts_with("p.toml:9:1: max_turns = 99999999999 is out of range"), "{e}");
        let e = err(&format!("{OK}[subject.builtin]\nmax_turns = 0\n"));
        assert!(e.contains("max_turns = 0 is out of range"), "{e}");
        assert_eq!(err(&format!("{OK}[subject.builtin]\nmax_turns = 1000\n")), "parsed");
        let e = err(&format!("{OK}[clock]\nstart = \"2026-03-02T09:00:00\"\nper_request = \"9999999h\"\n"));
        assert!(e.starts_with("p.toml:10:1: per_request = ") && e.contains("ms is out of range"), "{e}");
        let e = err(&format!("{OK}[clock]\nstart = \"2026-03-02T09:00:00\"\nmax_idle_fires = 10000000\n"));
        assert!(e.starts_with("p.toml:10:1: max_idle_fires = 10000000 is out of range"), "{e}");
        let e = err(&format!("{EXEC}max_duration_ms = 99999999999\n"));
        assert!(e.starts_with("p.toml:9:1: max_duration_ms = 99999999999 is out of range"), "{e}");
        assert_eq!(err(&format!("{EXEC}max_duration_ms = 5000\n")), "parsed");
    }

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
        let e = err(&OK.replace("text = \"done\"", "text = \"done\"\ndelay_ms = 60001"));
        assert!(e.starts_with("p.toml:8:1: delay_ms = 60001 is out of range"), "{e}");
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
