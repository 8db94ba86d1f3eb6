//! EnterPlanMode / ExitPlanMode (PLAN-1) and the session's permission mode.
//!
//! EnterPlanMode (no parameters) puts the session in plan mode. From then on only read-only calls run
//! (PIPE-4's flag of the tool for its input), plus writes to the session's plan file
//! (`<home>/.claude/plans/<session id>.md`, which the reference also leaves writable) and ExitPlanMode
//! itself; any other call gets an is_error result ([`refusal`], checked by the pipeline after the hooks
//! and before the permission rules) and has no side effect. ExitPlanMode submits the plan — its `plan`
//! (the reference's schema lets extra keys through; its own client injects `plan` from the plan file),
//! else the plan file — and waits for the host's verdict (`[host] plan`, see [`crate::tools::host`]):
//! approved → back to the default mode, the plan saved to the plan file and echoed; refused (with or
//! without feedback) or never answered → the call is rejected (is_error) and the session stays in plan
//! mode. `allowedPrompts` is accepted and recorded but authorises nothing: the reference marks it
//! "Deprecated: no longer used", and PLAN-1 says nothing is authorised without approval.
//!
//! Tool surface (decision): in the default mode the model sees EnterPlanMode and not ExitPlanMode; in
//! plan mode, ExitPlanMode and not EnterPlanMode ([`visible`], applied per request by
//! `Runtime::api_tools`). A call to the hidden one still gets a clear answer: ExitPlanMode outside plan
//! mode gets the reference's "You are not in plan mode" error, EnterPlanMode inside it "Already in plan
//! mode". Entering needs no approval here (the reference asks the user unless permissions are bypassed,
//! the way the built-in runtime allows by default).
//!
//! Claude Code 2.1.235 has neither tool in `-p` runs (not with `--allowedTools`/`--tools`), and
//! `--permission-mode plan` beside the runner's `--dangerously-skip-permissions` leaves writes allowed
//! (`probes/claude-code/ask-plan-absent.toml`). Schemas and texts are the binary's own (its embedded
//! tool definitions), not measured on a run; the refusal text of a non-read-only call in plan mode is ours.

use crate::context::ToolContext;
use crate::tool::{PermissionSubject, Tool, ToolError, ToolOutput, TypedTool};
use serde_json::{json, Value};
use std::path::PathBuf;
use std::sync::Mutex;

/// The name of the tool that enters plan mode.
pub const ENTER_PLAN_MODE: &str = "EnterPlanMode";
/// The name of the tool that submits the plan.
pub const EXIT_PLAN_MODE: &str = "ExitPlanMode";

/// What the reference answers a refused plan with feedback; the feedback follows (PLAN-1).
pub const REJECTED_WITH_FEEDBACK: &str = "The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it was a file edit, the new_string was NOT written to the file). To tell you how to proceed, the user said:\n";

/// A permission mode of the session.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Mode {
    /// Tools run as the rules say.
    #[default]
    Default,
    /// Only read-only tools run (PLAN-1).
    Plan,
}

/// The session's permission mode.
#[derive(Debug, Default)]
pub struct ModeState {
    mode: Mutex<Mode>,
}

