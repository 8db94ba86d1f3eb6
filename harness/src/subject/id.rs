//! A subject's id, parsed once: its kind (the module that runs it), its name (what a probe's `subjects`
//! and the golden directory say) and its version (`claude-code@2.1.235`). Everything that asks "which
//! subject is this" asks the id, never the string again. A string becomes an id only through
//! [`crate::subject::Registry::parse`], which knows the subjects there are (the registered kinds and the
//! project's command subjects) and refuses any other.

/// The kind of the built-in runtime (also its name).
pub const BUILTIN: &str = "builtin";
/// The kind of the Claude Code binary (also its name; its ids carry a version).
pub const CLAUDE_CODE: &str = "claude-code";

/// How a golden file's header names the subject it was made with (insta's `description`): `subject
/// claude-code 2.1.235, binary sha256 <hex>` for a binary, `subject builtin 0.1.0, embedded` for the
/// lab's own runtime. A subject describes itself with it ([`super::api::Subject::description`]); the
/// golden writer only records what it is given (`crate::transcript::golden::description` is this).
pub fn describe(subject: &str, version: &str, sha256: Option<&str>) -> String {
    match sha256 {
        Some(h) => format!("subject {subject} {version}, binary sha256 {h}"),
        None => format!("subject {subject} {version}, embedded"),
    }
}
/// The kinds of subject: which module runs one. A string becomes a kind only by parsing a subject
/// ([`crate::subject::Registry::parse`]); after that, code asks the kind, never the name again.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SubjectKind {
    /// The built-in runtime (`builtin`, `builtin@V`: [`super::builtin`]).
    Builtin,
    /// The Claude Code binary, by version ([`super::claude_code`]).
    ClaudeCode,
    /// A third-party agent registered by version (`opencode@V`, `pi@V`): [`super::agent`], named by its
    /// spec (a registered agent is a module and a line in [`super::REGISTERED`], no variant of its own).
    Agent(&'static str),
    /// A command subject declared in `probelab.toml` (`[subjects.NAME]`: [`super::command`]).
    Command,
}

impl SubjectKind {
    /// How probes, goldens and the command line name the kind (`builtin`, `claude-code`, `opencode`;
    /// `command` for the project's command subjects, which go by their own names).
    pub const fn name(self) -> &'static str {
        match self {
            SubjectKind::Builtin => BUILTIN,
            SubjectKind::ClaudeCode => CLAUDE_CODE,
            SubjectKind::Agent(name) => name,
            SubjectKind::Command => "command",
        }
    }
}

impl std::fmt::Display for SubjectKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The version measured in the reference notes, which the built-in runtime was first written after: the
/// texts command subjects of Claude Code's dialect are held to, and the real binary `cargo test` runs
/// (a bare built-in subject is held to the newest release instead: [`SubjectId::reference_version`]).
pub const REFERENCE_VERSION: &str = "2.1.235";
/// [`REFERENCE_VERSION`] as a version (a test holds the two to one another).
pub const REFERENCE: Version = Version::new(2, 1, 235);

/// A subject's version: the one type of the runtime and the lab (semver's, `probelab_runtime::profile`),
/// parsed once, when the id is.
pub use probelab_runtime::profile::Version;

/// One subject, parsed.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SubjectId {
    /// The module that runs it.
    pub kind: SubjectKind,
    /// What probes name it by (`builtin`, `claude-code`, `my-agent`).
    pub name: String,
    /// Its version, for a kind installed by version (`2.1.235`).
    pub version: Option<Version>,
    /// The subject whose probes this one runs as well, because it speaks its tools (`claude-code`: a
    /// command subject of Claude Code's dialect).
    pub dialect: Option<String>,
}

impl SubjectId {
    /// The built-in runtime.
    pub fn builtin() -> SubjectId {
        SubjectId { kind: SubjectKind::Builtin, name: BUILTIN.into(), version: None, dialect: None }
    }

    /// Claude Code at `version`.
    pub fn claude_code(version: Version) -> SubjectId {
        SubjectId { kind: SubjectKind::ClaudeCode, name: CLAUDE_CODE.into(), version: Some(version), dialect: None }
    }

    /// Claude Code at the reference version ([`REFERENCE`]).
    pub fn reference() -> SubjectId {
        SubjectId::claude_code(REFERENCE)
    }

    /// A command subject.
    pub fn command(name: &str, dialect: Option<&str>) -> SubjectId {
        SubjectId { kind: SubjectKind::Command, name: name.into(), version: None, dialect: dialect.map(str::to_string) }
    }

