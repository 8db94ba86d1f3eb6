//! Write: creates or overwrites a file. Over an existing file it passes the read gate (EDIT-1) and the
//! stale gate (EDIT-2) and leaves a file-history checkpoint (EDIT-6).

use crate::context::ToolContext;
use crate::fs::{
    check_overwrite_gates, checkpoint, confine_write, trim_line_ends, updated, write_and_remember, FILE_STATE_NOTE,
};
use crate::profile::Switch;
use crate::tool::{PermissionSubject, ToolError, ToolOutput, TypedTool};
use serde::Deserialize;
use serde_json::{json, Value};

/// From 2.1.277 a Write to a directory says it is one (it was refused as never read before; measured by
/// `probes/write/errors.toml`: timeline EDIT-1, 2.1.276 → 2.1.277).
pub const DIRECTORY_NAMED: Switch =
    Switch { name: "a Write to a directory says it is a directory", since: "2.1.277", probe: "write.errors" };

/// The Write tool.
#[derive(Debug, Default)]
pub struct Write;

#[derive(Debug, Deserialize)]
pub struct Args {
    file_path: String,
    content: String,
}

impl TypedTool for Write {
    const NAME: &'static str = "Write";
    const DESCRIPTION: &'static str = "Writes a file to the local filesystem.\n\nUsage:\n- This tool will overwrite the existing file if there is one at the provided path.\n- If this is an existing file, you MUST use the Read tool first to read the file's contents. This tool will fail if you did not read the file first.\n- The file_path parameter must be an absolute path.";
    type Args = Args;

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "file_path": {"type": "string", "description": "The absolute path to the file to write (must be absolute, not relative)"},
                "content": {"type": "string", "description": "The content to write to the file"}
            },
            "required": ["file_path", "content"],
            "additionalProperties": false,
            "$schema": "http://json-schema.org/draft-07/schema#"
        })
    }

    fn permission_subject(&self, input: &Value, ctx: &ToolContext) -> PermissionSubject {
        crate::fs::path_subject(input, "file_path", true, ctx)
    }

    fn denied(&self, subject: &PermissionSubject, rule: &str, ctx: &ToolContext) -> Option<ToolError> {
        crate::fs::write_denied(ctx, Self::NAME, subject, rule, "written")
    }

    async fn call(&self, args: Args, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        {
            let path = confine_write(ctx, &args.file_path)?;
            if path.is_dir() {
                // measured on 2.1.235: a directory is never read, so the read gate refuses it first;
                // from 2.1.277 it is named a directory
                if ctx.profile().has(&DIRECTORY_NAMED) {
                    return Err(ToolError::Validation(format!(
                        "{} is a directory, not a file. To create a file inside it, include the file name in file_path.",
                        path.display()
                    )));
                }
                return Err(ToolError::Validation(crate::fs::NOT_READ_YET.into()));
            }
            // the reference trims the content's line ends (not in Markdown files)
            let content = trim_line_ends(&path, &args.content);
            match std::fs::read(&path) {
                Ok(current) => {
                    check_overwrite_gates(ctx, &path, &current)?;
                    // from 2.1.296 / 2.1.299 a file that is not text is refused (`crate::encoding`)
                    if let Some(refusal) = crate::encoding::write_refusal(ctx, &current, &content) {
                        return Err(ToolError::Runtime(refusal));
                    }
                    checkpoint(ctx, &path, &current)?;
                    let old = String::from_utf8_lossy(&current);
                    let content = crate::encoding::keep_bom(ctx, &old, &content);
                    write_and_remember(ctx, &path, &content)?;
                    // the reference tells an update from a creation by the old content: an empty file
                    // counts as created
                    if crate::fs::TextFile::decode(&current).text.is_empty() {
                        return Ok(ToolOutput::Text(created(&args.file_path)));
                    }
                    Ok(ToolOutput::Text(updated(&path)))
                }
                // measured on 2.1.235 (`probes/write/errors.toml`): a parent that is a file fails the
                // reference's stat of the path, shown as Node's error in its generic wrapper
                Err(e) if e.raw_os_error() == Some(nix::libc::ENOTDIR) => Err(ToolError::Validation(format!(
                    "Error calling tool (Write): ENOTDIR: not a directory, stat '{}'",
                    path.display()
                ))),
                Err(_) => {
                    write_and_remember(ctx, &path, &content)?;
                    Ok(ToolOutput::Text(created(&args.file_path)))
                }
            }
        }
    }
}

/// The text of a Write that made a file: the path as the call gave it (measured: `rel.txt` stays
/// relative).
fn created(file_path: &str) -> String {
    format!("File created successfully at: {file_path}{FILE_STATE_NOTE}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_directory_is_named_from_2_1_277() {
        for (version, named) in [("2.1.235", false), ("2.1.276", false), ("2.1.277", true), ("2.1.333", true)] {
            let (_d, c) = ToolContext::for_test();
            let c = c.with_profile(crate::profile::Profile::at(version).unwrap_or_else(|e| panic!("{e}")));
            let dir = c.cwd.join("dir");
            std::fs::create_dir(&dir).unwrap_or_else(|e| panic!("{e}"));
            let rt =
                tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap_or_else(|e| panic!("{e}"));
            let r = rt.block_on(crate::tool::Tool::call(&Write, json!({"file_path": dir, "content": "x"}), &c));
            let want = if named {
                format!(
                    "{} is a directory, not a file. To create a file inside it, include the file name in file_path.",
                    dir.display()
                )
            } else {
                crate::fs::NOT_READ_YET.to_string()
            };
            assert_eq!(r.err(), Some(ToolError::Validation(want)), "{version}");
        }
    }
}
