//! The clock cron jobs run on: the system clock, or a probe's virtual clock (`[clock]`).
//!
//! ```toml
//! [clock]
//! start = "2026-03-02T09:00:00"      # local wall time in `tz` when the session starts (required)
//! tz = "Europe/Paris"                # IANA zone or "UTC" (default "UTC")
//! per_request = "1m"                 # virtual time each model request takes (default "0s")
//! idle_until = "2026-03-02T10:00:00" # how far an idle session may wait for a job (default: no waiting)
//! max_idle_fires = 3                 # jobs fired while idle, at most (default 10)
//! ```
//!
//! Decisions (the issue leaves them open):
//! - Time zone: `tz` of the table, default UTC, for deterministic goldens. The probe's `TZ` env is not
//!   read: the clock is made with the session, from the table alone. Zones come from the system's
//!   zoneinfo, or jiff's bundled database where there is none.
//! - Virtual time moves in two ways only: each model request advances it by `per_request` as it is
//!   sent (tool calls of its answer run at the new time and take no time themselves), and an idle
//!   session jumps it to the next fire time when that is within `idle_until`.
//! - Durations: a number and a unit (`ms`, `s`, `m`, `h`, `d`), concatenated (`1h30m`).
//! - Without `[clock]` the system clock and the machine's zone are used, and an idle session never waits
//!   nor fires: like Claude Code in `-p` mode, whose session ends once the model ends its turn.

use jiff::civil::DateTime;
use jiff::tz::TimeZone;
use jiff::{Timestamp, Zoned};
use serde::Deserialize;

/// Jobs an idle session fires at most when the probe does not say (a bound on the turns cron starts).
pub const DEFAULT_MAX_IDLE_FIRES: usize = 10;

/// `[clock]` of a probe: a virtual clock for the built-in subject (see the module doc).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(try_from = "RawClock")]
pub struct ClockSpec {
    /// Local wall time at the start of the session.
    pub start: DateTime,
    /// Time zone name (`UTC` or an IANA name).
    pub tz: String,
    /// Milliseconds of virtual time each model request takes.
    pub per_request_ms: i64,
    /// Local wall time an idle session may wait until for a job (`None`: it does not wait).
    pub idle_until: Option<DateTime>,
    /// Jobs fired while idle, at most.
    pub max_idle_fires: usize,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawClock {
    start: String,
    #[serde(default)]
    tz: Option<String>,
    #[serde(default)]
    per_request: Option<String>,
    #[serde(default)]
    idle_until: Option<String>,
    #[serde(default)]
    max_idle_fires: Option<usize>,
}

/// A `[clock]` table that does not make a clock (the probe's parser shows it at the table).
#[derive(Debug, thiserror::Error)]
pub enum ClockError {
    /// `start` / `idle_until` is not a civil date-time.
    #[error("[clock] {field} = {text:?} is not a local date-time like \"2026-03-02T09:00:00\": {source}")]
    NotDateTime {
        /// The field.
        field: &'static str,
        /// As written.
        text: String,
        /// jiff's reason.
        source: jiff::Error,
    },
    /// A zone neither `UTC` nor known by name.
    #[error("unknown time zone {name:?} (use \"UTC\" or an IANA name): {source}")]
    UnknownZone {
        /// As written.
        name: String,
        /// jiff's reason.
        source: jiff::Error,
    },
    /// `start` does not exist in the zone.
    #[error("[clock] start = {start:?} in {tz}: {source}")]
    StartNotInZone {
        /// `start` as written.
        start: String,
        /// The zone's name.
        tz: String,
        /// jiff's reason.
        source: jiff::Error,
    },
    /// `per_request` is not a duration.
    #[error("[clock] per_request: {0}")]
    PerRequest(#[source] DurationError),
    /// `idle_until` comes before `start`.
    #[error("[clock] idle_until ({idle_until}) is before start ({start})")]
    IdleBeforeStart {
        /// `idle_until`.
        idle_until: DateTime,
        /// `start`.
        start: DateTime,
    },
}

/// A text that is not a duration (`clock::parse_duration`: `1m`, `90s`, `1h30m`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not a duration like \"1m\", \"90s\" or \"1h30m\"")]
pub struct DurationError(pub String);

impl TryFrom<RawClock> for ClockSpec {
    type Error = ClockError;

