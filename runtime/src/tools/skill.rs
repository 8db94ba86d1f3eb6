//! The Skill tool (SKILL-1): skills are `SKILL.md` files with a front matter (`name`, `description`,
//! `disable-model-invocation`) under `<home>/.claude/skills/<dir>/` (user) and `<cwd>/.claude/skills/<dir>/`
//! (project). The first request lists them; a call answers with an acknowledgement and the skill's body
//! reaches the next request as a separate text block after the turn's tool_results.
//!
//! Measured on Claude Code 2.1.235 (`probes/claude-code/skill-*.toml`; Skill is in its default pool):
//! - The listing is a text of the first request, `The following skills are available for use with the
//!   Skill tool:\n\n- <name>: <description>` one line a skill; user skills first, then project skills,
//!   each sorted by name; the name is the skill's directory; a skill without front matter is described by
//!   its body's first line. The tool's description does not list skills.
//! - On a name clash the user skill wins: the project one is neither listed nor callable.
//! - A call: result `Launching skill: <name>` (not an error), then, in the same user message after every
//!   tool_result of the turn, a text block `Base directory for this skill: <dir>\n\n<body>`. The body is
//!   what follows the front matter less its leading blank lines; `$ARGUMENTS` is replaced by `args` (by
//!   nothing without args), or, without the placeholder, `\n\nARGUMENTS: <args>` is appended. A leading
//!   `/` in the name is dropped.
//! - The front matter's `name`, when it differs from the directory, is accepted too (the listing still
//!   shows the directory name). A skill called again gets the acknowledgement and, when its text would be
//!   the same as last time, `Skill /<name> is already loaded above; instructions unchanged.` instead of
//!   its body; when it differs (other args), [`reinvocation`]'s note, then the text again.
//! - `disable-model-invocation: true`: not listed; a call is refused with [`disabled_error`]'s text.
//! - Unknown name: `Unknown skill: <name>`, with `. Did you mean <x>?` when a name is close (the
//!   reference suggested its built-in `copy` for `nope`); empty name: `Invalid skill format: `.
//!
//! - A `SKILL.md` whose text starts with a UTF-8 byte-order mark ([`BOM_READ`], `probes/skill/bom.toml`,
//!   found by `probelab discover 2.1.238 2.1.239`): up to 2.1.238 the mark hides the front matter — the
//!   listing describes the skill by its first line trimmed as JavaScript trims (the mark goes: `---`) and
//!   the body is the whole text, mark and front matter included; from 2.1.239 the mark is dropped first
//!   and the file reads as one without it.
//! - From 2.1.290 ([`NAME_BESIDE_DIR`]) a skill whose front matter names it otherwise than its directory
//!   is listed as `- <dir> (<name>): <description>` (measured by the same probe's marked skill).
//!
//! Decisions: the built-in runtime has no built-in skills (the reference lists a dozen: dataviz, init…),
//! so its listing holds the file skills only, and there is none when no SKILL.md exists. A name is
//! "close" at an edit distance of at most [`SUGGEST_MAX_DISTANCE`]. The body's trailing newline is kept;
//! the `ARGUMENTS` line ends with one. Skills are read when listed and again when called (an edit between
//! the two is seen). Which skills were called is session-wide state ([`SkillState`]). The texts for the
//! next request wait in [`crate::session::Followups`], keyed by the call's id, and the agent loop takes
//! those of the calls its last message answered ([`crate::agent::run_loop_with`]), so a sub-agent's skill never lands in its
//! parent's conversation.

use crate::context::ToolContext;
use crate::profile::{Profile, Switch};
use crate::tool::{ToolError, ToolOutput, TypedTool};
use serde::Deserialize;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The tool's name.
pub const SKILL: &str = "Skill";
/// The file a skill directory holds (SKILL-1).
pub const SKILL_FILE: &str = "SKILL.md";
/// An unknown name gets a suggestion when a skill's name is at most this many edits away (SKILL-1).
pub const SUGGEST_MAX_DISTANCE: usize = 2;
/// The listing's first line (measured on 2.1.235).
pub const LISTING_HEADER: &str = "The following skills are available for use with the Skill tool:";

