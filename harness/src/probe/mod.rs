//! Probe files: the format (TOML), strict parsing with `file:line:col` errors and hints, discovery
//! under `probes/`, and the sandbox a probe runs in ([`sandbox`]). Every key, table by table:
//! `docs/probe-format.md`, kept equal to these types by [`keys`]'s test. In short:
//!
//! ```toml
//! id = "read.offset-limit"                   # unique; names the golden file
//! claims = ["READ-1", "READ-3"]              # ids from docs/claims.md
//! about = "offset/limit window, cat -n numbering"
//! subjects = ["builtin"]                     # default: ["builtin"] (["claude-code"] under probes/claude-code/)
//! prompt = "Read the file."                  # first user message (default: "Run the probe.")
//! ask = "deny"                               # how the host answers a permission ask (default deny)
//! deadline_secs = 60                         # the run must end within it
//! shape_varies = "why"                       # the requests' layout follows timing: no cache_control lines
//! requires = ["bwrap", "curl"]               # host parts it needs: skipped where missing (see host)
//!
//! [fixture]
//! dir = "read"                               # copied from fixtures/read into the cwd (optional)
//! files."f.txt" = "one\ntwo\n"               # inline files
//! files."big.txt" = { repeat = "x", bytes = 262145 }   # generated: `repeat` cycled to `bytes` bytes
//! files."old.txt" = { text = "x", mtime = -3600 }       # an mtime (also beside repeat / base64), see below
//! files."new.txt" = { text = "y", mtime = "2026-03-01T10:00:00.250Z" }
//! [[fixture.fault]]                          # a change to the sandbox, before the run or a turn
//! at_turn = 2                                # before main turn 2 is served (omit: before the run)
//! kind = "write"                             # write | delete | mkdir | chmod | symlink | touch
//! path = "f.txt"
//! content = "changed\n"
//! [[fixture.fault]]
//! kind = "touch"                             # made empty if missing; mtime = … (default: now)
//! path = "tree/a.txt"
//! mtime = 5.5
//!
//! [settings]                                 # Claude Code's settings.json shape
//! permissions = { deny = ["Read(secrets/**)"] }
//!
//! [mcp_servers.fixture]                      # an MCP server ({probelab} = this binary; MCP-1)
//! command = "{probelab}"
//! args = ["fake-mcp", "--trace", "{sandbox}/mcp-trace.jsonl"]
//!
//! [[plugin]]                                 # a plugin with LSP servers (LSP-1..5; Claude Code: --plugin-dir)
//! name = "probe-lsp"
//! lspServers.probe = { command = "{probelab}", args = ["fake-lsp", "--trace", "{sandbox}/lsp-trace.jsonl"],
//!                      extensionToLanguage = { ".probe" = "probe" } }
//!
//! [subject]
//! session_id = "11111111-2222-4333-8444-555555555555"   # the session's id on both subjects (a UUID)
//! unconfined = "why"                         # run the subject outside the lab's confinement (a reason)
//! [subject.builtin]                          # model, max_turns, requires, unconfined
//! [subject.claude-code]                      # args, env, requires, unconfined
//!
//! [env]                                      # environment of the subject
//! CLAUDE_CODE_FILE_READ_MAX_OUTPUT_TOKENS = "100"
//!
//! [[turn]]                                   # stub-messages' turn format; {cwd} {home} {sandbox}
//! tool_use = [{ name = "Read", input = { file_path = "{cwd}/f.txt" } }]
//! [[turn]]
//! tool_use = [{ id = "edit", name = "Edit", input = { file_path = "{cwd}/f.txt", old_string = "one", new_string = "1" } }]
//! [[turn]]
//! text = "done"
//!
//! [[check]]                                  # result = N | result = "ID" | request = N | file = "path"
//! result = 1                                 # the 1st scripted tool_use of the main conversation
//! is_error = false
//! contains = "1\tone"
//! [[check]]
//! result = "edit"                            # the tool_use given id = "edit" (unique in the probe; also
//! matches = '^The file {cwd}/f\.txt has'     # its wire id): inserting a turn renumbers nothing
//! ```
//!
//! Mtimes: every fixture file (inline or from `dir`) gets a distinct fixed mtime in path order, the
//! first 2026-01-01T00:00:00Z, one second apart (`sandbox::FIXTURE_MTIME_BASE`); a file's own `mtime`
//! overrides its stamp, and faults before the run (a `touch`) come after both. An `mtime` is seconds on
//! that clock (0 = the first file's stamp, fractions for milliseconds, negative = earlier) or an
//! absolute RFC 3339 time.
//!
//! Placeholders (`{cwd}`, `{home}`, `{sandbox}`, `{probelab}`, `{web}`, `{artifact}`) are resolved in tool
//! inputs and in every check text; inside `matches` each becomes its value as an escaped literal
//! (`regex::escape`), so a path's `.` or `+` matches only itself (`\{cwd}`, the spelling of the former rule,
//! is read as `{cwd}`).

