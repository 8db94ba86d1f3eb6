//! The keys the probe parser takes, table by table, read off the parser's own types: serde's derive
//! hands every struct's field names to the deserializer ([`serde::Deserializer::deserialize_struct`]),
//! and [`fields_of`] is a deserializer that only listens for them. `docs/probe-format.md` names exactly
//! these keys (a test in this module compares them), so the format's documentation cannot drift from
//! the parser: a key added to a struct and not documented, or documented and not parsed, fails it.

use serde::de::{self, Deserialize, Visitor};

/// One table of the probe format: the heading it has in `docs/probe-format.md` and the keys the
/// parser takes in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Table {
    /// The table as a probe writes it (`[[check]]`, `[fixture]`, `tool_use = [{ … }]`).
    pub heading: &'static str,
    /// The keys the parser takes, in declaration order.
    pub keys: &'static [&'static str],
}

/// The field names serde's derive declares for `T` (empty for a type that is not a plain struct:
/// untagged or internally tagged enums, maps).
pub fn fields_of<'de, T: Deserialize<'de>>() -> &'static [&'static str] {
    let mut seen: &'static [&'static str] = &[];
    let _ = T::deserialize(Listen { seen: &mut seen });
    seen
}

/// Every table of the probe format. (`probelab.toml`, the project file the doc describes too, is the
/// project's own type: the doc test below adds its table, so this lowest layer of the lab names no
/// project.)
pub fn tables() -> Vec<Table> {
    use probelab_runtime::config as rc;
    use probelab_runtime::settings as rs;
    use stub_messages::script as ss;
    let t = |heading, keys| Table { heading, keys };
    vec![
        t("probe file (top level)", fields_of::<super::ProbeFile>()),
        t("[fixture]", fields_of::<super::RawFixture>()),
        t("[[fixture.fault]]", fields_of::<super::RawFault>()),
        t("[settings]", fields_of::<rs::Settings>()),
        t("[settings.permissions]", fields_of::<rs::PermissionSettings>()),
        t("[settings.sandbox]", fields_of::<rs::SandboxSettings>()),
        t("[[settings.hooks.EVENT]]", fields_of::<rs::HookGroup>()),
        t("hooks = [{ … }]", fields_of::<rs::HookCommand>()),
        t("[subject]", fields_of::<super::SubjectOptions>()),
        t("[subject.builtin]", fields_of::<super::BuiltinOptions>()),
        t("[subject.claude-code]", fields_of::<super::ClaudeCodeOptions>()),
        t("[subject.agent.NAME]", fields_of::<super::AgentOptions>()),
        t("[host]", fields_of::<rc::HostScript>()),
        t("ask = [{ … }]", fields_of::<rc::AskReply>()),
        t("plan = [{ … }]", fields_of::<rc::PlanReply>()),
        t("[clock]", fields_of::<rc::ClockSpec>()),
        t("[mcp_servers.NAME]", fields_of::<rc::ServerSpec>()),
        t("[[plugin]]", fields_of::<rc::PluginSpec>()),
        t("lspServers.NAME = { … }", fields_of::<rc::LspServerSpec>()),
        t("[web]", fields_of::<super::web::WebSpec>()),
        t("[web.pages.\"KEY\"]", fields_of::<super::web::Page>()),
        t("[limits]", fields_of::<crate::limits::LimitsSpec>()),
        t("[[turn]]", fields_of::<ss::Turn>()),
        t("tool_use = [{ … }]", fields_of::<ss::ToolUseSpec>()),
        t("usage = { … }", fields_of::<ss::UsageSpec>()),
        t("wait = { … }", fields_of::<ss::Wait>()),
        t("[[conversation]]", fields_of::<ss::Conversation>()),
        t("select = { … }", fields_of::<ss::Selector>()),
        t("[stub]", fields_of::<ss::StubSettings>()),
        t("search_results = [{ … }]", fields_of::<ss::SearchResult>()),
        t("[[exec]]", fields_of::<super::ExecSpec>()),
        t("[[check]]", fields_of::<super::RawCheck>()),
        t("json = [{ … }]", fields_of::<super::JsonCheck>()),
        t("diverges = [{ … }]", fields_of::<super::Divergence>()),
    ]
}

/// A deserializer that records the field names of the struct asked for and fails.
struct Listen<'a> {
    seen: &'a mut &'static [&'static str],
}

