//! NotebookEdit (NB-1): replace, insert or delete one cell of a Jupyter notebook, found by its `id` or
//! by `cell-N`. The notebook goes through the same read and stale gates as a file (EDIT-1, EDIT-2) and
//! leaves a checkpoint (EDIT-6).

use crate::context::ToolContext;
use crate::fs::{check_write_gates, checkpoint, confine_write, hex, write_and_remember};
use crate::tool::{parse_args, PermissionSubject, Tool, ToolError, ToolOutput};
use futures_util::future::BoxFuture;
use serde::Deserialize;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

/// The NotebookEdit tool.
#[derive(Debug, Default)]
pub struct NotebookEdit;

#[derive(Debug, Deserialize)]
struct Args {
    notebook_path: String,
    #[serde(default)]
    cell_id: Option<String>,
    new_source: String,
    #[serde(default)]
    cell_type: Option<String>,
    #[serde(default)]
    edit_mode: Option<String>,
}

/// Index of the cell named `id`: its `id` field, else the `cell-N` form.
pub fn find_cell(cells: &[Value], id: &str) -> Option<usize> {
    cells
        .iter()
        .position(|c| c.get("id").and_then(Value::as_str) == Some(id))
        .or_else(|| id.strip_prefix("cell-").and_then(|n| n.parse::<usize>().ok()).filter(|n| *n < cells.len()))
}

/// Applies the edit to a parsed notebook; returns the result text. A new cell's id derives from the
/// notebook's content and the edit (never from where the notebook lives), so runs are reproducible.
pub fn apply(
    nb: &mut Value,
    args_cell: Option<&str>,
    source: &str,
    cell_type: Option<&str>,
    mode: &str,
) -> Result<String, ToolError> {
    let cells = nb
        .get_mut("cells")
        .and_then(Value::as_array_mut)
        .ok_or_else(|| ToolError::Validation("Notebook has no cells array.".into()))?;
    let not_found = |id: &str| ToolError::Validation(format!("Cell with ID \"{id}\" not found in notebook."));
    match mode {
        "replace" => {
            let id = args_cell.ok_or_else(|| {
                ToolError::Validation("Cell ID must be specified when not inserting a new cell.".into())
            })?;
            let i = find_cell(cells, id).ok_or_else(|| not_found(id))?;
            let cell = &mut cells[i];
            cell["source"] = json!(source);
            if let Some(t) = cell_type {
                cell["cell_type"] = json!(t);
            }
            if cell.get("cell_type").and_then(Value::as_str) == Some("code") {
                cell["execution_count"] = Value::Null;
                cell["outputs"] = json!([]);
            } else if let Some(o) = cell.as_object_mut() {
                o.remove("outputs");
                o.remove("execution_count");
            }
            Ok(format!("Updated cell {id} with {source}"))
        }
        "insert" => {
            let t = cell_type
                .ok_or_else(|| ToolError::Validation("Cell type is required when using edit_mode=insert.".into()))?;
            let at = match args_cell {
                Some(id) => find_cell(cells, id).ok_or_else(|| not_found(id))? + 1,
                None => 0,
            };
            let new_id = hex(&Sha256::digest(format!("{}:{at}:{t}:{source}", cells.len()).as_bytes()))[..8].to_string();
            let mut cell = json!({"cell_type": t, "id": new_id, "metadata": {}, "source": source});
            if t == "code" {
                cell["execution_count"] = Value::Null;
                cell["outputs"] = json!([]);
            }
            cells.insert(at, cell);
            Ok(format!("Inserted cell {new_id} with {source}"))
        }
        "delete" => {
            let id = args_cell.ok_or_else(|| {
                ToolError::Validation("Cell ID must be specified when not inserting a new cell.".into())
            })?;
            let i = find_cell(cells, id).ok_or_else(|| not_found(id))?;
            cells.remove(i);
            Ok(format!("Deleted cell {id}"))
        }
        _ => Err(ToolError::Validation("Edit mode must be replace, insert, or delete.".into())),
    }
}