impl ModeState {
    /// The current mode.
    pub fn get(&self) -> Mode {
        *self.mode.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Sets the mode.
    pub fn set(&self, mode: Mode) {
        *self.mode.lock().unwrap_or_else(|p| p.into_inner()) = mode;
    }
}

/// The session's plan file.
pub fn plan_file(ctx: &ToolContext) -> PathBuf {
    ctx.home.join(".claude").join("plans").join(format!("{}.md", ctx.session_id))
}

/// Whether the model sees the tool `name` in this mode (the plan-mode pair swaps; the rest stays).
pub fn visible(mode: Mode, name: &str) -> bool {
    match name {
        ENTER_PLAN_MODE => mode == Mode::Default,
        EXIT_PLAN_MODE => mode == Mode::Plan,
        _ => true,
    }
}

/// The refusal of a call in plan mode (PLAN-1), or `None` when it may run: read-only calls,
/// ExitPlanMode, and writes to the plan file run; nothing else does.
pub fn refusal(ctx: &ToolContext, tool: &dyn Tool, input: &Value) -> Option<String> {
    if ctx.session.state::<ModeState>().get() != Mode::Plan || tool.is_read_only(input) || tool.name() == EXIT_PLAN_MODE
    {
        return None;
    }
    let plan = plan_file(ctx);
    if let PermissionSubject::WritePath(p) = tool.permission_subject(input, ctx) {
        if crate::fs::absolute(ctx, &p.to_string_lossy()) == plan {
            return None;
        }
    }
    Some(format!(
        "Plan mode is active: {} is not read-only, so it was not run and nothing was changed. In plan mode only read-only tools run (and writes to the plan file {}); call {EXIT_PLAN_MODE} to submit the plan for approval.",
        tool.name(),
        plan.display()
    ))
}

const ENTER_DESCRIPTION: &str = "Use this tool proactively when you're about to start a non-trivial implementation task. Getting user sign-off on your approach before writing code prevents wasted effort and ensures alignment. This tool transitions you into plan mode where you can explore the codebase and design an implementation approach for user approval.

## When to Use This Tool

**Prefer using EnterPlanMode** for implementation tasks unless they're simple. Use it when ANY of these conditions apply:

1. **New Feature Implementation**: Adding meaningful new functionality
   - Example: \"Add a logout button\" - where should it go? What should happen on click?
   - Example: \"Add form validation\" - what rules? What error messages?

2. **Multiple Valid Approaches**: The task can be solved in several different ways
   - Example: \"Add caching to the API\" - could use Redis, in-memory, file-based, etc.
   - Example: \"Improve performance\" - many optimization strategies possible

3. **Code Modifications**: Changes that affect existing behavior or structure
   - Example: \"Update the login flow\" - what exactly should change?
   - Example: \"Refactor this component\" - what's the target architecture?

4. **Architectural Decisions**: The task requires choosing between patterns or technologies
   - Example: \"Add real-time updates\" - WebSockets vs SSE vs polling
   - Example: \"Implement state management\" - Redux vs Context vs custom solution

5. **Multi-File Changes**: The task will likely touch more than 2-3 files
   - Example: \"Refactor the authentication system\"
   - Example: \"Add a new API endpoint with tests\"

6. **Unclear Requirements**: You need to explore before understanding the full scope
   - Example: \"Make the app faster\" - need to profile and identify bottlenecks
   - Example: \"Fix the bug in checkout\" - need to investigate root cause

7. **User Preferences Matter**: The implementation could reasonably go multiple ways
   - If you would use AskUserQuestion to clarify the approach, use EnterPlanMode instead
   - Plan mode lets you explore first, then present options with context

## When NOT to Use This Tool

Only skip EnterPlanMode for simple tasks:
- Single-line or few-line fixes (typos, obvious bugs, small tweaks)
- Adding a single function with clear requirements
- Tasks where the user has given very specific, detailed instructions
- Pure research/exploration tasks

## What Happens in Plan Mode

In plan mode, you'll:
1. Thoroughly explore the codebase using Glob, Grep, and Read
2. Understand existing patterns and architecture
3. Design an implementation approach
4. Present your plan to the user for approval
5. Use AskUserQuestion if you need to clarify approaches
6. Exit plan mode with ExitPlanMode when ready to implement

## Important Notes

- This tool REQUIRES user approval - they must consent to entering plan mode
- If unsure whether to use it, err on the side of planning - it's better to get alignment upfront than to redo work
- Users appreciate being consulted before significant changes are made to their codebase
";

/// The result text of EnterPlanMode (the reference's).
pub const ENTERED: &str =
    "Entered plan mode. You should now focus on exploring the codebase and designing an implementation approach.

In plan mode, you should:
1. Thoroughly explore the codebase to understand existing patterns
2. Identify similar features and architectural approaches
3. Consider multiple approaches and their trade-offs
4. Use AskUserQuestion if you need to clarify the approach
5. Design a concrete implementation strategy
6. When ready, use ExitPlanMode to present your plan for approval

Remember: DO NOT write or edit any files yet. This is a read-only exploration and planning phase.";

/// ExitPlanMode outside plan mode (the reference's validation error).
pub const NOT_IN_PLAN_MODE: &str = "You are not in plan mode. To enter plan mode, call the EnterPlanMode tool first. If your plan was already approved, continue with implementation.";

/// EnterPlanMode.
#[derive(Debug, Clone, Copy, Default)]
pub struct EnterPlanMode;

impl TypedTool for EnterPlanMode {
    const NAME: &'static str = ENTER_PLAN_MODE;
    const DESCRIPTION: &'static str = ENTER_DESCRIPTION;
    const READ_ONLY: bool = true;
    const CONCURRENCY_SAFE: bool = true;
    type Args = serde::de::IgnoredAny;