/// From 2.1.239 a `SKILL.md` that starts with a UTF-8 byte-order mark is read without it: its front
/// matter counts (before, the mark hid it). Bisected by the observatory's matrix of `skill.bom`.
pub const BOM_READ: Switch = Switch {
    name: "a SKILL.md starting with a byte-order mark is read without it",
    since: "2.1.239",
    probe: "skill.bom",
};

/// From 2.1.290 the listing shows a skill's front-matter `name` beside its directory's when the two
/// differ (`- marked (bom-named): …`; before: `- marked: …`). Found by `skill.bom`'s matrix, whose
/// marked skill is named apart from its directory.
pub const NAME_BESIDE_DIR: Switch = Switch {
    name: "the skill listing shows a front-matter name beside the directory's",
    since: "2.1.290",
    probe: "skill.bom",
};

/// JavaScript's `trim()`, which the reference's listing uses: white space and the byte-order mark.
fn js_trim(s: &str) -> &str {
    s.trim_matches(|c: char| c.is_whitespace() || c == '\u{feff}')
}

/// Where a skill was found (SKILL-1: visibility depends on the source).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// `<home>/.claude/skills`.
    User,
    /// `<cwd>/.claude/skills`.
    Project,
}

/// A discovered skill.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillFile {
    /// The directory's name: the name it is listed and called by.
    pub name: String,
    /// The front matter's `name` when it differs (also callable).
    pub alias: Option<String>,
    /// One line for the listing.
    pub description: String,
    /// `disable-model-invocation: true`.
    pub disabled: bool,
    /// The skill's directory.
    pub dir: PathBuf,
    /// The text after the front matter.
    pub body: String,
    /// Where it was found.
    pub source: Source,
}

/// Splits a SKILL.md into its front matter fields and body. Without a `---` front matter the whole text is
/// the body. The body starts after the closing `---` and the blank lines that follow it.
pub fn parse(text: &str) -> (Vec<(String, String)>, String) {
    let Some(rest) = text.strip_prefix("---\n").or_else(|| text.strip_prefix("---\r\n")) else {
        return (Vec::new(), text.to_string());
    };
    let mut fields = Vec::new();
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        let trimmed = line.trim_end();
        offset += line.len();
        if trimmed == "---" {
            let after = &rest[offset..];
            // the closing line's `\s*\n`: the run of whitespace up to its last newline goes too
            let run = after.len() - after.trim_start().len();
            let cut = after[..run].rfind('\n').map(|i| i + 1).unwrap_or(0);
            return (fields, after[cut..].to_string());
        }
        if let Some((k, v)) = trimmed.split_once(':') {
            let v = v.trim();
            let v = v
                .strip_prefix('"')
                .and_then(|v| v.strip_suffix('"'))
                .or_else(|| v.strip_prefix('\'').and_then(|v| v.strip_suffix('\'')))
                .unwrap_or(v);
            fields.push((k.trim().to_string(), v.to_string()));
        }
    }
    // no closing line: not a front matter
    (Vec::new(), text.to_string())
}

fn read_skill(dir: &Path, source: Source, profile: Profile) -> Option<SkillFile> {
    let name = dir.file_name()?.to_str()?.to_string();
    let text = std::fs::read_to_string(dir.join(SKILL_FILE)).ok()?;
    let text = match text.strip_prefix('\u{feff}') {
        Some(rest) if profile.has(&BOM_READ) => rest.to_string(),
        _ => text,
    };
    let (fields, body) = parse(&text);
    let field = |k: &str| fields.iter().find(|(key, _)| key == k).map(|(_, v)| v.clone());
    let description = field("description")
        .filter(|d| !d.is_empty())
        .or_else(|| body.lines().map(js_trim).find(|l| !l.is_empty()).map(str::to_string))
        .unwrap_or_default();
    let alias = field("name").filter(|n| !n.is_empty() && *n != name);
    let disabled = field("disable-model-invocation").is_some_and(|v| v.eq_ignore_ascii_case("true"));
    Some(SkillFile { name, alias, description, disabled, dir: dir.to_path_buf(), body, source })
}

