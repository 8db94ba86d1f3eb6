//! What the grep benches share: where ripgrep 14.1.1 is, and the ratio table read back from criterion's
//! own estimates of the run (`estimates.json`), so the summary cannot contradict criterion's figures.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// probelab's cache: `$PROBELAB_CACHE`, else `$XDG_CACHE_HOME/probelab`, else `~/.cache/probelab`.
fn cache() -> PathBuf {
    std::env::var_os("PROBELAB_CACHE")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("XDG_CACHE_HOME").map(|x| PathBuf::from(x).join("probelab")))
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/probelab")))
        .unwrap_or_else(|| PathBuf::from(".cache/probelab"))
}

/// ripgrep 14.1.1: `$PROBELAB_RG`, else the one `scripts/setup` builds (which may be missing).
pub fn rg_path() -> PathBuf {
    std::env::var_os("PROBELAB_RG").map(PathBuf::from).unwrap_or_else(|| cache().join("ripgrep-14.1.1/bin/rg"))
}

/// Where criterion writes its estimates: `$CRITERION_HOME`, else `$CARGO_TARGET_DIR/criterion`, else the
/// workspace's `target/criterion` (set on criterion too, so the table reads what it wrote).
pub fn criterion_dir() -> PathBuf {
    std::env::var_os("CRITERION_HOME").map(PathBuf::from).unwrap_or_else(|| {
        std::env::var_os("CARGO_TARGET_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../target"))
            .join("criterion")
    })
}

/// criterion's estimate of one benchmark's time per iteration: the median and its 95% confidence
/// interval, in nanoseconds.
#[derive(Debug, Clone, Copy)]
pub struct Estimate {
    median: f64,
    lo: f64,
    hi: f64,
}

impl Estimate {
    /// `group/function` as this run measured it (`new/estimates.json` written after `since`); None when
    /// the run did not measure it (a name filter on the command line) or the file is not criterion's.
    pub fn read(out: &Path, group: &str, function: Option<&str>, since: SystemTime) -> Option<Estimate> {
        // criterion's directory names: each part with `/` (and other characters a file name cannot
        // hold) as `_`
        let safe = |s: &str| s.replace(['?', '"', '/', '\\', '*', '<', '>', ':', '|', '^'], "_");
        let mut p = out.join(safe(group));
        if let Some(f) = function {
            p.push(safe(f));
        }
        p.push("new/estimates.json");
        if std::fs::metadata(&p).and_then(|m| m.modified()).ok()? < since {
            return None;
        }
        let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&p).ok()?).ok()?;
        let m = &v["median"];
        let ci = &m["confidence_interval"];
        Some(Estimate {
            median: m["point_estimate"].as_f64()?,
            lo: ci["lower_bound"].as_f64()?,
            hi: ci["upper_bound"].as_f64()?,
        })
    }

    fn ms(&self) -> String {
        format!("{:.1}ms", self.median / 1e6)
    }

    /// `self / other` at the medians, and the interval the two confidence intervals allow (the lowest
    /// over the highest, the highest over the lowest: wider than either, never narrower than the truth).
    fn ratio(&self, other: &Estimate) -> String {
        format!("{:.2}x [{:.2}, {:.2}]", self.median / other.median, self.lo / other.hi, self.hi / other.lo)
    }
}

/// One row of the table: the case, then `ours` against `theirs` (or why a cell is missing).
pub fn row(name: &str, pairs: &[(Option<Estimate>, Option<Estimate>)]) {
    let mut line = format!("{name:<20}");
    for pair in pairs {
        match pair {
            (Some(a), Some(r)) => line.push_str(&format!(" {:>9} {:>9} {:>20}", a.ms(), r.ms(), a.ratio(r))),
            _ => line.push_str(&format!(" {:>9} {:>9} {:>20}", "-", "-", "(not measured)")),
        }
    }
    println!("{line}");
}

/// Criterion as the grep benches run it: 10 samples of 5 s each, written under `out`, then the
/// command line's own options.
pub fn criterion(out: &Path) -> criterion::Criterion {
    criterion::Criterion::default()
        .sample_size(10)
        .measurement_time(std::time::Duration::from_secs(5))
        .output_directory(out)
        .configure_from_args()
}
