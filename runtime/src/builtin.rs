//! The composition root: the only place that names every tool. It builds the pool of a session
//! ([`registry`], [`pool`]), puts each tool's configured state into the session ([`SessionConfig`] →
//! [`start`]), installs the extensions that take part in the pipeline and the loop, and builds the
//! runtime of a sub-agent for the Agent tool ([`Builtin`] as the session's `agent_tool::Composer`) —
//! one composition for the lab's run and for sub-agents alike. [`shutdown`] ends what a session started.

use crate::context::ToolContext;
use crate::model::Model;
use crate::permissions::RuleError;
use crate::pipeline::{Extension, Runtime};
use crate::profile::Profile;
use crate::registry::Registry;
use crate::session::Session;
use crate::settings::{env_flag, AskAnswer, Settings};
use crate::tools::{
    agent_tool, apply_patch, artifact, ask, bash, cron, edit, glob, grep, host, lsp, mcp, notebook_edit, plan_mode,
    read, send_message, skill, task_list, task_output, todo_write, tool_search, web_fetch, web_search, workflow,
    worktree, write,
};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

/// Turns the Task* family on instead of nothing (as on Claude Code 2.1.235, where the task tools are
/// off by default in `-p` runs; TODO-1, TASK-1).
pub const ENV_ENABLE_TODO_TOOLS: &str = "CLAUDE_CODE_ENABLE_TODO_TOOLS";
/// `0` with the todo flag on: TodoWrite instead of the Task* family (TODO-1: the two are exclusive).
pub const ENV_ENABLE_TASKS: &str = "CLAUDE_CODE_ENABLE_TASKS";
/// Removes the cron surface (CRON-5).
pub const ENV_DISABLE_CRON: &str = "CLAUDE_CODE_DISABLE_CRON";
/// The Task* family (TASK-1..5).
pub const TASK_TOOLS: &[&str] = &["TaskCreate", "TaskGet", "TaskList", "TaskUpdate"];
/// The todo list tool (TODO-1).
pub const TODO_TOOL: &str = "TodoWrite";
/// The cron surface (CRON-1..5).
pub const CRON_TOOLS: &[&str] = &["CronCreate", "CronDelete", "CronList"];

/// Tools whose absence Claude Code 2.1.235 explains as "… is disabled for this session, in subagents as
/// well as here." (PIPE-3), as measured: the cron tools under `CLAUDE_CODE_DISABLE_CRON`
/// (`claude-code.cron-disabled`), AskUserQuestion and the plan-mode pair in `-p` runs
/// (`claude-code.ask-plan-absent`), Agent past the nesting cap (`agent.nesting`), LSP before a server
/// is up (`claude-code.lsp-roundtrip`). A switched-off TaskCreate and ToolSearch get the plain text
/// (`tasks.todo-write`, `tool-search.off`).
pub const DISABLED_NOTICE_TOOLS: &[&str] =
    &["Agent", "AskUserQuestion", "CronCreate", "CronDelete", "CronList", "EnterPlanMode", "ExitPlanMode", "LSP"];

/// [`DISABLED_NOTICE_TOOLS`] of a session with this env at this profile: without LSP where the release
/// withholds the tool ([`lsp::withheld`]: 2.1.242 answers a call with the plain `Error: No such tool
/// available: LSP`, `lsp.no-server` and `claude-code.lsp-roundtrip`).
pub fn disabled_notice_tools(env: &BTreeMap<String, String>, profile: Profile) -> Vec<&'static str> {
    let lsp_withheld = lsp::withheld(env, profile);
    DISABLED_NOTICE_TOOLS.iter().copied().filter(|t| !(lsp_withheld && *t == lsp::LSP_TOOL)).collect()
}

