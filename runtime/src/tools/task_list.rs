//! TaskCreate / TaskGet / TaskList / TaskUpdate: the session's task list on disk (TASK-1..5). Not the
//! background tasks of Bash (`tasks.rs`).
//!
//! One JSON file per task, `$HOME/.claude/tasks/<list id>/<id>.json`, where the list id is
//! `CLAUDE_CODE_TASK_LIST_ID` or else the session id (both with every character outside `[A-Za-z0-9_-]`
//! replaced by `-`, like the task id in the file name). Measured on Claude Code 2.1.235
//! (`probes/tasks/basics.toml` runs on both subjects; `probes/claude-code/tasks-*.toml`) and copied here:
//! - files: 2-space JSON, no trailing newline, fields in the order id, subject, description,
//!   [activeForm], [owner], status, blocks, blockedBy, [metadata]; an empty `.lock` beside them from the
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

use crate::context::ToolContext;
use crate::tool::{parse_args_worded, Tool, ToolError, ToolOutput};
use crate::validation;
use futures_util::future::BoxFuture;
use serde_json::{json, Map, Value};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

/// Fixes the task list's directory name (TASK-5); else the session id names it.
pub const ENV_TASK_LIST_ID: &str = "CLAUDE_CODE_TASK_LIST_ID";
/// The empty lock file created beside the tasks (TASK-5).
pub const LOCK_FILE: &str = ".lock";
/// The highest id ever used, written by a delete so that ids are not reused (TASK-5).
pub const HIGH_WATER_MARK_FILE: &str = ".highwatermark";
/// The statuses a task file may hold (TASK-4); `deleted` is an update, not a status.
pub const STATUSES: &[&str] = &["pending", "in_progress", "completed"];
/// The update status that removes the task (TASK-4).
pub const DELETED: &str = "deleted";
/// Field order of a task file, as the reference writes it (TASK-5).
pub const FIELD_ORDER: &[&str] =
    &["id", "subject", "description", "activeForm", "owner", "status", "blocks", "blockedBy", "metadata"];
/// The hook event run before a task enters `completed` (TASK-4).
pub const TASK_COMPLETED_EVENT: &str = "TaskCompleted";

/// TaskCreate's description, as Claude Code 2.1.235 sends it (measured).
const CREATE_DESCRIPTION: &str = r##"Use this tool to create a structured task list for your current coding session. This helps you track progress, organize complex tasks, and demonstrate thoroughness to the user.
It also helps the user understand the progress of the task and overall progress of their requests.

## When to Use This Tool

Use this tool proactively in these scenarios:

- Complex multi-step tasks - When a task requires 3 or more distinct steps or actions
- Non-trivial and complex tasks - Tasks that require careful planning or multiple operations
- Plan mode - When using plan mode, create a task list to track the work
- User explicitly requests todo list - When the user directly asks you to use the todo list
- User provides multiple tasks - When users provide a list of things to be done (numbered or comma-separated)
- After receiving new instructions - Immediately capture user requirements as tasks
- When you start working on a task - Mark it as in_progress BEFORE beginning work
- After completing a task - Mark it as completed and add any new follow-up tasks discovered during implementation

## When NOT to Use This Tool

Skip using this tool when:
- There is only a single, straightforward task
- The task is trivial and tracking it provides no organizational benefit
- The task can be completed in less than 3 trivial steps
- The task is purely conversational or informational

NOTE that you should not use this tool if there is only one trivial task to do. In this case you are better off just doing the task directly.

## Task Fields

- **subject**: A brief, actionable title in imperative form (e.g., "Fix authentication bug in login flow")
- **description**: What needs to be done
- **activeForm** (optional): Present continuous form shown in the spinner when the task is in_progress (e.g., "Fixing authentication bug"). If omitted, the spinner shows the subject instead.

All tasks are created with status `pending`.

## Tips

