//! Cron's grammar and fire times (CRON-1, CRON-3), pure arithmetic on expressions, instants and zones:
//! [`parse`] (the reference's 5-field grammar), [`CronExpr::next_after`] (the next match in a zone),
//! [`recurring_fire`] / [`one_shot_fire`] (the reference's deterministic jitter) and
//! [`human_schedule`] (its human reading of an expression).

use crate::tools::clock;
use jiff::tz::TimeZone;

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

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    pub(in crate::tools::cron) fn paris() -> TimeZone {
        clock::zone("Europe/Paris").unwrap_or_else(|e| panic!("{e}"))
    }

    /// ms of a Paris wall time.
    pub(in crate::tools::cron) fn at(s: &str) -> i64 {
        s.parse::<jiff::civil::DateTime>()
            .unwrap_or_else(|e| panic!("{e}"))
            .to_zoned(paris())
            .unwrap_or_else(|e| panic!("{e}"))
            .timestamp()
            .as_millisecond()
    }

    pub(in crate::tools::cron) fn show(ms: i64) -> String {
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
}
