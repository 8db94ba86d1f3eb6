//! The catalogue: every published version of `@anthropic-ai/claude-code` in npm's order, its publication
//! time, and whether its package carries the native linux-x64 binary — asked of npm with two queries and
//! cached in `<cache>/claude-code/versions.json`.
//!
//! - `npm view @anthropic-ai/claude-code versions time --json`: the versions (npm sorts them by semver)
//!   and when each was published;
//! - `npm view '@anthropic-ai/claude-code@>=0.0.0' version optionalDependencies --json`: for each version,
//!   whether it depends on `@anthropic-ai/claude-code-linux-x64` (from [`FIRST_LINUX_X64`] on; older ones
//!   shipped a JavaScript `cli.js` only);
//! - `npm view @anthropic-ai/claude-code-linux-x64 versions time --json`: the platform package's own
//!   versions. A release can be published as the platform package only (2.1.333, 2026-11-30: the main
//!   package stops at 2.1.332): such a version is in the catalogue too, marked
//!   [`Published::platform_only`], and is installed from the platform package (it holds the whole native
//!   binary; the main package is only its wrapper).
//!
//! Refresh policy ([`Refresh`]): the cached list is used while it is younger than [`MAX_AGE`]; then (or on
//! request, `--refresh`) npm is asked again. When npm cannot be asked, a cached list is used whatever its
//! age, and [`Freshness::Offline`] says so; with no cached list that is [`VersionError::NoCatalogue`].

use super::error::VersionError;
use super::files;
use super::npm::{Npm, VIEW_DEADLINE};
use super::package::{PACKAGE, PLATFORM_PACKAGE};
use semver::Version;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The first version whose package depends on `@anthropic-ai/claude-code-linux-x64` (measured on the
/// registry: 2.1.112 and every version before it has `bin: cli.js` and no platform packages; from 2.1.113
/// on every version has them, `bin: bin/claude.exe`). The catalogue reads it from npm per version; this
/// constant is the record, checked by a test against the registry.
pub const FIRST_LINUX_X64: &str = "2.1.113";

/// How old a cached catalogue may be before npm is asked again.
pub const MAX_AGE: Duration = Duration::from_secs(24 * 3600);

/// One published version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Published {
    /// The version.
    pub version: Version,
    /// When npm says it was published (RFC 3339), if it says.
    pub published: Option<String>,
    /// Its package depends on the linux-x64 platform package (the native binary).
    pub linux_x64: bool,
    /// Published only as `@anthropic-ai/claude-code-linux-x64` (no main package of this version): installed
    /// from the platform package.
    pub platform_only: bool,
}

/// The published versions, oldest first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Catalogue {
    versions: Vec<Published>,
    fetched_at: jiff::Timestamp,
    /// The platform package's versions were asked too ([`Catalogue::with_platform`]); a cached list
    /// written before that was asked is fetched again.
    platform_checked: bool,
}

/// When to ask npm again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refresh {
    /// When the cached list is older than this (default: [`MAX_AGE`]).
    IfOlderThan(Duration),
    /// Now (`--refresh`).
    Always,
    /// Never: the cached list or an error.
    Never,
}

impl Default for Refresh {
    fn default() -> Refresh {
        Refresh::IfOlderThan(MAX_AGE)
    }
}

/// Where the catalogue a [`Catalogue::load`] returned came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Freshness {
    /// Asked of npm just now.
    Fetched,
    /// The cached list, young enough.
    Cached {
        /// Its age.
        age: Duration,
    },
    /// The cached list, because npm could not be asked.
    Offline {
        /// Its age.
        age: Duration,
        /// Why npm could not be asked.
        error: String,
    },
}