- Create tasks with clear, specific subjects that describe the outcome
- After creating tasks, use TaskUpdate to set up dependencies (blocks/blockedBy) if needed
- Check TaskList first to avoid creating duplicate tasks
"##;

/// TaskCreate's input schema, as Claude Code 2.1.235 sends it (measured).
const CREATE_SCHEMA: &str = r##"{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "properties": {
    "subject": {
      "description": "A brief title for the task",
      "type": "string"
    },
    "description": {
      "description": "What needs to be done",
      "type": "string"
    },
    "activeForm": {
      "description": "Present continuous form shown in spinner when in_progress (e.g., \"Running tests\")",
      "type": "string"
    },
    "metadata": {
      "description": "Arbitrary metadata to attach to the task",
      "type": "object",
      "propertyNames": {
        "type": "string"
      },
      "additionalProperties": {}
    }
  },
  "required": [
    "subject",
    "description"
  ],
  "additionalProperties": false
}"##;

/// TaskGet's description, as Claude Code 2.1.235 sends it (measured).
const GET_DESCRIPTION: &str = r##"Use this tool to retrieve a task by its ID from the task list.

## When to Use This Tool

- When you need the full description and context before starting work on a task
- To understand task dependencies (what it blocks, what blocks it)
- After being assigned a task, to get complete requirements

## Output

Returns full task details:
- **subject**: Task title
- **description**: Detailed requirements and context
- **status**: 'pending', 'in_progress', or 'completed'
- **blocks**: Tasks waiting on this one to complete
- **blockedBy**: Tasks that must complete before this one can start

## Tips

- After fetching a task, verify its blockedBy list is empty before beginning work.
- Use TaskList to see all tasks in summary form.
"##;

/// TaskGet's input schema, as Claude Code 2.1.235 sends it (measured).
const GET_SCHEMA: &str = r##"{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "properties": {
    "taskId": {
      "description": "The ID of the task to retrieve",
      "type": "string"
    }
  },
  "required": [
    "taskId"
  ],
  "additionalProperties": false
}"##;

/// TaskList's description, as Claude Code 2.1.235 sends it (measured).
const LIST_DESCRIPTION: &str = r##"Use this tool to list all tasks in the task list.

## When to Use This Tool

- To see what tasks are available to work on (status: 'pending', no owner, not blocked)
- To check overall progress on the project
- To find tasks that are blocked and need dependencies resolved
- After completing a task, to check for newly unblocked work or claim the next available task
- **Prefer working on tasks in ID order** (lowest ID first) when multiple tasks are available, as earlier tasks often set up context for later ones

## Output

Returns a summary of each task:
- **id**: Task identifier (use with TaskGet, TaskUpdate)
- **subject**: Brief description of the task
- **status**: 'pending', 'in_progress', or 'completed'
- **owner**: Agent ID if assigned, empty if available
- **blockedBy**: List of open task IDs that must be resolved first (tasks with blockedBy cannot be claimed until dependencies resolve)

Use TaskGet with a specific task ID to view full details including description and comments.
"##;

/// TaskList's input schema, as Claude Code 2.1.235 sends it (measured).
const LIST_SCHEMA: &str = r##"{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "properties": {},
  "additionalProperties": false
}"##;

/// TaskUpdate's description, as Claude Code 2.1.235 sends it (measured).
const UPDATE_DESCRIPTION: &str = r##"Use this tool to update a task in the task list.

## When to Use This Tool

**Mark tasks as resolved:**
- When you have completed the work described in a task
- When a task is no longer needed or has been superseded
- IMPORTANT: Always mark your assigned tasks as resolved when you finish them
- After resolving, call TaskList to find your next task

- ONLY mark a task as completed when you have FULLY accomplished it
- If you encounter errors, blockers, or cannot finish, keep the task as in_progress
- When blocked, create a new task describing what needs to be resolved
- Never mark a task as completed if:
  - Tests are failing
  - Implementation is partial
  - You encountered unresolved errors
  - You couldn't find necessary files or dependencies

