//! CronCreate / CronDelete / CronList (CRON-1..5): the session's cron store, the fire-time arithmetic
//! and the idle hook of the agent loop. The clock is [`super::clock`] (a probe's `[clock]` table).
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
//! - CRON-5: [`super::ENV_DISABLE_CRON`] removes the three tools ([`crate::registry::Registry::for_session`]).

use super::clock::{self, Clock};
use crate::context::ToolContext;
use crate::tool::{parse_args, Tool, ToolError, ToolOutput};
use futures_util::future::BoxFuture;
use jiff::tz::TimeZone;
use serde::Deserialize;
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};
use std::path::PathBuf;
use std::sync::Mutex;

pub use super::clock::ClockSpec;

/// A recurring job fires up to this fraction of its period late (CRON-3: "up to 50% of the period").
pub const RECURRING_JITTER_FRACTION: f64 = 0.5;
/// A recurring job's delay is capped at 30 min (CRON-3).
pub const RECURRING_JITTER_CAP_MS: i64 = 30 * 60 * 1000;
/// A one-shot landing on :00 / :30 fires up to 90 s early (CRON-3).
pub const ONE_SHOT_JITTER_MAX_MS: i64 = 90 * 1000;
/// The minute marks a one-shot is moved earlier from: multiples of 30 (CRON-3: ":00/:30").
pub const ONE_SHOT_MINUTE_MOD: i8 = 30;
/// Recurring jobs older than 7 days fire once more and are deleted (CRON-3: "recurring max age 7 days").
pub const RECURRING_MAX_AGE_MS: i64 = 7 * 24 * 3600 * 1000;
/// The reference's prompt-cache lead: a `*/N * * * *` job with a 5-minute period fires this much before
/// the period ends (CRON-3 fallback jitter as 2.1.235's source has it: `cacheLeadMs`).
pub const CACHE_LEAD_MS: i64 = 15_000;
/// The period the cache lead applies to (2.1.235: 300,000 ms).
pub const CACHE_LEAD_PERIOD_MS: i64 = 300_000;
/// Jobs a session may hold (CRON-1; Claude Code 2.1.235: `Too many scheduled jobs (max 50)`).
pub const MAX_JOBS: usize = 50;
/// Prompt characters CronList shows (CRON-4; the reference cuts at 80 columns).
pub const LIST_PROMPT_CHARS: usize = 80;
/// Where durable jobs live, under the cwd (CRON-1).
pub const DURABLE_FILE: &str = ".claude/scheduled_tasks.json";

/// Field ranges of the 5 fields (minute, hour, day of month, month, day of week).
const FIELDS: [(u8, u8); 5] = [(0, 59), (0, 23), (1, 31), (1, 12), (0, 6)];

/// A parsed expression: the set of each field, sorted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CronExpr {
    /// Minute, hour, day of month, month, day of week values.
    pub fields: [Vec<u8>; 5],
}

/// Parses one field like the reference: `*`, `*/N`, `N`, `A-B`, `A-B/N`, comma-separated.
fn parse_field(text: &str, (min, max): (u8, u8)) -> Option<Vec<u8>> {
    let dow = min == 0 && max == 6;
    let num = |s: &str| -> Option<u32> {
        if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        Some(s.parse::<u64>().ok().map(|v| v.min(u32::MAX as u64) as u32).unwrap_or(u32::MAX))
    };
    let mut set = std::collections::BTreeSet::new();
    for part in text.split(',') {
        if let Some(step) = part.strip_prefix('*') {
            let step = match step.strip_prefix('/') {
                Some(n) => num(n)?,
                None if step.is_empty() => 1,
                None => return None,
            };
            if step < 1 {
                return None;
            }
            set.extend((min as u32..=max as u32).step_by(step as usize).map(|v| v as u8));
            continue;
        }
        let (range, step) = match part.split_once('/') {
            Some((r, s)) => (r, Some(num(s)?)),
            None => (part, None),
        };
        if let Some((a, b)) = range.split_once('-') {
            let (a, b, step) = (num(a)?, num(b)?, step.unwrap_or(1));
            let top = if dow { 7 } else { max as u32 };
            if a > b || step < 1 || a < min as u32 || b > top {
                return None;
            }
            set.extend((a..=b).step_by(step as usize).map(|v| if dow && v == 7 { 0 } else { v as u8 }));
            continue;
        }
        if step.is_some() {
            return None;
        }
        let mut v = num(range)?;
        if dow && v == 7 {
            v = 0;
        }
        if v < min as u32 || v > max as u32 {
            return None;
        }
        set.insert(v as u8);
    }
    (!set.is_empty()).then(|| set.into_iter().collect())
}

