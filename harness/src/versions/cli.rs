//! `probelab versions` and `probelab cache` (see the module docs of [`crate::versions`]): the clap
//! commands, flattened into probelab's own.

use super::{human_age, Cache, Catalogue, Entry, Refresh, Spec, VersionError};
use std::io::Write;
use std::process::ExitCode;

/// The version commands.
#[derive(clap::Subcommand, Debug)]
pub enum Command {
    /// The published Claude Code versions a spec selects (default: all): linux-x64 binary, installed.
    Versions {
        /// `2.1.235,2.1.332` | `newest` | `>=2.1.235, <2.1.300` | `every 10 of >=2.1.200` | `all`
        /// (words may be given as separate arguments).
        spec: Vec<String>,
        /// Ask npm now instead of using a list cached less than 24 h ago.
        #[arg(long)]
        refresh: bool,
        /// One JSON object instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// The install cache of Claude Code versions: list (default), gc (evict down to PROBELAB_CACHE_MAX),
    /// rm V.
    Cache {
        /// What to do (default: list).
        #[command(subcommand)]
        action: Option<CacheAction>,
    },
}

/// `probelab cache …`.
#[derive(clap::Subcommand, Debug)]
pub enum CacheAction {
    /// The installed versions: size, installed, last used, SHA-256, in use.
    List,
    /// Evict least recently used versions down to PROBELAB_CACHE_MAX; remove leftovers of killed installs.
    Gc,
    /// Remove one installed version.
    Rm {
        /// The version, e.g. 2.1.235.
        version: String,
    },
}

impl Command {
    /// Runs the command: 0 done, 1 failed, 2 bad input.
    pub fn run(self) -> ExitCode {
        let cache = match Cache::from_env() {
            Ok(c) => c,
            Err(e) => return fail(&e),
        };
        let stdout = std::io::stdout();
        let mut out = stdout.lock();
        let done = match self {
            Command::Versions { spec, refresh, json } => {
                // which releases the project's observatory measured (its committed cells), if in a project
                let cells = std::env::current_dir()
                    .ok()
                    .and_then(|d| crate::project::Project::find(&d).ok())
                    .map(|p| p.golden.parent().unwrap_or(std::path::Path::new(".")).join("docs/matrix/cells"));
                versions(&cache, &spec.join(" "), refresh, json, cells.as_deref(), &mut out)
            }
            Command::Cache { action } => match action.unwrap_or(CacheAction::List) {
                CacheAction::List => list(&cache, &mut out),
                CacheAction::Gc => gc(&cache, &mut out),
                CacheAction::Rm { version } => rm(&cache, &version, &mut out),
            },
        };
        match done {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => fail(&e),
        }
    }
}

fn fail(e: &VersionError) -> ExitCode {
    if let VersionError::Io { error, .. } = e {
        if error.kind() == std::io::ErrorKind::BrokenPipe {
            // `probelab versions | head`: the reader has what it wanted
            return ExitCode::SUCCESS;
        }
    }
    eprintln!("probelab: {e}");
    match e {
        VersionError::BadSpec { .. }
        | VersionError::UnknownVersion { .. }
        | VersionError::EmptyRange { .. }
        | VersionError::NoLinuxX64 { .. }
        | VersionError::NotInstalled { .. } => ExitCode::from(2),
        _ => ExitCode::from(1),
    }
}

fn io(e: std::io::Error) -> VersionError {
    VersionError::io("write", "stdout", e)
}

/// `probelab versions [SPEC] [--refresh] [--json]`; `cells`: the project's committed cells
/// (`docs/matrix/cells/<V>/`), which say whether the observatory measured a release.
pub fn versions(
    cache: &Cache,
    spec: &str,
    refresh: bool,
    json: bool,
    cells: Option<&std::path::Path>,
    out: &mut dyn Write,
) -> Result<(), VersionError> {
    let measured = |v: &semver::Version| {
        cells.is_some_and(|c| std::fs::read_dir(c.join(v.to_string())).is_ok_and(|mut d| d.next().is_some()))
    };
    let spec: Spec = if spec.trim().is_empty() { Spec::All } else { spec.parse()? };
    let policy = if refresh { Refresh::Always } else { Refresh::default() };
    let (catalogue, freshness) = Catalogue::load(cache.root(), cache.npm(), policy)?;
    let selection = catalogue.select(&spec)?;
    let installed = cache.list()?;
    let inst = |v: &semver::Version| installed.iter().find(|e| e.version == *v);
    // all chosen versions in npm order, those without a binary among them
    let mut shown: Vec<&semver::Version> = selection.versions.iter().chain(&selection.skipped).collect();
    if !matches!(spec, Spec::List(_)) {
        shown.sort();
    }
    if json {
        let versions: Vec<serde_json::Value> = shown
            .iter()
            .map(|v| {
                let p = catalogue.get(v);
                serde_json::json!({
                    "version": v.to_string(),
                    "published": p.and_then(|p| p.published.clone()),
                    "linux_x64": p.is_some_and(|p| p.linux_x64),
                    "platform_only": p.is_some_and(|p| p.platform_only),
                    "installed": inst(v).map(entry_json),
                    "measured": measured(v),
                })
            })
            .collect();
        let source = match &freshness {
            super::Freshness::Fetched => serde_json::json!({"kind": "fetched"}),
            super::Freshness::Cached { age } => serde_json::json!({"kind": "cached", "age_secs": age.as_secs()}),
            super::Freshness::Offline { age, error } => {
                serde_json::json!({"kind": "offline", "age_secs": age.as_secs(), "error": error})
            }
        };
        let v = serde_json::json!({
            "catalogue": {
                "fetched_at": catalogue.fetched_at().to_string(),
                "source": source,
                "published": catalogue.versions().len(),
                "first_linux_x64": catalogue.first_linux_x64().map(|v| v.to_string()),
                "newest": catalogue.newest().map(|p| p.version.to_string()),
            },
            "spec": spec.to_string(),
            "versions": versions,
            "skipped": selection.skipped.iter().map(|v| v.to_string()).collect::<Vec<_>>(),
        });
        writeln!(out, "{v:#}").map_err(io)?;
        return Ok(());
    }
    eprintln!("claude-code: {}", freshness.describe(&catalogue));
    writeln!(out, "{:<10} {:<11} {:<18} {:<13} INSTALLED", "VERSION", "PUBLISHED", "LINUX-X64", "MEASURED")
        .map_err(io)?;
    for v in &shown {
        let p = catalogue.get(v);
        let published = p.and_then(|p| p.published.as_deref()).map(|t| t.get(..10).unwrap_or(t)).unwrap_or("-");
        let binary = match p {
            Some(p) if p.platform_only => "yes (platform pkg)",
            Some(p) if p.linux_x64 => "yes",
            _ => "no (not run)",
        };
        let installed = match inst(v) {
            None => "-".to_string(),
            Some(e) => installed_text(e),
        };
        let observed = match p {
            Some(p) if !p.linux_x64 => "-",
            _ if measured(v) => "yes",
            _ => "not yet",
        };
        writeln!(out, "{:<10} {:<11} {:<18} {observed:<13} {installed}", v.to_string(), published, binary)
            .map_err(io)?;
    }
    if let Some(note) = selection.skipped_note() {
        eprintln!("{note}");
    }
    Ok(())
}

fn entry_json(e: &Entry) -> serde_json::Value {
    serde_json::json!({
        "disk_size": e.disk_size,
        "installed_at": e.metadata.as_ref().map(|m| m.installed_at.to_string()),
        "last_used": e.metadata.as_ref().map(|m| m.last_used.to_string()),
        "sha256": e.metadata.as_ref().map(|m| m.sha256.clone()),
        "in_use": e.in_use,
    })
}

fn ago(t: jiff::Timestamp) -> String {
    let secs = jiff::Timestamp::now().duration_since(t).as_secs().max(0);
    human_age(std::time::Duration::from_secs(u64::try_from(secs).unwrap_or(0))) + " ago"
}

fn installed_text(e: &Entry) -> String {
    let mut s = super::size::format(e.disk_size);
    match &e.metadata {
        Some(m) => s += &format!(", last used {}", ago(m.last_used)),
        None => s += ", not adopted yet (checked and hashed on first use)",
    }
    if e.in_use {
        s += ", in use";
    }
    s
}

/// `probelab cache list`.
pub fn list(cache: &Cache, out: &mut dyn Write) -> Result<(), VersionError> {
    let entries = cache.list()?;
    let used: u64 = entries.iter().map(|e| e.disk_size).sum();
    let cap = match cache.cap() {
        Some(c) => format!("cap {} (PROBELAB_CACHE_MAX)", super::size::format(c)),
        None => "no cap (PROBELAB_CACHE_MAX unset)".to_string(),
    };
    writeln!(out, "{}: {} version(s), {}, {cap}", cache.dir().display(), entries.len(), super::size::format(used))
        .map_err(io)?;
    for e in &entries {
        let detail = match &e.metadata {
            Some(m) => format!(
                "installed {}, last used {}, sha256 {}",
                ago(m.installed_at),
                ago(m.last_used),
                m.sha256.get(..12).unwrap_or(&m.sha256)
            ),
            None => "not adopted yet (checked and hashed on first use)".to_string(),
        };
        let in_use = if e.in_use { ", in use" } else { "" };
        writeln!(out, "  {:<10} {:>8}  {detail}{in_use}", e.version.to_string(), super::size::format(e.disk_size))
            .map_err(io)?;
    }
    Ok(())
}

/// `probelab cache gc`.
pub fn gc(cache: &Cache, out: &mut dyn Write) -> Result<(), VersionError> {
    let evicted = cache.gc()?;
    let used = cache.used()?;
    match cache.cap() {
        None => writeln!(
            out,
            "no cap set (PROBELAB_CACHE_MAX): nothing evicted; the cache holds {}",
            super::size::format(used)
        ),
        Some(cap) if evicted.is_empty() => writeln!(
            out,
            "nothing to evict: the cache holds {} of {}",
            super::size::format(used),
            super::size::format(cap)
        ),
        Some(cap) => writeln!(
            out,
            "evicted {} (least recently used first); the cache holds {} of {}",
            evicted.iter().map(|v| v.to_string()).collect::<Vec<_>>().join(", "),
            super::size::format(used),
            super::size::format(cap)
        ),
    }
    .map_err(io)
}

/// `probelab cache rm V`.
pub fn rm(cache: &Cache, version: &str, out: &mut dyn Write) -> Result<(), VersionError> {
    let v = semver::Version::parse(version.trim()).map_err(|e| VersionError::BadSpec {
        spec: version.to_string(),
        reason: format!("not a version ({e}); write e.g. 2.1.235"),
    })?;
    cache.remove(&v)?;
    writeln!(out, "removed claude-code {v} from {}", cache.dir().display()).map_err(io)
}