**Delete tasks:**
- When a task is no longer relevant or was created in error
- Setting status to `deleted` permanently removes the task

**Update task details:**
- When requirements change or become clearer
- When establishing dependencies between tasks

## Fields You Can Update

- **status**: The task status (see Status Workflow below)
- **subject**: Change the task title (imperative form, e.g., "Run tests")
- **description**: Change the task description
- **activeForm**: Present continuous form shown in spinner when in_progress (e.g., "Running tests")
- **owner**: Change the task owner (agent name)
- **metadata**: Merge metadata keys into the task (set a key to null to delete it)
- **addBlocks**: Mark tasks that cannot start until this one completes
- **addBlockedBy**: Mark tasks that must complete before this one can start

## Status Workflow

Status progresses: `pending` → `in_progress` → `completed`

Use `deleted` to permanently remove a task.

## Staleness

Make sure to read a task's latest state using `TaskGet` before updating it.

## Examples

Mark task as in progress when starting work:
```json
{"taskId": "1", "status": "in_progress"}
```

Mark task as completed after finishing work:
```json
{"taskId": "1", "status": "completed"}
```

Delete a task:
```json
{"taskId": "1", "status": "deleted"}
```

Claim a task by setting owner:
```json
{"taskId": "1", "owner": "my-name"}
```

Set up task dependencies:
```json
{"taskId": "2", "addBlockedBy": ["1"]}
```
"##;

/// TaskUpdate's input schema, as Claude Code 2.1.235 sends it (measured).
const UPDATE_SCHEMA: &str = r##"{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "properties": {
    "taskId": {
      "description": "The ID of the task to update",
      "type": "string"
    },
    "subject": {
      "description": "New subject for the task",
      "type": "string"
    },
    "description": {
      "description": "New description for the task",
      "type": "string"
    },
    "activeForm": {
      "description": "Present continuous form shown in spinner when in_progress (e.g., \"Running tests\")",
      "type": "string"
    },
    "status": {
      "description": "New status for the task",
      "anyOf": [
        {
          "type": "string",
          "enum": [
            "pending",
            "in_progress",
            "completed"
          ]
        },
        {
          "type": "string",
          "const": "deleted"
        }
      ]
    },
    "addBlocks": {
      "description": "Task IDs that this task blocks",
      "type": "array",
      "items": {
        "type": "string"
      }
    },
    "addBlockedBy": {
      "description": "Task IDs that block this task",
      "type": "array",
      "items": {
        "type": "string"
      }
    },
    "owner": {
      "description": "New owner for the task",
      "type": "string"
    },
    "metadata": {
      "description": "Metadata keys to merge into the task. Set a key to null to delete it.",
      "type": "object",
      "propertyNames": {
        "type": "string"
      },
      "additionalProperties": {}
    }
  },
  "required": [
    "taskId"
  ],
  "additionalProperties": false
}"##;

static LIST_LOCK: Mutex<()> = Mutex::new(());

fn lock() -> MutexGuard<'static, ()> {
    LIST_LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// A task as read or written: its fields in file order.
pub type Task = Map<String, Value>;

/// A list id or task id as a file name: every character outside `[A-Za-z0-9_-]` becomes `-`.
pub fn sanitize(s: &str) -> String {
    s.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '-' }).collect()
}

/// The task list's directory: `$HOME/.claude/tasks/<list id>`.
pub fn list_dir(ctx: &ToolContext) -> PathBuf {
    let id = ctx.env(ENV_TASK_LIST_ID).filter(|s| !s.is_empty()).unwrap_or(&ctx.session_id);
    ctx.home.join(".claude").join("tasks").join(sanitize(id))
}

fn task_path(dir: &Path, id: &str) -> PathBuf {
    dir.join(format!("{}.json", sanitize(id)))
}