/// Every built-in tool of the runtime.
pub fn registry() -> Registry {
    Registry::from_tools(vec![
        Arc::new(read::Read),
        Arc::new(write::Write),
        Arc::new(edit::Edit),
        Arc::new(notebook_edit::NotebookEdit),
        Arc::new(grep::Grep),
        Arc::new(glob::Glob),
        Arc::new(bash::Bash),
        Arc::new(task_output::TaskOutput),
        Arc::new(task_output::TaskStop),
        Arc::new(task_list::TaskCreate),
        Arc::new(task_list::TaskGet),
        Arc::new(task_list::TaskList),
        Arc::new(task_list::TaskUpdate),
        Arc::new(todo_write::TodoWrite),
        Arc::new(cron::CronCreate),
        Arc::new(cron::CronDelete),
        Arc::new(cron::CronList),
        Arc::new(agent_tool::Agent),
        Arc::new(send_message::SendMessage),
        Arc::new(ask::AskUserQuestion),
        Arc::new(lsp::Lsp),
        Arc::new(plan_mode::EnterPlanMode),
        Arc::new(plan_mode::ExitPlanMode),
        Arc::new(worktree::EnterWorktree),
        Arc::new(worktree::ExitWorktree),
        Arc::new(workflow::Workflow),
        Arc::new(skill::Skill),
        Arc::new(tool_search::ToolSearch),
        Arc::new(artifact::Artifact),
        Arc::new(apply_patch::ApplyPatch),
        Arc::new(web_fetch::WebFetch),
        Arc::new(web_search::WebSearch),
    ])
}

/// The pool of a session with this env at this profile: [`registry`] less what the env switches off and
/// what the profile's release does not offer (TaskOutput from 2.1.277: [`task_output::TASK_OUTPUT_LEAVES`];
/// LSP on 2.1.242 without `ENABLE_LSP_TOOL`: [`lsp::withheld`]; ToolSearch is on by default from 2.1.304:
/// [`tool_search::TOOL_SEARCH_BY_DEFAULT`]). The Task* family
/// appears with [`ENV_ENABLE_TODO_TOOLS`]; with [`ENV_ENABLE_TASKS`]`=0` as well, TodoWrite appears
/// instead (never both: TODO-1); [`ENV_DISABLE_CRON`] removes the cron tools; ToolSearch is there only
/// with `ENABLE_TOOL_SEARCH` or the profile's default (TS-1); Artifact only with `PROBELAB_ENABLE_ARTIFACT` (ART-1) and
/// apply_patch only with `PROBELAB_ENABLE_APPLY_PATCH` (PATCH-1: optional, off by default).
pub fn pool(env: &BTreeMap<String, String>, profile: Profile) -> Registry {
    let mut r = registry();
    let todo_flag = env_flag(env, ENV_ENABLE_TODO_TOOLS) == Some(true);
    let tasks_off = env_flag(env, ENV_ENABLE_TASKS) == Some(false);
    let cron_off = env_flag(env, ENV_DISABLE_CRON) == Some(true);
    let tool_search = tool_search::enabled(env, profile);
    let task_output = !profile.has(&task_output::TASK_OUTPUT_LEAVES);
    let lsp_withheld = lsp::withheld(env, profile);
    r.retain(|name| {
        if TASK_TOOLS.contains(&name) {
            todo_flag && !tasks_off
        } else if name == TODO_TOOL {
            todo_flag && tasks_off
        } else if CRON_TOOLS.contains(&name) {
            !cron_off
        } else if name == task_output::TASK_OUTPUT {
            task_output
        } else if name == lsp::LSP_TOOL {
            !lsp_withheld
        } else if name == tool_search::TOOL_SEARCH {
            tool_search
        } else if name == artifact::ARTIFACT {
            env_flag(env, artifact::ENV_ENABLE_ARTIFACT) == Some(true)
        } else if name == apply_patch::APPLY_PATCH {
            env_flag(env, apply_patch::ENV_ENABLE_APPLY_PATCH) == Some(true)
        } else {
            true
        }
    });
    if profile == Profile::reference() {
        return r;
    }
    // a version profile offers the tools' texts of its release and the tools it offers that the runtime
    // does not perform (crate::tool_texts); the reference keeps the runtime's own (golden/builtin/)
    let offered: Vec<Arc<dyn crate::tool::Tool>> = crate::tool_texts::OFFERED_ONLY
        .iter()
        .filter_map(|n| crate::tool_texts::Offered::at(n, profile))
        .map(|t| Arc::new(t) as Arc<dyn crate::tool::Tool>)
        .collect();
    let r = r.with_mcp(offered);
    let texts = r
        .names()
        .into_iter()
        .filter_map(|n| crate::tool_texts::at(n, profile).map(|t| (n, (t.description.clone(), t.input_schema.clone()))))
        .collect();
    r.with_texts(texts)
}