/// Parses a 5-field expression (CRON-1); `None` when the reference would refuse it.
pub fn parse(expr: &str) -> Option<CronExpr> {
    let parts: Vec<&str> = expr.split_whitespace().collect();
    if parts.len() != 5 {
        return None;
    }
    let mut fields: [Vec<u8>; 5] = Default::default();
    for (i, p) in parts.iter().enumerate() {
        fields[i] = parse_field(p, FIELDS[i])?;
    }
    Some(CronExpr { fields })
}

impl CronExpr {
    /// The canonical pattern croner gets: a full set as `*`, else the values as a list.
    pub fn canonical(&self) -> String {
        self.fields
            .iter()
            .zip(FIELDS)
            .map(|(set, (min, max))| {
                if set.len() == (max - min + 1) as usize {
                    "*".to_string()
                } else {
                    set.iter().map(u8::to_string).collect::<Vec<_>>().join(",")
                }
            })
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// The first match strictly after the minute of `after_ms` in `zone` (ms since the epoch).
    pub fn next_after(&self, after_ms: i64, zone: &TimeZone) -> Option<i64> {
        let parser = croner::parser::CronParser::builder()
            .seconds(croner::parser::Seconds::Disallowed)
            .year(croner::parser::Year::Disallowed)
            .build();
        let cron = parser.parse(&self.canonical()).ok()?;
        let from = clock::zoned(after_ms, zone)?;
        cron.find_next_occurrence(&from, false).ok().map(|z| z.timestamp().as_millisecond())
    }
}

/// The job's jitter fraction in [0, 1): its id's first 8 hex digits / 2³² (CRON-3: deterministic).
pub fn jitter_fraction(id: &str) -> f64 {
    id.get(..8).and_then(|h| u32::from_str_radix(h, 16).ok()).map(|v| v as f64 / 4_294_967_296.0).unwrap_or(0.0)
}

fn is_every_n_minutes(expr: &str) -> bool {
    // the reference's /^\*\/\d+ \* \* \* \*$/
    let p: Vec<&str> = expr.split(' ').collect();
    p.len() == 5
        && p[0].strip_prefix("*/").is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        && p[1..].iter().all(|f| *f == "*")
}

/// Next fire of a recurring job from `anchor_ms` (its creation or last fire), jitter included (CRON-3).
pub fn recurring_fire(expr: &str, anchor_ms: i64, id: &str, zone: &TimeZone) -> Option<i64> {
    let parsed = parse(expr)?;
    let first = parsed.next_after(anchor_ms, zone)?;
    let Some(second) = parsed.next_after(first, zone) else {
        return Some(first);
    };
    let period = second - first;
    if is_every_n_minutes(expr)
        && CACHE_LEAD_MS < period
        && period >= CACHE_LEAD_PERIOD_MS
        && period - CACHE_LEAD_MS < CACHE_LEAD_PERIOD_MS
    {
        return Some(anchor_ms + period - CACHE_LEAD_MS);
    }
    let delay = (jitter_fraction(id) * RECURRING_JITTER_FRACTION * period as f64).min(RECURRING_JITTER_CAP_MS as f64);
    // the first whole millisecond at or after the fire time, as a scheduler polling the clock sees it
    Some(first + delay.ceil() as i64)
}

/// Fire time of a one-shot created at `created_ms` (CRON-3: :00 / :30 up to 90 s early).
pub fn one_shot_fire(expr: &str, created_ms: i64, id: &str, zone: &TimeZone) -> Option<i64> {
    let at = parse(expr)?.next_after(created_ms, zone)?;
    let minute = clock::zoned(at, zone)?.minute();
    if minute % ONE_SHOT_MINUTE_MOD != 0 {
        return Some(at);
    }
    let lead = (jitter_fraction(id) * ONE_SHOT_JITTER_MAX_MS as f64) as i64;
    Some((at - lead).max(created_ms))
}

/// `h:mm AM` as en-US prints a time.
fn time_of_day(hour: u32, minute: u32) -> String {
    let h12 = match hour % 12 {
        0 => 12,
        h => h,
    };
    format!("{h12}:{minute:02} {}", if hour % 24 < 12 { "AM" } else { "PM" })
}

/// The reference's human reading of an expression (`Every 5 minutes`, `Every Monday at 9:00 AM`), or
/// the expression itself when it has none.
pub fn human_schedule(expr: &str) -> String {
    let p: Vec<&str> = expr.split_whitespace().collect();
    if p.len() != 5 {
        return expr.to_string();
    }
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let int = |s: &str| s.parse::<u64>().unwrap_or(u64::MAX);
    let step = |s: &str| s.strip_prefix("*/").filter(|n| digits(n)).map(int);
    let (m, h, dom, mon, dow) = (p[0], p[1], p[2], p[3], p[4]);
    let rest_star = dom == "*" && mon == "*" && dow == "*";
    if h == "*" && rest_star {
        if m == "*" {
            return "Every minute".into();
        }
        if let Some(n) = step(m) {
            return if n == 1 { "Every minute".into() } else { format!("Every {n} minutes") };
        }
    }
    if digits(m) && h == "*" && rest_star {
        let f = int(m);
        return if f == 0 { "Every hour".into() } else { format!("Every hour at :{f:02}") };
    }
    if let (true, Some(n), true) = (digits(m), step(h), rest_star) {
        let mm = int(m);
        let at = if mm == 0 { String::new() } else { format!(" at :{mm:02}") };
        return if n == 1 { format!("Every hour{at}") } else { format!("Every {n} hours{at}") };
    }
    if !digits(m) || !digits(h) {
        return expr.to_string();
    }
    let t = time_of_day(int(h).min(u32::MAX as u64) as u32, int(m).min(59) as u32);
    if rest_star {
        return format!("Every day at {t}");
    }
    if dom == "*" && mon == "*" && dow.len() == 1 && digits(dow) {
        const DAYS: [&str; 7] = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"];
        return format!("Every {} at {t}", DAYS[(int(dow) % 7) as usize]);
    }
    if dom == "*" && mon == "*" && dow == "1-5" {
        return format!("Weekdays at {t}");
    }
    expr.to_string()
}

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

/// One job.
#[derive(Debug, Clone, PartialEq)]
pub struct Job {
    /// 8 hex digits.
    pub id: String,
    /// The expression as given.
    pub cron: String,
    /// What is enqueued when it fires.
    pub prompt: String,
    /// Creation (ms since the epoch).
    pub created_at: i64,
    /// Recurring (else one-shot).
    pub recurring: bool,
    /// Written to the durable file.
    pub durable: bool,
    /// Never ages out (a durable file's `permanent`).
    pub permanent: bool,
    /// Last fire (ms since the epoch).
    pub last_fired_at: Option<i64>,
    /// Next fire once computed (`i64::MAX`: never).
    pub next_fire: Option<i64>,
    /// The durable record's `createdBy*` fields.
    pub created_by: Map<String, Value>,
}

#[derive(Debug, Default)]
struct State {
    now_ms: Option<i64>,
    jobs: Vec<Job>,
    issued: u64,
    idle_fires: usize,
    durable_path: Option<PathBuf>,
    loaded: bool,
}

/// The session's cron jobs and clock.
#[derive(Debug)]
pub struct Cron {
    clock: Clock,
    state: Mutex<State>,
}

impl Default for Cron {
    fn default() -> Cron {
        Cron::new(None)
    }
}

impl Cron {
    /// The store of a session, on the probe's virtual clock if it has one (else the system clock).
    pub fn new(clock: Option<&ClockSpec>) -> Cron {
        let (clock, start) = Clock::new(clock);
        Cron { clock, state: Mutex::new(State { now_ms: start, ..State::default() }) }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Now (ms since the epoch): the virtual clock's, or the system's.
    pub fn now_ms(&self) -> i64 {
        self.lock().now_ms.unwrap_or_else(clock::system_now_ms)
    }

    /// Called before each model request: the virtual clock advances by its `per_request`.
    pub fn tick(&self) {
        if let Clock::Virtual { per_request_ms, .. } = self.clock {
            let mut st = self.lock();
            if let Some(now) = st.now_ms.as_mut() {
                *now = now.saturating_add(per_request_ms);
            }
        }
    }

    /// A snapshot of the jobs, durable ones first (CRON-4).
    pub fn jobs(&self) -> Vec<Job> {
        let st = self.lock();
        let mut v: Vec<Job> = st.jobs.iter().filter(|j| j.durable).cloned().collect();
        v.extend(st.jobs.iter().filter(|j| !j.durable).cloned());
        v
    }

    /// Called by the loop when the session is idle (the model ended its turn, nothing runs): the prompt
    /// of a job due now, which starts another turn (CRON-2), or `None` to end the session. On a virtual
    /// clock with `idle_until`, the clock jumps to the next fire time within it; the system clock never
    /// fires here (a `-p` session ends).
    pub async fn on_idle(&self) -> Option<String> {
        let Clock::Virtual { idle_until_ms, max_idle_fires, .. } = self.clock else {
            return None;
        };
        let zone = self.clock.zone().clone();
        let mut st = self.lock();
        if st.idle_fires >= max_idle_fires {
            return None;
        }
        let now = st.now_ms?;
        for j in st.jobs.iter_mut().filter(|j| j.next_fire.is_none()) {
            j.next_fire = Some(first_fire(j, &zone).unwrap_or(i64::MAX));
        }
        // earliest fire first; creation order on ties (min_by_key keeps the first)
        let k = st.jobs.iter().enumerate().min_by_key(|(_, j)| j.next_fire.unwrap_or(i64::MAX)).map(|(k, _)| k)?;
        let at = st.jobs[k].next_fire.unwrap_or(i64::MAX);
        if at == i64::MAX {
            return None;
        }
        if at > now {
            match idle_until_ms {
                Some(until) if at <= until => st.now_ms = Some(at),
                _ => return None,
            }
        }
        let now = st.now_ms.unwrap_or(at);
        st.idle_fires += 1;
        let job = &mut st.jobs[k];
        let prompt = job.prompt.clone();
        let aged = job.recurring && !job.permanent && now - job.created_at >= RECURRING_MAX_AGE_MS;
        let durable = job.durable;
        if job.recurring && !aged {
            job.last_fired_at = Some(now);
            job.next_fire = Some(recurring_fire(&job.cron, now, &job.id, &zone).unwrap_or(i64::MAX));
        } else {
            st.jobs.remove(k);
        }
        if durable {
            // a failed write leaves the file behind the session; the session goes on (as the reference)
            let _ = write_durable(&st);
        }
        Some(prompt)
    }

    /// Reads the durable file once, at the session's first cron call.
    fn load(&self, ctx: &ToolContext) -> Result<(), ToolError> {
        let mut st = self.lock();
        if st.loaded {
            return Ok(());
        }
        let path = crate::fs::confine(ctx, &ctx.cwd.join(DURABLE_FILE).to_string_lossy())?;
        st.loaded = true;
        st.durable_path = Some(path.clone());
        let Ok(text) = std::fs::read_to_string(&path) else {
            return Ok(());
        };
        let tasks = serde_json::from_str::<Value>(&text).ok().and_then(|v| v.get("tasks").cloned());
        for t in tasks.as_ref().and_then(Value::as_array).into_iter().flatten() {
            let (Some(id), Some(cron), Some(prompt), Some(created_at)) =
                (t["id"].as_str(), t["cron"].as_str(), t["prompt"].as_str(), t["createdAt"].as_f64().map(|v| v as i64))
            else {
                continue; // the reference skips malformed tasks too
            };
            if parse(cron).is_none() || st.jobs.iter().any(|j| j.id == id) {
                continue;
            }
            let mut created_by = Map::new();
            for key in ["createdBySessionId", "createdByPid", "createdByProcStart"] {
                if let Some(v) = t.get(key) {
                    created_by.insert(key.into(), v.clone());
                }
            }
            st.jobs.push(Job {
                id: id.into(),
                cron: cron.into(),
                prompt: prompt.into(),
                created_at,
                recurring: t["recurring"].as_bool() == Some(true),
                durable: true,
                permanent: t["permanent"].as_bool() == Some(true),
                last_fired_at: t["lastFiredAt"].as_f64().map(|v| v as i64),
                next_fire: None,
                created_by,
            });
        }
        Ok(())
    }
}

/// A job's first fire: recurring from its last fire or creation, one-shot from creation.
fn first_fire(j: &Job, zone: &TimeZone) -> Option<i64> {
    if j.recurring {
        recurring_fire(&j.cron, j.last_fired_at.unwrap_or(j.created_at), &j.id, zone)
    } else {
        one_shot_fire(&j.cron, j.created_at, &j.id, zone)
    }
}

/// The durable file's record of a job, in the reference's key order.
fn record(j: &Job) -> Value {
    let mut m = Map::new();
    m.insert("id".into(), json!(j.id));
    m.insert("cron".into(), json!(j.cron));
    m.insert("prompt".into(), json!(j.prompt));
    m.insert("createdAt".into(), json!(j.created_at));
    if let Some(t) = j.last_fired_at {
        m.insert("lastFiredAt".into(), json!(t));
    }
    if j.recurring {
        m.insert("recurring".into(), json!(true));
    }
    if j.permanent {
        m.insert("permanent".into(), json!(true));
    }
    m.extend(j.created_by.clone());
    Value::Object(m)
}

/// Writes the durable jobs (2-space JSON and a newline, like the reference).
fn write_durable(st: &State) -> Result<(), String> {
    let Some(path) = &st.durable_path else {
        return Err("the durable file's place is not known yet".into());
    };
    let tasks: Vec<Value> = st.jobs.iter().filter(|j| j.durable).map(record).collect();
    let text = serde_json::to_string_pretty(&json!({ "tasks": tasks })).map_err(|e| e.to_string())?;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    std::fs::write(path, format!("{text}\n")).map_err(|e| format!("{}: {e}", path.display()))
}

/// This process's start time in clock ticks since boot (`/proc/self/stat` field 22), as the reference
/// records `createdByProcStart`.
fn proc_start() -> Option<String> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let after = stat.rsplit_once(')')?.1;
    after.split_whitespace().nth(19).map(str::to_string)
}

/// The CronCreate tool (CRON-1).
#[derive(Debug, Default)]
pub struct CronCreate;

#[derive(Debug, Deserialize)]
struct CreateArgs {
    cron: String,
    prompt: String,
    #[serde(default)]
    recurring: Option<bool>,
    #[serde(default)]
    durable: Option<bool>,
}

const CREATE_DESCRIPTION: &str = "Schedule a prompt to be enqueued at a future time. Use for both recurring schedules and one-shot reminders.\n\nUses standard 5-field cron in the user's local timezone: minute hour day-of-month month day-of-week. \"0 9 * * *\" means 9am local — no timezone conversion needed.\n\n## One-shot tasks (recurring: false)\n\nFor \"remind me at X\" or \"at <time>, do Y\" requests — fire once then auto-delete.\nPin minute/hour/day-of-month/month to specific values:\n  \"remind me at 2:30pm today to check the deploy\" → cron: \"30 14 <today_dom> <today_month> *\", recurring: false\n  \"tomorrow morning, run the smoke test\" → cron: \"57 8 <tomorrow_dom> <tomorrow_month> *\", recurring: false\n\n## Recurring jobs (recurring: true, the default)\n\nFor \"every N minutes\" / \"every hour\" / \"weekdays at 9am\" requests:\n  \"*/5 * * * *\" (every 5 min), \"0 * * * *\" (hourly), \"0 9 * * 1-5\" (weekdays at 9am local)\n\n## Avoid the :00 and :30 minute marks when the task allows it\n\nEvery user who asks for \"9am\" gets `0 9`, and every user who asks for \"hourly\" gets `0 *` — which means requests from across the planet land on the API at the same instant. When the user's request is approximate, pick a minute that is NOT 0 or 30:\n  \"every morning around 9\" → \"57 8 * * *\" or \"3 9 * * *\" (not \"0 9 * * *\")\n  \"hourly\" → \"7 * * * *\" (not \"0 * * * *\")\n  \"in an hour or so, remind me to...\" → pick whatever minute you land on, don't round\n\nOnly use minute 0 or 30 when the user names that exact time and clearly means it (\"at 9:00 sharp\", \"at half past\", coordinating with a meeting). When in doubt, nudge a few minutes early or late — the user will not notice, and the fleet will.\n\n## Durability\n\nBy default (durable: false) the job lives only in this Claude session — nothing is written to disk, and the job is gone when Claude exits. Pass durable: true to write to .claude/scheduled_tasks.json so the job survives restarts. Only use durable: true when the user explicitly asks for the task to persist (\"keep doing this every day\", \"set this up permanently\"). Most \"remind me in 5 minutes\" / \"check back in an hour\" requests should stay session-only.\n\n## Runtime behavior\n\nJobs only fire while the REPL is idle (not mid-query). Durable jobs persist to .claude/scheduled_tasks.json and survive session restarts — on next launch they resume automatically. One-shot durable tasks that were missed while the REPL was closed are surfaced for catch-up. Session-only jobs die with the process. The scheduler adds a small deterministic jitter on top of whatever you pick: recurring tasks fire up to 10% of their period late (max 15 min); one-shot tasks landing on :00 or :30 fire up to 90 s early. Picking an off-minute is still the bigger lever.\n\nRecurring tasks auto-expire after 7 days — they fire one final time, then are deleted. This bounds session lifetime. Tell the user about the 7-day limit when scheduling recurring jobs.\n\nReturns a job ID you can pass to CronDelete.";

impl Tool for CronCreate {
    fn name(&self) -> &'static str {
        "CronCreate"
    }