impl Freshness {
    /// One line for people: where the list came from.
    pub fn describe(&self, catalogue: &Catalogue) -> String {
        let n = catalogue.versions.len();
        match self {
            Freshness::Fetched => format!("{n} published versions (asked npm just now)"),
            Freshness::Cached { age } => {
                format!("{n} published versions (cached {} ago; --refresh asks npm again)", human_age(*age))
            }
            Freshness::Offline { age, error } => format!(
                "OFFLINE: npm could not be asked, using the list cached {} ago ({n} versions): {}",
                human_age(*age),
                error.lines().next().unwrap_or_default()
            ),
        }
    }
}

/// `3 h`, `2 d`, `40 s`.
pub fn human_age(age: Duration) -> String {
    let s = age.as_secs();
    match s {
        0..=119 => format!("{s} s"),
        120..=7199 => format!("{} min", s / 60),
        7200..=172_799 => format!("{} h", s / 3600),
        _ => format!("{} d", s / 86_400),
    }
}

/// The catalogue file under a cache root.
pub fn path(cache_root: &Path) -> PathBuf {
    cache_root.join("claude-code").join("versions.json")
}

impl Catalogue {
    /// The catalogue, by the refresh policy: cached, fetched from npm, or cached because npm failed.
    pub fn load(cache_root: &Path, npm: &Npm, refresh: Refresh) -> Result<(Catalogue, Freshness), VersionError> {
        let file = path(cache_root);
        let cached = Catalogue::read(&file);
        let age = |c: &Catalogue| {
            let secs = jiff::Timestamp::now().duration_since(c.fetched_at).as_secs().max(0);
            Duration::from_secs(u64::try_from(secs).unwrap_or(0))
        };
        match (&cached, refresh) {
            (Some(c), Refresh::Never) => return Ok((c.clone(), Freshness::Cached { age: age(c) })),
            (Some(c), Refresh::IfOlderThan(max)) if age(c) < max && c.platform_checked => {
                return Ok((c.clone(), Freshness::Cached { age: age(c) }))
            }
            (None, Refresh::Never) => {
                return Err(VersionError::NoCatalogue { cache: file, cause: "it was not to be asked".into() })
            }
            _ => {}
        }
        let dir = file.parent().unwrap_or(cache_root).to_path_buf();
        std::fs::create_dir_all(&dir).map_err(|e| VersionError::io("create", &dir, e))?;
        match Catalogue::fetch(npm, &dir) {
            Ok(c) => {
                files::write_atomic(&file, c.to_json().as_bytes())?;
                Ok((c, Freshness::Fetched))
            }
            Err(e) => match cached {
                Some(c) => {
                    let age = age(&c);
                    Ok((c, Freshness::Offline { age, error: e.to_string() }))
                }
                None => Err(VersionError::NoCatalogue { cache: file, cause: e.to_string() }),
            },
        }
    }

    /// The cached catalogue, if there is a readable one (npm is not asked).
    pub fn cached(cache_root: &Path) -> Option<Catalogue> {
        Catalogue::read(&path(cache_root))
    }

    /// Asks npm (three `npm view` queries, run in `cwd`).
    pub fn fetch(npm: &Npm, cwd: &Path) -> Result<Catalogue, VersionError> {
        let view = |spec: &str, fields: &[&str], what: String| {
            let mut args: Vec<&OsStr> = vec![OsStr::new("view"), OsStr::new(spec)];
            args.extend(fields.iter().map(OsStr::new));
            args.extend([OsStr::new("--json"), OsStr::new("--prefer-online")]);
            npm.run(&args, cwd, VIEW_DEADLINE, &what)
        };
        let order = view(PACKAGE, &["versions", "time"], format!("list the versions of {PACKAGE}"))?;
        let all = format!("{PACKAGE}@>=0.0.0");
        let deps = view(
            &all,
            &["version", "optionalDependencies"],
            format!("list the platform packages of {PACKAGE}'s versions"),
        )?;
        let platform =
            view(PLATFORM_PACKAGE, &["versions", "time"], format!("list the versions of {PLATFORM_PACKAGE}"))?;
        Catalogue::from_npm(&order.stdout, &deps.stdout, jiff::Timestamp::now())?.with_platform(&platform.stdout)
    }

