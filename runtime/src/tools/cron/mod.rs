//! CronCreate / CronDelete / CronList (CRON-1..5) and the idle hook of the agent loop ([`Scheduler`]);
//! `schedule` holds the grammar and the fire-time arithmetic, `store` the session's jobs and their
//! durable file ([`Cron`]). The clock is [`super::clock`] (a probe's `[clock]` table).
//!
//! Texts, schemas and arithmetic follow Claude Code 2.1.235: the texts as measured by
//! `probes/claude-code/cron-*.toml`; the arithmetic as its embedded source has it (read from the
//! binary, not observable in a `-p` run, where jobs never fire):
//! - Grammar (CRON-1): exactly 5 whitespace-separated fields `M H DoM Mon DoW`; each a comma list of
//!   `*`, `*/N`, `N`, `A-B`, `A-B/N`; ranges 0-59, 0-23, 1-31, 1-12, 0-6 (7 = Sunday, in ranges too); no
//!   names (`MON`), no `?`, `L`, `W`, `#`. Anything else: `Invalid cron expression '…'. Expected 5
//!   fields: M H DoM Mon DoW.` A valid expression with no date (`0 0 30 2 *`): `… does not match any
//!   calendar date in the next year.` A full day-of-month or day-of-week set counts as `*`; when both
//!   are restricted a day matches either (Vixie cron). Each field is expanded here and handed to croner
//!   in that canonical form, which computes the next match in the zone (DST included).
//! - Fire times (CRON-3): a recurring job's next fire is the next match after its anchor (creation,
//!   then each fire) plus a delay of `frac × 50% × period`, capped at 30 min, where `frac` is the job
//!   id's first 8 hex digits / 2³² (same id → same delay) and the period is the gap to the match after;
//!   a `*/N * * * *` job whose period is 5 min (to under 5 min 15 s) fires 15 s before the period ends,
//!   counted from its anchor (the reference's prompt-cache lead). A one-shot fires at its next match,
//!   or, when that lands on :00 or :30, up to 90 s earlier (`frac × 90 s`, never before its creation).
//!   A recurring job whose age reaches 7 days fires once more, then is deleted.
//! - Idle only (CRON-2): nothing fires while a query runs; [`Cron::on_idle`] fires what is due once
//!   the model has ended its turn. Missed fires of a recurring job collapse into one: after a fire the
//!   next one is computed from the fire's time. One job per idle: when several are due the earliest
//!   fire time goes first (creation order on ties), the others at the following idles.
//! - The fired prompt is the next user message as is (the reference enqueues the job's prompt as a
//!   hidden user prompt, without a marker).
//! - CRON-4: CronDelete of an unknown id is a `<tool_use_error>`; CronList is a snapshot, durable jobs
//!   first, each prompt cut to 80 chars at its first line (chars, where the reference counts display
//!   width).
//! - Durable jobs (CRON-1) go to `<cwd>/.claude/scheduled_tasks.json`, in the reference's shape:
//!   `{"tasks": [{id, cron, prompt, createdAt, lastFiredAt?, recurring?, permanent?,
//!   createdBySessionId, createdByPid, createdByProcStart}]}`, 2-space JSON and a newline. The file is
//!   read at the session's first cron call (jobs already there are listed and fire); after that the
//!   session's memory is the truth and each change is written back (the reference watches the file).
//!   Deliberate differences: ids are made from the session id and a counter (sha-256), not random, so
//!   goldens are stable; `createdAt` is the virtual clock's; `lastFiredAt` is always written after
//!   `createdAt` (the reference appends it the first time); missed durable one-shots of an earlier
//!   session are not surfaced.
//! - CRON-5: [`crate::builtin::ENV_DISABLE_CRON`] removes the three tools ([`crate::builtin::pool`]).

mod schedule;
mod store;

use crate::context::ToolContext;
use crate::profile::Switch;
use crate::tool::{ToolError, ToolOutput, TypedTool};
use futures_util::future::BoxFuture;
use schedule::{human_schedule, parse};
use serde::Deserialize;
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};
use store::{proc_start, write_durable, Job};