impl Tool for NotebookEdit {
    fn name(&self) -> &'static str {
        "NotebookEdit"
    }

    fn description(&self) -> String {
        "Completely replaces the contents of a specific cell in a Jupyter notebook (.ipynb file) with new source. The notebook_path parameter must be an absolute path. The cell_id identifies the cell; edit_mode=insert adds a new cell after it (or at the start when absent), edit_mode=delete removes it.".into()
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "notebook_path": {"type": "string", "description": "The absolute path to the Jupyter notebook file to edit (must be absolute, not relative)"},
                "cell_id": {"type": "string", "description": "The ID of the cell to edit. When inserting a new cell, the new cell will be inserted after the cell with this ID, or at the beginning if not specified."},
                "new_source": {"type": "string", "description": "The new source for the cell"},
                "cell_type": {"type": "string", "enum": ["code", "markdown"], "description": "The type of the cell (code or markdown). If not specified, it defaults to the current cell type. If using edit_mode=insert, this is required."},
                "edit_mode": {"type": "string", "enum": ["replace", "insert", "delete"], "description": "The type of edit to make (replace, insert, delete). Defaults to replace."}
            },
            "required": ["notebook_path", "new_source"],
            "additionalProperties": false,
            "$schema": "http://json-schema.org/draft-07/schema#"
        })
    }

    fn is_destructive(&self, input: &Value) -> bool {
        input.get("edit_mode").and_then(Value::as_str) == Some("delete")
    }

    fn permission_subject(&self, input: &Value, ctx: &ToolContext) -> PermissionSubject {
        crate::fs::path_subject(input, "notebook_path", true, ctx)
    }

    fn call<'a>(&'a self, input: Value, ctx: &'a ToolContext) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let args: Args = parse_args(input)?;
            let path = confine_write(ctx, &args.notebook_path)?;
            if path.extension().is_none_or(|e| e != "ipynb") {
                return Err(ToolError::Validation(
                    "File must be a Jupyter notebook (.ipynb file). For editing other file types, use the FileEdit tool.".into(),
                ));
            }
            let current =
                std::fs::read(&path).map_err(|_| ToolError::Validation("Notebook file does not exist.".into()))?;
            check_write_gates(ctx, &path, &current)?;
            let mut nb: Value = serde_json::from_slice(&current)
                .map_err(|_| ToolError::Validation("Notebook is not valid JSON.".into()))?;
            let mode = args.edit_mode.as_deref().unwrap_or("replace");
            let text = apply(&mut nb, args.cell_id.as_deref(), &args.new_source, args.cell_type.as_deref(), mode)?;
            checkpoint(ctx, &path, &current)?;
            let mut out = serde_json::to_string_pretty(&nb).map_err(|e| ToolError::Runtime(e.to_string()))?;
            out.push('\n');
            write_and_remember(ctx, &path, &out)?;
            Ok(ToolOutput::Text(text))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replace_insert_delete_by_id_and_index() {
        let mut nb =
            json!({"cells": [{"cell_type": "code", "id": "a", "source": "1", "outputs": [1], "execution_count": 3}]});
        assert_eq!(apply(&mut nb, Some("a"), "2", None, "replace").ok().as_deref(), Some("Updated cell a with 2"));
        assert_eq!(nb["cells"][0]["outputs"], json!([]));
        let t = apply(&mut nb, Some("cell-0"), "# h", Some("markdown"), "insert").unwrap_or_default();
        assert!(t.starts_with("Inserted cell "), "{t}");
        assert_eq!(nb["cells"][1]["cell_type"], "markdown");
        assert!(apply(&mut nb, Some("zz"), "", None, "delete").is_err());
        assert_eq!(apply(&mut nb, Some("a"), "", None, "delete").ok().as_deref(), Some("Deleted cell a"));
        assert_eq!(nb["cells"].as_array().map(Vec::len), Some(1));
        assert!(apply(&mut nb, None, "x", None, "insert").is_err());
    }
}