/// An OS error worded like Node's (`EPERM: operation not permitted, open '<path>'`); a read of a
/// directory names no path (`EISDIR: illegal operation on a directory, read`), as Node does.
pub fn node_error(e: &std::io::Error, syscall: &str, path: &Path) -> String {
    let Some(code) = e.raw_os_error() else {
        return format!("{e}, {syscall} '{}'", path.display());
    };
    let errno = nix::errno::Errno::from_raw(code);
    let text = match errno {
        nix::errno::Errno::EPERM => "operation not permitted".to_string(),
        nix::errno::Errno::EACCES => "permission denied".to_string(),
        nix::errno::Errno::EISDIR => "illegal operation on a directory".to_string(),
        nix::errno::Errno::ENOENT => "no such file or directory".to_string(),
        nix::errno::Errno::ENOTDIR => "not a directory".to_string(),
        nix::errno::Errno::EROFS => "read-only file system".to_string(),
        nix::errno::Errno::ENOSPC => "no space left on device".to_string(),
        nix::errno::Errno::EEXIST => "file already exists".to_string(),
        nix::errno::Errno::ELOOP => "too many symbolic links encountered".to_string(),
        other => other.desc().to_lowercase(),
    };
    if syscall == "read" {
        format!("{errno:?}: {text}, read")
    } else {
        format!("{errno:?}: {text}, {syscall} '{}'", path.display())
    }
}

/// A JSON value as a task, fields in [`FIELD_ORDER`]; `None` when it is not one (wrong or missing
/// fields, a status outside [`STATUSES`]). Unknown fields are dropped, as the reference's schema does.
pub fn normalize(v: Value) -> Option<Task> {
    let Value::Object(mut o) = v else { return None };
    let string = |k: &str| o.get(k).is_some_and(Value::is_string);
    let strings = |k: &str| o.get(k).and_then(Value::as_array).is_some_and(|a| a.iter().all(Value::is_string));
    let optional = |k: &str, ok: fn(&Value) -> bool| o.get(k).is_none_or(ok);
    let status_ok = o.get("status").and_then(Value::as_str).is_some_and(|s| STATUSES.contains(&s));
    let valid = string("id")
        && string("subject")
        && string("description")
        && status_ok
        && strings("blocks")
        && strings("blockedBy")
        && optional("activeForm", Value::is_string)
        && optional("owner", Value::is_string)
        && optional("metadata", Value::is_object);
    if !valid {
        return None;
    }
    let mut out = Task::new();
    for k in FIELD_ORDER {
        if let Some(v) = o.remove(*k) {
            out.insert((*k).to_string(), v);
        }
    }
    Some(out)
}

/// Reads a task: `Ok(None)` when the file is missing or holds no valid task, `Err` (Node-style text)
/// when it exists but cannot be read.
pub fn read_task(dir: &Path, id: &str) -> Result<Option<Task>, String> {
    let path = task_path(dir, id);
    match std::fs::read(&path) {
        Ok(bytes) => Ok(serde_json::from_slice::<Value>(&bytes).ok().and_then(normalize)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) if e.raw_os_error() == Some(nix::libc::EISDIR) => Err(node_error(&e, "read", &path)),
        Err(e) => Err(node_error(&e, "open", &path)),
    }
}

fn write_task(dir: &Path, id: &str, task: &Task) -> Result<(), String> {
    let path = task_path(dir, id);
    let text = serde_json::to_string_pretty(task).map_err(|e| e.to_string())?;
    std::fs::write(&path, text).map_err(|e| node_error(&e, "open", &path))
}

/// `{...task, ...patch, id}`: fields already there keep their place, new ones go last.
pub fn merge(task: &Task, patch: Task, id: &str) -> Task {
    let mut out = task.clone();
    for (k, v) in patch {
        out.insert(k, v);
    }
    out.insert("id".into(), Value::String(id.into()));
    out
}