pub use crate::tools::clock::ClockSpec;
pub use store::{recurring_max_age_ms, Cron, MAX_AGE_30_DAYS};

/// From Claude Code 2.1.299 CronCreate's text says when the job runs next (`Next run: Dec 1 9:00am.`)
/// and CronList names each job's next run.
pub const NEXT_RUN_SHOWN: Switch = Switch {
    name: "cron: CronCreate and CronList say when a job runs next",
    since: "2.1.299",
    probe: "claude-code.cron-texts",
};

/// From Claude Code 2.1.273 a durable job's record names the project it was created in
/// (`createdInProject`, after `createdByProcStart`; read from 2.1.280's code: the project root).
pub const RECORDS_PROJECT: Switch = Switch {
    name: "cron: a durable job's record names its project",
    since: "2.1.273",
    probe: "claude-code.cron-durable",
};

/// A next run as the reference shows it (`Dec 1 12:57pm`, the clock's zone, a 12-hour clock).
fn next_run_text(ms: i64, zone: &jiff::tz::TimeZone) -> Option<String> {
    const MONTHS: [&str; 12] = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
    let z = crate::tools::clock::zoned(ms, zone)?;
    let month = MONTHS.get(usize::try_from(z.month() - 1).ok()?)?;
    let hour = match z.hour() % 12 {
        0 => 12,
        h => h,
    };
    let half = if z.hour() < 12 { "am" } else { "pm" };
    Some(format!("{month} {} {hour}:{:02}{half}", z.day(), z.minute()))
}

/// Jobs a session may hold (CRON-1; Claude Code 2.1.235: `Too many scheduled jobs (max 50)`).
pub const MAX_JOBS: usize = 50;
/// Prompt characters CronList shows (CRON-4; the reference cuts at 80 columns).
pub const LIST_PROMPT_CHARS: usize = 80;
/// A prompt as CronList shows it: its first line (with `…` when more follows), at most 80 chars.
fn list_prompt(prompt: &str) -> String {
    let cut = |s: &str| -> String {
        if s.chars().count() <= LIST_PROMPT_CHARS {
            s.to_string()
        } else {
            format!("{}…", s.chars().take(LIST_PROMPT_CHARS - 1).collect::<String>())
        }
    };
    match prompt.split_once('\n') {
        Some((first, _)) => cut(&format!("{first}…")),
        None => cut(prompt),
    }
}

/// The CronCreate tool (CRON-1).
#[derive(Debug, Default)]
pub struct CronCreate;

#[derive(Debug, Deserialize)]
pub struct CreateArgs {
    cron: String,
    prompt: String,
    #[serde(default)]
    recurring: Option<bool>,
    #[serde(default)]
    durable: Option<bool>,
}