    fn is_visible(&self, ctx: &ToolContext) -> bool {
        visible(ctx.session.state::<ModeState>().get(), ENTER_PLAN_MODE)
    }

    fn input_schema(&self) -> Value {
        json!({"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object", "properties": {}, "additionalProperties": false})
    }

    async fn call(&self, _args: serde::de::IgnoredAny, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        if ctx.session.state::<ModeState>().get() == Mode::Plan {
            return Err(ToolError::Validation(format!(
                "Already in plan mode. Call {EXIT_PLAN_MODE} to submit the plan for approval."
            )));
        }
        ctx.session.state::<ModeState>().set(Mode::Plan);
        Ok(ToolOutput::Text(ENTERED.into()))
    }
}

const EXIT_DESCRIPTION: &str = "Use this tool when you are in plan mode and have finished writing your plan to the plan file and are ready for user approval.

## How This Tool Works
- You should have already written your plan to the plan file specified in the plan mode system message
- This tool does NOT take the plan content as a parameter - it will read the plan from the file you wrote
- This tool simply signals that you're done planning and ready for the user to review and approve
- The user will see the contents of your plan file when they review it

## When to Use This Tool
IMPORTANT: Only use this tool when the task requires planning the implementation steps of a task that requires writing code. For research tasks where you're gathering information, searching files, reading files or in general trying to understand the codebase - do NOT use this tool.

## Before Using This Tool
Ensure your plan is complete and unambiguous:
- If you have unresolved questions about requirements or approach, use AskUserQuestion first (in earlier phases)
- Once your plan is finalized, use THIS tool to request approval

**Important:** Do NOT use AskUserQuestion to ask \"Is this plan okay?\" or \"Should I proceed?\" - that's exactly what THIS tool does. ExitPlanMode inherently requests user approval of your plan.

## Examples

1. Initial task: \"Search for and understand the implementation of vim mode in the codebase\" - Do not use the exit plan mode tool because you are not planning the implementation steps of a task.
2. Initial task: \"Help me implement yank mode for vim\" - Use the exit plan mode tool after you have finished planning the implementation steps of the task.
3. Initial task: \"Add a new feature to handle user authentication\" - If unsure about auth method (OAuth, JWT, etc.), use AskUserQuestion first, then use exit plan mode tool after clarifying the approach.
";

/// The text of an approved plan (the reference's).
pub fn approved_text(plan: Option<&str>, file: &std::path::Path) -> String {
    match plan.filter(|p| !p.trim().is_empty()) {
        None => "User has approved exiting plan mode. You can now proceed.".into(),
        Some(p) => format!(
            "User has approved your plan. You can now start coding. Start with updating your todo list if applicable\n\nYour plan has been saved to: {}\nYou can refer back to it if needed during implementation.\n\n## Approved Plan:\n{p}",
            file.display()
        ),
    }
}

/// ExitPlanMode.
#[derive(Debug, Clone, Copy, Default)]
pub struct ExitPlanMode;

impl TypedTool for ExitPlanMode {
    const NAME: &'static str = EXIT_PLAN_MODE;
    const DESCRIPTION: &'static str = EXIT_DESCRIPTION;
    const CONCURRENCY_SAFE: bool = true;
    type Args = Value;