/// One write of a patch into the task as it is on disk now; `Ok(false)` when the task is gone.
fn patch_task(dir: &Path, id: &str, patch: Task) -> Result<bool, String> {
    let Some(current) = read_task(dir, id)? else { return Ok(false) };
    write_task(dir, id, &merge(&current, patch, id))?;
    Ok(true)
}

fn leading_int(s: &str) -> Option<u64> {
    let digits: String = s.trim_start().chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

fn high_water_mark(dir: &Path) -> u64 {
    std::fs::read_to_string(dir.join(HIGH_WATER_MARK_FILE)).ok().and_then(|s| leading_int(&s)).unwrap_or(0)
}

fn highest_id(dir: &Path) -> u64 {
    let names = std::fs::read_dir(dir).into_iter().flatten().flatten();
    names
        .filter_map(|e| e.file_name().to_str().and_then(|n| n.strip_suffix(".json")).and_then(leading_int))
        .max()
        .unwrap_or(0)
}

/// Creates a task with the next id (TASK-1): `.lock` first, then `<id>.json`.
pub fn create_task(dir: &Path, fields: Task) -> Result<String, String> {
    std::fs::create_dir_all(dir).map_err(|e| node_error(&e, "mkdir", dir))?;
    let _ = std::fs::OpenOptions::new().write(true).create_new(true).open(dir.join(LOCK_FILE));
    let id = (highest_id(dir).max(high_water_mark(dir)) + 1).to_string();
    let mut task = Task::new();
    task.insert("id".into(), Value::String(id.clone()));
    task.extend(fields);
    write_task(dir, &id, &task)?;
    Ok(id)
}

/// Every valid task of the list, by numeric id; unreadable files are skipped.
pub fn list_tasks(dir: &Path) -> Vec<Task> {
    let mut ids: Vec<String> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str().and_then(|n| n.strip_suffix(".json")).map(str::to_string))
        .collect();
    ids.sort();
    let mut tasks: Vec<Task> = ids.iter().filter_map(|id| read_task(dir, id).ok().flatten()).collect();
    let key =
        |t: &Task| t.get("id").and_then(Value::as_str).and_then(|s| s.parse::<f64>().ok()).unwrap_or(f64::INFINITY);
    tasks.sort_by(|a, b| key(a).total_cmp(&key(b)));
    tasks
}

/// Deletes a task (TASK-4): the high-water mark first, the file, then the id from every other task's
/// edges. `Ok(false)` when there was no file.
pub fn delete_task(dir: &Path, id: &str) -> Result<bool, String> {
    if let Some(n) = id.parse::<u64>().ok().or_else(|| leading_int(id)) {
        if n > high_water_mark(dir) {
            let path = dir.join(HIGH_WATER_MARK_FILE);
            std::fs::write(&path, n.to_string()).map_err(|e| node_error(&e, "open", &path))?;
        }
    }
    let path = task_path(dir, id);
    match std::fs::remove_file(&path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(node_error(&e, "unlink", &path)),
    }
    for t in list_tasks(dir) {
        let Some(other) = t.get("id").and_then(Value::as_str).map(str::to_string) else { continue };
        let mut patch = Task::new();
        for field in ["blocks", "blockedBy"] {
            let list = ids(&t, field);
            let kept: Vec<String> = list.iter().filter(|x| *x != id).cloned().collect();
            patch.insert(field.into(), json!(kept));
        }
        if ids(&patch, "blocks").len() != ids(&t, "blocks").len()
            || ids(&patch, "blockedBy").len() != ids(&t, "blockedBy").len()
        {
            patch_task(dir, &other, patch)
                .map_err(|e| format!("{e}\nTask #{id} was deleted, but task #{other} still names it"))?;
        }
    }
    Ok(true)
}

fn ids(t: &Task, field: &str) -> Vec<String> {
    t.get(field)
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).map(str::to_string).collect())
        .unwrap_or_default()
}