const CREATE_DESCRIPTION: &str = "Schedule a prompt to be enqueued at a future time. Use for both recurring schedules and one-shot reminders.\n\nUses standard 5-field cron in the user's local timezone: minute hour day-of-month month day-of-week. \"0 9 * * *\" means 9am local — no timezone conversion needed.\n\n## One-shot tasks (recurring: false)\n\nFor \"remind me at X\" or \"at <time>, do Y\" requests — fire once then auto-delete.\nPin minute/hour/day-of-month/month to specific values:\n  \"remind me at 2:30pm today to check the deploy\" → cron: \"30 14 <today_dom> <today_month> *\", recurring: false\n  \"tomorrow morning, run the smoke test\" → cron: \"57 8 <tomorrow_dom> <tomorrow_month> *\", recurring: false\n\n## Recurring jobs (recurring: true, the default)\n\nFor \"every N minutes\" / \"every hour\" / \"weekdays at 9am\" requests:\n  \"*/5 * * * *\" (every 5 min), \"0 * * * *\" (hourly), \"0 9 * * 1-5\" (weekdays at 9am local)\n\n## Avoid the :00 and :30 minute marks when the task allows it\n\nEvery user who asks for \"9am\" gets `0 9`, and every user who asks for \"hourly\" gets `0 *` — which means requests from across the planet land on the API at the same instant. When the user's request is approximate, pick a minute that is NOT 0 or 30:\n  \"every morning around 9\" → \"57 8 * * *\" or \"3 9 * * *\" (not \"0 9 * * *\")\n  \"hourly\" → \"7 * * * *\" (not \"0 * * * *\")\n  \"in an hour or so, remind me to...\" → pick whatever minute you land on, don't round\n\nOnly use minute 0 or 30 when the user names that exact time and clearly means it (\"at 9:00 sharp\", \"at half past\", coordinating with a meeting). When in doubt, nudge a few minutes early or late — the user will not notice, and the fleet will.\n\n## Durability\n\nBy default (durable: false) the job lives only in this Claude session — nothing is written to disk, and the job is gone when Claude exits. Pass durable: true to write to .claude/scheduled_tasks.json so the job survives restarts. Only use durable: true when the user explicitly asks for the task to persist (\"keep doing this every day\", \"set this up permanently\"). Most \"remind me in 5 minutes\" / \"check back in an hour\" requests should stay session-only.\n\n## Runtime behavior\n\nJobs only fire while the REPL is idle (not mid-query). Durable jobs persist to .claude/scheduled_tasks.json and survive session restarts — on next launch they resume automatically. One-shot durable tasks that were missed while the REPL was closed are surfaced for catch-up. Session-only jobs die with the process. The scheduler adds a small deterministic jitter on top of whatever you pick: recurring tasks fire up to 10% of their period late (max 15 min); one-shot tasks landing on :00 or :30 fire up to 90 s early. Picking an off-minute is still the bigger lever.\n\nRecurring tasks auto-expire after 7 days — they fire one final time, then are deleted. This bounds session lifetime. Tell the user about the 7-day limit when scheduling recurring jobs.\n\nReturns a job ID you can pass to CronDelete.";

impl TypedTool for CronCreate {
    const NAME: &'static str = "CronCreate";
    const DESCRIPTION: &'static str = CREATE_DESCRIPTION;
    type Args = CreateArgs;

