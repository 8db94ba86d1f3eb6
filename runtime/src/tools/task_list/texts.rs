//! The task tools' reference texts: each tool's description and schema as Claude Code 2.1.235 sends
//! them (measured), and the result texts built from the store's tasks (TaskGet's, TaskList's,
//! TaskUpdate's).

use super::store::{ids, text, Task};
use serde_json::{json, Map, Value};

/// TaskCreate's description, as Claude Code 2.1.235 sends it (measured).
pub const CREATE_DESCRIPTION: &str = r##"Use this tool to create a structured task list for your current coding session. This helps you track progress, organize complex tasks, and demonstrate thoroughness to the user.
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
pub const CREATE_SCHEMA: &str = r##"{
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
pub const GET_DESCRIPTION: &str = r##"Use this tool to retrieve a task by its ID from the task list.

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
pub const GET_SCHEMA: &str = r##"{
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
pub const LIST_DESCRIPTION: &str = r##"Use this tool to list all tasks in the task list.

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
pub const LIST_SCHEMA: &str = r##"{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "properties": {},
  "additionalProperties": false
}"##;

/// TaskUpdate's description, as Claude Code 2.1.235 sends it (measured).
pub const UPDATE_DESCRIPTION: &str = r##"Use this tool to update a task in the task list.

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
pub const UPDATE_SCHEMA: &str = r##"{
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

/// A schema text as JSON.
pub fn schema(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or(Value::Null)
}

/// `#1, #2`.
pub fn hashes(ids: &[String]) -> String {
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

/// TaskGet's text of a task (or of none); the blockers in `done` are left out of `Blocked by`.
pub fn get_text(task: Option<&Task>, done: &[String]) -> String {
    let Some(t) = task else { return "Task not found".into() };
    let mut lines = vec![
        format!("Task #{}: {}", text(t, "id"), text(t, "subject")),
        format!("Status: {}", text(t, "status")),
        format!("Description: {}", text(t, "description")),
    ];
    let by: Vec<String> = ids(t, "blockedBy").into_iter().filter(|b| !done.contains(b)).collect();
    let blocks = ids(t, "blocks");
    if !by.is_empty() {
        lines.push(format!("Blocked by: {}", hashes(&by)));
    }
    if !blocks.is_empty() {
        lines.push(format!("Blocks: {}", hashes(&blocks)));
    }
    lines.join("\n")
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texts() {
        assert_eq!(list_text(&[]), "No tasks found");
        assert_eq!(updated_text("3", &[]), "Updated task #3 ");
        assert_eq!(
            partial_text("1", &[], &["subject".into()], "1", "EPERM: x"),
            "Task #1 was not updated: written: nothing; not written: subject. Writing task #1 failed: EPERM: x"
        );
    }
}
