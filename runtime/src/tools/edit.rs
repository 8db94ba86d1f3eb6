//! Edit (EDIT-1..6): exact replacement of `old_string` by `new_string`, unique unless `replace_all`;
//! refuses a file never Read, a file changed since its Read, and notebooks (NotebookEdit's job); leaves a
//! file-history checkpoint on success.

use crate::context::ToolContext;
use crate::fs::{
    check_write_gates, checkpoint, confine_write, missing_file, updated, write_and_remember, FILE_STATE_NOTE,
};
use crate::tool::{parse_args, PermissionSubject, Tool, ToolError, ToolOutput};
use futures_util::future::BoxFuture;
use serde::Deserialize;
use serde_json::{json, Value};

/// The Edit tool.
#[derive(Debug, Default)]
pub struct Edit;

#[derive(Debug, Deserialize)]
struct Args {
    file_path: String,
    old_string: String,
    new_string: String,
    #[serde(default)]
    replace_all: bool,
}

/// The replacement itself, on text: the new text, or the reference's error for 0 or several matches
/// (EDIT-4).
pub fn replace(text: &str, old: &str, new: &str, replace_all: bool) -> Result<String, ToolError> {
    let n = text.matches(old).count();
    if n == 0 {
        return Err(ToolError::Validation(format!("String to replace not found in file.\nString: {old}")));
    }
    if n > 1 && !replace_all {
        return Err(ToolError::Validation(format!(
            "Found {n} matches of the string to replace, but replace_all is false. To replace all occurrences, set replace_all to true. To replace only one occurrence, please provide more context to uniquely identify the instance.\nString: {old}"
        )));
    }
    Ok(if replace_all { text.replace(old, new) } else { text.replacen(old, new, 1) })
}

impl Tool for Edit {
    fn name(&self) -> &'static str {
        "Edit"
    }

    fn description(&self) -> String {
        "Performs exact string replacements in files.\n\nUsage:\n- You must use your `Read` tool at least once in the conversation before editing. This tool will error if you attempt an edit without reading the file.\n- The edit will FAIL if `old_string` is not unique in the file. Either provide a larger string with more surrounding context to make it unique or use `replace_all` to change every instance of `old_string`.\n- Use `replace_all` for replacing and renaming strings across the file.".into()
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "file_path": {"type": "string", "description": "The absolute path to the file to modify"},
                "old_string": {"type": "string", "description": "The text to replace"},
                "new_string": {"type": "string", "description": "The text to replace it with (must be different from old_string)"},
                "replace_all": {"type": "boolean", "default": false, "description": "Replace all occurences of old_string (default false)"}
            },
            "required": ["file_path", "old_string", "new_string"],
            "additionalProperties": false,
            "$schema": "http://json-schema.org/draft-07/schema#"
        })
    }

    fn permission_subject(&self, input: &Value, ctx: &ToolContext) -> PermissionSubject {
        crate::fs::path_subject(input, "file_path", true, ctx)
    }

    fn call<'a>(&'a self, input: Value, ctx: &'a ToolContext) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let args: Args = parse_args(input)?;
            let path = confine_write(ctx, &args.file_path)?;
            if args.old_string == args.new_string {
                return Err(ToolError::Validation(
                    "No changes to make: old_string and new_string are exactly the same.".into(),
                ));
            }
            if path.extension().is_some_and(|e| e == "ipynb") {
                return Err(ToolError::Validation(
                    "File is a Jupyter Notebook. Use the NotebookEdit to edit this file.".into(),
                ));
            }
            let current = match std::fs::read(&path) {
                Ok(c) => c,
                Err(_) if args.old_string.is_empty() => {
                    write_and_remember(ctx, &path, &args.new_string)?;
                    return Ok(ToolOutput::Text(updated(&path)));
                }
                Err(_) => return Err(ToolError::Validation(missing_file(ctx))),
            };
            if args.old_string.is_empty() && !current.is_empty() {
                return Err(ToolError::Validation("Cannot create new file - file already exists.".into()));
            }
            check_write_gates(ctx, &path, &current)?;
            let text = String::from_utf8(current.clone()).map_err(|_| {
                ToolError::Runtime("The file is not valid UTF-8 text; Edit only changes text files.".into())
            })?;
            let new_text = replace(&text, &args.old_string, &args.new_string, args.replace_all)?;
            checkpoint(ctx, &path, &current)?;
            write_and_remember(ctx, &path, &new_text)?;
            if args.replace_all {
                return Ok(ToolOutput::Text(format!(
                    "The file {} has been updated. All occurrences were successfully replaced.{FILE_STATE_NOTE}",
                    path.display()
                )));
            }
            Ok(ToolOutput::Text(updated(&path)))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unique_exact_replacement() {
        assert_eq!(replace("a b a", "b", "c", false).ok(), Some("a c a".to_string()));
        assert_eq!(replace("a b a", "a", "x", true).ok(), Some("x b x".to_string()));
        let e = replace("a b a", "a", "x", false).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(e.starts_with("Found 2 matches of the string to replace, but replace_all is false."), "{e}");
        assert!(e.ends_with("\nString: a"));
        let e = replace("abc", "nomatch", "x", false).err().map(|e| e.to_string()).unwrap_or_default();
        assert_eq!(e, "String to replace not found in file.\nString: nomatch");
    }
}