    fn input_schema(&self) -> Value {
        json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "properties": {
                "cron": {"description": "Standard 5-field cron expression in local time: \"M H DoM Mon DoW\" (e.g. \"*/5 * * * *\" = every 5 minutes, \"30 14 28 2 *\" = Feb 28 at 2:30pm local once).", "type": "string"},
                "prompt": {"description": "The prompt to enqueue at each fire time.", "type": "string"},
                "recurring": {"description": "true (default) = fire on every cron match until deleted or auto-expired after 7 days. false = fire once at the next match, then auto-delete. Use false for \"remind me at X\" one-shot requests with pinned minute/hour/dom/month.", "type": "boolean"},
                "durable": {"description": "true = persist to .claude/scheduled_tasks.json and survive restarts. false (default) = in-memory only, dies when this Claude session ends. Use true only when the user asks the task to survive across sessions.", "type": "boolean"}
            },
            "required": ["cron", "prompt"],
            "additionalProperties": false
        })
    }

    async fn call(&self, args: CreateArgs, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let cron = ctx.session.state::<Cron>();
        cron.load(ctx)?;
        let zone = cron.clock.zone().clone();
        let Some(parsed) = parse(&args.cron) else {
            return Err(ToolError::Validation(format!(
                "Invalid cron expression '{}'. Expected 5 fields: M H DoM Mon DoW.",
                args.cron
            )));
        };
        let now = cron.now_ms();
        if parsed.next_after(now, &zone).is_none() {
            return Err(ToolError::Validation(format!(
                "Cron expression '{}' does not match any calendar date in the next year.",
                args.cron
            )));
        }
        let recurring = args.recurring.unwrap_or(true);
        let durable = args.durable.unwrap_or(false);
        let id = {
            let mut st = cron.lock();
            if st.jobs.len() >= MAX_JOBS {
                return Err(ToolError::Validation(format!(
                    "Too many scheduled jobs (max {MAX_JOBS}). Cancel one first."
                )));
            }
            st.issued += 1;
            let digest = Sha256::digest(format!("{}/cron/{}", ctx.session_id, st.issued));
            let id: String = digest.iter().take(4).map(|b| format!("{b:02x}")).collect();
            let mut created_by = Map::new();
            if durable {
                if recurring && ctx.profile().has(&MAX_AGE_30_DAYS) {
                    created_by.insert("maxAgeMs".into(), json!(recurring_max_age_ms(ctx)));
                }
                created_by.insert("createdBySessionId".into(), json!(ctx.session_id));
                created_by.insert("createdByPid".into(), json!(std::process::id()));
                if let Some(s) = proc_start() {
                    created_by.insert("createdByProcStart".into(), json!(s));
                }
                if ctx.profile().has(&RECORDS_PROJECT) {
                    created_by.insert("createdInProject".into(), json!(ctx.project_root()));
                }
            }
            st.jobs.push(Job {
                id: id.clone(),
                cron: args.cron.clone(),
                prompt: args.prompt.clone(),
                created_at: now,
                recurring,
                durable,
                permanent: false,
                last_fired_at: None,
                next_fire: None,
                created_by,
            });
            if durable {
                write_durable(&st)?;
            }
            id
        };
        let human = human_schedule(&args.cron);
        let place = if durable {
            "Persisted to .claude/scheduled_tasks.json"
        } else {
            "Session-only (not written to disk, dies when Claude exits)"
        };
        let days = recurring_max_age_ms(ctx) / 86_400_000;
        let next = if ctx.profile().has(&NEXT_RUN_SHOWN) {
            let job = cron.jobs().into_iter().find(|j| j.id == id);
            job.and_then(|j| j.next_run(&zone)).and_then(|t| next_run_text(t, &zone))
        } else {
            None
        };
        let next = next.map(|t| format!(" Next run: {t}.")).unwrap_or_default();
        let text = if recurring {
            format!("Scheduled recurring job {id} ({human}).{next} {place}. Auto-expires after {days} days. Use CronDelete to cancel sooner.")
        } else {
            format!("Scheduled one-shot task {id} ({human}).{next} {place}. It will fire once then auto-delete.")
        };
        let data = json!({"id": id, "humanSchedule": human, "recurring": recurring, "durable": durable});
        Ok(ToolOutput::Data { text, data })
    }
}

/// The CronDelete tool (CRON-4).
#[derive(Debug, Default)]
pub struct CronDelete;

#[derive(Debug, Deserialize)]
pub struct DeleteArgs {
    id: String,
}

impl TypedTool for CronDelete {
    const NAME: &'static str = "CronDelete";
    const DESCRIPTION: &'static str = "Cancel a cron job previously scheduled with CronCreate. Removes it from .claude/scheduled_tasks.json (durable jobs) or the in-memory session store (session-only jobs).";
    type Args = DeleteArgs;

    fn input_schema(&self) -> Value {
        json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "properties": {
                "id": {"description": "Job ID returned by CronCreate.", "type": "string"}
            },
            "required": ["id"],
            "additionalProperties": false
        })
    }

    async fn call(&self, args: DeleteArgs, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let cron = ctx.session.state::<Cron>();
        cron.load(ctx)?;
        let mut st = cron.lock();
        let Some(k) = st.jobs.iter().position(|j| j.id == args.id) else {
            return Err(ToolError::Validation(format!("No scheduled job with id '{}'", args.id)));
        };
        let job = st.jobs.remove(k);
        if job.durable {
            write_durable(&st)?;
        }
        let text = format!("Cancelled job {}.", args.id);
        Ok(ToolOutput::Data { text, data: json!({"id": args.id}) })
    }
}

/// The CronList tool (CRON-4).
#[derive(Debug, Default)]
pub struct CronList;