    /// Adds the versions published only as the platform package (`npm view PLATFORM versions time --json`
    /// printed `platform_versions_time`): each one the main package lacks, with the binary, marked
    /// [`Published::platform_only`]. Versions before the main package's first with the binary are left out
    /// (the platform package lists placeholders there, e.g. 0.0.0).
    pub fn with_platform(mut self, platform_versions_time: &str) -> Result<Catalogue, VersionError> {
        let bad = |reason: String| VersionError::NpmOutput { what: "platform versions time".to_string(), reason };
        let (vt, names) = versions_time_of(platform_versions_time, "platform versions time")?;
        let first = self.first_linux_x64().cloned();
        for name in &names {
            let version = Version::parse(name).map_err(|e| bad(format!("{name:?} is not a version: {e}")))?;
            if self.position(&version).is_some() || first.as_ref().is_none_or(|f| version < *f) {
                continue;
            }
            let published = vt.get("time").and_then(|t| t.get(name)).and_then(|t| t.as_str()).map(str::to_string);
            self.versions.push(Published { version, published, linux_x64: true, platform_only: true });
        }
        self.versions.sort_by(|a, b| a.version.cmp(&b.version));
        self.platform_checked = true;
        Ok(self)
    }

    /// A catalogue from the two `npm view --json` outputs (see the module docs).
    pub fn from_npm(
        versions_time: &str,
        optional_deps: &str,
        fetched_at: jiff::Timestamp,
    ) -> Result<Catalogue, VersionError> {
        let bad = |what: &str, reason: String| VersionError::NpmOutput { what: what.to_string(), reason };
        let (vt, names) = versions_time_of(versions_time, "versions time")?;
        let od: serde_json::Value =
            serde_json::from_str(optional_deps).map_err(|e| bad("optionalDependencies", format!("not JSON: {e}")))?;
        let entries = match od {
            serde_json::Value::Array(a) => a,
            other => vec![other],
        };
        let mut has: std::collections::HashMap<String, bool> = std::collections::HashMap::new();
        for e in &entries {
            match e {
                serde_json::Value::Object(o) => {
                    let Some(v) = o.get("version").and_then(|v| v.as_str()) else {
                        return Err(bad("optionalDependencies", format!("an entry without a version: {e}")));
                    };
                    let x64 = o.get("optionalDependencies").and_then(|d| d.get(PLATFORM_PACKAGE)).is_some();
                    has.insert(v.to_string(), x64);
                }
                serde_json::Value::String(v) => {
                    has.insert(v.clone(), false);
                }
                _ => return Err(bad("optionalDependencies", format!("unexpected entry {e}"))),
            }
        }
        let mut versions = Vec::with_capacity(names.len());
        for name in &names {
            let version =
                Version::parse(name).map_err(|e| bad("versions time", format!("{name:?} is not a version: {e}")))?;
            let published = vt.get("time").and_then(|t| t.get(name)).and_then(|t| t.as_str()).map(str::to_string);
            versions.push(Published {
                version,
                published,
                linux_x64: has.get(name).copied().unwrap_or(false),
                platform_only: false,
            });
        }
        // npm lists them in semver order; sorting (stably) keeps that order and guards the selection's
        // "oldest first" against a registry that does not
        versions.sort_by(|a, b| a.version.cmp(&b.version));
        // a version published between the two queries: like the version before it
        for i in 0..versions.len() {
            if !has.contains_key(&versions[i].version.to_string()) {
                versions[i].linux_x64 = i > 0 && versions[i - 1].linux_x64;
            }
        }
        if versions.is_empty() {
            return Err(bad("versions time", "no versions".into()));
        }
        Ok(Catalogue { versions, fetched_at, platform_checked: false })
    }

    /// A catalogue of given versions (tests, tools).
    pub fn from_versions(versions: Vec<Published>, fetched_at: jiff::Timestamp) -> Catalogue {
        let mut versions = versions;
        versions.sort_by(|a, b| a.version.cmp(&b.version));
        Catalogue { versions, fetched_at, platform_checked: true }
    }