pub mod checks;
pub mod files;
mod format;
pub mod host;
pub mod keys;
mod load;
mod parse;
pub mod placeholders;
mod problems;
pub mod sandbox;
pub mod values;
pub mod web;

pub use checks::{Check, JsonCheck, OneOrMany, RawCheck, ResultRef, Target};
pub use files::FileSpec;
pub use format::*;
pub use load::*;
pub use parse::*;

use crate::subject::id::SubjectId;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::subject::id::SubjectKind;
    use host::CONFINEMENT;
    use std::path::Path;

    fn err(text: &str) -> String {
        parse(Path::new("p.toml"), text).err().map(|e| e.to_string()).unwrap_or_else(|| "parsed".into())
    }

    const OK: &str = "id = \"x.y\"\nclaims = [\"READ-1\"]\nabout = \"a\"\n[[turn]]\ntool_use = [{ name = \"Read\", input = { file_path = \"{cwd}/f\" } }]\n[[turn]]\ntext = \"done\"\n";

    #[test]
    fn shape_varies_needs_words_and_is_kept() {
        let text = |why: &str| {
            format!(
                "id = \"p\"\nclaims = [\"READ-1\"]\nabout = \"a\"\nshape_varies = \"{why}\"\n[[turn]]\ntext = \"done\"\n"
            )
        };
        let p = parse(Path::new("p.toml"), &text("the message arrives when it does")).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(p.shape_varies.as_deref(), Some("the message arrives when it does"));
        let e = parse(Path::new("p.toml"), &text(" \u{200b} ")).map(|_| ()).unwrap_err().to_string();
        assert!(e.starts_with("p.toml:4:") && e.contains("shape_varies needs a reason in words"), "{e}");
    }

    #[test]
    fn every_kind_of_mistake_is_located_in_the_file_with_the_hint_it_was_found_with() {
        // the parser's own step, a value pass's problem, a fault's problem: one rendering
        let claim = err(&OK.replace("READ-1", "NOPE-99"));
        assert_eq!(
            claim,
            "p.toml:2:11: claim \"NOPE-99\" is not in the catalogue\n  hint: claim ids are listed in docs/claims.md and the project's own `claims` file (`probelab list` prints them)"
        );
        let file = err(&format!("{OK}[fixture]\nfiles.\"../x\" = \"a\"\n"));
        assert_eq!(
            file,
            "p.toml:9:7: fixture file \"../x\" is not a path in the sandbox: relative to the cwd (or under {home}/), without `..`\n  hint: fixture files are written inside the sandbox"
        );
        let fault = err(&format!("{OK}[[fixture.fault]]\nkind = \"rename\"\npath = \"f\"\n"));
        assert!(
            fault.starts_with("p.toml:9:8: fixture fault kind \"rename\" is unknown\n  hint: kind is write"),
            "{fault}"
        );
        // a fixture dir checked against the project's fixtures, after parsing
        let p =
            parse(Path::new("p.toml"), &format!("{OK}[fixture]\ndir = \"none\"\n")).unwrap_or_else(|e| panic!("{e}"));
        let e = check_fixture_dirs(&[p], Path::new("/no/fixtures")).map(|_| ()).unwrap_err();
        assert_eq!((e.file.as_path(), e.line, e.col), (Path::new("p.toml"), 9, 7));
        assert!(e
            .to_string()
            .ends_with("\n  hint: name a directory under the project's fixtures (probelab.toml `fixtures`)"));
    }

    #[test]
    fn a_good_probe_parses() {
        let p = parse(Path::new("p.toml"), &format!("{OK}[[check]]\nresult = 1\nis_error = false\n"));
        let p = p.map_err(|e| e.to_string());
        assert_eq!(p.as_ref().map(|p| p.checks.len()), Ok(1));
        assert_eq!(p.as_ref().map(|p| p.checks[0].1), Ok(8));
    }

    #[test]
    fn every_other_subject_has_options_of_its_own_by_name() {
        let known = Known {
            subjects: vec!["builtin".into(), "claude-code".into(), "opencode".into(), "my-agent".into()],
            claims: Vec::new(),
            caps: Default::default(),
        };
        let with = |table: &str| parse_with(Path::new("p.toml"), &format!("{OK}{table}"), &known);
        let p = with(
            "[subject.agent.opencode]\nrequires = [\"curl\"]\nunconfined = \"measures the host's /tmp\"\nargs = [\"--x\"]\n\
             [subject.agent.my-agent]\nenv = { A = \"1\" }\n",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let opencode = SubjectId { kind: SubjectKind::Agent("opencode"), ..SubjectId::command("opencode", None) };
        let mine = SubjectId::command("my-agent", None);
        assert_eq!(p.unconfined_on(&opencode), Some("measures the host's /tmp"));
        assert_eq!(p.requires_on(&opencode), ["curl"]);
        assert_eq!(p.subject.agent_options("opencode").map(|o| o.args.clone()), Some(vec!["--x".to_string()]));
        // another subject's options are not this one's: it runs confined, needing confinement
        assert_eq!(p.unconfined_on(&mine), None);
        assert_eq!(p.requires_on(&mine), [CONFINEMENT]);
        assert_eq!(p.subject.agent_options("my-agent").map(|o| o.env["A"].clone()), Some("1".into()));
        assert_eq!(p.unconfined_on(&SubjectId::builtin()), None);
        // a name that is no subject, or one with a table of its own, is said at its place
        let e = with("[subject.agent.nosuch]\nrequires = [\"curl\"]\n").map(|_| ()).unwrap_err().to_string();
        assert!(e.starts_with("p.toml:8:16: [subject.agent.nosuch]: unknown subject \"nosuch\""), "{e}");
        assert!(e.contains("hint: the other subjects are opencode, my-agent"), "{e}");
        let e = with("[subject.agent.builtin]\n").map(|_| ()).unwrap_err().to_string();
        assert!(e.contains("builtin has a table of its own") && e.contains("write [subject.builtin]"), "{e}");
        // its keys are its own, its reason is words, its host parts are parts there are
        let e = with("[subject.agent.opencode]\nmodel = \"m\"\n").map(|_| ()).unwrap_err().to_string();
        assert!(e.contains("unknown field `model`"), "{e}");
        let e = with("[subject.agent.opencode]\nunconfined = \" \"\n").map(|_| ()).unwrap_err().to_string();
        assert!(e.contains("unconfined needs a reason"), "{e}");
        let e = with("[subject.agent.opencode]\nrequires = [\"no such/part\"]\n").map(|_| ()).unwrap_err().to_string();
        assert!(e.contains("which is not a host part"), "{e}");
    }

    #[test]
    fn a_probe_under_claude_code_runs_there_unless_it_names_its_subjects() {
        let p = |path: &str, text: &str| parse(Path::new(path), text).map_err(|e| e.to_string());
        let (builtin, cc) = (SubjectId::builtin(), SubjectId::reference());
        let in_cc = p("probes/claude-code/x.toml", OK);
        assert_eq!(in_cc.as_ref().map(|p| p.applies_to(&builtin)), Ok(false));
        assert_eq!(in_cc.as_ref().map(|p| p.applies_to(&cc)), Ok(true));
        assert_eq!(in_cc.as_ref().map(|p| p.subjects.clone()), Ok(vec!["claude-code".to_string()]));
        let both =
            p("probes/claude-code/x.toml", &OK.replace("about", "subjects = [\"builtin\", \"claude-code\"]\nabout"));
        assert_eq!(both.map(|p| p.applies_to(&builtin)), Ok(true));
        let plain = p("probes/read/x.toml", OK);
        assert_eq!(plain.as_ref().map(|p| (p.applies_to(&builtin), p.applies_to(&cc))), Ok((true, false)));
        assert_eq!(plain.map(|p| p.subjects), Ok(vec!["builtin".to_string()]));
        // a command subject of Claude Code's dialect runs Claude Code's probes, and those naming it
        let agent = SubjectId::command("my-agent", Some("claude-code"));
        assert_eq!(in_cc.map(|p| p.applies_to(&agent)), Ok(true));
        let named = parse_with(
            Path::new("p.toml"),
            &OK.replace("about", "subjects = [\"my-agent\"]\nabout").replace("claims = [", "claims = [\"OWN-1\", "),
            &Known {
                subjects: vec!["builtin".into(), "claude-code".into(), "my-agent".into()],
                claims: vec!["OWN-1".into()],
                caps: Default::default(),
            },
        );
        assert_eq!(
            named.map(|p| p.applies_to(&SubjectId::command("my-agent", None))).map_err(|e| e.to_string()),
            Ok(true)
        );
        let e = p("p.toml", &OK.replace("about", "subjects = [\"my-agent\"]\nabout"));
        assert!(
            e.as_ref().is_err_and(|e| e.contains("unknown subject \"my-agent\"") && e.contains("[subjects.NAME]")),
            "{e:?}"
        );
    }

    #[test]
    fn the_default_subjects_are_stated_once_in_the_docs() {
        let docs = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/probe-format.md"))
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(
            docs.contains(&format!("Default: {DEFAULT_SUBJECTS}")),
            "docs/probe-format.md must say `Default: {DEFAULT_SUBJECTS}`"
        );
    }

    #[test]
    fn a_sandbox_probe_requires_bubblewrap() {
        let sandboxed = format!("{OK}[settings.sandbox]\nenabled = true\n");
        assert!(err(&sandboxed).contains("does not require bubblewrap"), "{}", err(&sandboxed));
        let declared = sandboxed.replace("about", "requires = [\"bwrap\"]\nabout");
        let p = parse(Path::new("p.toml"), &declared).map_err(|e| e.to_string());
        assert_eq!(
            p.map(|p| p.requires_on(&SubjectId::builtin())),
            Ok(vec!["bwrap".to_string(), CONFINEMENT.to_string()])
        );
        assert!(err(&OK.replace("about", "requires = [\"a b\"]\nabout")).contains("is not a host part"));
    }

    #[test]
    fn a_subject_runs_confined_unless_the_probe_says_why_not() {
        let requires = |text: &str, subject: &str| {
            let id = SubjectId::parse_registered(subject).unwrap_or_else(|| panic!("{subject}"));
            parse(Path::new("p.toml"), text).map(|p| p.requires_on(&id)).map_err(|e| e.to_string())
        };
        assert_eq!(requires(OK, "builtin"), Ok(vec![CONFINEMENT.to_string()]));
        assert_eq!(requires(OK, "claude-code@2.1.235"), Ok(vec![CONFINEMENT.to_string()]));
        let all = format!("{OK}[subject]\nunconfined = \"measures the host's /tmp\"\n");
        assert_eq!(requires(&all, "builtin"), Ok(vec![]));
        assert_eq!(requires(&all, "claude-code@2.1.235"), Ok(vec![]));
        let one = format!("{OK}[subject.claude-code]\nunconfined = \"chattr +i\"\n");
        assert_eq!(requires(&one, "builtin"), Ok(vec![CONFINEMENT.to_string()]));
        assert_eq!(requires(&one, "claude-code@2.1.235"), Ok(vec![]));
        // a reason, never an empty one; placed on its key
        let blank = format!("{OK}[subject.builtin]\nunconfined = \" \"\n");
        let e = err(&blank);
        let line = blank.lines().position(|l| l.starts_with("unconfined")).map(|i| i + 1).unwrap_or(0);
        assert!(e.contains("unconfined needs a reason") && e.contains(&format!(":{line}:1")), "{e}");
        // invisible characters are no reason either (issue 41)
        for nothing in ["\\u200b", "\\u200b\\u200b ", "-", "\\t"] {
            let e = err(&format!("{OK}[subject]\nunconfined = \"{nothing}\"\n"));
            assert!(e.contains("unconfined needs a reason"), "{nothing:?}: {e}");
        }
    }

    #[test]
    fn a_check_names_a_result_by_number_or_by_the_id_given_to_its_tool_use() {
        let text = "id = \"x.y\"\nclaims = [\"READ-1\"]\nabout = \"a\"\n[[turn]]\ntool_use = [{ name = \"Read\", input = {} }]\n\
                    [[turn]]\ntool_use = [{ name = \"Read\", input = {} }, { id = \"edit\", name = \"Edit\", input = {} }]\n\
                    [[turn]]\ntext = \"done\"\n[[check]]\nresult = \"edit\"\nis_error = false\n[[check]]\nresult = 2\nis_error = false\n";
        let p = parse(Path::new("p.toml"), text).unwrap_or_else(|e| panic!("{e}"));
        let resolved: Vec<Option<usize>> =
            p.checks.iter().map(|c| if let Target::Result { n, .. } = c.0.target { Some(n) } else { None }).collect();
        assert_eq!(resolved, vec![Some(3), Some(2)]);
        assert_eq!(p.checks[0].0.target.to_string(), "result edit");
        assert_eq!(p.checks[1].0.target.to_string(), "result 2");
        let unknown = err(&text.replace("result = \"edit\"", "result = \"edti\""));
        assert!(unknown.starts_with("p.toml:10:1: check names result \"edti\", but no tool_use"), "{unknown}");
        assert!(unknown.contains("ids given: [\"edit\"]"), "{unknown}");
        let twice = err(&text.replace(
            "{ name = \"Read\", input = {} }]\n[[turn]]",
            "{ id = \"edit\", name = \"Read\", input = {} }]\n[[turn]]",
        ));
        assert!(twice.contains("tool_use id \"edit\" is given twice"), "{twice}");
    }

    #[test]
    fn a_regex_may_hold_placeholders() {
        let ok = format!("{OK}[[check]]\nresult = 1\nmatches = '^{{cwd}}/f$'\n");
        assert!(parse(Path::new("p.toml"), &ok).is_ok(), "{}", err(&ok));
        assert!(err(&format!("{OK}[[check]]\nresult = 1\nmatches = '^{{cwd}}($'\n")).contains("not a valid regex"));
    }

    #[test]
    fn errors_have_places_and_hints() {
        assert!(
            err(&format!("{OK}bogus = 1\n")).starts_with("p.toml:8:1: unknown field `bogus`"),
            "{}",
            err(&format!("{OK}bogus = 1\n"))
        );
        assert!(err(&OK.replace("READ-1", "READ-99"))
            .starts_with("p.toml:2:11: claim \"READ-99\" is not in the catalogue\n  hint:"));
        assert!(
            err(&format!("{OK}[[check]]\nresult = 2\n"))
                .starts_with("p.toml:8:1: check names result 2, but the main conversation scripts 1"),
            "{}",
            err(&format!("{OK}[[check]]\nresult = 2\n"))
        );
        assert!(err(&format!("{OK}[[check]]\nrequest = 1\nfile = \"f\"\n")).contains("exactly one target"));
        assert!(err(&OK.replace("claims = [\"READ-1\"]\n", "")).contains("missing field `claims`"));
        assert!(
            err(&format!("{OK}[[check]]\nresult = 1\nis_error = \"no\"\n")).starts_with("p.toml:10:12: invalid type"),
            "{}",
            err(&format!("{OK}[[check]]\nresult = 1\nis_error = \"no\"\n"))
        );
    }
}