    /// Parses `builtin` or `claude-code@VERSION` (the kinds every project has); None for any other.
    pub fn parse_registered(s: &str) -> Option<SubjectId> {
        if s == BUILTIN {
            return Some(SubjectId::builtin());
        }
        if let Some(v) = s.strip_prefix(BUILTIN).and_then(|r| r.strip_prefix('@')) {
            return Version::parse(v).ok().map(|v| SubjectId { version: Some(v), ..SubjectId::builtin() });
        }
        let v = s.strip_prefix(CLAUDE_CODE)?.strip_prefix('@')?;
        Version::parse(v).ok().map(SubjectId::claude_code)
    }

    /// The built-in runtime?
    pub fn is_builtin(&self) -> bool {
        self.kind == SubjectKind::Builtin
    }

    /// Whether a probe's `subjects` entry `name` reaches this subject: its own name, or its dialect's.
    pub fn answers_to(&self, name: &str) -> bool {
        self.name == name || self.dialect.as_deref() == Some(name)
    }

    /// The Claude Code version whose texts the probe's checks are held to on this subject (a check's
    /// `versions` scope): its own for Claude Code and a versioned built-in (`builtin@2.1.280` behaves as
    /// that release), the newest measured release for a bare `builtin` (`profile::NEWEST`, the profile it
    /// runs at), the reference for every other subject.
    pub fn reference_version(&self) -> Version {
        match (&self.version, self.kind) {
            (Some(v), SubjectKind::ClaudeCode | SubjectKind::Builtin) => v.clone(),
            (None, SubjectKind::Builtin) => probelab_runtime::profile::Profile::newest().release(),
            _ => REFERENCE,
        }
    }
}

/// The name of Claude Code at `version` — of its golden directory (`golden/claude-code@2.1.235`), its
/// cells' subject, its id printed: the one place it is spelled from a version.
pub fn claude_code_name(version: &dyn std::fmt::Display) -> String {
    format!("{CLAUDE_CODE}@{version}")
}

impl std::fmt::Display for SubjectId {
    /// `builtin`, `claude-code@2.1.235`, `my-agent`: also the golden directory's name.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.version {
            Some(v) => write!(f, "{}@{v}", self.name),
            None => f.write_str(&self.name),
        }
    }
}

/// A name a command subject can have: lower-case letters, digits, `-` and `_`, starting with a letter,
/// and not a registered kind's name (it names a golden directory and is written in probes' `subjects`).
pub fn valid_name(name: &str) -> bool {
    name.chars().next().is_some_and(|c| c.is_ascii_lowercase())
        && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '-' | '_'))
        && name != BUILTIN
        && name != CLAUDE_CODE
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registered_subjects_parse_and_print_back() {
        assert_eq!(REFERENCE.to_string(), REFERENCE_VERSION);
        for s in ["builtin", "claude-code@2.1.235", "claude-code@2.2.0-beta.1"] {
            assert_eq!(SubjectId::parse_registered(s).map(|id| id.to_string()), Some(s.to_string()));
        }
        for s in [
            "claude-code@../x",
            "claude-code@",
            "claude-code",
            "claude-codex@1",
            "myruntime",
            "builtin@",
            "builtin@../x",
            "claude-code@2.1",
            "claude-code@2.1.x",
            "builtin@v2.1.3",
        ] {
            assert_eq!(SubjectId::parse_registered(s), None, "{s}");
        }
        let cc = SubjectId::parse_registered("claude-code@2.1.332");
        assert_eq!(cc.as_ref().map(|c| c.reference_version()), Some(Version::new(2, 1, 332)));
        assert_eq!(SubjectId::builtin().reference_version().to_string(), probelab_runtime::profile::NEWEST);
        assert_eq!(SubjectId::command("my-agent", Some("claude-code")).reference_version(), REFERENCE);
        let b = SubjectId::parse_registered("builtin@2.1.280");
        assert_eq!(
            b.as_ref().map(|b| (b.is_builtin(), b.to_string(), b.reference_version())),
            Some((true, "builtin@2.1.280".to_string(), Version::new(2, 1, 280)))
        );
    }

    #[test]
    fn a_command_subject_answers_to_its_name_and_its_dialect() {
        let c = SubjectId::command("my-agent", Some("claude-code"));
        assert!(c.answers_to("my-agent") && c.answers_to("claude-code") && !c.answers_to("builtin"));
        assert!(!SubjectId::command("x", None).answers_to("claude-code"));
        assert!(valid_name("my-agent") && !valid_name("builtin") && !valid_name("My") && !valid_name("a/b"));
    }
}