    fn read(file: &Path) -> Option<Catalogue> {
        let text = std::fs::read_to_string(file).ok()?;
        let v: serde_json::Value = serde_json::from_str(&text).ok()?;
        let fetched_at: jiff::Timestamp = v.get("fetched_at")?.as_str()?.parse().ok()?;
        let platform_checked = v.get("platform_checked").and_then(serde_json::Value::as_bool).unwrap_or(false);
        let mut versions = Vec::new();
        for e in v.get("versions")?.as_array()? {
            versions.push(Published {
                version: Version::parse(e.get("version")?.as_str()?).ok()?,
                published: e.get("published").and_then(|p| p.as_str()).map(str::to_string),
                linux_x64: e.get("linux_x64")?.as_bool()?,
                platform_only: e.get("platform_only").and_then(serde_json::Value::as_bool).unwrap_or(false),
            });
        }
        (!versions.is_empty()).then(|| Catalogue { platform_checked, ..Catalogue::from_versions(versions, fetched_at) })
    }

    fn to_json(&self) -> String {
        let versions: Vec<serde_json::Value> = self
            .versions
            .iter()
            .map(|p| {
                let mut e = serde_json::json!({"version": p.version.to_string(), "published": p.published, "linux_x64": p.linux_x64});
                if p.platform_only {
                    e["platform_only"] = true.into();
                }
                e
            })
            .collect();
        let v = serde_json::json!({
            "package": PACKAGE, "fetched_at": self.fetched_at.to_string(),
            "platform_checked": self.platform_checked, "versions": versions,
        });
        format!("{v:#}\n")
    }

    /// Every published version, oldest first (npm's order).
    pub fn versions(&self) -> &[Published] {
        &self.versions
    }

    /// When npm was asked.
    pub fn fetched_at(&self) -> jiff::Timestamp {
        self.fetched_at
    }

    /// A published version.
    pub fn get(&self, version: &Version) -> Option<&Published> {
        self.position(version).map(|i| &self.versions[i])
    }

    pub(crate) fn position(&self, version: &Version) -> Option<usize> {
        self.versions.binary_search_by(|p| p.version.cmp(version)).ok()
    }

    /// The first version with a linux-x64 binary.
    pub fn first_linux_x64(&self) -> Option<&Version> {
        self.versions.iter().find(|p| p.linux_x64).map(|p| &p.version)
    }

    /// The newest version with a linux-x64 binary.
    pub fn newest(&self) -> Option<&Published> {
        self.versions.iter().rev().find(|p| p.linux_x64)
    }

    /// The published versions nearest to one that is not: the one below and the one above.
    pub fn nearest(&self, version: &Version) -> Vec<Version> {
        let i = self.versions.partition_point(|p| p.version < *version);
        let below = i.checked_sub(1).and_then(|j| self.versions.get(j));
        let at = self.versions.get(i).filter(|p| p.version == *version);
        let above = self.versions.get(if at.is_some() { i + 1 } else { i });
        below.into_iter().chain(above).map(|p| p.version.clone()).collect()
    }

    /// A published version, or [`VersionError::UnknownVersion`] naming its neighbours.
    pub fn known(&self, version: &Version) -> Result<&Published, VersionError> {
        self.get(version).ok_or_else(|| VersionError::UnknownVersion {
            version: version.to_string(),
            package: PACKAGE,
            nearest: self.nearest(version).iter().map(Version::to_string).collect(),
        })
    }

    /// A published version that has the linux-x64 binary, or the error saying why not.
    pub fn runnable(&self, version: &Version) -> Result<&Published, VersionError> {
        let p = self.known(version)?;
        if p.linux_x64 {
            Ok(p)
        } else {
            Err(self.no_linux_x64(version))
        }
    }

