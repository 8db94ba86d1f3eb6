//! TaskCreate / TaskGet / TaskList / TaskUpdate: the session's task list on disk (TASK-1..5). Not the
//! background tasks of Bash ([`crate::background`]). This module holds the four tools; `store` the
//! files on disk, `texts` the reference's descriptions, schemas and result texts.
//!
//! One JSON file per task, `$HOME/.claude/tasks/<list id>/<id>.json`, where the list id is
//! `CLAUDE_CODE_TASK_LIST_ID` or else the session id (both with every character outside `[A-Za-z0-9_-]`
//! replaced by `-`, like the task id in the file name). Measured on Claude Code 2.1.235
//! (`probes/tasks/basics.toml` runs on both subjects; `probes/claude-code/tasks-*.toml`) and copied here:
//! - files: 2-space JSON, no trailing newline, fields in the order id, subject, description,
//!   \[activeForm\], \[owner\], status, blocks, blockedBy, \[metadata\]; an empty `.lock` beside them from the
//!   first create; ids count up from the highest of the files and `.highwatermark`, which a delete
//!   writes (so a deleted id is never reused). A write merges the patch into the task as read: a field
//!   the task did not have is appended at the end of the file, and the next write puts it in place.
//! - texts: `Task #1 created successfully: <subject>`; TaskGet `Task #1: …\nStatus: …\nDescription: …`
//!   plus `Blocked by: #2, #3` / `Blocks: …`, or `Task not found`; TaskList `#1 [pending] <subject>`
//!   plus ` (<owner>)` and ` [blocked by #2]` (open blockers only: a completed blocker no longer
//!   blocks — TASK-5's "completing a task unblocks its dependents" is this view; the files keep the
//!   edge), or `No tasks found`; TaskUpdate `Updated task #1 <fields>`, the changed fields in the
//!   order subject, description, activeForm, owner, metadata, status, blocks, blockedBy (an unchanged
//!   value is not listed; nothing changed leaves `Updated task #1 ` with its trailing space), or
//!   `Updated task #1 deleted`; an unknown id is `Task not found`. None of these is an error.
//! - TaskUpdate (TASK-3) reads the old task, runs the TaskCompleted hooks when the status becomes
//!   completed (an exit 2 blocks the whole update: the result is `TaskCompleted hook feedback:\n[<command>]:
//!   <stderr>`, not an error, and nothing is written), writes the main-field patch in one write, then
//!   each new edge one by one — an edge reads both tasks, skips silently when either is missing (the
//!   field is still listed as updated, as on the reference), writes the blocker's `blocks`, then the
//!   blocked task's `blockedBy` (both ways: TASK-5). Nothing is rolled back. `deleted` removes the file
//!   and the id from every other task's edges. No transition order is enforced (TASK-4).
//!
//! Decisions where the reference differs or is silent:
//! - A write that fails mid-update is an `is_error` result naming what was written and what was not
//!   (main fields, each edge and each side of a one-sided edge) and the OS error, Node-style
//!   (`EPERM: operation not permitted, open '<path>'`). The reference returns the bare OS error.
//! - A task file that exists but cannot be read (a directory, no permission) is an error of the call
//!   (of the edge, inside TaskUpdate); the reference logs it and treats the task as missing, so a
//!   broken task file silently drops the edge. A file that is not a valid task (bad JSON, wrong
//!   fields) is a missing task on both. TaskList skips unreadable files on both.
//! - TaskCreated hooks, teammates (owner assignment messages, the auto-owner of agent teams) and the
//!   reference's v5 storage backend are not implemented. `metadata` keys set to `null` are deleted.
//! - Calls of the list are serialised by a process-wide lock (the reference uses lock files).

mod store;
mod texts;

use crate::context::ToolContext;
use crate::profile::Switch;
use crate::tool::{ToolError, ToolOutput, TypedTool};
use crate::validation;
use serde_json::{json, Map, Value};
use store::{
    add_edge, create_task, delete_task, ids, list_dir, list_tasks, lock, patch_task, read_task, text, Edge, Task,
    DELETED, STATUSES,
};
use texts::{
    get_text, list_snapshots, list_text, partial_text, schema, updated_text, CREATE_DESCRIPTION, CREATE_SCHEMA,
    GET_DESCRIPTION, GET_SCHEMA, LIST_DESCRIPTION, LIST_SCHEMA, UPDATE_DESCRIPTION, UPDATE_SCHEMA,
};