    fn try_from(raw: RawClock) -> Result<ClockSpec, ClockError> {
        let civil = |field: &'static str, s: &str| {
            s.parse::<DateTime>().map_err(|source| ClockError::NotDateTime { field, text: s.to_string(), source })
        };
        let start = civil("start", &raw.start)?;
        let tz = raw.tz.unwrap_or_else(|| "UTC".into());
        let zone = zone(&tz)?;
        if let Err(source) = start.to_zoned(zone.clone()) {
            return Err(ClockError::StartNotInZone { start: raw.start, tz, source });
        }
        let per_request_ms = match raw.per_request {
            Some(d) => parse_duration(&d).map_err(ClockError::PerRequest)?,
            None => 0,
        };
        let idle_until = raw.idle_until.as_deref().map(|s| civil("idle_until", s)).transpose()?;
        if let Some(u) = idle_until {
            if u < start {
                return Err(ClockError::IdleBeforeStart { idle_until: u, start });
            }
        }
        Ok(ClockSpec {
            start,
            tz,
            per_request_ms,
            idle_until,
            max_idle_fires: raw.max_idle_fires.unwrap_or(DEFAULT_MAX_IDLE_FIRES),
        })
    }
}

/// The zone called `name` (`UTC`, or an IANA name from the system's zoneinfo or jiff's bundled one).
pub fn zone(name: &str) -> Result<TimeZone, ClockError> {
    if name.eq_ignore_ascii_case("UTC") {
        return Ok(TimeZone::UTC);
    }
    TimeZone::get(name).map_err(|source| ClockError::UnknownZone { name: name.to_string(), source })
}

/// Milliseconds of a duration such as `90s`, `1m`, `1h30m`, `250ms`, `0s`.
pub fn parse_duration(text: &str) -> Result<i64, DurationError> {
    let bad = || DurationError(text.to_string());
    let s = text.trim();
    if s.is_empty() {
        return Err(bad());
    }
    let mut total: i64 = 0;
    let mut rest = s;
    while !rest.is_empty() {
        let digits = rest.find(|c: char| !c.is_ascii_digit()).unwrap_or(rest.len());
        if digits == 0 {
            return Err(bad());
        }
        let n: i64 = rest[..digits].parse().map_err(|_| bad())?;
        rest = &rest[digits..];
        let unit_len = rest.find(|c: char| c.is_ascii_digit()).unwrap_or(rest.len());
        let unit = match &rest[..unit_len] {
            "ms" => 1,
            "s" => 1_000,
            "m" => 60_000,
            "h" => 3_600_000,
            "d" => 86_400_000,
            _ => return Err(bad()),
        };
        rest = &rest[unit_len..];
        total = n.checked_mul(unit).and_then(|v| total.checked_add(v)).ok_or_else(bad)?;
    }
    Ok(total)
}

/// Where "now" comes from.
#[derive(Debug, Clone)]
pub enum Clock {
    /// The machine's clock and zone.
    System(TimeZone),
    /// A probe's virtual clock.
    Virtual {
        /// The zone jobs are read in.
        zone: TimeZone,
        /// Virtual time per model request, ms.
        per_request_ms: i64,
        /// An idle session may jump up to this instant (ms since the epoch).
        idle_until_ms: Option<i64>,
        /// Jobs fired while idle, at most.
        max_idle_fires: usize,
    },
}

impl Clock {
    /// The clock of `spec` and its start (ms since the epoch), or the system clock without one (or when
    /// the spec cannot be resolved, which its parsing already ruled out).
    pub fn new(spec: Option<&ClockSpec>) -> (Clock, Option<i64>) {
        let Some(spec) = spec else {
            return (Clock::System(TimeZone::system()), None);
        };
        let Ok(zone) = zone(&spec.tz) else {
            return (Clock::System(TimeZone::system()), None);
        };
        let ms = |d: DateTime| d.to_zoned(zone.clone()).ok().map(|z| z.timestamp().as_millisecond());
        let Some(start) = ms(spec.start) else {
            return (Clock::System(TimeZone::system()), None);
        };
        let clock = Clock::Virtual {
            idle_until_ms: spec.idle_until.and_then(ms),
            zone,
            per_request_ms: spec.per_request_ms,
            max_idle_fires: spec.max_idle_fires,
        };
        (clock, Some(start))
    }