fn text(t: &Task, field: &str) -> String {
    t.get(field).and_then(Value::as_str).unwrap_or_default().to_string()
}

fn hashes(ids: &[String]) -> String {
    ids.iter().map(|i| format!("#{i}")).collect::<Vec<_>>().join(", ")
}

/// JavaScript truthiness (TaskList hides tasks whose `metadata._internal` is truthy, as the reference).
fn truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0 && !f.is_nan()),
        Value::String(s) => !s.is_empty(),
        Value::Array(_) | Value::Object(_) => true,
    }
}

fn schema(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or(Value::Null)
}

/// The TaskCreate tool (TASK-1).
#[derive(Debug, Default)]
pub struct TaskCreate;

#[derive(Debug, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct CreateArgs {
    subject: String,
    description: String,
    #[serde(default)]
    active_form: Option<String>,
    #[serde(default)]
    metadata: Option<Map<String, Value>>,
}

impl Tool for TaskCreate {
    fn name(&self) -> &'static str {
        "TaskCreate"
    }

    fn description(&self) -> String {
        CREATE_DESCRIPTION.into()
    }

    fn input_schema(&self) -> Value {
        schema(CREATE_SCHEMA)
    }

    fn call<'a>(&'a self, input: Value, ctx: &'a ToolContext) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let a: CreateArgs = parse_args_worded(input, validation::PREFIX)?;
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
                create_task(&list_dir(ctx), fields).map_err(ToolError::Runtime)?
            };
            Ok(ToolOutput::Data {
                text: format!("Task #{id} created successfully: {}", a.subject),
                data: json!({"task": {"id": id, "subject": a.subject}}),
            })
        })
    }
}

/// The TaskGet tool (TASK-2).
#[derive(Debug, Default)]
pub struct TaskGet;

#[derive(Debug, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct IdArgs {
    task_id: String,
}

/// TaskGet's text of a task (or of none).
pub fn get_text(task: Option<&Task>) -> String {
    let Some(t) = task else { return "Task not found".into() };
    let mut lines = vec![
        format!("Task #{}: {}", text(t, "id"), text(t, "subject")),
        format!("Status: {}", text(t, "status")),
        format!("Description: {}", text(t, "description")),
    ];
    let (by, blocks) = (ids(t, "blockedBy"), ids(t, "blocks"));
    if !by.is_empty() {
        lines.push(format!("Blocked by: {}", hashes(&by)));
    }
    if !blocks.is_empty() {
        lines.push(format!("Blocks: {}", hashes(&blocks)));
    }
    lines.join("\n")
}

impl Tool for TaskGet {
    fn name(&self) -> &'static str {
        "TaskGet"
    }

    fn description(&self) -> String {
        GET_DESCRIPTION.into()
    }

    fn input_schema(&self) -> Value {
        schema(GET_SCHEMA)
    }

    fn is_read_only(&self, _input: &Value) -> bool {
        true
    }

    fn is_concurrency_safe(&self, _input: &Value) -> bool {
        true
    }

    fn call<'a>(&'a self, input: Value, ctx: &'a ToolContext) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let a: IdArgs = parse_args_worded(input, validation::PREFIX)?;
            let task = {
                let _guard = lock();
                read_task(&list_dir(ctx), &a.task_id).map_err(ToolError::Runtime)?
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
            Ok(ToolOutput::Data { text: get_text(task.as_ref()), data })
        })
    }
}

/// The TaskList tool (TASK-2, TASK-5).
#[derive(Debug, Default)]
pub struct TaskList;

