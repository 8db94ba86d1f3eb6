//! TodoWrite: the session's todo list, whole each time (TODO-1). Display state, not proof of work:
//! nothing is written to disk, the list lives as long as the session, and the call's structured record
//! (the session log's `toolUseResult`) holds the old and the new list. TodoWrite and the Task* family
//! are exclusive: [`crate::builtin::pool`] offers TodoWrite only with
//! `CLAUDE_CODE_ENABLE_TODO_TOOLS=1` and `CLAUDE_CODE_ENABLE_TASKS=0`.
//!
//! Measured on Claude Code 2.1.235 (`probes/tasks/todo-write.toml`, run on both subjects) and copied:
//! the schema and description, the one result text for every accepted list, `{oldTodos, newTodos}` as
//! the record, a list whose items are all `completed` leaving an empty list behind (the next call's
//! `oldTodos` is `[]`), and the validation texts (zod issues as JSON: `Content cannot be empty`,
//! `Active form cannot be empty`, the status enum). The reference enforces neither "at most 20 items"
//! nor "one in_progress" (TODO-1's 004 half): 21 items and two in_progress items are accepted; so are
//! they here (the probe states the divergence). Decided here: an item of the wrong type and unknown item
//! keys get zod's `invalid_type` / `unrecognized_keys` issues in the same shape (not measured).

use crate::context::ToolContext;
use crate::session::Session;
use crate::tool::{ToolError, ToolOutput, TypedTool};
use crate::validation;
use serde_json::{json, Value};
use std::sync::{Arc, Mutex, Weak};

/// The statuses of a todo item (TODO-1).
pub const TODO_STATUSES: &[&str] = &["pending", "in_progress", "completed"];

/// The result text of every accepted call (TODO-1, measured on Claude Code 2.1.235).
pub const TODO_RESULT: &str = "Todos have been modified successfully. Ensure that you continue to use the todo list to track your progress. Please proceed with the current tasks if applicable";

/// TodoWrite's description, as Claude Code 2.1.235 sends it (measured).
const TODO_DESCRIPTION: &str = r##"Create and update a task list for the current session. The list is rendered to the user as your working plan.

- Each todo has `content`, `status` ("pending" | "in_progress" | "completed"), and `activeForm` (present-tense label shown while in progress).
- Send the full list each call; it replaces the previous one.
- Keep one item `in_progress` at a time and mark it `completed` when done."##;

/// TodoWrite's input schema, as Claude Code 2.1.235 sends it (measured).
const TODO_SCHEMA: &str = r##"{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "properties": {
    "todos": {
      "description": "The updated todo list",
      "type": "array",
      "items": {
        "type": "object",
        "properties": {
          "content": {
            "type": "string",
            "minLength": 1
          },
          "status": {
            "type": "string",
            "enum": [
              "pending",
              "in_progress",
              "completed"
            ]
          },
          "activeForm": {
            "type": "string",
            "minLength": 1
          }
        },
        "required": [
          "content",
          "status",
          "activeForm"
        ],
        "additionalProperties": false
      }
    }
  },
  "required": [
    "todos"
  ],
  "additionalProperties": false
}"##;

/// The lists of the live sessions, keyed by their [`Session`] (a dead session's entry is dropped).
type Lists = Vec<(Weak<Session>, Vec<Value>)>;
static LISTS: Mutex<Lists> = Mutex::new(Vec::new());

/// Stores `new` as the session's list and returns the one it replaces; a list whose items are all
/// completed is stored as empty (TODO-1, as the reference).
pub fn swap_list(session: &Arc<Session>, new: &[Value]) -> Vec<Value> {
    let all_done = new.iter().all(|t| t.get("status").and_then(Value::as_str) == Some("completed"));
    let keep = if all_done { Vec::new() } else { new.to_vec() };
    let mut lists = LISTS.lock().unwrap_or_else(|e| e.into_inner());
    lists.retain(|(w, _)| w.strong_count() > 0);
    let me = Arc::downgrade(session);
    match lists.iter_mut().find(|(w, _)| w.ptr_eq(&me)) {
        Some((_, list)) => std::mem::replace(list, keep),
        None => {
            lists.push((me, keep));
            Vec::new()
        }
    }
}