fn skills_in(root: &Path, source: Source, profile: Profile) -> Vec<SkillFile> {
    let Ok(entries) = std::fs::read_dir(root) else {
        return Vec::new();
    };
    let mut dirs: Vec<PathBuf> = entries.filter_map(|e| e.ok()).map(|e| e.path()).filter(|p| p.is_dir()).collect();
    dirs.sort();
    dirs.iter().filter_map(|d| read_skill(d, source, profile)).collect()
}

/// Every skill of the session: user skills, then project skills not shadowed by a user skill of the same
/// name (SKILL-1: the user skill wins a clash); each group sorted by name.
pub fn discover(ctx: &ToolContext) -> Vec<SkillFile> {
    let profile = ctx.profile();
    let mut out = skills_in(&ctx.home.join(".claude").join("skills"), Source::User, profile);
    for s in skills_in(&ctx.cwd.join(".claude").join("skills"), Source::Project, profile) {
        if !out.iter().any(|o| o.name == s.name) {
            out.push(s);
        }
    }
    out
}

/// The listing of the first request, or `None` when no skill is visible; from 2.1.290
/// ([`NAME_BESIDE_DIR`]) a skill whose front matter names it otherwise than its directory is listed as
/// `- <dir> (<name>): <description>`.
pub fn listing(skills: &[SkillFile], profile: Profile) -> Option<String> {
    let named = profile.has(&NAME_BESIDE_DIR);
    let lines: Vec<String> = skills
        .iter()
        .filter(|s| !s.disabled)
        .map(|s| match &s.alias {
            Some(alias) if named => format!("- {} ({alias}): {}", s.name, s.description),
            _ => format!("- {}: {}", s.name, s.description),
        })
        .collect();
    if lines.is_empty() {
        return None;
    }
    Some(format!("{LISTING_HEADER}\n\n{}", lines.join("\n")))
}

/// The refusal of a skill with `disable-model-invocation` (measured).
pub fn disabled_error(name: &str) -> String {
    format!("Skill {name} cannot be used with Skill tool due to disable-model-invocation. Ask the user to run /{name} themselves — it cannot be invoked via the Skill tool. Do not replicate this skill's workflow by other means — it is reserved for explicit user invocation.")
}

/// The note before a skill's text when it is called again with a different text (measured).
pub fn reinvocation(name: &str) -> String {
    format!("(Re-invocation of /{name} — the skill instructions were previously loaded; the arguments or dynamic output below are new.)\n")
}

/// The body as the next request gets it: `$ARGUMENTS` replaced (by nothing without args, as measured),
/// or, without the placeholder, an `ARGUMENTS:` line appended.
pub fn expand(body: &str, args: Option<&str>) -> String {
    if body.contains("$ARGUMENTS") {
        return body.replace("$ARGUMENTS", args.unwrap_or_default());
    }
    match args.filter(|a| !a.is_empty()) {
        Some(a) => format!("{body}\n\nARGUMENTS: {a}\n"),
        None => body.to_string(),
    }
}

/// Levenshtein distance (for the suggestion of an unknown name).
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != *cb);
            cur.push(sub.min(prev[j + 1] + 1).min(cur[j] + 1));
        }
        prev = cur;
    }
    prev[b.len()]
}

/// The text of an unknown name, with a suggestion when a visible skill's name is close.
pub fn unknown(name: &str, skills: &[SkillFile]) -> String {
    let best = skills
        .iter()
        .filter(|s| !s.disabled)
        .map(|s| (distance(name, &s.name), &s.name))
        .filter(|(d, _)| *d <= SUGGEST_MAX_DISTANCE)
        .min();
    match best {
        Some((_, s)) => format!("Unknown skill: {name}. Did you mean {s}?"),
        None => format!("Unknown skill: {name}"),
    }
}