    fn is_visible(&self, ctx: &ToolContext) -> bool {
        visible(ctx.session.state::<ModeState>().get(), EXIT_PLAN_MODE)
    }

    fn input_schema(&self) -> Value {
        json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "properties": {
                "allowedPrompts": {
                    "description": "Deprecated: no longer used.",
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "tool": {"description": "The tool this prompt applies to", "type": "string", "enum": ["Bash"]},
                            "prompt": {"description": "Semantic description of the action, e.g. \"run tests\", \"install dependencies\"", "type": "string"}
                        },
                        "required": ["tool", "prompt"],
                        "additionalProperties": false
                    }
                }
            },
            "additionalProperties": {}
        })
    }

    async fn call(&self, input: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        if ctx.session.state::<ModeState>().get() != Mode::Plan {
            return Err(ToolError::Validation(NOT_IN_PLAN_MODE.into()));
        }
        let file = plan_file(ctx);
        let plan = match input.get("plan").and_then(Value::as_str) {
            Some(p) => Some(p.to_string()),
            None => std::fs::read_to_string(&file).ok(),
        };
        let reply = ctx.session.state::<crate::tools::host::HostScript>().next_plan().cloned();
        match reply {
            Some(r) if r.approve => {
                if let Some(p) = plan.as_deref().filter(|p| !p.trim().is_empty()) {
                    crate::nofollow::write(&ctx.roots, &file, p.as_bytes())
                        .map_err(|e| ToolError::Runtime(format!("Cannot save the plan to {}: {e}", file.display())))?;
                }
                ctx.session.state::<ModeState>().set(Mode::Default);
                Ok(ToolOutput::Data {
                    text: approved_text(plan.as_deref(), &file),
                    data: json!({"plan": plan, "isAgent": false, "filePath": file, "allowedPrompts": input.get("allowedPrompts")}),
                })
            }
            Some(r) if r.feedback.as_deref().is_some_and(|f| !f.is_empty()) => {
                Err(ToolError::Runtime(format!("{REJECTED_WITH_FEEDBACK}{}", r.feedback.unwrap_or_default())))
            }
            _ => Err(ToolError::Runtime(crate::settings::REJECTED.into())),
        }
    }
}

/// Plan mode's gate as an extension of the session (PLAN-1): in plan mode only read-only calls, the
/// plan file and ExitPlanMode run ([`refusal`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct Gate;

impl crate::pipeline::Extension for Gate {
    fn refuse(&self, ctx: &ToolContext, tool: &dyn Tool, input: &Value) -> Option<String> {
        refusal(ctx, tool, input)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn surface_swaps_with_the_mode() {
        assert!(visible(Mode::Default, ENTER_PLAN_MODE) && !visible(Mode::Default, EXIT_PLAN_MODE));
        assert!(!visible(Mode::Plan, ENTER_PLAN_MODE) && visible(Mode::Plan, EXIT_PLAN_MODE));
        assert!(visible(Mode::Plan, "Read"));
    }

    #[test]
    fn approved_texts() {
        let f = std::path::Path::new("/h/.claude/plans/s.md");
        assert_eq!(approved_text(None, f), "User has approved exiting plan mode. You can now proceed.");
        assert!(approved_text(Some("1. x"), f).ends_with("Your plan has been saved to: /h/.claude/plans/s.md\nYou can refer back to it if needed during implementation.\n\n## Approved Plan:\n1. x"));
    }
}