/// TaskList's snapshots: id, subject, status, owner and the blockers that are not completed.
pub fn list_snapshots(tasks: &[Task]) -> Vec<Value> {
    let visible: Vec<&Task> =
        tasks.iter().filter(|t| !t.get("metadata").and_then(|m| m.get("_internal")).is_some_and(truthy)).collect();
    let completed: Vec<String> =
        visible.iter().filter(|t| text(t, "status") == "completed").map(|t| text(t, "id")).collect();
    visible
        .iter()
        .map(|t| {
            let open: Vec<String> = ids(t, "blockedBy").into_iter().filter(|b| !completed.contains(b)).collect();
            let mut s = Map::new();
            s.insert("id".into(), json!(text(t, "id")));
            s.insert("subject".into(), json!(text(t, "subject")));
            s.insert("status".into(), json!(text(t, "status")));
            if let Some(o) = t.get("owner") {
                s.insert("owner".into(), o.clone());
            }
            s.insert("blockedBy".into(), json!(open));
            Value::Object(s)
        })
        .collect()
}

/// TaskList's text of the snapshots.
pub fn list_text(snapshots: &[Value]) -> String {
    if snapshots.is_empty() {
        return "No tasks found".into();
    }
    let field = |s: &Value, k: &str| s.get(k).and_then(Value::as_str).unwrap_or_default().to_string();
    snapshots
        .iter()
        .map(|s| {
            let owner = field(s, "owner");
            let owner = if owner.is_empty() { String::new() } else { format!(" ({owner})") };
            let by: Vec<String> = s
                .get("blockedBy")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(Value::as_str).map(str::to_string).collect())
                .unwrap_or_default();
            let by = if by.is_empty() { String::new() } else { format!(" [blocked by {}]", hashes(&by)) };
            format!("#{} [{}] {}{owner}{by}", field(s, "id"), field(s, "status"), field(s, "subject"))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

impl Tool for TaskList {
    fn name(&self) -> &'static str {
        "TaskList"
    }

    fn description(&self) -> String {
        LIST_DESCRIPTION.into()
    }

    fn input_schema(&self) -> Value {
        schema(LIST_SCHEMA)
    }

    fn is_read_only(&self, _input: &Value) -> bool {
        true
    }

    fn is_concurrency_safe(&self, _input: &Value) -> bool {
        true
    }

    fn call<'a>(&'a self, _input: Value, ctx: &'a ToolContext) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let tasks = {
                let _guard = lock();
                list_tasks(&list_dir(ctx))
            };
            let snapshots = list_snapshots(&tasks);
            Ok(ToolOutput::Data { text: list_text(&snapshots), data: json!({"tasks": snapshots}) })
        })
    }
}

/// The TaskUpdate tool (TASK-3, TASK-4, TASK-5).
#[derive(Debug, Default)]
pub struct TaskUpdate;

#[derive(Debug, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct UpdateArgs {
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

/// One edge of an update: `blocker` blocks `blocked`, named after the input field that asked for it.
struct Edge {
    blocker: String,
    blocked: String,
    label: String,
}

/// Where an edge failed: the OS error, the task whose read or write failed, and whether the blocker's
/// side was already on disk (a one-sided edge).
struct EdgeFailure {
    error: String,
    task: String,
    blocker_side: bool,
}

/// Adds one edge, both ways: reads both tasks (a missing one skips the edge: `Ok(false)`), writes the
/// blocker's `blocks`, then the blocked task's `blockedBy` (TASK-5).
fn add_edge(dir: &Path, e: &Edge) -> Result<bool, EdgeFailure> {
    let fail = |task: &str, blocker_side: bool| {
        let task = task.to_string();
        move |error: String| EdgeFailure { error, task, blocker_side }
    };
    let a = read_task(dir, &e.blocker).map_err(fail(&e.blocker, false))?;
    let b = read_task(dir, &e.blocked).map_err(fail(&e.blocked, false))?;
    let (Some(a), Some(b)) = (a, b) else { return Ok(false) };
    let blocks = ids(&a, "blocks");
    if !blocks.contains(&e.blocked) {
        let mut p = Task::new();
        p.insert("blocks".into(), json!(blocks.iter().chain([&e.blocked]).collect::<Vec<_>>()));
        patch_task(dir, &e.blocker, p).map_err(fail(&e.blocker, false))?;
    }
    let by = ids(&b, "blockedBy");
    if !by.contains(&e.blocker) {
        let mut p = Task::new();
        p.insert("blockedBy".into(), json!(by.iter().chain([&e.blocker]).collect::<Vec<_>>()));
        patch_task(dir, &e.blocked, p).map_err(fail(&e.blocked, true))?;
    }
    Ok(true)
}