#[cfg(test)]
mod validation_tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn messages_name_the_forms_a_value_takes_not_serde_internals() {
        let check = |body: &str| err(&format!("{OK}[[check]]\n{body}\n"));
        let e = check("result = [1]\nis_error = false");
        assert!(e.starts_with("p.toml:9:10: a result is a number (result = 2"), "{e}");
        let e = check("result = 99999999999999999999\nis_error = false");
        assert!(e.starts_with("p.toml:9:10: integer 99999999999999999999 is out of range"), "{e}");
        let e = check("result = 1\ncontains = 1");
        assert!(e.starts_with("p.toml:10:12: the value is a string or a list of strings"), "{e}");
        let e = err(&format!("{OK}[fixture]\nfiles.\"x\" = {{ repeat = 3 }}\n"));
        assert!(e.starts_with("p.toml:9:13: a file is a string, { text = … }"), "{e}");
        for e in [check("result = [1]\nis_error = false"), check("result = 99999999999999999999\nis_error = true")] {
            assert!(!e.contains("untagged") && !e.contains("i128") && !e.contains("any value"), "{e}");
        }
    }

    #[test]
    fn a_nested_missing_field_is_hinted_at_its_table() {
        let e = err(&format!("{OK}[[settings.hooks.Stop]]\nmatcher = \"x\"\n"));
        assert!(e.starts_with("p.toml:8:1: missing field `hooks`\n  hint: the table needs this key"), "{e}");
        let e = err(&OK.replace("about = \"a\"\n", ""));
        assert!(e.contains("missing field `about`\n  hint: every probe needs id, claims and about"), "{e}");
    }

    #[test]
    fn invalid_utf8_is_placed_at_its_byte() {
        let d = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let f = d.path().join("p.toml");
        std::fs::write(&f, b"id = \"x\"\nabout = \"ab\xffc\"\n").unwrap_or_else(|e| panic!("{e}"));
        let e = load(&f).err().map(|e| (e.line, e.col, e.message)).unwrap_or_default();
        assert_eq!(e, (2, 12, "the file is not UTF-8 text".to_string()));
    }

    fn err(text: &str) -> String {
        parse(Path::new("p.toml"), text).err().map(|e| e.to_string()).unwrap_or_else(|| "parsed".into())
    }

    const OK: &str = "id = \"x.y\"\nclaims = [\"READ-1\"]\nabout = \"a\"\n[[turn]]\ntool_use = [{ name = \"Read\", input = { file_path = \"{cwd}/f\" } }]\n[[turn]]\ntext = \"done\"\n";

    #[test]
    fn a_check_that_asserts_nothing_is_an_error_at_its_key() {
        let e = err(&format!("{OK}[[check]]\nresult = 1\n"));
        assert!(e.starts_with("p.toml:8:1: the check names its target but asserts nothing"), "{e}");
        let e = err(&format!("{OK}[[check]]\nresult = 1\ncontains = []\n"));
        assert!(e.starts_with("p.toml:10:1: `contains` is empty: it asserts nothing"), "{e}");
        let e = err(&format!("{OK}[[check]]\nresult = 1\njson = []\n"));
        assert!(e.starts_with("p.toml:10:1: `json` is empty: it asserts nothing"), "{e}");
        let e = err(&format!("{OK}[[check]]\nresult = 1\n  json = [{{ pointer = \"/0\" }}]\n"));
        assert!(e.starts_with("p.toml:10:3: json check \"/0\" has neither equals nor exists"), "{e}");
        assert_eq!(err(&format!("{OK}[[check]]\nresult = 1\ncontains = [\"x\"]\n")), "parsed");
    }

    #[test]
    fn a_probe_s_limits_are_its_own_within_the_project_s_caps() {
        let with = |limits: &str| OK.replace("[[turn]]\ntool_use", &format!("[limits]\n{limits}\n[[turn]]\ntool_use"));
        let parse = |text: &str, caps: crate::limits::LimitsSpec| {
            parse_with(Path::new("p.toml"), text, &Known { caps, ..Known::default() }).map_err(|e| e.to_string())
        };
        let set = parse(&with("disk_mb = 64\nprocesses = 3000"), Default::default()).map(|p| p.limits);
        assert_eq!(
            set,
            Ok(crate::limits::LimitsSpec { disk_mb: Some(64), processes: Some(3000), ..Default::default() })
        );
        let limits = crate::limits::Limits::of(&set.unwrap_or_default());
        assert_eq!(
            (limits.disk_bytes, limits.processes, limits.file_bytes),
            (64 << 20, 3000, crate::limits::MAX_FILE_BYTES)
        );
        // over the default cap (four times 2048), over a project's own, zero: each refused at its key
        let e = parse(&with("processes = 8193"), Default::default()).err().unwrap_or_default();
        assert!(e.contains("[limits] processes = 8193 is over the project's cap of 8192"), "{e}");
        let caps = crate::limits::LimitsSpec { disk_mb: Some(32), ..Default::default() };
        let e = parse(&with("disk_mb = 64"), caps).err().unwrap_or_default();
        assert!(e.contains("[limits] disk_mb = 64 is over the project's cap of 32"), "{e}");
        let e = parse(&with("file_mb = 0"), Default::default()).err().unwrap_or_default();
        assert!(e.contains("[limits] file_mb = 0 leaves the subject nothing"), "{e}");
        let e = parse(&with("disk = 1"), Default::default()).err().unwrap_or_default();
        assert!(e.contains("unknown field `disk`"), "{e}");
    }

    #[test]
    fn an_assertion_its_target_does_not_take_is_an_error_at_the_key() {
        let e = err(&format!("{OK}[[check]]\nresult = 1\nexists = true\n"));
        assert!(
            e.starts_with("p.toml:10:1: `exists` applies to file checks only\n  hint: a result check takes"),
            "{e}"
        );
        let e = err(&format!("{OK}[[check]]\nfile = \"f\"\n  tools_include = [\"Read\"]\n"));
        assert!(e.starts_with("p.toml:10:3: `tools_include` applies to request checks only"), "{e}");
        let exec = "id = \"x.y\"\nclaims = [\"GREP-1\"]\nabout = \"a\"\n[[exec]]\nargv = [\"{rg}\", \"x\"]\n[[check]]\nexec = 1\n";
        let e = err(&format!("{exec}json = [{{ pointer = \"/a\", exists = true }}]\n"));
        assert!(e.starts_with("p.toml:8:1: `json` applies to result, request, side, file and lsp checks only"), "{e}");
        let e = err(&format!("{exec}exit = 0\n[[check]]\nfile = \"f\"\nexists = true\n"));
        assert!(e.starts_with("p.toml:9:1: a file check in an exec probe\n  hint: an exec probe runs commands"), "{e}");
        assert_eq!(err(&format!("{exec}exit = 0\n")), "parsed");
    }

    #[test]
    fn a_key_that_does_not_apply_to_a_fault_kind_is_an_error_at_the_key() {
        let fault = |body: &str| err(&format!("{OK}[[fixture.fault]]\npath = \"f\"\n{body}\n"));
        let e = fault("kind = \"delete\"\ncontent = \"x\"");
        assert!(e.starts_with("p.toml:11:11: `content` does not apply to a \"delete\" fault"), "{e}");
        let e = fault("kind = \"write\"\nmode = \"0644\"");
        assert!(e.starts_with("p.toml:11:8: `mode` does not apply to a \"write\" fault"), "{e}");
        let e = fault("kind = \"explode\"");
        assert!(e.starts_with("p.toml:10:8: fixture fault kind \"explode\" is unknown"), "{e}");
        let e = fault("kind = \"chmod\"\nmode = \"999\"");
        assert!(e.starts_with("p.toml:11:8: chmod mode \"999\" is not an octal mode"), "{e}");
        let e = fault("kind = \"write\"\nat_turn = 7");
        assert!(e.starts_with("p.toml:11:11: fixture fault at_turn 7 names no main turn"), "{e}");
        let e = fault("kind = \"symlink\"");
        assert!(e.contains("needs a target"), "{e}");
        let p = parse(
            Path::new("p.toml"),
            &format!("{OK}[[fixture.fault]]\npath = \"f\"\nkind = \"chmod\"\nmode = \"0444\"\n"),
        );
        assert_eq!(
            p.map(|p| p.fixture.fault[0].op.clone()).map_err(|e| e.to_string()),
            Ok(FaultOp::Chmod { mode: 0o444 })
        );
    }

    #[test]
    fn a_fixture_dir_must_stay_under_fixtures() {
        for bad in ["/etc", "../secrets", "lsp/../../x", ""] {
            let e = err(&format!("{OK}[fixture]\ndir = {bad:?}\n"));
            assert!(
                e.starts_with(&format!("p.toml:9:7: fixture dir {bad:?} is not a relative path under fixtures/")),
                "{e}"
            );
        }
        assert_eq!(err(&format!("{OK}[fixture]\ndir = \"lsp/pyproj\"\n")), "parsed");
    }

    #[test]
    fn errors_of_top_level_keys_and_of_turns_are_placed_on_them() {
        let e = err(&OK.replace("about = \"a\"\n", "about = \"a\"\nresult = 1\n"));
        assert!(e.starts_with("p.toml:4:1: unknown field `result`"), "{e}");
        let e = err(&OK.replace("[[turn]]\ntext = \"done\"\n", "[[turn]]\n[[turn]]\ntext = \"done\"\n"));
        assert!(e.starts_with("p.toml:6:1: conversation \"main\", turn 2: a turn needs text"), "{e}");
        let e = err(&format!("{OK}[settings.sandbox]\nenabled = true\n"));
        assert!(e.starts_with("p.toml:9:1: the probe turns the Bash sandbox on"), "{e}");
    }

    #[test]
    fn a_permission_rule_is_parsed_at_load() {
        let rules = |list: &str| err(&format!("{OK}[settings.permissions]\ndeny = {list}\n"));
        let e = rules("[\"Read(a)\", \"Raed(secrets/**)\"]");
        assert!(
            e.starts_with(
                "p.toml:9:20: permissions.deny: rule \"Raed(secrets/**)\" names \"Raed\", which is not a tool"
            ),
            "{e}"
        );
        let e = rules("[\"Read(secrets/[)\"]");
        assert!(e.starts_with("p.toml:9:9: permissions.deny: rule \"Read(secrets/[)\""), "{e}");
        let e = rules("[\"Read(\"]");
        assert!(e.starts_with("p.toml:9:9: permissions.deny: permission rule \"Read(\" is not"), "{e}");
        let e = rules("[\"WebFetch(example.test)\"]");
        assert!(e.contains("a WebFetch pattern is domain:HOST"), "{e}");
        assert_eq!(rules("[\"Read(secrets/**)\", \"Bash(git push:*)\", \"mcp__fixture__echo\", \"Write\"]"), "parsed");
    }

    #[test]
    fn loading_errors_are_typed_for_callers_to_match_and_read_as_before() {
        let d = tempfile::tempdir().unwrap();
        let good = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../probes/read/window.toml")).unwrap();
        std::fs::write(d.path().join("a.toml"), &good).unwrap();
        std::fs::write(d.path().join("b.toml"), good.replace("id = \"read.window\"", "id = \"Read.Window\"")).unwrap();
        match load_all(&[d.path().to_path_buf()]) {
            Err(LoadError::DuplicateId { id, also, .. }) => {
                assert_eq!((id.as_str(), also.as_deref()), ("Read.Window", Some("read.window")))
            }
            other => panic!("{other:?}"),
        }
        std::fs::write(d.path().join("b.toml"), "id = 1\n").unwrap();
        match load_all(&[d.path().to_path_buf()]) {
            Err(LoadError::Probe(e)) => assert_eq!((e.file.ends_with("b.toml"), e.line), (true, 1), "{e}"),
            other => panic!("{other:?}"),
        }
        let gone = d.path().join("gone");
        let e = load_all(std::slice::from_ref(&gone)).unwrap_err();
        assert!(matches!(&e, LoadError::NoSuchPath(p) if *p == gone), "{e:?}");
        assert_eq!(e.to_string(), format!("{}: no such probe file or directory", gone.display()));
        let empty = tempfile::tempdir().unwrap();
        let e = load_all(&[empty.path().to_path_buf()]).unwrap_err();
        assert_eq!(e.to_string(), format!("no probe files (*.toml) under {}", empty.path().display()));
    }
}