/// From Claude Code 2.1.332 TaskGet's `Blocked by` leaves out completed blockers, as TaskList does.
pub const GET_HIDES_DONE_BLOCKERS: Switch = Switch {
    name: "tasks: TaskGet leaves completed blockers out of Blocked by",
    since: "2.1.332",
    probe: "tasks.basics",
};

/// The hook event run before a task enters `completed` (TASK-4).
pub const TASK_COMPLETED_EVENT: &str = "TaskCompleted";

/// The TaskCreate tool (TASK-1).
#[derive(Debug, Default)]
pub struct TaskCreate;

#[derive(Debug, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateArgs {
    subject: String,
    description: String,
    #[serde(default)]
    active_form: Option<String>,
    #[serde(default)]
    metadata: Option<Map<String, Value>>,
}

impl TypedTool for TaskCreate {
    const NAME: &'static str = "TaskCreate";
    const DESCRIPTION: &'static str = CREATE_DESCRIPTION;
    const ARGS_ERROR_PREFIX: &'static str = validation::PREFIX;
    type Args = CreateArgs;

    fn input_schema(&self) -> Value {
        schema(CREATE_SCHEMA)
    }

    async fn call(&self, a: CreateArgs, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let mut fields = Task::new();
        fields.insert("subject".into(), json!(a.subject));
        fields.insert("description".into(), json!(a.description));
        if let Some(f) = a.active_form {
            fields.insert("activeForm".into(), json!(f));
        }
        fields.insert("status".into(), json!("pending"));
        fields.insert("blocks".into(), json!([]));
        fields.insert("blockedBy".into(), json!([]));
        if let Some(m) = a.metadata {
            fields.insert("metadata".into(), Value::Object(m));
        }
        let id = {
            let _guard = lock();
            create_task(&list_dir(ctx), fields)?
        };
        Ok(ToolOutput::Data {
            text: format!("Task #{id} created successfully: {}", a.subject),
            data: json!({"task": {"id": id, "subject": a.subject}}),
        })
    }
}

/// The TaskGet tool (TASK-2).
#[derive(Debug, Default)]
pub struct TaskGet;

#[derive(Debug, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IdArgs {
    task_id: String,
}

impl TypedTool for TaskGet {
    const NAME: &'static str = "TaskGet";
    const DESCRIPTION: &'static str = GET_DESCRIPTION;
    const READ_ONLY: bool = true;
    const CONCURRENCY_SAFE: bool = true;
    const ARGS_ERROR_PREFIX: &'static str = validation::PREFIX;
    type Args = IdArgs;

    fn input_schema(&self) -> Value {
        schema(GET_SCHEMA)
    }

    async fn call(&self, a: IdArgs, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let (task, done) = {
            let _guard = lock();
            let dir = list_dir(ctx);
            let task = read_task(&dir, &a.task_id)?;
            let done: Vec<String> = if ctx.profile().has(&GET_HIDES_DONE_BLOCKERS) {
                list_tasks(&dir)
                    .iter()
                    .filter(|t| t.get("status").and_then(Value::as_str) == Some("completed"))
                    .filter_map(|t| t.get("id").and_then(Value::as_str).map(str::to_string))
                    .collect()
            } else {
                Vec::new()
            };
            (task, done)
        };
        let data = match &task {
            Some(t) => {
                let fields = ["id", "subject", "description", "status", "blocks", "blockedBy"];
                let whole: Task =
                    fields.iter().filter_map(|k| t.get(*k).map(|v| ((*k).to_string(), v.clone()))).collect();
                json!({"task": whole})
            }
            None => json!({"task": null}),
        };
        Ok(ToolOutput::Data { text: get_text(task.as_ref(), &done), data })
    }
}

/// The TaskList tool (TASK-2, TASK-5).
#[derive(Debug, Default)]
pub struct TaskList;

impl TypedTool for TaskList {
    const NAME: &'static str = "TaskList";
    const DESCRIPTION: &'static str = LIST_DESCRIPTION;
    const READ_ONLY: bool = true;
    const CONCURRENCY_SAFE: bool = true;
    type Args = serde::de::IgnoredAny;

    fn input_schema(&self) -> Value {
        schema(LIST_SCHEMA)
    }