/// The zod issues of a todo list (empty = valid), in the reference's order: per item, per field.
pub fn issues(todos: &[Value]) -> Vec<Value> {
    let mut out = Vec::new();
    for (i, item) in todos.iter().enumerate() {
        let Some(obj) = item.as_object() else {
            out.push(validation::invalid_type(json!(["todos", i]), "object", Some(item)));
            continue;
        };
        for (field, empty) in
            [("content", "Content cannot be empty"), ("status", ""), ("activeForm", "Active form cannot be empty")]
        {
            let path = json!(["todos", i, field]);
            match obj.get(field) {
                Some(Value::String(s)) if field == "status" => {
                    if !TODO_STATUSES.contains(&s.as_str()) {
                        let message = validation::invalid_value_message(TODO_STATUSES);
                        out.push(validation::invalid_value(path, json!(TODO_STATUSES), &message));
                    }
                }
                Some(Value::String(s)) => {
                    if s.is_empty() {
                        out.push(validation::too_small("string", 1, true, path, Some(empty)));
                    }
                }
                other => out.push(validation::invalid_type(path, "string", other)),
            }
        }
        let unknown: Vec<&String> =
            obj.keys().filter(|k| !["content", "status", "activeForm"].contains(&k.as_str())).collect();
        if !unknown.is_empty() {
            out.push(validation::unrecognized_keys(json!(["todos", i]), &unknown));
        }
    }
    out
}

/// The TodoWrite tool (TODO-1).
#[derive(Debug, Default)]
pub struct TodoWrite;

impl TypedTool for TodoWrite {
    const NAME: &'static str = "TodoWrite";
    const DESCRIPTION: &'static str = TODO_DESCRIPTION;
    type Args = Value;

    fn input_schema(&self) -> Value {
        serde_json::from_str(TODO_SCHEMA).unwrap_or(Value::Null)
    }

    async fn call(&self, input: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let Some(todos) = input.get("todos").and_then(Value::as_array) else {
            let issue = validation::invalid_type(json!(["todos"]), "array", None);
            return Err(ToolError::Validation(validation::issues_error(&[issue])));
        };
        let found = issues(todos);
        if !found.is_empty() {
            return Err(ToolError::Validation(validation::issues_error(&found)));
        }
        let old = swap_list(&ctx.session, todos);
        Ok(ToolOutput::Data { text: TODO_RESULT.into(), data: json!({"oldTodos": old, "newTodos": todos}) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn old_list_per_session_and_all_completed_clears() {
        let (a, b) = (Arc::new(Session::default()), Arc::new(Session::default()));
        let l1 = vec![json!({"content": "x", "status": "pending", "activeForm": "X"})];
        let done = vec![json!({"content": "x", "status": "completed", "activeForm": "X"})];
        assert_eq!(swap_list(&a, &l1), Vec::<Value>::new());
        assert_eq!(swap_list(&b, &done), Vec::<Value>::new(), "another session, another list");
        assert_eq!(swap_list(&a, &done), l1);
        assert_eq!(swap_list(&a, &l1), Vec::<Value>::new(), "all completed left an empty list");
    }

    #[test]
    fn issues_in_zod_shape() {
        assert!(issues(&[json!({"content": "a", "status": "pending", "activeForm": "A"})]).is_empty());
        let found = issues(&[json!({"content": "", "status": "x", "extra": 1}), json!(3)]);
        let codes: Vec<&str> = found.iter().filter_map(|i| i.get("code").and_then(Value::as_str)).collect();
        assert_eq!(codes, ["too_small", "invalid_value", "invalid_type", "unrecognized_keys", "invalid_type"]);
        assert_eq!(found[2].get("message"), Some(&json!("Invalid input: expected string, received undefined")));
    }
}