    fn description(&self) -> String {
        CREATE_DESCRIPTION.into()
    }

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

    fn call<'a>(&'a self, input: Value, ctx: &'a ToolContext) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let args: CreateArgs = parse_args(input)?;
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
                    created_by.insert("createdBySessionId".into(), json!(ctx.session_id));
                    created_by.insert("createdByPid".into(), json!(std::process::id()));
                    if let Some(s) = proc_start() {
                        created_by.insert("createdByProcStart".into(), json!(s));
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
                    write_durable(&st).map_err(ToolError::Runtime)?;
                }
                id
            };
            let human = human_schedule(&args.cron);
            let place = if durable {
                "Persisted to .claude/scheduled_tasks.json"
            } else {
                "Session-only (not written to disk, dies when Claude exits)"
            };
            let days = RECURRING_MAX_AGE_MS / 86_400_000;
            let text = if recurring {
                format!("Scheduled recurring job {id} ({human}). {place}. Auto-expires after {days} days. Use CronDelete to cancel sooner.")
            } else {
                format!("Scheduled one-shot task {id} ({human}). {place}. It will fire once then auto-delete.")
            };
            let data = json!({"id": id, "humanSchedule": human, "recurring": recurring, "durable": durable});
            Ok(ToolOutput::Data { text, data })
        })
    }
}