/// The pool of a sub-agent of `kind` at `depth`: the session's pool less what the type may not have, and
/// less Agent at `agent_tool::MAX_AGENT_DEPTH`.
pub fn child_pool(
    env: &BTreeMap<String, String>,
    profile: Profile,
    kind: &agent_tool::AgentType,
    depth: usize,
) -> Registry {
    let mut r = pool(env, profile);
    r.retain(|n| {
        (kind.only.is_empty() || kind.only.contains(&n))
            && !kind.without.contains(&n)
            && !(n == agent_tool::AGENT && depth >= agent_tool::MAX_AGENT_DEPTH)
    });
    r
}

/// The extensions of a session over `pool`, in the order they act: tool search (when ToolSearch is in
/// the pool: its announcement comes first in the first request), the skill listing (when Skill is),
/// the LSP tool's request count (when LSP is), plan mode's gate, and the cron clock and its idle jobs.
pub fn extensions(pool: &Registry) -> Vec<Arc<dyn Extension>> {
    let mut out: Vec<Arc<dyn Extension>> = Vec::new();
    if pool.get(tool_search::TOOL_SEARCH).is_some() {
        out.push(Arc::new(tool_search::Deferral));
    }
    if pool.get(skill::SKILL).is_some() {
        out.push(Arc::new(skill::Listing));
    }
    if pool.get(lsp::LSP_TOOL).is_some() {
        out.push(Arc::new(lsp::Offer));
    }
    out.push(Arc::new(plan_mode::Gate));
    out.push(Arc::new(cron::Scheduler));
    out
}

/// What a session is started with (the lab's probe, resolved): where it runs, its settings and env, its
/// model, and the configuration of the tools that need one.
#[derive(Clone, Default)]
pub struct SessionConfig {
    /// Working directory.
    pub cwd: PathBuf,
    /// HOME.
    pub home: PathBuf,
    /// Roots a tool may touch (canonical).
    pub roots: Vec<PathBuf>,
    /// Session id.
    pub session_id: String,
    /// Environment of the session (its switches: `CLAUDE_CODE_…`).
    pub env: BTreeMap<String, String>,
    /// Settings (permissions, hooks, sandbox).
    pub settings: Settings,
    /// How the host answers asks.
    pub ask: AskAnswer,
    /// The session's Messages API (also its token counter).
    pub model: Option<Arc<dyn Model>>,
    /// Scripted answers of the host (AskUserQuestion, plan approval).
    pub host: host::HostScript,
    /// A virtual clock for cron (`None`: the system clock).
    pub clock: Option<cron::ClockSpec>,
    /// MCP servers, connected at the start (MCP-1).
    pub mcp_servers: BTreeMap<String, mcp::ServerSpec>,
    /// Plugins with LSP servers, started at the first call that needs one (LSP-1..5).
    pub plugins: Vec<lsp::config::PluginSpec>,
    /// The artifact service's base URL (ART-1).
    pub artifact_api: Option<String>,
    /// Where every host name resolves to (the local web service of WEB-1 / WEB-2).
    pub web: Option<web_fetch::WebAccess>,
    /// When the session must be over: the agent loop starts no request past it ([`crate::agent::Deadline`]).
    pub deadline: Option<std::time::Instant>,
    /// The lab's confinement of every process the session starts (Bash commands outside the Bash
    /// sandbox, hooks, MCP and LSP servers); `None`: unconfined ([`crate::confine`]).
    pub confine: Option<crate::confine::Confinement>,
    /// The Claude Code release the session behaves as ([`crate::profile`]; default: the reference).
    pub profile: crate::profile::Profile,
}

/// The default session id (the lab's sessions all use it, so paths under HOME are the same every run).
pub const SESSION_ID: &str = "00000000-0000-4000-8000-000000000001";