    /// The zone jobs are read in.
    pub fn zone(&self) -> &TimeZone {
        match self {
            Clock::System(z) | Clock::Virtual { zone: z, .. } => z,
        }
    }
}

/// Milliseconds since the epoch of the system clock.
pub fn system_now_ms() -> i64 {
    Timestamp::now().as_millisecond()
}

/// The instant `ms` in `zone`.
pub fn zoned(ms: i64, zone: &TimeZone) -> Option<Zoned> {
    Timestamp::from_millisecond(ms).ok().map(|t| t.to_zoned(zone.clone()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("1m"), Ok(60_000));
        assert_eq!(parse_duration("90s"), Ok(90_000));
        assert_eq!(parse_duration("1h30m"), Ok(5_400_000));
        assert_eq!(parse_duration("250ms"), Ok(250));
        assert_eq!(parse_duration("0s"), Ok(0));
        assert_eq!(parse_duration("2d"), Ok(172_800_000));
        for bad in ["", "m", "1", "1 m", "1w", "-1m", "1m30"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn table_parses_and_checks() {
        let spec: ClockSpec = toml::from_str::<Table>(
            "[clock]\nstart = \"2026-03-02T09:00:00\"\ntz = \"Europe/Paris\"\nper_request = \"1m\"\nidle_until = \"2026-03-02T10:00:00\"\n",
        )
        .unwrap_or_else(|e| panic!("{e}"))
        .clock;
        assert_eq!(spec.per_request_ms, 60_000);
        assert_eq!(spec.max_idle_fires, DEFAULT_MAX_IDLE_FIRES);
        let (clock, start) = Clock::new(Some(&spec));
        // 09:00 in Paris in March (CET) is 08:00 UTC
        assert_eq!(start, Some(1_772_438_400_000));
        match clock {
            Clock::Virtual { idle_until_ms, .. } => assert_eq!(idle_until_ms, Some(1_772_442_000_000)),
            Clock::System(_) => panic!("virtual expected"),
        }
        for bad in [
            "[clock]\nstart = \"tomorrow\"\n",
            "[clock]\nstart = \"2026-03-02T09:00:00\"\ntz = \"Mars/Olympus\"\n",
            "[clock]\nstart = \"2026-03-02T09:00:00\"\nper_request = \"soon\"\n",
            "[clock]\nstart = \"2026-03-02T09:00:00\"\nidle_until = \"2026-03-01T09:00:00\"\n",
            "[clock]\nstart = \"2026-03-02T09:00:00\"\nspeed = 2\n",
        ] {
            assert!(toml::from_str::<Table>(bad).is_err(), "{bad}");
        }
        let message = |table: &str| toml::from_str::<Table>(table).err().map(|e| e.message().to_string());
        assert_eq!(
            message("[clock]\nstart = \"2026-03-02T09:00:00\"\nper_request = \"soon\"\n").as_deref(),
            Some("[clock] per_request: \"soon\" is not a duration like \"1m\", \"90s\" or \"1h30m\"")
        );
        assert_eq!(
            message("[clock]\nstart = \"2026-03-02T09:00:00\"\nidle_until = \"2026-03-01T09:00:00\"\n").as_deref(),
            Some("[clock] idle_until (2026-03-01T09:00:00) is before start (2026-03-02T09:00:00)")
        );
    }

    #[derive(Debug, Deserialize)]
    struct Table {
        clock: ClockSpec,
    }
}
