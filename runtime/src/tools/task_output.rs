//! TaskOutput and TaskStop (TOUT-1): read a background task's output (block default true, timeout at
//! most 600,000 ms, default 30,000) and end one (task_id, legacy shell_id), over the session's task
//! registry ([`crate::background`]). Texts follow what Claude Code 2.1.235 sends (measured by
//! `probes/claude-code/bash-*.toml`): the `<retrieval_status>…` blocks of TaskOutput, the JSON of
//! TaskStop, `No task found with ID: …`.

use crate::background::{shown_output, Status};
use crate::context::ToolContext;
use crate::profile::Switch;
use crate::tool::{ToolError, ToolOutput, TypedTool};
use serde::Deserialize;
use serde_json::{json, Value};

/// From 2.1.277 Claude Code offers no TaskOutput (TaskStop stays): a call is answered as an unavailable
/// tool, `Error: No such tool available: TaskOutput` ([`crate::builtin::pool`] leaves it out; measured by
/// `bash.task-forgotten`, the timeline's TOUT-1 / BG-1 entries 2.1.276 → 2.1.277).
pub const TASK_OUTPUT_LEAVES: Switch =
    Switch { name: "TaskOutput leaves the tool list", since: "2.1.277", probe: "bash.task-forgotten" };

/// TaskOutput's name.
pub const TASK_OUTPUT: &str = "TaskOutput";
/// TaskOutput's default wait (TOUT-1).
pub const TASK_OUTPUT_DEFAULT_TIMEOUT_MS: u64 = 30_000;
/// TaskOutput's longest wait (TOUT-1).
pub const TASK_OUTPUT_MAX_TIMEOUT_MS: u64 = 600_000;
fn no_task(id: &str) -> ToolError {
    ToolError::Validation(format!("No task found with ID: {id}"))
}

/// The TaskOutput tool (TOUT-1).
#[derive(Debug, Default)]
pub struct TaskOutput;

#[derive(Debug, Deserialize)]
pub struct OutputArgs {
    task_id: String,
    #[serde(default)]
    block: Option<bool>,
    #[serde(default)]
    timeout: Option<u64>,
}

impl TypedTool for TaskOutput {
    const NAME: &'static str = TASK_OUTPUT;
    const DESCRIPTION: &'static str = "Retrieves the output of a background task (a command run with run_in_background).\n\n- block (default true) waits for the task to finish, at most `timeout` ms (default 30000, max 600000)\n- block=false returns at once with the current status\n- Empty output is not a failure, and a \"success\" line in a log is not completion: read the status";
    const READ_ONLY: bool = true;
    type Args = OutputArgs;

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "task_id": {"type": "string", "description": "The task ID to get output from"},
                "block": {"type": "boolean", "default": true, "description": "Whether to wait for completion"},
                "timeout": {"type": "number", "minimum": 0, "maximum": TASK_OUTPUT_MAX_TIMEOUT_MS, "default": TASK_OUTPUT_DEFAULT_TIMEOUT_MS, "description": "Max wait time in ms"}
            },
            "required": ["task_id"],
            "additionalProperties": false,
            "$schema": "http://json-schema.org/draft-07/schema#"
        })
    }

    async fn call(&self, args: OutputArgs, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let tasks = &ctx.shell.tasks;
        let t = tasks.known(&args.task_id).ok_or_else(|| no_task(&args.task_id))?;
        let timeout = args.timeout.unwrap_or(TASK_OUTPUT_DEFAULT_TIMEOUT_MS).min(TASK_OUTPUT_MAX_TIMEOUT_MS);
        let (t, retrieval) = if t.status != Status::Running {
            (t, "success")
        } else if !args.block.unwrap_or(true) {
            (t, "not_ready")
        } else {
            let t = tasks.wait(&args.task_id, timeout).await.unwrap_or(t);
            let r = if t.status == Status::Running { "timeout" } else { "success" };
            (t, r)
        };
        let agent = tasks.agent_result(&t.id);
        let workflow = tasks.workflow_end(&t.id);
        let mut text = format!(
            "<retrieval_status>{retrieval}</retrieval_status>\n\n<task_id>{}</task_id>\n\n<task_type>{}</task_type>\n\n<status>{}</status>",
            t.id,
            tasks.task_type(&t.id),
            t.status.word()
        );
        if let Some(c) = t.exit_code {
            text.push_str(&format!("\n\n<exit_code>{c}</exit_code>"));
        }
        match (&agent, t.status != Status::Running) {
            // a Workflow run: its progress report once completed, nothing otherwise (measured)
            _ if workflow.is_some() => {
                if let Some(report) =
                    workflow.flatten().and_then(|w| w.report).filter(|_| t.status == Status::Completed)
                {
                    text.push_str(&format!("\n\n<output>\n{report}\n</output>"));
                }
            }
            (Some(result), true) => {
                text.push_str(&format!("\n\n<output>\n{}\n</output>", result.as_deref().unwrap_or("")))
            }
            (None, true) => text.push_str(&format!("\n\n<output>\n{}\n</output>", shown_output(&t))),
            _ => {}
        }
        if t.status != Status::Running {
            tasks.retire(&t.id);
        }
        let data = json!({"retrieval_status": retrieval, "task_id": t.id, "status": t.status.word(), "exit_code": t.exit_code, "output_file": t.output_file});
        Ok(ToolOutput::Data { text, data })
    }
}

/// The TaskStop tool.
#[derive(Debug, Default)]
pub struct TaskStop;

#[derive(Debug, Deserialize)]
pub struct StopArgs {
    #[serde(default)]
    task_id: Option<String>,
    #[serde(default)]
    shell_id: Option<String>,
}

impl TypedTool for TaskStop {
    const NAME: &'static str = "TaskStop";
    const DESCRIPTION: &'static str = "Stops a running background task by its ID (kills its whole process group).";
    type Args = StopArgs;

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "task_id": {"type": "string", "description": "The ID of the background task to stop"},
                "shell_id": {"type": "string", "description": "Deprecated: use task_id instead"}
            },
            "additionalProperties": false,
            "$schema": "http://json-schema.org/draft-07/schema#"
        })
    }

    async fn call(&self, args: StopArgs, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let Some(id) = args.task_id.or(args.shell_id) else {
            return Err(ToolError::Validation("Missing required parameter: task_id".into()));
        };
        let tasks = &ctx.shell.tasks;
        let t = tasks.known(&id).ok_or_else(|| no_task(&id))?;
        if t.status != Status::Running {
            return Err(ToolError::Validation(format!("Task {id} is not running (status: {})", t.status.word())));
        }
        tasks.stop(&id);
        // the runner reports the end once the group is gone
        tasks.wait(&id, 10_000).await;
        tasks.retire(&id);
        let v = json!({"message": format!("Successfully stopped task: {id} ({})", t.command), "task_id": id, "task_type": tasks.task_type(&id), "command": t.command});
        Ok(ToolOutput::Data { text: v.to_string(), data: v })
    }
}