/// Starts a session: connects its MCP servers, puts the tools' state in, builds the pool, the rules and
/// the extensions. MCP servers that fail to start are left out and named in `Runtime`'s session state
/// ([`mcp_failures`]). A session fails to start only on its settings: permission rules that do not parse.
pub async fn start(mut config: SessionConfig) -> Result<Runtime, RuleError> {
    // the project's settings file, as the reference reads it
    config.settings = std::mem::take(&mut config.settings).with_project_file(&config.cwd);
    let mcp = mcp::Mcp::connect(&config.mcp_servers, &config.cwd, &config.home, config.confine.as_ref()).await;
    let pool = pool(&config.env, config.profile).with_mcp(mcp.tools());
    let lsp = lsp::manager::LspManager::from_plugins(&config.plugins, &config.cwd, &config.env)
        .confined(config.confine.clone());
    let session = Session::new(config.settings.clone(), config.ask, config.model.clone())?
        .put(config.host.clone())
        .put(cron::Cron::new(config.clock.as_ref()))
        .put(artifact::Artifacts::new(config.artifact_api.clone()))
        .put(web_fetch::Web::new(config.web))
        .put(lsp)
        .put(mcp)
        .put(agent_tool::ComposerSlot(Some(Arc::new(Builtin))))
        .put(crate::agent::Deadline(config.deadline))
        .put(crate::confine::SessionConfinement(config.confine.clone()))
        .put(config.profile)
        .put(worktree::RepoAtStart::probe(&config.cwd));
    let ctx = ToolContext {
        cwd: config.cwd,
        home: config.home,
        roots: config.roots,
        session_id: if config.session_id.is_empty() { SESSION_ID.to_string() } else { config.session_id },
        env: config.env,
        read_state: Arc::default(),
        tokens: match &config.model {
            Some(m) => m.clone(),
            None => Arc::new(crate::model::EstimateTokens),
        },
        shell: Arc::default(),
        sandbox: config.settings.sandbox.clone(),
        call_id: None,
        session: Arc::new(session),
    };
    let extensions = extensions(&pool);
    let notice = disabled_notice_tools(&ctx.env, config.profile);
    Ok(Runtime::new(pool, &config.settings, config.ask, ctx).with_extensions(extensions, notice))
}

/// The MCP servers of a session that could not be started, with why.
pub fn mcp_failures(runtime: &Runtime) -> Vec<(String, mcp::McpError)> {
    runtime.ctx.session.state::<mcp::Mcp>().failures.clone()
}

/// Ends what a session started (`runtime.ctx`): its background tasks (stopped, then waited for), its
/// MCP and LSP servers.
pub async fn shutdown(ctx: &ToolContext) {
    ctx.shell.tasks.stop_all();
    ctx.shell.tasks.wait_idle(10_000).await;
    ctx.session.state::<mcp::Mcp>().shutdown().await;
    let bare = ctx.profile().has(&lsp::LSP_SHUTDOWN_WITHOUT_PARAMS);
    ctx.session.state::<lsp::manager::LspManager>().shutdown(bare).await;
}

/// The tools a sub-agent of `kind` at `depth` explains as "disabled for this session" and those it
/// explains as "not among the tools available here" (from 2.1.293,
/// [`crate::pipeline::SUBAGENT_NOT_HERE_NOTICE`]: what its type takes away, and Agent past the nesting
/// cap). A general-purpose child's TaskOutput is not measured: it stays plain "not available".
pub fn child_notices(
    env: &BTreeMap<String, String>,
    profile: Profile,
    kind: &agent_tool::AgentType,
    depth: usize,
) -> (Vec<&'static str>, Vec<&'static str>) {
    let not_here = profile.has(&crate::pipeline::SUBAGENT_NOT_HERE_NOTICE);
    let mut notice = disabled_notice_tools(env, profile);
    let mut taken: Vec<&'static str> = Vec::new();
    if not_here && depth >= agent_tool::MAX_AGENT_DEPTH {
        taken.push(agent_tool::AGENT);
    }
    for t in kind.without.iter().filter(|t| **t != task_output::TASK_OUTPUT) {
        let list = if not_here { &mut taken } else { &mut notice };
        if !list.contains(t) {
            list.push(t);
        }
    }
    notice.retain(|t| !taken.contains(t));
    (notice, taken)
}