/// The CronDelete tool (CRON-4).
#[derive(Debug, Default)]
pub struct CronDelete;

#[derive(Debug, Deserialize)]
struct DeleteArgs {
    id: String,
}

impl Tool for CronDelete {
    fn name(&self) -> &'static str {
        "CronDelete"
    }

    fn description(&self) -> String {
        "Cancel a cron job previously scheduled with CronCreate. Removes it from .claude/scheduled_tasks.json (durable jobs) or the in-memory session store (session-only jobs).".into()
    }

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

    fn call<'a>(&'a self, input: Value, ctx: &'a ToolContext) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let args: DeleteArgs = parse_args(input)?;
            let cron = ctx.session.state::<Cron>();
            cron.load(ctx)?;
            let mut st = cron.lock();
            let Some(k) = st.jobs.iter().position(|j| j.id == args.id) else {
                return Err(ToolError::Validation(format!("No scheduled job with id '{}'", args.id)));
            };
            let job = st.jobs.remove(k);
            if job.durable {
                write_durable(&st).map_err(ToolError::Runtime)?;
            }
            let text = format!("Cancelled job {}.", args.id);
            Ok(ToolOutput::Data { text, data: json!({"id": args.id}) })
        })
    }
}

/// The CronList tool (CRON-4).
#[derive(Debug, Default)]
pub struct CronList;