    async fn call(&self, _args: serde::de::IgnoredAny, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let tasks = {
            let _guard = lock();
            list_tasks(&list_dir(ctx))
        };
        let snapshots = list_snapshots(&tasks);
        Ok(ToolOutput::Data { text: list_text(&snapshots), data: json!({"tasks": snapshots}) })
    }
}

/// The TaskUpdate tool (TASK-3, TASK-4, TASK-5).
#[derive(Debug, Default)]
pub struct TaskUpdate;

#[derive(Debug, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UpdateArgs {
    task_id: String,
    #[serde(default)]
    subject: Option<String>,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    active_form: Option<String>,
    #[serde(default)]
    status: Option<Value>,
    #[serde(default)]
    add_blocks: Option<Vec<String>>,
    #[serde(default)]
    add_blocked_by: Option<Vec<String>>,
    #[serde(default)]
    owner: Option<String>,
    #[serde(default)]
    metadata: Option<Map<String, Value>>,
}

/// The reference's validation text for a `status` outside the enum (zod's union error, measured).
fn status_error(got: &Value) -> String {
    let member = |values: &[&str]| match got {
        Value::String(_) => {
            validation::invalid_value(json!([]), json!(values), &validation::invalid_value_message(values))
        }
        _ => validation::invalid_type(json!([]), "string", Some(got)),
    };
    let union = validation::invalid_union(json!(["status"]), vec![vec![member(STATUSES)], vec![member(&[DELETED])]]);
    validation::issues_error(&[union])
}

impl TaskUpdate {
    async fn update(&self, a: UpdateArgs, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let id = a.task_id.clone();
        let dir = list_dir(ctx);
        let not_found = || ToolOutput::Data {
            text: "Task not found".into(),
            data: json!({"success": false, "taskId": id, "updatedFields": [], "error": "Task not found"}),
        };
        let status = match &a.status {
            None => None,
            Some(Value::String(s)) if STATUSES.contains(&s.as_str()) || s == DELETED => Some(s.clone()),
            Some(other) => return Err(ToolError::Validation(status_error(other))),
        };
        // 1. the old task
        let old = {
            let _guard = lock();
            read_task(&dir, &id)?
        };
        let Some(old) = old else { return Ok(not_found()) };
        // 2. the main-field patch, in the reference's field order
        let mut patch = Task::new();
        for (field, value) in [
            ("subject", &a.subject),
            ("description", &a.description),
            ("activeForm", &a.active_form),
            ("owner", &a.owner),
        ] {
            if let Some(v) = value {
                if old.get(field).and_then(Value::as_str) != Some(v.as_str()) {
                    patch.insert(field.into(), json!(v));
                }
            }
        }
        if let Some(m) = a.metadata {
            let mut merged = old.get("metadata").and_then(Value::as_object).cloned().unwrap_or_default();
            for (k, v) in m {
                if v.is_null() {
                    merged.shift_remove(&k);
                } else {
                    merged.insert(k, v);
                }
            }
            patch.insert("metadata".into(), Value::Object(merged));
        }
        let old_status = text(&old, "status");
        if status.as_deref() == Some(DELETED) {
            let deleted = {
                let _guard = lock();
                delete_task(&dir, &id)?
            };
            if !deleted {
                let data =
                    json!({"success": false, "taskId": id, "updatedFields": [], "error": "Failed to delete task"});
                return Ok(ToolOutput::Data { text: "Failed to delete task".into(), data });
            }
            let data = json!({"success": true, "taskId": id, "updatedFields": ["deleted"],
                              "statusChange": {"from": old_status, "to": DELETED}});
            return Ok(ToolOutput::Data { text: updated_text(&id, &["deleted".into()]), data });
        }
        if let Some(s) = status.as_ref().filter(|s| **s != old_status) {
            // TASK-4: the TaskCompleted hooks run before the task enters completed; a block stops it all
            if s == "completed" {
                let fields = json!({"task_id": id, "task_subject": text(&old, "subject"),
                                    "task_description": text(&old, "description")});
                let blocked = crate::hooks::event_blocking_errors(
                    &ctx.session.settings.hooks,
                    TASK_COMPLETED_EVENT,
                    fields,
                    &ctx.hook_env(),
                )
                .await;
                if !blocked.is_empty() {
                    let error: Vec<String> =
                        blocked.iter().map(|b| format!("{TASK_COMPLETED_EVENT} hook feedback:\n{b}")).collect();
                    let error = error.join("\n");
                    let data = json!({"success": false, "taskId": id, "updatedFields": [], "error": error});
                    return Ok(ToolOutput::Data { text: error, data });
                }
            }
            patch.insert("status".into(), json!(s));
        }
        let mut fields: Vec<String> = patch.keys().cloned().collect();
        // the edges still to add, one by one
        let old_blocks = ids(&old, "blocks");
        let old_by = ids(&old, "blockedBy");
        let new_blocks: Vec<String> =
            a.add_blocks.unwrap_or_default().into_iter().filter(|b| !old_blocks.contains(b)).collect();
        let new_by: Vec<String> =
            a.add_blocked_by.unwrap_or_default().into_iter().filter(|b| !old_by.contains(b)).collect();
        let edges: Vec<Edge> = new_blocks
            .iter()
            .map(|b| Edge { blocker: id.clone(), blocked: b.clone(), label: format!("blocks #{b}") })
            .chain(new_by.iter().map(|b| Edge {
                blocker: b.clone(),
                blocked: id.clone(),
                label: format!("blockedBy #{b}"),
            }))
            .collect();
        let _guard = lock();
        // 3. the main fields, in one write
        if !patch.is_empty() {
            if let Err(e) = patch_task(&dir, &id, patch) {
                let not: Vec<String> = fields.iter().cloned().chain(edges.iter().map(|e| e.label.clone())).collect();
                return Err(ToolError::Runtime(partial_text(&id, &[], &not, &id, &e.to_string())));
            }
        }
        // 4. each edge
        let mut written = fields.clone();
        for (i, e) in edges.iter().enumerate() {
            match add_edge(&dir, e) {
                Ok(true) => written.push(e.label.clone()),
                Ok(false) => {}
                Err(f) => {
                    let mut not = Vec::new();
                    if f.blocker_side {
                        written.push(format!("{} (task #{} side only)", e.label, e.blocker));
                        not.push(format!("{} (task #{} side)", e.label, e.blocked));
                    } else {
                        not.push(e.label.clone());
                    }
                    not.extend(edges[i + 1..].iter().map(|e| e.label.clone()));
                    return Err(ToolError::Runtime(partial_text(&id, &written, &not, &f.task, &f.error.to_string())));
                }
            }
        }
        if !new_blocks.is_empty() {
            fields.push("blocks".into());
        }
        if !new_by.is_empty() {
            fields.push("blockedBy".into());
        }
        let mut data = json!({"success": true, "taskId": id, "updatedFields": fields});
        if let (Some(s), Some(d)) = (status.as_ref().filter(|s| **s != old_status), data.as_object_mut()) {
            d.insert("statusChange".into(), json!({"from": old_status, "to": s}));
        }
        Ok(ToolOutput::Data { text: updated_text(&id, &fields), data })
    }
}