/// The skills called in this session: their directories and the text last sent for each.
#[derive(Debug, Default)]
pub struct SkillState {
    invoked: Mutex<BTreeMap<PathBuf, String>>,
}

impl SkillState {
    /// Records a call's text; returns the text sent for the previous call of the skill, if any.
    fn record(&self, dir: &Path, text: &str) -> Option<String> {
        self.invoked.lock().ok().and_then(|mut s| s.insert(dir.to_path_buf(), text.to_string()))
    }
}

/// The skill listing as an extension of the session (SKILL-1), installed when Skill is in the pool: the
/// first request carries the listing of the skills found, when there are any. (A skill's body follows
/// its call's result through the session's followups.)
#[derive(Debug, Clone, Copy, Default)]
pub struct Listing;

impl crate::pipeline::Extension for Listing {
    fn before_request(&self, rt: &crate::pipeline::Runtime, messages: &[Value]) -> Vec<String> {
        if messages.len() != 1 {
            return Vec::new();
        }
        listing(&discover(&rt.ctx), rt.ctx.profile()).into_iter().collect()
    }
}

#[derive(Debug, Deserialize)]
pub struct Args {
    skill: String,
    #[serde(default)]
    args: Option<String>,
}

/// The Skill tool (SKILL-1).
#[derive(Debug, Clone, Copy, Default)]
pub struct Skill;

/// Skill's description, as Claude Code 2.1.235 sends it.
pub const DESCRIPTION: &str = "Invoke a skill.\n\nA skill is a packaged set of instructions the user or project has set up for a particular kind of task (deploy steps, a review checklist, a repo-specific workflow). Available skills appear in a system-reminder listing with one-line descriptions. When the task at hand is one a listed skill covers, call this tool first — the skill's instructions load into the turn for you to follow in place of your default approach; some skills instead run in a subagent and return the finished result. A skill that runs in the background returns only the agent's name — its result arrives later as a task notification, so don't wait on it or invoke it again in the meantime. Users may also ask for one by name (`/<name>`, or \"slash command\"); that's a request to invoke it.\n\n- `skill`: exact name from the listing, no leading slash. Plugin skills use `plugin:skill`. Directory-scoped skills are listed with a path prefix (`apps/web:deploy`); when both scoped and unscoped variants of a name exist, pick the one whose directory contains the files you're working on (most specific wins; unscoped otherwise).\n- `args`: optional arguments to pass through.\n\nOnly names from the listing (or that the user typed explicitly) are valid. Built-in CLI commands (`/help`, `/clear`, …) aren't skills. If a `<command-name>` block is already present this turn, the skill is loaded — follow it directly rather than calling again.\n";

impl TypedTool for Skill {
    const NAME: &'static str = SKILL;
    const DESCRIPTION: &'static str = DESCRIPTION;
    type Args = Args;