impl Tool for CronList {
    fn name(&self) -> &'static str {
        "CronList"
    }

    fn description(&self) -> String {
        "List all cron jobs scheduled via CronCreate, both durable (.claude/scheduled_tasks.json) and session-only."
            .into()
    }

    fn input_schema(&self) -> Value {
        json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "properties": {},
            "additionalProperties": false
        })
    }

    fn is_read_only(&self, _input: &Value) -> bool {
        true
    }

    fn is_concurrency_safe(&self, _input: &Value) -> bool {
        true
    }

    fn call<'a>(&'a self, _input: Value, ctx: &'a ToolContext) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let cron = ctx.session.state::<Cron>();
            cron.load(ctx)?;
            let jobs = cron.jobs();
            let text = if jobs.is_empty() {
                "No scheduled jobs.".to_string()
            } else {
                jobs.iter()
                    .map(|j| {
                        format!(
                            "{} — {}{}{}: {}",
                            j.id,
                            human_schedule(&j.cron),
                            if j.recurring { " (recurring)" } else { " (one-shot)" },
                            if j.durable { "" } else { " [session-only]" },
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
        })
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

    fn paris() -> TimeZone {
        clock::zone("Europe/Paris").unwrap_or_else(|e| panic!("{e}"))
    }

    /// ms of a Paris wall time.
    fn at(s: &str) -> i64 {
        s.parse::<jiff::civil::DateTime>()
            .unwrap_or_else(|e| panic!("{e}"))
            .to_zoned(paris())
            .unwrap_or_else(|e| panic!("{e}"))
            .timestamp()
            .as_millisecond()
    }

    fn show(ms: i64) -> String {
        clock::zoned(ms, &paris()).map(|z| z.datetime().to_string()).unwrap_or_default()
    }

    #[test]
    fn grammar_like_the_reference() {
        for ok in [
            "* * * * *",
            "*/5 * * * *",
            "0 9 * * 1-5",
            "5-10/2 * * * *",
            "0 0 1,15 * *",
            "0 9 * * 7",
            "0 9 * * 5-7",
            "*/100 * * * *",
            " 1  2 3 4 5 ",
        ] {
            assert!(parse(ok).is_some(), "{ok}");
        }
        for bad in [
            "61 * * * *",
            "* * * *",
            "* * * * * *",
            "*/0 * * * *",
            "0 9 * * MON",
            "0 0 ? * *",
            "0 0 L * *",
            "5/10 * * * *",
            "10-5 * * * *",
            "0 24 * * *",
            "0 0 0 * *",
            "0 0 * 13 *",
            "0 0 * * 8",
            "a * * * *",
            "1,,2 * * * *",
            "",
        ] {
            assert_eq!(parse(bad), None, "{bad}");
        }
        let e = parse("0 9 * * 5-7").unwrap_or_else(|| panic!("parse"));
        assert_eq!(e.fields[4], vec![0, 5, 6], "7 is Sunday, in ranges too");
        assert_eq!(parse("0 9 1-31 * 0-6").map(|e| e.canonical()), Some("0 9 * * *".to_string()));
        assert_eq!(parse("*/20 */6 * * *").map(|e| e.canonical()), Some("0,20,40 0,6,12,18 * * *".to_string()));
    }

    #[test]
    fn next_match_in_the_zone_strictly_after_the_minute() {
        let z = paris();
        let e = |s: &str| parse(s).unwrap_or_else(|| panic!("{s}"));
        assert_eq!(
            e("* * * * *").next_after(at("2026-03-02T09:00:30"), &z).map(show),
            Some("2026-03-02T09:01:00".into())
        );
        assert_eq!(
            e("* * * * *").next_after(at("2026-03-02T09:00:00"), &z).map(show),
            Some("2026-03-02T09:01:00".into())
        );
        // 9:00 Paris, not 9:00 UTC
        assert_eq!(e("0 9 * * *").next_after(at("2026-03-02T08:30:00"), &z), Some(at("2026-03-02T09:00:00")));
        // DoM or DoW when both are restricted: Monday the 9th comes before the 1st of April
        assert_eq!(
            e("0 9 1 * 1").next_after(at("2026-03-02T10:00:00"), &z).map(show),
            Some("2026-03-09T09:00:00".into())
        );
        // 1-31 counts as `*`: Mondays only
        assert_eq!(
            e("0 9 1-31 * 1").next_after(at("2026-03-03T10:00:00"), &z).map(show),
            Some("2026-03-09T09:00:00".into())
        );
        // the DST gap: 02:30 does not exist on 29 March 2026 in Paris
        assert_eq!(
            e("30 2 * * *").next_after(at("2026-03-28T12:00:00"), &z).map(show),
            Some("2026-03-29T03:00:00".into())
        );
        assert_eq!(e("0 0 30 2 *").next_after(at("2026-03-02T09:00:00"), &z), None);
    }

    #[test]
    fn jitter_is_deterministic_and_bounded() {
        let z = paris();
        assert_eq!(jitter_fraction("00000000"), 0.0);
        assert_eq!(jitter_fraction("80000000"), 0.5);
        assert!(jitter_fraction("ffffffff") < 1.0);
        assert_eq!(jitter_fraction("zz"), 0.0);
        let created = at("2026-03-02T09:00:30");
        // hourly: the delay is at most 50% of the hour = 30 min, and never more than the cap
        for id in ["00000000", "40000000", "80000000", "ffffffff", "3a9c01de"] {
            let f = recurring_fire("7 * * * *", created, id, &z).unwrap_or_else(|| panic!("fire"));
            let delay = f - at("2026-03-02T09:07:00");
            assert!((0..=RECURRING_JITTER_CAP_MS).contains(&delay), "{id}: {delay}");
            assert_eq!(recurring_fire("7 * * * *", created, id, &z), Some(f), "same id, same fire");
        }
        assert_eq!(recurring_fire("7 * * * *", created, "80000000", &z), Some(at("2026-03-02T09:22:00")));
        // daily: 50% of a day is capped at 30 min
        assert_eq!(recurring_fire("7 9 * * *", created, "ffffffff", &z), Some(at("2026-03-02T09:37:00")));
        // every 2 minutes: up to a minute late
        assert_eq!(recurring_fire("*/2 * * * *", created, "80000000", &z), Some(at("2026-03-02T09:02:30")));
        // every 5 minutes: the cache lead, 4 min 45 s after the anchor
        assert_eq!(recurring_fire("*/5 * * * *", created, "80000000", &z), Some(at("2026-03-02T09:05:15")));
        // one-shot off the :00/:30 marks: exact; on them: up to 90 s early, never before creation
        assert_eq!(one_shot_fire("7 9 * * *", created, "ffffffff", &z), Some(at("2026-03-02T09:07:00")));
        assert_eq!(one_shot_fire("30 9 * * *", created, "80000000", &z), Some(at("2026-03-02T09:29:15")));
        assert_eq!(one_shot_fire("30 9 * * *", created, "00000000", &z), Some(at("2026-03-02T09:30:00")));
        assert_eq!(
            one_shot_fire("1 9 * * *", at("2026-03-02T09:00:59"), "ffffffff", &z),
            Some(at("2026-03-02T09:01:00"))
        );
        assert_eq!(
            one_shot_fire("0 10 * * *", at("2026-03-02T09:59:30"), "ffffffff", &z),
            Some(at("2026-03-02T09:59:30"))
        );
    }

    #[test]
    fn human_schedules_as_measured() {
        for (e, h) in [
            ("*/5 * * * *", "Every 5 minutes"),
            ("* * * * *", "Every minute"),
            ("*/1 * * * *", "Every minute"),
            ("0 * * * *", "Every hour"),
            ("7 * * * *", "Every hour at :07"),
            ("0 */2 * * *", "Every 2 hours"),
            ("15 */1 * * *", "Every hour at :15"),
            ("30 14 * * *", "Every day at 2:30 PM"),
            ("0 0 * * *", "Every day at 12:00 AM"),
            ("0 12 * * *", "Every day at 12:00 PM"),
            ("0 9 * * 1", "Every Monday at 9:00 AM"),
            ("0 9 * * 7", "Every Sunday at 9:00 AM"),
            ("5 17 * * 1-5", "Weekdays at 5:05 PM"),
            ("30 14 28 2 *", "30 14 28 2 *"),
            ("*/5 9 * * *", "*/5 9 * * *"),
        ] {
            assert_eq!(human_schedule(e), h, "{e}");
        }
    }

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

    fn spec(extra: &str) -> ClockSpec {
        #[derive(Deserialize)]
        struct T {
            clock: ClockSpec,
        }
        toml::from_str::<T>(&format!("[clock]\nstart = \"2026-03-02T09:00:00\"\ntz = \"Europe/Paris\"\n{extra}"))
            .unwrap_or_else(|e| panic!("{e}"))
            .clock
    }

    fn job(id: &str, cron: &str, created_at: i64, recurring: bool) -> Job {
        Job {
            id: id.into(),
            cron: cron.into(),
            prompt: format!("p {id}"),
            created_at,
            recurring,
            durable: false,
            permanent: false,
            last_fired_at: None,
            next_fire: None,
            created_by: Map::new(),
        }
    }

    #[tokio::test]
    async fn idle_fires_due_then_jumps_within_the_horizon() {
        let c =
            Cron::new(Some(&spec("per_request = \"1m\"\nidle_until = \"2026-03-02T09:10:00\"\nmax_idle_fires = 5\n")));
        let start = at("2026-03-02T09:00:00");
        {
            let mut st = c.lock();
            st.jobs.push(job("00000000", "*/2 * * * *", start, true));
            st.jobs.push(job("00000001", "7 9 * * *", start, false));
        }
        c.tick(); // 09:01
        c.tick(); // 09:02
        c.tick(); // 09:03: the 09:02 fire is due
        assert_eq!(c.on_idle().await.as_deref(), Some("p 00000000"));
        assert_eq!(show(c.now_ms()), "2026-03-02T09:03:00", "a due job fires at once, no jump");
        // the missed fires collapse: the next is after 09:03, i.e. 09:04
        assert_eq!(c.on_idle().await.as_deref(), Some("p 00000000"));
        assert_eq!(show(c.now_ms()), "2026-03-02T09:04:00", "jumped");
        assert_eq!(c.on_idle().await.as_deref(), Some("p 00000000"));
        assert_eq!(show(c.now_ms()), "2026-03-02T09:06:00");
        assert_eq!(c.on_idle().await.as_deref(), Some("p 00000001"));
        assert_eq!(show(c.now_ms()), "2026-03-02T09:07:00");
        assert_eq!(c.jobs().len(), 1, "the one-shot deleted itself");
        assert_eq!(c.on_idle().await.as_deref(), Some("p 00000000"));
        assert_eq!(c.on_idle().await, None, "max_idle_fires reached");
    }

    #[tokio::test]
    async fn idle_without_horizon_fires_only_what_is_due_and_system_clock_never() {
        let c = Cron::new(Some(&spec("")));
        c.lock().jobs.push(job("00000000", "*/2 * * * *", at("2026-03-02T09:00:00"), true));
        assert_eq!(c.on_idle().await, None, "not due, no horizon: the session ends");
        let s = Cron::new(None);
        s.lock().jobs.push(job("00000000", "* * * * *", 0, true));
        assert_eq!(s.on_idle().await, None);
    }

    #[tokio::test]
    async fn recurring_jobs_age_out_after_a_final_fire() {
        let c = Cron::new(Some(&spec("idle_until = \"2026-03-12T00:00:00\"\n")));
        c.lock().jobs.push(job("00000000", "0 9 * * *", at("2026-02-20T09:00:00"), true));
        // created 10 days ago, never fired: fires once now, then is gone
        assert_eq!(c.on_idle().await.as_deref(), Some("p 00000000"));
        assert!(c.jobs().is_empty());
        assert_eq!(c.on_idle().await, None);
    }
}