/// The built-in composition as the Agent tool's `agent_tool::Composer`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Builtin;

impl agent_tool::Composer for Builtin {
    fn child(&self, parent: &ToolContext, spec: agent_tool::ChildSpec) -> Result<Runtime, RuleError> {
        let ps = &parent.session;
        let depth = spec.who.depth;
        let agents = agent_tool::Agents { me: spec.who, shared: ps.state::<agent_tool::Agents>().shared.clone() };
        let session = Session::new(ps.settings.clone(), ps.ask_answer, Some(spec.model.clone()))?
            .put((*ps.state::<host::HostScript>()).clone())
            .put(agents)
            .put(agent_tool::ComposerSlot(Some(Arc::new(Builtin))))
            .put(*ps.state::<crate::agent::Deadline>())
            .put(*ps.state::<worktree::RepoAtStart>())
            .put(*ps.state::<Profile>());
        let ctx = ToolContext {
            cwd: spec.cwd,
            home: parent.home.clone(),
            roots: parent.roots.clone(),
            session_id: parent.session_id.clone(),
            env: parent.env.clone(),
            read_state: Arc::default(),
            tokens: spec.model.clone(),
            shell: Arc::default(),
            sandbox: parent.sandbox.clone(),
            call_id: None,
            session: Arc::new(session),
        };
        // the session's MCP tools go to children that may have every tool (the reference's general-purpose)
        let mcp = if spec.kind.only.is_empty() { ps.state::<mcp::Mcp>().tools() } else { Vec::new() };
        let profile = parent.profile();
        let pool = child_pool(&parent.env, profile, spec.kind, depth).with_mcp(mcp);
        let extensions = extensions(&pool);
        // the tools the agent's type takes away are "disabled" too: measured on 2.1.235, an Explore
        // child's Edit call is answered `Error: No such tool available: Edit. Edit is disabled for this
        // session, in subagents as well as here.` (`probes/agent/checks-shared.toml`); from 2.1.293 they,
        // and Agent past the nesting cap, are "not among the tools available here" instead
        // (`pipeline::SUBAGENT_NOT_HERE_NOTICE`)
        let (notice, taken) = child_notices(&parent.env, profile, spec.kind, depth);
        Ok(Runtime::new(pool, &ps.settings, ps.ask_answer, ctx)
            .with_extensions(extensions, notice)
            .with_not_here(taken))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sub-agent behaves as the same release as its parent (its tools ask the child's session).
    #[test]
    fn a_child_has_the_parents_profile() {
        use agent_tool::Composer;
        let (_d, parent) = ToolContext::for_test_at("2.1.311");
        let kind = agent_tool::agent_type("general-purpose").unwrap_or_else(|| panic!("no gp"));
        let spec = agent_tool::ChildSpec {
            kind,
            who: agent_tool::Identity { depth: 1, ..Default::default() },
            model: Arc::new(crate::agent::Client::new("http://127.0.0.1:9", "m")),
            cwd: parent.cwd.clone(),
        };
        let child = Builtin.child(&parent, spec).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(child.ctx.profile(), parent.profile());
        assert_ne!(child.ctx.profile(), crate::profile::Profile::reference());
    }

    /// A tool's description is its `DESCRIPTION` or its own `description()`: none is left empty.
    #[test]
    fn every_tool_has_a_description() {
        for name in registry().names() {
            let tool = registry().get(name).unwrap_or_else(|| panic!("{name}"));
            assert!(!tool.description().trim().is_empty(), "{name} has no description");
        }
    }

    #[test]
    fn pool_is_sorted_by_name() {
        let names = registry().names();
        let mut sorted = names.clone();
        sorted.sort();
        assert_eq!(names, sorted);
        assert!(names.contains(&"Read"));
    }

    fn names_at(version: &str, env: &[(&str, &str)]) -> Vec<&'static str> {
        let env = env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        pool(&env, Profile::at(version).unwrap_or_else(|e| panic!("{e}"))).names()
    }

    #[test]
    fn task_output_leaves_at_2_1_277() {
        assert!(names_at("2.1.235", &[]).contains(&"TaskOutput"));
        assert!(names_at("2.1.276", &[]).contains(&"TaskOutput"));
        for v in ["2.1.277", "2.1.333"] {
            let names = names_at(v, &[]);
            assert!(!names.contains(&"TaskOutput"), "{v}");
            assert!(names.contains(&"TaskStop"), "{v}");
        }
    }

    #[test]
    fn tool_search_is_on_by_default_from_2_1_304() {
        assert!(!names_at("2.1.235", &[]).contains(&"ToolSearch"));
        assert!(!names_at("2.1.303", &[]).contains(&"ToolSearch"));
        assert!(names_at("2.1.303", &[("ENABLE_TOOL_SEARCH", "true")]).contains(&"ToolSearch"));
        assert!(names_at("2.1.304", &[]).contains(&"ToolSearch"));
        assert!(!names_at("2.1.333", &[("ENABLE_TOOL_SEARCH", "false")]).contains(&"ToolSearch"));
    }

    #[test]
    fn lsp_is_withheld_on_2_1_242_only_unless_enable_lsp_tool() {
        // docs/version-facts.md row 6c: no LSP tool on 2.1.242, a call the plain "No such tool available"
        for v in ["2.1.235", "2.1.241", "2.1.243", "2.1.333"] {
            assert!(names_at(v, &[]).contains(&"LSP"), "{v}");
            let notice = disabled_notice_tools(&BTreeMap::new(), Profile::at(v).unwrap_or_else(|e| panic!("{e}")));
            assert!(notice.contains(&"LSP"), "{v}: {notice:?}");
        }
        let at_242 = Profile::at("2.1.242").unwrap_or_else(|e| panic!("{e}"));
        assert!(!names_at("2.1.242", &[]).contains(&"LSP"));
        assert!(!names_at("2.1.242", &[("ENABLE_LSP_TOOL", "0")]).contains(&"LSP"));
        assert!(names_at("2.1.242", &[("ENABLE_LSP_TOOL", "1")]).contains(&"LSP"));
        let none = disabled_notice_tools(&BTreeMap::new(), at_242);
        assert!(!none.contains(&"LSP") && none.contains(&"CronList"), "{none:?}");
        let on = BTreeMap::from([("ENABLE_LSP_TOOL".to_string(), "1".to_string())]);
        assert!(disabled_notice_tools(&on, at_242).contains(&"LSP"));
        // a sub-agent's notices follow the session's
        let gp = agent_tool::agent_type("general-purpose").unwrap_or_else(|| panic!("no general-purpose"));
        assert!(!child_notices(&BTreeMap::new(), at_242, gp, 1).0.contains(&"LSP"));
        // the text a call gets: plain where LSP is not among the disabled-notice tools
        let sb = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let ctx = ToolContext::for_sandbox(sb.path(), Arc::new(crate::model::EstimateTokens))
            .unwrap_or_else(|e| panic!("{e}"));
        let rt = Runtime::new(Registry::default(), &Settings::default(), AskAnswer::default(), ctx)
            .with_extensions(Vec::new(), none);
        assert_eq!(rt.no_such_tool("LSP"), "Error: No such tool available: LSP");
    }

    #[test]
    fn a_sub_agents_missing_tool_is_not_here_from_2_1_293() {
        let explore = agent_tool::agent_type("Explore").unwrap_or_else(|| panic!("no Explore"));
        let gp = agent_tool::agent_type("general-purpose").unwrap_or_else(|| panic!("no general-purpose"));
        let at = |v: &str| Profile::at(v).unwrap_or_else(|e| panic!("{e}"));
        // before: every missing tool of the child is "disabled"
        let (disabled, not_here) = child_notices(&BTreeMap::new(), at("2.1.292"), explore, agent_tool::MAX_AGENT_DEPTH);
        assert!(not_here.is_empty());
        assert!(disabled.contains(&"Edit") && disabled.contains(&"Agent") && disabled.contains(&"CronList"));
        // from 2.1.293 (agent.nesting's goldens: 2.1.292 old, 2.1.293 new): what the type takes away and
        // Agent past the cap are "not here"
        let (disabled, not_here) = child_notices(&BTreeMap::new(), at("2.1.293"), explore, agent_tool::MAX_AGENT_DEPTH);
        assert!(not_here.contains(&"Edit") && not_here.contains(&"Agent"), "{not_here:?}");
        assert!(!disabled.contains(&"Edit") && !disabled.contains(&"Agent") && disabled.contains(&"CronList"));
        // a general-purpose child below the cap keeps Agent "disabled" (the session's own notice)
        let (disabled, not_here) = child_notices(&BTreeMap::new(), at("2.1.333"), gp, 1);
        assert!(disabled.contains(&"Agent") && !not_here.contains(&"Agent"));
        assert!(!not_here.contains(&"TaskOutput"));
        // the texts
        let sb = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let ctx = ToolContext::for_sandbox(sb.path(), Arc::new(crate::model::EstimateTokens))
            .unwrap_or_else(|e| panic!("{e}"));
        let rt = Runtime::new(Registry::default(), &Settings::default(), AskAnswer::default(), ctx)
            .with_extensions(Vec::new(), vec!["CronList"])
            .with_not_here(vec!["Edit"]);
        assert_eq!(
            rt.no_such_tool("Edit"),
            "Error: No such tool available: Edit. Edit is not among the tools available here. Continue with the tools you have."
        );
        assert_eq!(
            rt.no_such_tool("CronList"),
            "Error: No such tool available: CronList. CronList is disabled for this session, in subagents as well as here."
        );
        assert_eq!(rt.no_such_tool("Nope"), "Error: No such tool available: Nope");
    }

    #[test]
    fn a_profile_offers_its_releases_tools_and_texts_the_reference_its_own() {
        let reference = names_at("2.1.235", &[]);
        for t in ["ListAgents", "Monitor", "ReportFindings", "ScheduleWakeup"] {
            assert!(!reference.contains(&t), "{t} at the reference");
        }
        let newest = names_at("2.1.333", &[]);
        for t in ["ListAgents", "Monitor", "ReportFindings", "ScheduleWakeup"] {
            assert!(newest.contains(&t), "{t} at 2.1.333: {newest:?}");
        }
        assert!(!names_at("2.1.240", &[]).contains(&"ListAgents") && names_at("2.1.252", &[]).contains(&"ListAgents"));
        assert!(!names_at("2.1.309", &[]).contains(&"Monitor"));
        // Read's schema as each release sends it: `allow_large` from 2.1.296; the reference's own text
        let read_schema = |v: &str| {
            let r = pool(&BTreeMap::new(), Profile::at(v).unwrap_or_else(|e| panic!("{e}")));
            let tools = r.api_tools().to_vec();
            tools.into_iter().find(|t| t["name"] == "Read").map(|t| t["input_schema"].clone()).unwrap_or_default()
        };
        assert!(read_schema("2.1.295").pointer("/properties/allow_large").is_none());
        assert!(read_schema("2.1.296").pointer("/properties/allow_large").is_some());
        let own = crate::tool::Tool::input_schema(&read::Read);
        assert_eq!(read_schema("2.1.235"), own, "the reference sends the runtime's own schema");
        // an offered tool the runtime does not perform says so
        let monitor = pool(&BTreeMap::new(), Profile::newest()).get("Monitor").unwrap_or_else(|| panic!("no Monitor"));
        let sb = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let ctx = ToolContext::for_sandbox(sb.path(), Arc::new(crate::model::EstimateTokens))
            .unwrap_or_else(|e| panic!("{e}"));
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap_or_else(|e| panic!("{e}"));
        match rt.block_on(monitor.call(serde_json::json!({}), &ctx)) {
            Err(crate::tool::ToolError::Runtime(m)) => assert!(m.contains("does not perform it"), "{m}"),
            other => panic!("{other:?}"),
        }
    }
}