    /// Why a version is not run: it has no linux-x64 binary (and which version first has one).
    pub fn no_linux_x64_text(&self, version: &Version) -> String {
        self.no_linux_x64(version).to_string()
    }

    pub(crate) fn no_linux_x64(&self, version: &Version) -> VersionError {
        VersionError::NoLinuxX64 {
            version: version.to_string(),
            platform_package: PLATFORM_PACKAGE,
            first_linux_x64: self.first_linux_x64().map(Version::to_string),
        }
    }
}

/// `npm view PACKAGE versions time --json`: the answer, and its versions (one version is a string, not
/// a list); `what` names the query in errors.
fn versions_time_of(text: &str, what: &str) -> Result<(serde_json::Value, Vec<String>), VersionError> {
    let bad = |reason: String| VersionError::NpmOutput { what: what.to_string(), reason };
    let vt: serde_json::Value = serde_json::from_str(text).map_err(|e| bad(format!("not JSON: {e}")))?;
    let names = match vt.get("versions") {
        Some(serde_json::Value::Array(a)) => a.iter().filter_map(|v| v.as_str().map(str::to_string)).collect(),
        Some(serde_json::Value::String(s)) => vec![s.clone()],
        _ => return Err(bad("no \"versions\" field".into())),
    };
    Ok((vt, names))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::versions::Failing;

    /// A catalogue like the registry's, small: 1.0.0 … 2.0.1 without the binary, 2.1.0 … with it.
    pub(crate) fn small() -> Catalogue {
        let vs = [
            ("1.0.0", false),
            ("1.0.3", false),
            ("2.0.1", false),
            ("2.1.0", true),
            ("2.1.1", true),
            ("2.1.2", true),
            ("2.1.5", true),
            ("2.1.7", true),
            ("2.1.10", true),
            ("2.2.0", true),
        ];
        let versions = vs
            .iter()
            .map(|(v, x)| Published {
                version: Version::parse(v).unwrap_or_else(|e| panic!("{e}")),
                published: None,
                linux_x64: *x,
                platform_only: false,
            })
            .collect();
        Catalogue::from_versions(versions, jiff::Timestamp::UNIX_EPOCH)
    }

    pub(crate) fn v(s: &str) -> Version {
        Version::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    #[test]
    fn npm_s_two_answers_make_the_catalogue_in_semver_order() {
        let order = r#"{"versions": ["0.2.9", "2.1.112", "2.1.113", "2.1.114"],
            "time": {"created": "2025-01-01T00:00:00Z", "2.1.113": "2026-04-17T21:23:04.997Z"}}"#;
        let deps = format!(
            r#"[{{"version": "2.1.113", "optionalDependencies": {{"{PLATFORM_PACKAGE}": "2.1.113", "x": "1"}}}},
                {{"version": "0.2.9", "optionalDependencies": {{"@img/sharp-linux-x64": "^0.33.5"}}}},
                {{"version": "2.1.112"}}]"#
        );
        let c = Catalogue::from_npm(order, &deps, jiff::Timestamp::UNIX_EPOCH).unwrap_or_else(|e| panic!("{e}"));
        let got: Vec<(String, bool)> = c.versions().iter().map(|p| (p.version.to_string(), p.linux_x64)).collect();
        assert_eq!(
            got,
            [("0.2.9", false), ("2.1.112", false), ("2.1.113", true), ("2.1.114", true)]
                .map(|(a, b)| (a.to_string(), b))
                .to_vec(),
            "2.1.114 is missing from the second answer (published in between): like its predecessor"
        );
        assert_eq!(c.first_linux_x64(), Some(&v("2.1.113")));
        assert_eq!(c.get(&v("2.1.113")).and_then(|p| p.published.clone()).as_deref(), Some("2026-04-17T21:23:04.997Z"));
        // and back from the cache file
        let d = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let f = d.path().join("versions.json");
        std::fs::write(&f, c.to_json()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(Catalogue::read(&f), Some(c));
    }

    #[test]
    fn platform_only_releases_join_the_catalogue_and_placeholders_before_the_binary_do_not() {
        let order = r#"{"versions": ["2.1.112", "2.1.113", "2.1.114"]}"#;
        let deps = format!(
            r#"[{{"version": "2.1.113", "optionalDependencies": {{"{PLATFORM_PACKAGE}": "2.1.113"}}}},
                {{"version": "2.1.114", "optionalDependencies": {{"{PLATFORM_PACKAGE}": "2.1.114"}}}},
                {{"version": "2.1.112"}}]"#
        );
        let platform =
            r#"{"versions": ["0.0.0", "2.1.113", "2.1.114", "2.1.115"], "time": {"2.1.115": "2026-11-30T01:02:03Z"}}"#;
        let c = Catalogue::from_npm(order, &deps, jiff::Timestamp::UNIX_EPOCH)
            .and_then(|c| c.with_platform(platform))
            .unwrap_or_else(|e| panic!("{e}"));
        let got: Vec<(String, bool, bool)> =
            c.versions().iter().map(|p| (p.version.to_string(), p.linux_x64, p.platform_only)).collect();
        assert_eq!(
            got,
            [("2.1.112", false, false), ("2.1.113", true, false), ("2.1.114", true, false), ("2.1.115", true, true)]
                .map(|(a, b, c)| (a.to_string(), b, c))
                .to_vec()
        );
        assert_eq!(c.newest().map(|p| p.published.clone()), Some(Some("2026-11-30T01:02:03Z".to_string())));
        let e = c.clone().with_platform("{}").failing("no versions");
        assert!(e.to_string().contains("platform versions time"), "{e}");
    }

    #[test]
    fn a_single_version_answer_is_an_object_not_a_list() {
        let deps = format!(r#"{{"version": "2.1.113", "optionalDependencies": {{"{PLATFORM_PACKAGE}": "2.1.113"}}}}"#);
        let c = Catalogue::from_npm(r#"{"versions": "2.1.113"}"#, &deps, jiff::Timestamp::UNIX_EPOCH)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(c.newest().map(|p| p.version.to_string()).as_deref(), Some("2.1.113"));
    }

    #[test]
    fn garbage_from_npm_is_an_error_naming_the_query() {
        let e = Catalogue::from_npm("npm WARN", "[]", jiff::Timestamp::UNIX_EPOCH).failing("not JSON");
        assert!(e.to_string().starts_with("npm view printed something unexpected (versions time): not JSON"), "{e}");
        let e = Catalogue::from_npm(r#"{"versions": ["x.y"]}"#, "[]", jiff::Timestamp::UNIX_EPOCH).failing("bad");
        assert!(e.to_string().contains("\"x.y\" is not a version"), "{e}");
    }

    #[test]
    fn unknown_versions_name_their_published_neighbours() {
        let c = small();
        assert_eq!(c.nearest(&v("2.1.3")), vec![v("2.1.2"), v("2.1.5")]);
        assert_eq!(c.nearest(&v("9.0.0")), vec![v("2.2.0")]);
        assert_eq!(c.nearest(&v("0.1.0")), vec![v("1.0.0")]);
        let e = c.known(&v("2.1.3")).failing("unknown");
        assert!(e.to_string().contains("nearest published: 2.1.2, 2.1.5"), "{e}");
        let e = c.runnable(&v("1.0.3")).failing("no binary");
        assert_eq!(
            e.to_string(),
            "1.0.3 has no linux-x64 binary: its package does not depend on @anthropic-ai/claude-code-linux-x64; \
             pick a version from 2.1.0 on"
        );
    }

    #[test]
    fn ages_read_short() {
        assert_eq!(human_age(Duration::from_secs(40)), "40 s");
        assert_eq!(human_age(Duration::from_secs(600)), "10 min");
        assert_eq!(human_age(Duration::from_secs(3 * 3600)), "3 h");
        assert_eq!(human_age(Duration::from_secs(3 * 86_400)), "3 d");
    }
}
