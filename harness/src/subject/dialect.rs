//! Tool dialects: how a probe written in Claude Code's tools is put to an agent whose tools have other
//! names and inputs, declared as data — one file per agent, `harness/dialects/<agent>.toml`:
//!
//! ```toml
//! agent = "pi"
//! [tools.Edit]                       # the Claude Code tool a probe calls
//! name = "edit"                      # the agent's tool
//! input = { file_path = "path", old_string = "edits.0.oldText", new_string = "edits.0.newText" }
//! drop = ["description"]             # properties left out (they change nothing a check sees)
//! ```
//!
//! A dotted target builds nested values (`edits.0.oldText` → `{"edits": [{"oldText": …}]}`). A call whose
//! tool is not listed, or that sets a property neither mapped nor dropped, cannot be put to the agent:
//! the probe is n/a there, with that reason ([`Dialect::unsupported`]). The stub serves the probe's
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
    /// Claude Code's input property → the agent's (a dotted path).
    #[serde(default)]
    pub input: BTreeMap<String, String>,
    /// Claude Code's properties left out.
    #[serde(default)]
    pub drop: Vec<String>,
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

impl Dialect {
    /// Parses a dialect file; errors name `origin:line:col`.
    pub fn parse(origin: &str, text: &str) -> Result<Dialect, String> {
        let d: Dialect = toml::from_str(text).map_err(|e| {
            let at = e.span().map(|s| stub_messages::script::line_col(text, s.start));
            match at {
                Some((l, c)) => format!("{origin}:{l}:{c}: {}", e.message().trim_end()),
                None => format!("{origin}: {}", e.message().trim_end()),
            }
        })?;
        for (cc, t) in &d.tools {
            for target in t.input.values() {
                if target.is_empty() || target.split('.').any(str::is_empty) {
                    return Err(format!("{origin}: tools.{cc}: {target:?} is not a property path (a.b.0.c)"));
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
        let mut out = Value::Object(Default::default());
        if let Some(fields) = input.as_object() {
            for (k, v) in fields {
                if t.drop.contains(k) {
                    continue;
                }
                let Some(path) = t.input.get(k) else {
                    return Err(format!("{name}'s input {k:?} has no counterpart in {}'s {}", self.agent, t.name));
                };
                set_path(&mut out, path, v.clone());
            }
        }
        Ok((t.name.clone(), out))
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
            let targets: Vec<&str> = t.input.values().map(|p| p.split('.').next().unwrap_or(p)).collect();
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

/// The schema of the property at `path` in an object schema (array indices step into `items`).
fn schema_at<'a>(schema: &'a Value, path: &str) -> Option<&'a Value> {
    let mut cur = schema;
    for part in path.split('.') {
        cur = if part.parse::<usize>().is_ok() { cur.get("items")? } else { cur.get("properties")?.get(part)? };
    }
    Some(cur)
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
        assert_eq!(oc.call("Task", &json!({})), Err("Task has no counterpart among opencode's tools".into()));
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
}