impl TypedTool for CronList {
    const NAME: &'static str = "CronList";
    const DESCRIPTION: &'static str =
        "List all cron jobs scheduled via CronCreate, both durable (.claude/scheduled_tasks.json) and session-only.";
    const READ_ONLY: bool = true;
    const CONCURRENCY_SAFE: bool = true;
    type Args = serde::de::IgnoredAny;

    fn input_schema(&self) -> Value {
        json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "properties": {},
            "additionalProperties": false
        })
    }

    async fn call(&self, _args: serde::de::IgnoredAny, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let cron = ctx.session.state::<Cron>();
        cron.load(ctx)?;
        let jobs = cron.jobs();
        let zone = cron.clock.zone().clone();
        let shows_next = ctx.profile().has(&NEXT_RUN_SHOWN);
        let text = if jobs.is_empty() {
            "No scheduled jobs.".to_string()
        } else {
            jobs.iter()
                .map(|j| {
                    let next = if shows_next { j.next_run(&zone).and_then(|t| next_run_text(t, &zone)) } else { None };
                    format!(
                        "{} — {}{}{}{}: {}",
                        j.id,
                        human_schedule(&j.cron),
                        if j.recurring { " (recurring)" } else { " (one-shot)" },
                        if j.durable { "" } else { " [session-only]" },
                        next.map(|t| format!(", next run {t}")).unwrap_or_default(),
                        list_prompt(&j.prompt)
                    )
                })
                .collect::<Vec<_>>()
                .join("\n")
        };
        let data = json!({"jobs": jobs.iter().map(|j| {
            let mut m = json!({"id": j.id, "cron": j.cron, "humanSchedule": human_schedule(&j.cron), "prompt": j.prompt});
            if j.recurring { m["recurring"] = json!(true); }
            if !j.durable { m["durable"] = json!(false); }
            m
        }).collect::<Vec<_>>()});
        Ok(ToolOutput::Data { text, data })
    }
}

/// The cron clock and its idle jobs as an extension of the session (CRON-2): each request takes its
/// time on the clock, and when the session is idle a job due starts another turn.
#[derive(Debug, Clone, Copy, Default)]
pub struct Scheduler;

impl crate::pipeline::Extension for Scheduler {
    fn before_request(&self, rt: &crate::pipeline::Runtime, _messages: &[Value]) -> Vec<String> {
        rt.ctx.session.state::<Cron>().tick();
        Vec::new()
    }

