//! Version profiles: the built-in runtime behaves as Claude Code does at one release.
//!
//! A [`Profile`] is the release a session imitates. Every place where the reference's behaviour moved
//! between releases is one named [`Switch`] — a version-gated decision that cites the probe that measured
//! it and the version where it first shows (the observatory's timeline entry, `docs/matrix/timeline.md`,
//! which names two neighbouring npm releases). A tool asks [`Profile::has`] for the switch and keeps one
//! implementation with both behaviours; there is no copy of a tool per version.
//!
//! The runtime's behaviour before any switch is that of [`REFERENCE`] (2.1.235), the release it was first
//! written after; [`NEWEST`] is the newest release the lab's matrix has measured. A session without a
//! profile ([`Profile::default`]) is the reference: the goldens under `golden/builtin/` and every unit test
//! were written for it.
//!
//! Decision: switches are gated by a lower bound only (`since`), as the reference's changes measured so
//! far are one-way. A behaviour that came and went again is two switches (the second's name says it
//! reverts the first).

use std::fmt;

/// The release the runtime's behaviour without any switch is (and the default profile).
pub const REFERENCE: &str = "2.1.235";
/// The newest release a bare `builtin` subject imitates (its profile). It was the newest the matrix had
/// measured; `probelab watch` has since measured 2.1.334 (`docs/changes/2.1.334.md`), whose changes the
/// profiles follow only in part (`across 1 file` yes; its auto-compact threshold and TaskCompleted hook
/// change are not modelled), so a bare `builtin` stays 2.1.333 until they all do: moving it re-blesses
/// `golden/builtin/` and makes scripts/setup and CI install the new release.
pub const NEWEST: &str = "2.1.333";

/// The newest release the observatory measured (`docs/matrix/cells/<V>/`): `builtin@V` is a profile of
/// a release from [`REFERENCE`] to this one, and refused for any other (a release nobody measured has no
/// profile to imitate). `probelab watch --publish` of a newer release moves it (a test holds it to the
/// committed cells).
pub const LAST_MEASURED: &str = "2.1.334";

/// Whether `version` is a release a profile can imitate ([`REFERENCE`]..=[`LAST_MEASURED`]); the reason
/// when not.
pub fn known(version: &str) -> Result<Profile, NoProfile> {
    let p = Profile::at(version)?;
    let hi = release(LAST_MEASURED).map_or(NEWEST_RELEASE, |v| (v.major, v.minor, v.patch));
    let lo = REFERENCE_RELEASE;
    if p.release < lo || p.release > hi {
        return Err(NoProfile::Unmeasured(version.to_string()));
    }
    Ok(p)
}

/// Why there is no profile of a version ([`known`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NoProfile {
    /// Not a version.
    #[error(transparent)]
    NotAVersion(#[from] BadVersion),
    /// A release the observatory did not measure.
    #[error(
        "no profile for {0}: the built-in runtime imitates the releases the observatory measured, {REFERENCE} to {LAST_MEASURED}"
    )]
    Unmeasured(String),
}

/// A version-gated behaviour of the reference: from `since` on, Claude Code does the new thing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Switch {
    /// What changes, in a few words (the name the docs and the switch table use).
    pub name: &'static str,
    /// The first release with the new behaviour (the later side of the timeline entry).
    pub since: &'static str,
    /// The probe (its id, `read.size-limit`) whose transcripts measured the change.
    pub probe: &'static str,
}

/// A version — of Claude Code, of a third-party agent, of a command subject's package: semver's, the one
/// type the runtime and the lab share (the lab's subject ids, npm catalogue and version ranges hold it
/// too), with semver's parser the one parser. A Claude Code release is a version without a pre-release
/// or build tag ([`release`]).
pub use semver::Version;

/// Parses a Claude Code release, `2.1.280`: semver's parser, refusing pre-release and build tags (the
/// releases a profile imitates have none). None for anything else.
pub fn release(s: &str) -> Option<Version> {
    Version::parse(s).ok().filter(|v| v.pre.is_empty() && v.build.is_empty())
}

/// The release a session imitates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Profile {
    /// The release's three numbers (a [`Version`] is not `Copy`; a profile, passed by value everywhere,
    /// is: [`Profile::release`] gives the version back).
    release: (u64, u64, u64),
}

/// A profile asked for a version that is not one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a Claude Code version: {0:?} (expected MAJOR.MINOR.PATCH, e.g. {REFERENCE})")]
pub struct BadVersion(pub String);

impl Profile {
    /// The profile of `version` (`2.1.280`).
    pub fn at(version: &str) -> Result<Profile, BadVersion> {
        Version::parse(version).map_err(|_| BadVersion(version.to_string())).and_then(|v| Profile::of(&v))
    }

    /// The profile of a release (a version with a pre-release or build tag is none: [`release`]).
    pub fn of(v: &Version) -> Result<Profile, BadVersion> {
        if !v.pre.is_empty() || !v.build.is_empty() {
            return Err(BadVersion(v.to_string()));
        }
        Ok(Profile { release: (v.major, v.minor, v.patch) })
    }

    /// The reference's profile ([`REFERENCE`]).
    pub fn reference() -> Profile {
        Profile { release: REFERENCE_RELEASE }
    }

    /// The newest measured release's profile ([`NEWEST`]).
    pub fn newest() -> Profile {
        Profile { release: NEWEST_RELEASE }
    }

    /// The release.
    pub fn release(&self) -> Version {
        let (major, minor, patch) = self.release;
        Version::new(major, minor, patch)
    }

    /// Whether Claude Code at this profile's release does what `switch` describes.
    pub fn has(&self, switch: &Switch) -> bool {
        // every switch's `since` parses: `switches_are_well_formed` holds the table to it
        release(switch.since).is_some_and(|since| self.release >= (since.major, since.minor, since.patch))
    }
}

impl Default for Profile {
    fn default() -> Profile {
        Profile::reference()
    }
}

impl fmt::Display for Profile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.release().fmt(f)
    }
}

pub(crate) const REFERENCE_RELEASE: (u64, u64, u64) = (2, 1, 235);
const NEWEST_RELEASE: (u64, u64, u64) = (2, 1, 333);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn releases_parse_and_order() {
        assert_eq!(release("2.1.235"), Some(Version::new(2, 1, 235)));
        for bad in ["", "2.1", "2.1.x", "2.1.3.4", "2.1.-1", "v2.1.3", "2.1.3-beta", "2.1.3+b", "2..3", "02.1.3"] {
            assert_eq!(release(bad), None, "{bad:?}");
        }
        assert!(Version::new(2, 1, 99) < Version::new(2, 1, 235));
        assert!(Version::new(2, 2, 0) > Version::new(2, 1, 999));
        assert_eq!(Profile::at("2.1.333").map(|p| p.release()), Ok(Version::new(2, 1, 333)));
        assert_eq!(Profile::at("2.1.9x"), Err(BadVersion("2.1.9x".into())));
        assert_eq!(Profile::at(REFERENCE), Ok(Profile::reference()));
        assert_eq!(Profile::at(NEWEST), Ok(Profile::newest()));
        assert_eq!(Profile::default(), Profile::reference());
    }

    #[test]
    fn a_switch_holds_from_its_version_on() {
        let s = Switch { name: "x", since: "2.1.280", probe: "read.size-limit" };
        let at = |v: &str| Profile::at(v).unwrap_or_else(|e| panic!("{e}")).has(&s);
        assert!(!at("2.1.235"));
        assert!(!at("2.1.279"));
        assert!(at("2.1.280"));
        assert!(at("2.1.333"));
        assert!(at("3.0.0"));
    }
}