impl TypedTool for TaskUpdate {
    const NAME: &'static str = "TaskUpdate";
    const DESCRIPTION: &'static str = UPDATE_DESCRIPTION;
    const CONCURRENCY_SAFE: bool = true;
    const ARGS_ERROR_PREFIX: &'static str = validation::PREFIX;
    type Args = UpdateArgs;

    fn input_schema(&self) -> Value {
        schema(UPDATE_SCHEMA)
    }

    async fn call(&self, a: UpdateArgs, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        self.update(a, ctx).await
    }
}

#[cfg(test)]
mod tests {
    use super::store::{ENV_TASK_LIST_ID, HIGH_WATER_MARK_FILE, LOCK_FILE};
    use super::*;
    use crate::model::EstimateTokens;
    use crate::tool::Tool;
    use std::path::Path;
    use std::sync::Arc;

    fn ctx(root: &Path) -> ToolContext {
        let mut c = ToolContext::for_sandbox(root, Arc::new(EstimateTokens)).unwrap_or_else(|e| panic!("{e}"));
        c.env.insert(ENV_TASK_LIST_ID.into(), "t/1".into());
        c
    }

    async fn call(tool: &dyn Tool, input: Value, c: &ToolContext) -> Result<String, ToolError> {
        match tool.call(input, c).await? {
            ToolOutput::Data { text, .. } | ToolOutput::Text(text) => Ok(text),
            ToolOutput::Blocks(b) => Ok(format!("{b:?}")),
        }
    }

