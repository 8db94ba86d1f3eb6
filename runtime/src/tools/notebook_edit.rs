//! NotebookEdit (NB-1): replace, insert or delete one cell of a Jupyter notebook, found by its `id` or
//! by `cell-N`. The notebook goes through the same read and stale gates as a file (EDIT-1, EDIT-2) and
//! leaves a checkpoint (EDIT-6).

use crate::context::ToolContext;
use crate::fs::{check_write_gates, checkpoint, confine_write, hex};
use crate::profile::Switch;
use crate::tool::{PermissionSubject, ToolError, ToolOutput, TypedTool};
use serde::Deserialize;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

/// The NotebookEdit tool.
/// The reference's refusal of a path that is no notebook.
const NOT_A_NOTEBOOK: &str =
    "File must be a Jupyter notebook (.ipynb file). For editing other file types, use the FileEdit tool.";
/// The reference's refusal of an insert without a cell type.
const CELL_TYPE_REQUIRED: &str = "Cell type is required when using edit_mode=insert.";

#[derive(Debug, Default)]
pub struct NotebookEdit;

#[derive(Debug, Deserialize)]
pub struct Args {
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
/// The cell an id names: the cell with that `id`, else `cell-N` as an index; `Err` with the reference's
/// text when neither.
pub fn find_cell(cells: &[Value], id: &str) -> Result<usize, ToolError> {
    if let Some(i) = cells.iter().position(|c| c.get("id").and_then(Value::as_str) == Some(id)) {
        return Ok(i);
    }
    let index = id.strip_prefix("cell-").filter(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
    match index.and_then(|n| n.parse::<usize>().ok()) {
        None => Err(ToolError::Validation(format!("Cell with ID \"{id}\" not found in notebook."))),
        Some(n) if n >= cells.len() => {
            Err(ToolError::Validation(format!("Cell with index {n} does not exist in notebook.")))
        }
        Some(n) => Ok(n),
    }
}

/// From 2.1.321 NotebookEdit's result names the cell as the call gave it (`undefined` before, in a
/// notebook without ids), and an insert into such a notebook says `Inserted a new cell` (bisected with
/// the npm tarballs' texts: 2.1.319 has the old template, 2.1.321 the new; measured by
/// `harness/tests/fidelity.rs`'s nbformat 4.4 notebooks).
pub const CELL_NAMED_AS_GIVEN: Switch =
    Switch { name: "NotebookEdit names the cell as given", since: "2.1.321", probe: "notebook.edit" };

/// From 2.1.327 NotebookEdit keeps the notebook file's final newline (bisected with the npm tarballs'
/// code: 2.1.326 writes `JSON.stringify(nb, null, 1)` alone, 2.1.327 adds the old file's final newline;
/// measured by `harness/tests/fidelity.rs`, whose notebooks end with one as Jupyter writes them).
pub const FINAL_NEWLINE_KEPT: Switch =
    Switch { name: "NotebookEdit keeps the notebook's final newline", since: "2.1.327", probe: "notebook.edit" };

/// From 2.1.332 a replaced cell is shaped after its (new) type: a code cell gets `execution_count: null`
/// and no outputs, a markdown or raw cell loses both fields (before, only a cell that was code had them
/// cleared, then its type set; bisected with the binaries' code: 2.1.331 and 2.1.332).
pub const CELL_SHAPED_BY_TYPE: Switch =
    Switch { name: "NotebookEdit shapes a replaced cell by its new type", since: "2.1.332", probe: "notebook.edit" };

/// One edit, as Claude Code at `profile` makes it (measured by `harness/tests/fidelity.rs`): the
/// result text names the cell's id — a new random one for an insert into a notebook with ids (nbformat
/// 4.5+), the id as given otherwise, `undefined` in a notebook without ids before
/// [`CELL_NAMED_AS_GIVEN`]. A replaced code cell loses its outputs; a new `cell_type` is set after that
/// (at 2.1.235 a code cell made markdown keeps its emptied outputs; see [`CELL_SHAPED_BY_TYPE`]).
pub fn apply_at(
    profile: &crate::profile::Profile,
    nb: &mut Value,
    args_cell: Option<&str>,
    source: &str,
    cell_type: Option<&str>,
    mode: &str,
) -> Result<String, ToolError> {
    let as_given = profile.has(&CELL_NAMED_AS_GIVEN);
    let with_ids = {
        let major = nb.get("nbformat").and_then(Value::as_u64).unwrap_or(0);
        let minor = nb.get("nbformat_minor").and_then(Value::as_u64).unwrap_or(0);
        major > 4 || (major == 4 && minor >= 5)
    };
    let cells = nb.get_mut("cells").and_then(Value::as_array_mut).ok_or_else(|| {
        ToolError::Validation(
            "Notebook file is not a valid Jupyter notebook (top-level \"cells\" must be an array of cell objects, each with a string or string-array \"source\").".into(),
        )
    })?;
    if !matches!(mode, "replace" | "insert" | "delete") {
        return Err(ToolError::Validation("Edit mode must be replace, insert, or delete.".into()));
    }
    let at = match args_cell {
        None if mode != "insert" => {
            return Err(ToolError::Validation("Cell ID must be specified when not inserting a new cell.".into()))
        }
        None => 0,
        Some(id) => find_cell(cells, id)? + usize::from(mode == "insert"),
    };
    let named = |id: Option<String>| id.unwrap_or_else(|| "undefined".into());
    match mode {
        "insert" => {
            let t = cell_type.unwrap_or("code");
            let new_id = with_ids.then(|| {
                hex(&Sha256::digest(format!("{}:{at}:{t}:{source}", cells.len()).as_bytes()))[..8].to_string()
            });
            let mut cell = serde_json::Map::new();
            cell.insert("cell_type".into(), json!(if t == "markdown" { "markdown" } else { "code" }));
            if let Some(id) = &new_id {
                cell.insert("id".into(), json!(id));
            }
            cell.insert("source".into(), json!(source));
            cell.insert("metadata".into(), json!({}));
            if t != "markdown" {
                cell.insert("execution_count".into(), Value::Null);
                cell.insert("outputs".into(), json!([]));
            }
            cells.insert(at, Value::Object(cell));
            Ok(match new_id {
                None if as_given => format!("Inserted a new cell with {source}"),
                id => format!("Inserted cell {} with {source}", named(id)),
            })
        }
        "delete" => {
            cells.remove(at);
            let id = (with_ids || as_given).then(|| args_cell.unwrap_or_default().to_string());
            Ok(format!("Deleted cell {}", named(id)))
        }
        _ => {
            let cell = &mut cells[at];
            cell["source"] = json!(source);
            if profile.has(&CELL_SHAPED_BY_TYPE) {
                if let Some(t) = cell_type {
                    cell["cell_type"] = json!(t);
                }
                let kind = cell.get("cell_type").and_then(Value::as_str).map(str::to_string);
                match (kind.as_deref(), cell.as_object_mut()) {
                    (Some("code"), Some(o)) => {
                        o.insert("execution_count".into(), Value::Null);
                        o.insert("outputs".into(), json!([]));
                    }
                    (Some("markdown" | "raw"), Some(o)) => {
                        o.shift_remove("execution_count");
                        o.shift_remove("outputs");
                    }
                    _ => {}
                }
            } else {
                if cell.get("cell_type").and_then(Value::as_str) == Some("code") {
                    cell["execution_count"] = Value::Null;
                    cell["outputs"] = json!([]);
                }
                if let Some(t) = cell_type {
                    cell["cell_type"] = json!(t);
                }
            }
            let id = (with_ids || as_given).then(|| args_cell.unwrap_or_default().to_string());
            Ok(format!("Updated cell {} with {source}", named(id)))
        }
    }
}

/// JSON as JavaScript's `JSON.stringify(v, null, 1)` writes it: one-space indent, no final newline.
pub fn stringify_1(v: &Value) -> Result<String, ToolError> {
    let mut out = Vec::new();
    let mut ser = serde_json::Serializer::with_formatter(&mut out, serde_json::ser::PrettyFormatter::with_indent(b" "));
    serde::Serialize::serialize(v, &mut ser).map_err(|e| ToolError::Runtime(e.to_string()))?;
    String::from_utf8(out).map_err(|e| ToolError::Runtime(e.to_string()))
}

impl TypedTool for NotebookEdit {
    const NAME: &'static str = "NotebookEdit";
    const DESCRIPTION: &'static str = "Completely replaces the contents of a specific cell in a Jupyter notebook (.ipynb file) with new source. The notebook_path parameter must be an absolute path. The cell_id identifies the cell; edit_mode=insert adds a new cell after it (or at the start when absent), edit_mode=delete removes it.";
    type Args = Args;

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

    /// Claude Code 2.1.235's NotebookEdit checks the extension, a cell type for an insert and its read
    /// gate (for every model) before its permission check: a never-read notebook a deny rule covers is
    /// refused as not read (`probes/edit/read-deny-inheritance.toml`, both subjects).
    fn check_before_permissions(&self, input: &Value, ctx: &ToolContext) -> Option<String> {
        let given = input.get("notebook_path").and_then(Value::as_str)?;
        let path = crate::fs::resolve(ctx, given).ok()?.path;
        if path.extension().is_none_or(|e| e != "ipynb") {
            return Some(NOT_A_NOTEBOOK.into());
        }
        let mode = input.get("edit_mode").and_then(Value::as_str).unwrap_or("replace");
        if mode == "insert" && input.get("cell_type").is_none_or(Value::is_null) {
            return Some(CELL_TYPE_REQUIRED.into());
        }
        let read = ctx.read_state.lock().ok().is_some_and(|s| s.contains_key(&path));
        (!read).then(|| crate::fs::NOT_READ_YET.into())
    }

    async fn call(&self, args: Args, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        {
            let path = confine_write(ctx, &args.notebook_path)?;
            if path.extension().is_none_or(|e| e != "ipynb") {
                return Err(ToolError::Validation(NOT_A_NOTEBOOK.into()));
            }
            let mode = args.edit_mode.as_deref().unwrap_or("replace");
            if mode == "insert" && args.cell_type.is_none() {
                return Err(ToolError::Validation(CELL_TYPE_REQUIRED.into()));
            }
            // the reference's order: the read gate before the file is looked at
            if ctx.read_state.lock().ok().is_none_or(|s| !s.contains_key(&path)) {
                return Err(ToolError::Validation(crate::fs::NOT_READ_YET.into()));
            }
            let current =
                std::fs::read(&path).map_err(|_| ToolError::Validation("Notebook file does not exist.".into()))?;
            check_write_gates(ctx, &path, &current)?;
            // from 2.1.296 / 2.1.299 a file that is not text is refused (`crate::encoding`)
            if let Some(refusal) = crate::encoding::edit_refusal(ctx, &current) {
                return Err(ToolError::Validation(refusal));
            }
            let file = crate::fs::TextFile::decode(&current);
            let mut nb: Value = serde_json::from_str(&file.text)
                .map_err(|_| ToolError::Validation("Notebook is not valid JSON.".into()))?;
            let profile = ctx.profile();
            let (cell, source, cell_type) = (args.cell_id.as_deref(), &args.new_source, args.cell_type.as_deref());
            let text = apply_at(&profile, &mut nb, cell, source, cell_type, mode)?;
            checkpoint(ctx, &path, &current)?;
            let mut json = stringify_1(&nb)?;
            if profile.has(&FINAL_NEWLINE_KEPT) && file.text.ends_with('\n') {
                json.push('\n');
            }
            let bytes = file.encode(&json);
            crate::fs::write_no_follow(&path, &bytes)
                .map_err(|e| ToolError::Runtime(format!("{e}: {}", path.display())))?;
            crate::fs::remember_read(ctx, &path, bytes, false);
            Ok(ToolOutput::Text(text))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(version: &str) -> crate::profile::Profile {
        crate::profile::Profile::at(version).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn cells_are_named_as_given_from_2_1_321() {
        for (version, given) in [("2.1.235", false), ("2.1.319", false), ("2.1.321", true), ("2.1.333", true)] {
            let nb = || json!({"nbformat": 4, "nbformat_minor": 4, "cells": [{"cell_type": "markdown", "metadata": {}, "source": "x"}]});
            let p = at(version);
            let named = |t: &str| t.to_string();
            let (r, d, i) = if given {
                (named("Updated cell cell-0 with y"), named("Deleted cell cell-0"), named("Inserted a new cell with z"))
            } else {
                (
                    named("Updated cell undefined with y"),
                    named("Deleted cell undefined"),
                    named("Inserted cell undefined with z"),
                )
            };
            assert_eq!(apply_at(&p, &mut nb(), Some("cell-0"), "y", None, "replace").ok(), Some(r), "{version}");
            assert_eq!(apply_at(&p, &mut nb(), Some("cell-0"), "", None, "delete").ok(), Some(d), "{version}");
            assert_eq!(apply_at(&p, &mut nb(), Some("cell-0"), "z", Some("code"), "insert").ok(), Some(i), "{version}");
        }
    }

    #[test]
    fn a_replaced_cell_is_shaped_by_its_type_from_2_1_332() {
        for (version, shaped) in [("2.1.235", false), ("2.1.331", false), ("2.1.332", true)] {
            let mut nb = json!({"nbformat": 4, "nbformat_minor": 5, "cells": [
                {"cell_type": "code", "id": "a", "metadata": {}, "source": "1", "execution_count": 1, "outputs": [1]},
                {"cell_type": "markdown", "id": "b", "metadata": {}, "source": "x"}]});
            let p = at(version);
            apply_at(&p, &mut nb, Some("a"), "# t", Some("markdown"), "replace").unwrap_or_else(|e| panic!("{e}"));
            apply_at(&p, &mut nb, Some("b"), "2", Some("code"), "replace").unwrap_or_else(|e| panic!("{e}"));
            let keys = |i: usize| {
                nb["cells"][i].as_object().map(|o| o.keys().cloned().collect::<Vec<_>>()).unwrap_or_default()
            };
            if shaped {
                assert_eq!(keys(0), ["cell_type", "id", "metadata", "source"], "{version}");
                assert_eq!(
                    keys(1),
                    ["cell_type", "id", "metadata", "source", "execution_count", "outputs"],
                    "{version}"
                );
            } else {
                assert_eq!(
                    keys(0),
                    ["cell_type", "id", "metadata", "source", "execution_count", "outputs"],
                    "{version}"
                );
                assert_eq!(keys(1), ["cell_type", "id", "metadata", "source"], "{version}");
            }
        }
    }

    #[test]
    fn the_final_newline_is_kept_from_2_1_327() {
        for (version, kept) in [("2.1.235", false), ("2.1.326", false), ("2.1.327", true)] {
            let (_d, c) = ToolContext::for_test();
            let c = c.with_profile(at(version));
            let f = c.cwd.join("n.ipynb");
            let text = "{\n \"cells\": [\n  {\n   \"cell_type\": \"markdown\",\n   \"metadata\": {},\n   \"source\": \"x\"\n  }\n ],\n \"metadata\": {},\n \"nbformat\": 4,\n \"nbformat_minor\": 4\n}\n";
            std::fs::write(&f, text).unwrap_or_else(|e| panic!("{e}"));
            crate::fs::remember_read(&c, &f, text.as_bytes().to_vec(), false);
            let rt =
                tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap_or_else(|e| panic!("{e}"));
            let input = json!({"notebook_path": f, "cell_id": "cell-0", "new_source": "y"});
            rt.block_on(crate::tool::Tool::call(&NotebookEdit, input, &c)).unwrap_or_else(|e| panic!("{version}: {e}"));
            let after = std::fs::read_to_string(&f).unwrap_or_default();
            assert_eq!(after.ends_with("}\n"), kept, "{version}: {after:?}");
            assert!(after.contains("\"source\": \"y\""), "{version}: {after:?}");
        }
    }

    #[test]
    fn replace_insert_delete_by_id_and_index() {
        let reference = crate::profile::Profile::reference();
        let apply = |nb: &mut Value, cell: Option<&str>, source: &str, mode: &str| {
            apply_at(&reference, nb, cell, source, None, mode)
        };
        let mut nb = json!({"nbformat": 4, "nbformat_minor": 5,
            "cells": [{"cell_type": "code", "id": "a", "source": "1", "outputs": [1], "execution_count": 3}]});
        assert_eq!(apply(&mut nb, Some("a"), "2", "replace").ok().as_deref(), Some("Updated cell a with 2"));
        assert_eq!(nb["cells"][0]["outputs"], json!([]));
        let t = apply_at(&reference, &mut nb, Some("cell-0"), "# h", Some("markdown"), "insert").unwrap_or_default();
        assert!(t.starts_with("Inserted cell ") && !t.contains("undefined"), "{t}");
        assert_eq!(nb["cells"][1]["cell_type"], "markdown");
        assert!(apply(&mut nb, Some("zz"), "", "delete").is_err());
        let e = apply(&mut nb, Some("cell-7"), "", "delete").err().map(|e| e.to_string()).unwrap_or_default();
        assert_eq!(e, "Cell with index 7 does not exist in notebook.");
        assert_eq!(apply(&mut nb, Some("a"), "", "delete").ok().as_deref(), Some("Deleted cell a"));
        assert_eq!(nb["cells"].as_array().map(Vec::len), Some(1));
        assert!(apply(&mut nb, None, "x", "replace").is_err());
        // a notebook without ids: the reference names no id
        let mut old = json!({"nbformat": 4, "nbformat_minor": 4, "cells": [{"cell_type": "markdown", "source": "x"}]});
        assert_eq!(
            apply(&mut old, Some("cell-0"), "y", "replace").ok().as_deref(),
            Some("Updated cell undefined with y")
        );
        assert_eq!(
            stringify_1(&json!({"a": [1], "b": {}})).unwrap_or_default(),
            "{\n \"a\": [\n  1\n ],\n \"b\": {}\n}"
        );
    }
}