impl<'de> de::Deserializer<'de> for Listen<'_> {
    type Error = de::value::Error;

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
        Err(de::Error::custom("only listening"))
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        _: V,
    ) -> Result<V::Value, Self::Error> {
        *self.seen = fields;
        Err(de::Error::custom("only listening"))
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf option unit
        unit_struct newtype_struct seq tuple tuple_struct map enum identifier ignored_any
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::{BTreeMap, BTreeSet};
    use std::path::Path;

    /// The tables `docs/probe-format.md` documents: `probelab.toml`'s, then the probe format's.
    fn documented_tables() -> Vec<Table> {
        let project = Table { heading: "probelab.toml", keys: fields_of::<crate::project::ProjectFile>() };
        let subjects = Table { heading: "[subjects.NAME]", keys: fields_of::<crate::subject::command::RawCommand>() };
        [project, subjects].into_iter().chain(tables()).collect()
    }

    fn doc() -> String {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/probe-format.md");
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    /// The doc's key tables: a `### <heading>` line, then rows `| \`key\` | … |`.
    fn doc_tables(doc: &str) -> BTreeMap<String, BTreeSet<String>> {
        let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        let mut current: Option<String> = None;
        for line in doc.lines() {
            if let Some(h) = line.strip_prefix("### ") {
                current = h.strip_prefix('`').and_then(|h| h.split_once('`')).map(|(h, _)| h.to_string());
                if let Some(c) = &current {
                    out.entry(c.clone()).or_default();
                }
            } else if let (Some(c), Some(row)) = (&current, line.strip_prefix("| `")) {
                if let Some((key, _)) = row.split_once('`') {
                    out.entry(c.clone()).or_default().insert(key.to_string());
                }
            }
        }
        out
    }

    #[test]
    fn every_key_of_a_check_is_a_target_an_assertion_of_one_or_a_note() {
        let mut named: Vec<&str> = super::super::checks::all_keys().collect();
        named.sort_unstable();
        let mut fields = fields_of::<super::super::RawCheck>().to_vec();
        fields.sort_unstable();
        assert_eq!(named, fields, "checks::TARGETS, TEXT_KEYS and NOTE_KEYS name exactly RawCheck's keys");
    }

    #[test]
    fn the_listener_reads_a_structs_fields() {
        assert_eq!(fields_of::<super::super::JsonCheck>(), &["pointer", "equals", "exists"]);
        assert!(fields_of::<super::super::FileSpec>().is_empty(), "an untagged enum has no field list");
        for t in documented_tables() {
            assert!(!t.keys.is_empty(), "{}: the parser's type declares no fields (not a plain struct?)", t.heading);
        }
    }

    #[test]
    fn probe_format_doc_names_exactly_the_keys_the_parser_takes() {
        let documented = doc_tables(&doc());
        let mut problems = Vec::new();
        for t in documented_tables() {
            let parsed: BTreeSet<String> = t.keys.iter().map(|k| k.to_string()).collect();
            let Some(named) = documented.get(t.heading) else {
                problems.push(format!("docs/probe-format.md has no table `### \\`{}\\``", t.heading));
                continue;
            };
            for k in parsed.difference(named) {
                problems.push(format!("{}: the parser takes `{k}`, the doc does not name it", t.heading));
            }
            for k in named.difference(&parsed) {
                problems.push(format!("{}: the doc names `{k}`, the parser does not take it", t.heading));
            }
        }
        let headings: BTreeSet<&str> = documented_tables().iter().map(|t| t.heading).collect();
        for h in documented.keys().filter(|h| !headings.contains(h.as_str())) {
            problems.push(format!("docs/probe-format.md documents a table `{h}` the parser does not have"));
        }
        assert!(problems.is_empty(), "docs/probe-format.md and the parser disagree:\n{}", problems.join("\n"));
    }

    #[test]
    fn every_probe_example_in_the_doc_parses() {
        let doc = doc();
        let mut n = 0;
        let mut rest = doc.as_str();
        while let Some(start) = rest.find("```toml probe\n") {
            let body_start = start + "```toml probe\n".len();
            let Some(len) = rest[body_start..].find("```") else { break };
            let body = &rest[body_start..body_start + len];
            n += 1;
            let name = format!("docs/probe-format.md example {n}");
            if let Err(e) = super::super::parse(Path::new(&name), body) {
                panic!("{name} does not parse:\n{e}\n---\n{body}");
            }
            rest = &rest[body_start + len..];
        }
        assert!(n >= 3, "the doc's ```toml probe examples: {n}");
    }
}