    fn on_idle<'a>(&'a self, rt: &'a crate::pipeline::Runtime) -> BoxFuture<'a, Option<String>> {
        Box::pin(async move { rt.ctx.session.state::<Cron>().on_idle().await })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_prompt_cut() {
        assert_eq!(list_prompt("short"), "short");
        assert_eq!(list_prompt("a\nb"), "a…");
        let long = "x".repeat(100);
        let cut = list_prompt(&long);
        assert_eq!(cut.chars().count(), 80);
        assert!(cut.ends_with("x…"));
        assert_eq!(list_prompt(&"y".repeat(80)), "y".repeat(80));
    }

    /// CronCreate / CronList texts before and from NEXT_RUN_SHOWN (claude-code.cron-texts on 2.1.296 /
    /// 2.1.299) and MAX_AGE_30_DAYS (claude-code.cron-durable on 2.1.329 / 2.1.330).
    #[tokio::test]
    async fn texts_by_release() {
        let clock = ClockSpec {
            start: "2026-11-30T09:00:00".parse().unwrap_or_else(|e| panic!("{e}")),
            tz: "UTC".into(),
            per_request_ms: 0,
            idle_until: None,
            max_idle_fires: 0,
        };
        let run = |version: &'static str| {
            let clock = clock.clone();
            async move {
                let (_d, mut ctx) = ToolContext::for_test_at(version);
                let profile = ctx.profile();
                ctx.session =
                    std::sync::Arc::new(crate::session::Session::default().put(profile).put(Cron::new(Some(&clock))));
                let text = |out: Result<ToolOutput, ToolError>| match out {
                    Ok(ToolOutput::Data { text, .. }) => text,
                    other => panic!("{other:?}"),
                };
                let every = json!({"cron": "*/5 * * * *", "prompt": "check the build"});
                let once = json!({"cron": "30 14 * * *", "prompt": "one shot", "recurring": false});
                let a = text(crate::tool::Tool::call(&CronCreate, every, &ctx).await);
                let b = text(crate::tool::Tool::call(&CronCreate, once, &ctx).await);
                let list = text(crate::tool::Tool::call(&CronList, json!({}), &ctx).await);
                (a, b, list)
            }
        };
        let (a, b, list) = run("2.1.296").await;
        assert!(a.ends_with("(Every 5 minutes). Session-only (not written to disk, dies when Claude exits). Auto-expires after 7 days. Use CronDelete to cancel sooner."), "{a}");
        assert!(b.ends_with("(Every day at 2:30 PM). Session-only (not written to disk, dies when Claude exits). It will fire once then auto-delete."), "{b}");
        assert!(list.contains(" — Every 5 minutes (recurring) [session-only]: check the build\n"), "{list}");
        let (a, b, list) = run("2.1.299").await;
        assert!(a.ends_with("(Every 5 minutes). Next run: Nov 30 9:04am. Session-only (not written to disk, dies when Claude exits). Auto-expires after 7 days. Use CronDelete to cancel sooner."), "{a}");
        assert!(b.ends_with("(Every day at 2:30 PM). Next run: Nov 30 2:30pm. Session-only (not written to disk, dies when Claude exits). It will fire once then auto-delete.") || b.contains(". Next run: Nov 30 2:2"), "{b}");
        assert!(
            list.contains(" — Every 5 minutes (recurring) [session-only], next run Nov 30 9:04am: check the build\n"),
            "{list}"
        );
        assert!(list.contains(" — Every day at 2:30 PM (one-shot) [session-only], next run Nov 30 2:"), "{list}");
        let (a, _, _) = run("2.1.330").await;
        assert!(a.ends_with("Auto-expires after 30 days. Use CronDelete to cancel sooner."), "{a}");
    }

    /// A durable job's record: createdInProject from RECORDS_PROJECT (claude-code.cron-durable on
    /// 2.1.272 / 2.1.273), maxAgeMs from MAX_AGE_30_DAYS (2.1.330).
    #[tokio::test]
    async fn durable_record_by_release() {
        let keys = |version: &'static str| async move {
            let (_d, ctx) = ToolContext::for_test_at(version);
            let job = json!({"cron": "0 9 * * 1", "prompt": "durable weekly", "durable": true});
            crate::tool::Tool::call(&CronCreate, job, &ctx).await.unwrap_or_else(|e| panic!("{e}"));
            let text = std::fs::read_to_string(ctx.cwd.join(store::DURABLE_FILE)).unwrap_or_else(|e| panic!("{e}"));
            let v: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}"));
            let task = v["tasks"][0].as_object().cloned().unwrap_or_default();
            (
                task.keys().cloned().collect::<Vec<_>>(),
                task.get("createdInProject").cloned(),
                task.get("maxAgeMs").cloned(),
            )
        };
        let (k, _, _) = keys("2.1.272").await;
        assert!(!k.iter().any(|k| k == "createdInProject" || k == "maxAgeMs"), "{k:?}");
        let (k, project, _) = keys("2.1.273").await;
        assert_eq!(k.last().map(String::as_str), Some("createdInProject"), "{k:?}");
        assert!(project.and_then(|p| p.as_str().map(|p| p.ends_with("/work"))).unwrap_or(false));
        assert!(!k.iter().any(|k| k == "maxAgeMs"), "{k:?}");
        let (k, _, max) = keys("2.1.330").await;
        assert_eq!(k[..6], ["id", "cron", "prompt", "createdAt", "recurring", "maxAgeMs"], "{k:?}");
        assert_eq!(max, Some(json!(2_592_000_000_i64)));
    }
}