/// The error of an update that stopped after some writes (TASK-3: no rollback): what is on disk, what
/// is not, and why.
pub fn partial_text(id: &str, written: &[String], not_written: &[String], task: &str, error: &str) -> String {
    let list = |l: &[String]| if l.is_empty() { "nothing".to_string() } else { l.join(", ") };
    let head = if written.is_empty() {
        format!("Task #{id} was not updated")
    } else {
        format!("Task #{id} was only partly updated (nothing was rolled back)")
    };
    format!(
        "{head}: written: {}; not written: {}. Writing task #{task} failed: {error}",
        list(written),
        list(not_written)
    )
}

/// The TaskUpdate result of a finished update: `Updated task #1 subject, status` (the fields joined by
/// `, ` after one space, even when there are none).
pub fn updated_text(id: &str, fields: &[String]) -> String {
    format!("Updated task #{id} {}", fields.join(", "))
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
            read_task(&dir, &id).map_err(ToolError::Runtime)?
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
                delete_task(&dir, &id).map_err(ToolError::Runtime)?
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
                return Err(ToolError::Runtime(partial_text(&id, &[], &not, &id, &e)));
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
                    return Err(ToolError::Runtime(partial_text(&id, &written, &not, &f.task, &f.error)));
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

impl Tool for TaskUpdate {
    fn name(&self) -> &'static str {
        "TaskUpdate"
    }

    fn description(&self) -> String {
        UPDATE_DESCRIPTION.into()
    }

    fn input_schema(&self) -> Value {
        schema(UPDATE_SCHEMA)
    }

    fn is_concurrency_safe(&self, _input: &Value) -> bool {
        true
    }

    fn call<'a>(&'a self, input: Value, ctx: &'a ToolContext) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let a: UpdateArgs = parse_args_worded(input, validation::PREFIX)?;
            self.update(a, ctx).await
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::EstimateTokens;
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

    #[test]
    fn files_keep_the_schema_order_and_new_fields_go_last() {
        let t = normalize(json!({"status": "pending", "x": 1, "blockedBy": [], "id": "1", "blocks": [],
                                 "description": "d", "subject": "s", "owner": "o"}))
        .unwrap_or_else(|| panic!("valid"));
        assert_eq!(
            t.keys().collect::<Vec<_>>(),
            ["id", "subject", "description", "owner", "status", "blocks", "blockedBy"]
        );
        let mut p = Task::new();
        p.insert("activeForm".into(), json!("a"));
        p.insert("status".into(), json!("completed"));
        let m = merge(&t, p, "1");
        assert_eq!(
            m.keys().collect::<Vec<_>>(),
            ["id", "subject", "description", "owner", "status", "blocks", "blockedBy", "activeForm"]
        );
        assert_eq!(
            normalize(json!({"id": "1", "subject": "s", "description": "d", "status": "deleted",
                                     "blocks": [], "blockedBy": []})),
            None,
            "not a file status"
        );
        assert_eq!(normalize(json!({"id": 1})), None);
        assert_eq!(sanitize("../a b"), "---a-b");
    }

    #[test]
    fn texts() {
        assert_eq!(list_text(&[]), "No tasks found");
        assert_eq!(updated_text("3", &[]), "Updated task #3 ");
        assert_eq!(
            partial_text("1", &[], &["subject".into()], "1", "EPERM: x"),
            "Task #1 was not updated: written: nothing; not written: subject. Writing task #1 failed: EPERM: x"
        );
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