    /// TaskGet of a task whose blocker is completed: the blocker listed before GET_HIDES_DONE_BLOCKERS
    /// (tasks.basics on 2.1.331), left out from it (2.1.332).
    #[tokio::test]
    async fn get_shows_open_blockers_from_2_1_332() {
        for (version, want) in [
            ("2.1.331", "Task #2: Second\nStatus: pending\nDescription: do two\nBlocked by: #1"),
            ("2.1.332", "Task #2: Second\nStatus: pending\nDescription: do two"),
        ] {
            let (_d, mut c) = ToolContext::for_test_at(version);
            c.env.insert(ENV_TASK_LIST_ID.into(), format!("t/{version}"));
            for (s, d) in [("First", "do one"), ("Second", "do two")] {
                call(&TaskCreate, json!({"subject": s, "description": d}), &c).await.unwrap_or_else(|e| panic!("{e}"));
            }
            call(&TaskUpdate, json!({"taskId": "2", "addBlockedBy": ["1"]}), &c)
                .await
                .unwrap_or_else(|e| panic!("{e}"));
            call(&TaskUpdate, json!({"taskId": "1", "status": "completed"}), &c)
                .await
                .unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(call(&TaskGet, json!({"taskId": "2"}), &c).await.unwrap_or_else(|e| panic!("{e}")), want);
        }
    }

    #[tokio::test]
    async fn staged_update_leaves_main_fields_and_earlier_edges_when_an_edge_fails() {
        let d = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let c = ctx(d.path());
        for s in ["a", "b", "c"] {
            call(&TaskCreate, json!({"subject": s, "description": s}), &c).await.unwrap_or_else(|e| panic!("{e}"));
        }
        let dir = list_dir(&c);
        assert!(dir.ends_with(".claude/tasks/t-1"), "{}", dir.display());
        std::fs::remove_file(dir.join("2.json")).unwrap_or_else(|e| panic!("{e}"));
        std::fs::create_dir(dir.join("2.json")).unwrap_or_else(|e| panic!("{e}"));
        let r = call(&TaskUpdate, json!({"taskId": "1", "owner": "me", "addBlocks": ["3", "2"]}), &c).await;
        let Err(ToolError::Runtime(m)) = r else { panic!("{r:?}") };
        assert_eq!(
            m,
            "Task #1 was only partly updated (nothing was rolled back): written: owner, blocks #3; not written: \
             blocks #2. Writing task #2 failed: EISDIR: illegal operation on a directory, read"
        );
        let one = read_task(&dir, "1").ok().flatten().unwrap_or_else(|| panic!("task 1"));
        assert_eq!((one.get("owner"), one.get("blocks")), (Some(&json!("me")), Some(&json!(["3"]))));
        let three = read_task(&dir, "3").ok().flatten().unwrap_or_else(|| panic!("task 3"));
        assert_eq!(three.get("blockedBy"), Some(&json!(["1"])));
        assert!(dir.join(LOCK_FILE).is_file());
    }

    #[tokio::test]
    async fn unknown_ids_missing_targets_and_bad_statuses() {
        let d = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let c = ctx(d.path());
        assert_eq!(call(&TaskGet, json!({"taskId": "1"}), &c).await, Ok("Task not found".into()));
        assert_eq!(
            call(&TaskUpdate, json!({"taskId": "1", "status": "completed"}), &c).await,
            Ok("Task not found".into())
        );
        call(&TaskCreate, json!({"subject": "a", "description": "d"}), &c).await.unwrap_or_else(|e| panic!("{e}"));
        let r = call(&TaskUpdate, json!({"taskId": "1", "addBlocks": ["9"]}), &c).await;
        assert_eq!(r, Ok("Updated task #1 blocks".into()), "a missing target is skipped, the field still listed");
        let r = call(&TaskUpdate, json!({"taskId": "1", "status": 5}), &c).await;
        assert!(matches!(&r, Err(ToolError::Validation(m)) if m.contains("received number")), "{r:?}");
        let r = call(&TaskUpdate, json!({"taskId": "1", "status": "deleted"}), &c).await;
        assert_eq!(r, Ok("Updated task #1 deleted".into()));
        assert_eq!(std::fs::read_to_string(list_dir(&c).join(HIGH_WATER_MARK_FILE)).ok(), Some("1".into()));
        let r = call(&TaskCreate, json!({"subject": "b", "description": "d"}), &c).await;
        assert_eq!(r, Ok("Task #2 created successfully: b".into()));
    }
}
