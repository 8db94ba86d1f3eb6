//! CronCreate / CronDelete / CronList (CRON-1..5) and the clock jobs run on.

use serde::Deserialize;

/// `[clock]` of a probe: a virtual clock for the built-in subject.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClockSpec {}

/// The session's cron jobs and clock.
#[derive(Debug, Default)]
pub struct Cron {}

impl Cron {
    /// The store of a session, on the probe's virtual clock if it has one (else the system clock).
    pub fn new(_clock: Option<&ClockSpec>) -> Cron {
        Cron {}
    }

    /// Called by the loop when the session is idle (the model ended its turn, nothing runs): the prompt
    /// of a job due now, which starts another turn (CRON-2), or `None` to end the session.
    pub async fn on_idle(&self) -> Option<String> {
        None
    }
}
