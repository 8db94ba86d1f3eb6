//! The task list's on-disk store (TASK-5), as the reference keeps it: one 2-space JSON file per task
//! under `$HOME/.claude/tasks/<list id>/`, fields in [`FIELD_ORDER`], `.lock` and `.highwatermark`
//! beside them, OS errors worded like Node's ([`node_error`]); and the edges between tasks, written
//! both ways one side after the other ([`add_edge`]). The process-wide [`lock`] serialises the calls.

use crate::context::ToolContext;
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
static LIST_LOCK: Mutex<()> = Mutex::new(());

/// The process-wide lock the list's calls are serialised by.
pub fn lock() -> MutexGuard<'static, ()> {
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

/// The HOME a list's directory lies in (`<home>/.claude/tasks/<list>`): what the store's writes open
/// from with no link followed ([`crate::nofollow`]; a confined command may plant one in the list).
fn home_of(dir: &Path) -> Vec<PathBuf> {
    dir.ancestors().nth(3).map(Path::to_path_buf).into_iter().collect()
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

/// A failure of the task-list store, worded as the reference's Node runtime words it (the text the
/// model gets).
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A file operation failed; `syscall` is Node's name for it.
    #[error("{}", node_error(source, syscall, path))]
    Io { syscall: &'static str, path: PathBuf, source: std::io::Error },
    /// A task could not be serialised.
    #[error("{0}")]
    Json(#[from] serde_json::Error),
    /// A deleted task's id could not be taken out of another task's edges.
    #[error("{source}\nTask #{id} was deleted, but task #{other} still names it")]
    EdgeKept {
        /// The deleted task.
        id: String,
        /// The task still naming it.
        other: String,
        /// Why its edges could not be written.
        source: Box<StoreError>,
    },
}

/// A store failure reaches the model as the tool's error, its text as is.
impl From<StoreError> for crate::tool::ToolError {
    fn from(e: StoreError) -> Self {
        crate::tool::ToolError::Runtime(e.to_string())
    }
}

impl StoreError {
    fn io(syscall: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> StoreError {
        let path = path.to_path_buf();
        move |source| StoreError::Io { syscall, path, source }
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

/// Reads a task: `Ok(None)` when the file is missing or holds no valid task, `Err` when it exists but
/// cannot be read.
pub fn read_task(dir: &Path, id: &str) -> Result<Option<Task>, StoreError> {
    let path = task_path(dir, id);
    match std::fs::read(&path) {
        Ok(bytes) => Ok(serde_json::from_slice::<Value>(&bytes).ok().and_then(normalize)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) if e.raw_os_error() == Some(nix::libc::EISDIR) => Err(StoreError::io("read", &path)(e)),
        Err(e) => Err(StoreError::io("open", &path)(e)),
    }
}

fn write_task(dir: &Path, id: &str, task: &Task) -> Result<(), StoreError> {
    let path = task_path(dir, id);
    let text = serde_json::to_string_pretty(task)?;
    crate::nofollow::write(&home_of(dir), &path, text.as_bytes()).map_err(StoreError::io("open", &path))
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
pub fn patch_task(dir: &Path, id: &str, patch: Task) -> Result<bool, StoreError> {
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
pub fn create_task(dir: &Path, fields: Task) -> Result<String, StoreError> {
    crate::nofollow::create_dir_all(&home_of(dir), dir).map_err(StoreError::io("mkdir", dir))?;
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
pub fn delete_task(dir: &Path, id: &str) -> Result<bool, StoreError> {
    if let Some(n) = id.parse::<u64>().ok().or_else(|| leading_int(id)) {
        if n > high_water_mark(dir) {
            let path = dir.join(HIGH_WATER_MARK_FILE);
            crate::nofollow::write(&home_of(dir), &path, n.to_string().as_bytes())
                .map_err(StoreError::io("open", &path))?;
        }
    }
    let path = task_path(dir, id);
    match std::fs::remove_file(&path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(StoreError::io("unlink", &path)(e)),
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
            patch_task(dir, &other, patch).map_err(|e| StoreError::EdgeKept {
                id: id.to_string(),
                other: other.clone(),
                source: Box::new(e),
            })?;
        }
    }
    Ok(true)
}

/// The ids in a task's list field (`blocks`, `blockedBy`).
pub fn ids(t: &Task, field: &str) -> Vec<String> {
    t.get(field)
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).map(str::to_string).collect())
        .unwrap_or_default()
}

/// A task's string field (empty when missing).
pub fn text(t: &Task, field: &str) -> String {
    t.get(field).and_then(Value::as_str).unwrap_or_default().to_string()
}

/// One edge of an update: `blocker` blocks `blocked`, named after the input field that asked for it.
pub struct Edge {
    /// The task that blocks.
    pub blocker: String,
    /// The task it blocks.
    pub blocked: String,
    /// The input field that asked for it, as the result lists it (`blocks #2`).
    pub label: String,
}

/// Where an edge failed: the OS error, the task whose read or write failed, and whether the blocker's
/// side was already on disk (a one-sided edge).
pub struct EdgeFailure {
    /// The OS error.
    pub error: StoreError,
    /// The task whose read or write failed.
    pub task: String,
    /// The blocker's side was written before the failure.
    pub blocker_side: bool,
}

/// Adds one edge, both ways: reads both tasks (a missing one skips the edge: `Ok(false)`), writes the
/// blocker's `blocks`, then the blocked task's `blockedBy` (TASK-5).
pub fn add_edge(dir: &Path, e: &Edge) -> Result<bool, EdgeFailure> {
    let fail = |task: &str, blocker_side: bool| {
        let task = task.to_string();
        move |error: StoreError| EdgeFailure { error, task, blocker_side }
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

#[cfg(test)]
mod tests {
    use super::*;

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
    fn store_errors_are_worded_as_node_words_them() {
        let d = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        std::fs::create_dir(d.path().join("1.json")).unwrap_or_else(|e| panic!("{e}"));
        let read = read_task(d.path(), "1").err().unwrap_or_else(|| panic!("a directory is not a task"));
        assert_eq!(read.to_string(), "EISDIR: illegal operation on a directory, read");
        let file = d.path().join("list");
        std::fs::write(&file, "").unwrap_or_else(|e| panic!("{e}"));
        let made = create_task(&file, Task::new()).err().unwrap_or_else(|| panic!("a file is not a list dir"));
        assert_eq!(made.to_string(), format!("EEXIST: file already exists, mkdir '{}'", file.display()));
        let kept = StoreError::EdgeKept { id: "1".into(), other: "2".into(), source: Box::new(read) };
        assert_eq!(
            kept.to_string(),
            "EISDIR: illegal operation on a directory, read\nTask #1 was deleted, but task #2 still names it"
        );
    }
}