    fn input_schema(&self) -> Value {
        json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "properties": {
                "skill": {"description": "The name of a skill from the available-skills list. Do not guess names.", "type": "string"},
                "args": {"description": "Optional arguments for the skill", "type": "string"}
            },
            "required": ["skill"],
            "additionalProperties": false
        })
    }

    async fn call(&self, args: Args, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let name = args.skill.trim();
        let name = name.strip_prefix('/').unwrap_or(name);
        if name.is_empty() {
            return Err(ToolError::Validation(format!("Invalid skill format: {}", args.skill)));
        }
        let skills = discover(ctx);
        let found =
            skills.iter().find(|s| s.name == name).or_else(|| skills.iter().find(|s| s.alias.as_deref() == Some(name)));
        let Some(skill) = found else {
            return Err(ToolError::Validation(unknown(name, &skills)));
        };
        if skill.disabled {
            return Err(ToolError::Validation(disabled_error(name)));
        }
        let text = format!(
            "Base directory for this skill: {}\n\n{}",
            skill.dir.display(),
            expand(&skill.body, args.args.as_deref())
        );
        let texts = match ctx.session.state::<SkillState>().record(&skill.dir, &text) {
            None => vec![text],
            Some(before) if before == text => {
                vec![format!("Skill /{name} is already loaded above; instructions unchanged.")]
            }
            Some(_) => vec![reinvocation(name), text],
        };
        if let Some(id) = &ctx.call_id {
            for t in texts {
                ctx.session.followups.push(id, t);
            }
        }
        Ok(ToolOutput::Text(format!("Launching skill: {name}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::EstimateTokens;
    use std::sync::Arc;

    fn write(root: &Path, rel: &str, text: &str) {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap_or_else(|| panic!("no parent"))).unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(p, text).unwrap_or_else(|e| panic!("{e}"));
    }

    fn ctx(dir: &Path) -> ToolContext {
        ToolContext::for_sandbox(dir, Arc::new(EstimateTokens)).unwrap_or_else(|e| panic!("{e}"))
    }

    async fn call(ctx: &ToolContext, id: &str, input: Value) -> (Result<ToolOutput, ToolError>, Vec<String>) {
        let mut c = ctx.clone();
        c.call_id = Some(id.into());
        let out = crate::tool::Tool::call(&Skill, input, &c).await;
        (out, ctx.session.followups.take_for(&[id]))
    }

    #[tokio::test]
    async fn a_byte_order_mark_hides_the_front_matter_until_2_1_239() {
        let text = "\u{feff}---\nname: bom\ndescription: A marked skill\n---\n\nBOM BODY: $ARGUMENTS\n";
        for (version, listed, body) in [
            // the mark hides the front matter: described by its first line as JavaScript trims it, the
            // whole text its body
            ("2.1.238", "- bom: ---", text.replace("$ARGUMENTS", "x")),
            ("2.1.239", "- bom: A marked skill", "BOM BODY: x\n".to_string()),
        ] {
            let d = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
            write(d.path(), "work/.claude/skills/bom/SKILL.md", text);
            let profile = Profile::at(version).unwrap_or_else(|e| panic!("{e}"));
            let c = ctx(d.path()).with_profile(profile);
            let list = listing(&discover(&c), profile).unwrap_or_else(|| panic!("no listing on {version}"));
            assert!(list.ends_with(&format!("\n\n{listed}")), "{version}: {list:?}");
            let (out, texts) = call(&c, "t1", json!({"skill": "bom", "args": "x"})).await;
            assert!(matches!(out, Ok(ToolOutput::Text(ref t)) if t == "Launching skill: bom"), "{version}: {out:?}");
            assert!(texts.len() == 1 && texts[0].ends_with(&format!("skills/bom\n\n{body}")), "{version}: {texts:?}");
        }
    }

    #[test]
    fn front_matter_and_body() {
        let (f, body) = parse("---\nname: greet\ndescription: \"Says hi\"\n---\n\n\nBODY\n\n");
        assert_eq!(f, [("name".into(), "greet".into()), ("description".into(), "Says hi".into())]);
        assert_eq!(body, "BODY\n\n");
        let (f, body) = parse("---\ndescription: x\n---\n  indented\n");
        assert_eq!(f.len(), 1);
        assert_eq!(body, "  indented\n");
        assert_eq!(parse("No front matter.\n"), (vec![], "No front matter.\n".into()));
        assert_eq!(parse("---\nunclosed: yes\n"), (vec![], "---\nunclosed: yes\n".into()));
    }

    #[test]
    fn arguments_are_substituted_or_appended() {
        assert_eq!(expand("Hello $ARGUMENTS.\n", Some("world")), "Hello world.\n");
        assert_eq!(expand("BODY\n\n", Some("a b")), "BODY\n\n\n\nARGUMENTS: a b\n");
        assert_eq!(expand("BODY\n", None), "BODY\n");
        assert_eq!(expand("BODY $ARGUMENTS\n", None), "BODY \n");
        assert_eq!(expand("BODY\n", Some("")), "BODY\n");
    }

    #[test]
    fn suggestions_only_for_close_names() {
        let s = |n: &str| SkillFile {
            name: n.into(),
            alias: None,
            description: String::new(),
            disabled: false,
            dir: PathBuf::new(),
            body: String::new(),
            source: Source::Project,
        };
        assert_eq!(unknown("nope", &[s("copy"), s("deploy")]), "Unknown skill: nope. Did you mean copy?");
        assert_eq!(unknown("zzzzzzzzzz", &[s("copy")]), "Unknown skill: zzzzzzzzzz");
    }

    #[tokio::test]
    async fn discovery_clashes_and_calls() {
        let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let ctx = ctx(tmp.path());
        write(&ctx.home, ".claude/skills/greet/SKILL.md", "---\ndescription: user greet\n---\nUSER $ARGUMENTS\n");
        write(&ctx.cwd, ".claude/skills/greet/SKILL.md", "---\ndescription: project greet\n---\nPROJECT\n");
        write(&ctx.cwd, ".claude/skills/alpha/SKILL.md", "First line\nsecond\n");
        write(&ctx.cwd, ".claude/skills/hidden/SKILL.md", "---\ndisable-model-invocation: true\n---\nH\n");
        write(&ctx.cwd, ".claude/skills/dir/SKILL.md", "---\nname: other\ndescription: d\n---\nD\n");
        let skills = discover(&ctx);
        assert_eq!(
            listing(&skills, Profile::reference()).as_deref(),
            Some("The following skills are available for use with the Skill tool:\n\n- greet: user greet\n- alpha: First line\n- dir: d")
        );
        // from 2.1.290 the front matter's name beside the directory's
        for (version, line) in [("2.1.289", "- dir: d"), ("2.1.290", "- dir (other): d")] {
            let at = Profile::at(version).unwrap_or_else(|e| panic!("{e}"));
            let list = listing(&skills, at).unwrap_or_default();
            assert!(list.ends_with(&format!("\n- {}", &line[2..])), "{version}: {list}");
        }
        let (out, follow) = call(&ctx, "t1", json!({"skill": "greet", "args": "you"})).await;
        assert_eq!(out, Ok(ToolOutput::Text("Launching skill: greet".into())));
        let dir = ctx.home.join(".claude/skills/greet");
        assert_eq!(follow, [format!("Base directory for this skill: {}\n\nUSER you\n", dir.display())]);
        let (_, follow) = call(&ctx, "t2", json!({"skill": "/greet", "args": "you"})).await;
        assert_eq!(follow, ["Skill /greet is already loaded above; instructions unchanged."]);
        let (_, follow) = call(&ctx, "t2b", json!({"skill": "greet"})).await;
        assert_eq!(
            follow,
            [reinvocation("greet"), format!("Base directory for this skill: {}\n\nUSER \n", dir.display())]
        );
        let (out, _) = call(&ctx, "t3", json!({"skill": "other"})).await;
        assert_eq!(out, Ok(ToolOutput::Text("Launching skill: other".into())));
        let (out, follow) = call(&ctx, "t4", json!({"skill": "hidden"})).await;
        assert_eq!(out, Err(ToolError::Validation(disabled_error("hidden"))));
        assert!(follow.is_empty());
        let (out, _) = call(&ctx, "t5", json!({"skill": ""})).await;
        assert_eq!(out, Err(ToolError::Validation("Invalid skill format: ".into())));
        let (out, _) = call(&ctx, "t6", json!({"skill": "grete"})).await;
        assert_eq!(out, Err(ToolError::Validation("Unknown skill: grete. Did you mean greet?".into())));
    }
}
