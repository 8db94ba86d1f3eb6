//! What can go wrong with versions, the catalogue and the install cache: one typed enum, each message
//! naming the version (or path) and what to do about it.

use std::path::PathBuf;

/// An error of [`crate::versions`].
#[derive(Debug, thiserror::Error)]
pub enum VersionError {
    /// A version spec that the grammar does not read (see the module docs).
    #[error("bad version spec {spec:?}: {reason}")]
    BadSpec {
        /// The spec as given.
        spec: String,
        /// What is wrong and how to write it.
        reason: String,
    },
    /// A well-formed version that npm never published.
    #[error("{version} is not a published version of {package}{}", nearest_text(nearest))]
    UnknownVersion {
        /// The version asked for.
        version: String,
        /// The package.
        package: &'static str,
        /// The published versions nearest to it (below and above).
        nearest: Vec<String>,
    },
    /// A range that selects no published version that can run here.
    #[error(
        "{spec:?} selects no {what}{}",
        if *without_binary > 0 {
            format!(
                ": its {without_binary} published version(s) have no linux-x64 binary (those exist from {} on)",
                first_linux_x64.as_deref().unwrap_or("no version")
            )
        } else {
            format!(" (published: {oldest} … {newest}); widen the range or run `probelab versions` to see the list")
        }
    )]
    EmptyRange {
        /// The spec as given.
        spec: String,
        /// "published version" or "version with a linux-x64 binary".
        what: &'static str,
        /// Published versions it matched that have no linux-x64 binary.
        without_binary: usize,
        /// The first version that has one.
        first_linux_x64: Option<String>,
        /// The oldest published version.
        oldest: String,
        /// The newest published version.
        newest: String,
    },
    /// A published version whose package carries no native linux-x64 binary (1.x and 2.0.x shipped a
    /// JavaScript `cli.js` only).
    #[error(
        "{version} has no linux-x64 binary: its package does not depend on {platform_package}{}; pick a version from {} on",
        if first_linux_x64.is_some() { "" } else { " (no published version does)" },
        first_linux_x64.as_deref().unwrap_or("?")
    )]
    NoLinuxX64 {
        /// The version.
        version: String,
        /// `@anthropic-ai/claude-code-linux-x64`.
        platform_package: &'static str,
        /// The first published version that has the binary.
        first_linux_x64: Option<String>,
    },
    /// The npm command could not be started.
    #[error("cannot run npm ({program}) to {what}: {error}; install Node.js/npm, or point PROBELAB_NPM at an npm")]
    NpmMissing {
        /// The program tried (`npm`, or `$PROBELAB_NPM`).
        program: String,
        /// What it was started for.
        what: String,
        /// The OS error.
        error: String,
    },
    /// npm ran and failed (registry down or unreachable, package missing, …).
    #[error("npm could not {what} ({status}){hint}:\n{stderr_tail}")]
    NpmFailed {
        /// What it was asked to do.
        what: String,
        /// Its exit (`exit 1`, `killed by a signal`, `timed out after 600 s`).
        status: String,
        /// The end of its stderr.
        stderr_tail: String,
        /// A hint read from the stderr (e.g. the registry is unreachable), with a leading `; `.
        hint: String,
    },
    /// npm answered something that is not what `npm view --json` prints.
    #[error("npm view printed something unexpected ({what}): {reason}")]
    NpmOutput {
        /// Which query.
        what: String,
        /// What was wrong.
        reason: String,
    },
    /// No cached catalogue and npm cannot be asked.
    #[error(
        "no list of Claude Code versions: none is cached in {} and npm cannot be asked: {cause}",
        cache.display()
    )]
    NoCatalogue {
        /// Where the catalogue is cached.
        cache: PathBuf,
        /// Why npm could not be asked.
        cause: String,
    },
    /// The installed binary is not the one a golden file was made with.
    #[error(
        "claude-code {version}: the binary's SHA-256 is {actual}, but the golden transcripts were made with {expected} \
         ({}). The npm package changed or the cached binary is damaged: run `probelab cache rm {version}` to reinstall; \
         if the registry now serves a different build, re-bless the goldens (`probelab run --subject claude-code@{version} --bless`)",
        binary.display()
    )]
    ShaMismatch {
        /// The version.
        version: String,
        /// The hash the golden header records.
        expected: String,
        /// The installed binary's hash.
        actual: String,
        /// The binary.
        binary: PathBuf,
    },
    /// A cache cap that cannot hold even one install.
    #[error(
        "PROBELAB_CACHE_MAX is {}, below one Claude Code install (~{}): nothing was downloaded; raise it (e.g. PROBELAB_CACHE_MAX=8G) or unset it",
        super::size::format(*cap), super::size::format(*needed)
    )]
    CapBelowInstall {
        /// The cap in bytes.
        cap: u64,
        /// The size of one install (estimated).
        needed: u64,
    },
    /// The cache is full of versions other runs are using: nothing more can be evicted.
    #[error(
        "{what} under PROBELAB_CACHE_MAX={}: the cache holds {} and the versions left are in use by other runs ({}); \
         wait for them, raise the cap, or unset it",
        super::size::format(*cap), super::size::format(*used), in_use.join(", ")
    )]
    CacheFullInUse {
        /// What could not be done: `cannot install 2.1.300`, `cannot shrink the cache`.
        what: String,
        /// The cap.
        cap: u64,
        /// What the cache holds after evicting what could be evicted.
        used: u64,
        /// The versions in use.
        in_use: Vec<String>,
    },
    /// `probelab cache rm V` of a version a run is using.
    #[error("claude-code {version} is in use by a running probelab; try again when it has finished")]
    InUse {
        /// The version.
        version: String,
    },
    /// `probelab cache rm V` of a version that is not installed.
    #[error("claude-code {version} is not installed in {}", dir.display())]
    NotInstalled {
        /// The version.
        version: String,
        /// The cache directory.
        dir: PathBuf,
    },
    /// npm finished but the install is not what it should be.
    #[error(
        "{of} {version}: the install is broken ({reason}); it was not kept: try again, or report it if it persists"
    )]
    BadInstall {
        /// What was installed ([`super::Kind::name`]: `claude-code`, `@qwen-code/qwen-code`).
        of: &'static str,
        /// The version.
        version: String,
        /// What was found.
        reason: String,
    },
    /// The disk is full.
    #[error(
        "disk full writing {}: free some space, evict versions (`probelab cache gc` with PROBELAB_CACHE_MAX set, \
         `probelab cache rm V`), or move the cache (PROBELAB_CACHE)",
        path.display()
    )]
    DiskFull {
        /// The path being written.
        path: PathBuf,
    },
    /// Any other I/O failure on the cache.
    #[error("cannot {action} {}: {error}; check the permissions and free space there, or move the cache (PROBELAB_CACHE)", path.display())]
    Io {
        /// What was being done (`create`, `write`, `lock`, …).
        action: &'static str,
        /// The path.
        path: PathBuf,
        /// The OS error: said in the message, before the hint (so not its source, which would be said
        /// again after it).
        error: std::io::Error,
    },
}

