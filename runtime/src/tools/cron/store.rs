//! The session's cron store (CRON-1, CRON-2, CRON-4): its jobs and clock ([`Cron`]), what fires when
//! the session is idle ([`Cron::on_idle`]), and the durable file `<cwd>/.claude/scheduled_tasks.json`
//! in the reference's shape (read at the first call, written back on each change).

use super::schedule::{one_shot_fire, parse, recurring_fire, RECURRING_MAX_AGE_MS};
use crate::context::ToolContext;
use crate::profile::Switch;
use crate::tool::ToolError;
use crate::tools::clock::{self, Clock, ClockSpec};
use jiff::tz::TimeZone;
use serde_json::{json, Map, Value};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// From Claude Code 2.1.330 recurring jobs age out after 30 days (and a durable recurring job's record
/// keeps its `maxAgeMs`, after `recurring`, as 2.1.333's code writes it), and the text says so.
pub const MAX_AGE_30_DAYS: Switch =
    Switch { name: "cron: recurring jobs expire after 30 days", since: "2.1.330", probe: "claude-code.cron-durable" };

/// A recurring job's age limit at the session's release ([`MAX_AGE_30_DAYS`]).
pub fn recurring_max_age_ms(ctx: &ToolContext) -> i64 {
    if ctx.profile().has(&MAX_AGE_30_DAYS) {
        30 * 24 * 3600 * 1000
    } else {
        RECURRING_MAX_AGE_MS
    }
}

/// Where durable jobs live, under the cwd (CRON-1).
pub const DURABLE_FILE: &str = ".claude/scheduled_tasks.json";

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
pub(super) struct State {
    now_ms: Option<i64>,
    /// The jobs, in creation order.
    pub(super) jobs: Vec<Job>,
    /// Ids issued so far (the next id's counter).
    pub(super) issued: u64,
    idle_fires: usize,
    durable_path: Option<PathBuf>,
    loaded: bool,
    /// A recurring job's age limit at the session's release ([`recurring_max_age_ms`]), set by
    /// the first call ([`Cron::load`]); the reference's first one until then.
    max_age_ms: Option<i64>,
}

/// The session's cron jobs and clock.
#[derive(Debug)]
pub struct Cron {
    /// Where "now" comes from.
    pub(super) clock: Clock,
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

    pub(super) fn lock(&self) -> std::sync::MutexGuard<'_, State> {
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
        let max_age = st.max_age_ms.unwrap_or(RECURRING_MAX_AGE_MS);
        let job = &mut st.jobs[k];
        let prompt = job.prompt.clone();
        let aged = job.recurring && !job.permanent && now - job.created_at >= max_age;
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
    pub(super) fn load(&self, ctx: &ToolContext) -> Result<(), ToolError> {
        let mut st = self.lock();
        if st.loaded {
            return Ok(());
        }
        st.max_age_ms = Some(recurring_max_age_ms(ctx));
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
            for key in ["maxAgeMs", "createdBySessionId", "createdByPid", "createdByProcStart", "createdInProject"] {
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

impl Job {
    /// When it fires next: the time computed already, else its first fire (`None`: never).
    pub fn next_run(&self, zone: &TimeZone) -> Option<i64> {
        self.next_fire.or_else(|| first_fire(self, zone)).filter(|t| *t != i64::MAX)
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

/// Why the durable jobs could not be written (the text the model gets).
#[derive(Debug, thiserror::Error)]
pub enum DurableError {
    /// No durable file yet (the session has not placed it).
    #[error("the durable file's place is not known yet")]
    NoPlace,
    /// The jobs could not be serialised.
    #[error("{0}")]
    Json(#[from] serde_json::Error),
    /// Making its directory or writing it failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The directory or the file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

impl From<DurableError> for ToolError {
    fn from(e: DurableError) -> Self {
        ToolError::Runtime(e.to_string())
    }
}

/// Writes the durable jobs (2-space JSON and a newline, like the reference).
pub(super) fn write_durable(st: &State) -> Result<(), DurableError> {
    let Some(path) = &st.durable_path else {
        return Err(DurableError::NoPlace);
    };
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| DurableError::Io { path, source }
    };
    let tasks: Vec<Value> = st.jobs.iter().filter(|j| j.durable).map(record).collect();
    let text = serde_json::to_string_pretty(&json!({ "tasks": tasks }))?;
    // from the cwd down (`<cwd>/.claude/scheduled_tasks.json`), no link followed (crate::nofollow)
    let home: Vec<std::path::PathBuf> = path.ancestors().nth(2).map(Path::to_path_buf).into_iter().collect();
    crate::nofollow::write(&home, path, format!("{text}\n").as_bytes()).map_err(io(path))
}

/// This process's start time in clock ticks since boot (`/proc/self/stat` field 22), as the reference
/// records `createdByProcStart`.
pub(super) fn proc_start() -> Option<String> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let after = stat.rsplit_once(')')?.1;
    after.split_whitespace().nth(19).map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::super::schedule::tests::{at, show};
    use super::*;
    use serde::Deserialize;

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