fn nearest_text(nearest: &[String]) -> String {
    match nearest {
        [] => "; run `probelab versions --refresh` to see the published ones".to_string(),
        n => format!("; nearest published: {} (`probelab versions` lists them all)", n.join(", ")),
    }
}

impl VersionError {
    /// An I/O error on `path`, as [`VersionError::DiskFull`] when the disk (or quota) is full.
    pub fn io(action: &'static str, path: impl Into<PathBuf>, source: std::io::Error) -> VersionError {
        let path = path.into();
        if is_disk_full(&source) {
            VersionError::DiskFull { path }
        } else {
            VersionError::Io { action, path, error: source }
        }
    }
}

/// ENOSPC / EDQUOT, the two ways a write says the disk is full.
pub(crate) fn is_disk_full(e: &std::io::Error) -> bool {
    matches!(e.kind(), std::io::ErrorKind::StorageFull | std::io::ErrorKind::QuotaExceeded)
        || matches!(e.raw_os_error(), Some(28 | 122))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_disk_is_named_as_such() {
        let e = VersionError::io("write", "/c/x", std::io::Error::from_raw_os_error(28));
        assert!(matches!(e, VersionError::DiskFull { .. }), "{e:?}");
        assert!(e.to_string().starts_with("disk full writing /c/x: free some space"), "{e}");
        let e = VersionError::io("write", "/c/x", std::io::Error::from_raw_os_error(13));
        assert!(matches!(e, VersionError::Io { .. }), "{e:?}");
        assert!(e.to_string().contains("cannot write /c/x: Permission denied"), "{e}");
    }

    #[test]
    fn an_unknown_version_names_its_neighbours() {
        let e = VersionError::UnknownVersion {
            version: "2.1.115".into(),
            package: "@anthropic-ai/claude-code",
            nearest: vec!["2.1.114".into(), "2.1.116".into()],
        };
        assert_eq!(
            e.to_string(),
            "2.1.115 is not a published version of @anthropic-ai/claude-code; nearest published: 2.1.114, 2.1.116 \
             (`probelab versions` lists them all)"
        );
    }
}
