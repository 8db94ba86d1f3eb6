//! Version specs: which versions `probelab versions SPEC`, `probelab matrix --versions SPEC` and
//! `probelab bisect` mean. The grammar (whitespace around tokens is free):
//!
//! ```text
//! spec  := "all"                         every published version
//!        | "every" N [ "of" range ]      every N-th version with a binary (npm order), always the first and the last
//!        | list                          exact versions, in the order given
//!        | range                         a semver range (the semver crate's VersionReq)
//! list  := item ("," item)*
//! item  := "newest" | MAJOR.MINOR.PATCH[-PRE]   a bare, full version: exactly that version
//! range := comparator ("," comparator)*
//!          comparator := op version | wildcard,  op one of = > >= < <= ~ ^,  wildcard like 2.1.* or *
//! ```
//!
//! A list and a range both use commas; what tells them apart is the items: a list has only bare full
//! versions (and `newest`), a range has an operator or a wildcard in every comparator. A spec that mixes
//! the two (`2.1.235, >=2.1.300`) and a bare partial version (`2.1`) are errors saying how to write what
//! was meant — the semver crate would read a bare `2.1.235` as `^2.1.235`, which nobody means here.
//!
//! Examples: `2.1.235,2.1.332` · `newest` · `2.1.235,newest` · `>=2.1.235, <2.1.300` · `=2.1.235` ·
//! `2.1.*` · `every 10 of >=2.1.200` · `every 25` · `all`.
//!
//! Selection ([`Catalogue::select`]): versions without the linux-x64 binary are never run. A list that
//! names one is an error ([`VersionError::NoLinuxX64`]); a range or `every` skips them and says so in
//! [`Selection::skipped`]; a range that leaves nothing is [`VersionError::EmptyRange`].

use super::catalogue::{Catalogue, Published};
use super::error::VersionError;
use semver::{Version, VersionReq};
use std::fmt;
use std::str::FromStr;

/// A parsed version spec (see the module docs for the grammar).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Spec {
    /// Every published version (those without a binary are listed as skipped).
    All,
    /// Exact versions, in the order given.
    List(Vec<Item>),
    /// A semver range.
    Range(VersionReq),
    /// Every `n`-th version (with a binary) of a range, or of all versions; first and last included.
    Every {
        /// N ≥ 1.
        n: usize,
        /// The range (None: all versions).
        of: Option<VersionReq>,
    },
}

/// One item of a list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Item {
    /// The newest version with a binary.
    Newest,
    /// Exactly this version.
    Exact(Version),
}

/// What a spec selected.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Selection {
    /// The versions to run, each with the linux-x64 binary.
    pub versions: Vec<Version>,
    /// Versions the spec matched that have no linux-x64 binary: not run, and said.
    pub skipped: Vec<Version>,
}

impl Selection {
    /// A line about the skipped versions, if any: `skipped 3 versions without a linux-x64 binary (1.0.0 … 2.0.1)`.
    pub fn skipped_note(&self) -> Option<String> {
        match self.skipped.as_slice() {
            [] => None,
            [one] => Some(format!("skipped {one}: it has no linux-x64 binary")),
            [first, .., last] => {
                Some(format!("skipped {} versions without a linux-x64 binary ({first} … {last})", self.skipped.len()))
            }
        }
    }
}

impl fmt::Display for Spec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Spec::All => write!(f, "all"),
            Spec::List(items) => {
                let items: Vec<String> = items
                    .iter()
                    .map(|i| match i {
                        Item::Newest => "newest".to_string(),
                        Item::Exact(v) => v.to_string(),
                    })
                    .collect();
                write!(f, "{}", items.join(","))
            }
            Spec::Range(r) => write!(f, "{r}"),
            Spec::Every { n, of: None } => write!(f, "every {n}"),
            Spec::Every { n, of: Some(r) } => write!(f, "every {n} of {r}"),
        }
    }
}

impl FromStr for Spec {
    type Err = VersionError;

    fn from_str(text: &str) -> Result<Spec, VersionError> {
        let bad = |reason: String| VersionError::BadSpec { spec: text.to_string(), reason };
        let t = text.trim();
        if t.is_empty() {
            return Err(bad("it is empty; write e.g. `2.1.235`, `newest`, `>=2.1.235, <2.1.300` or `every 10`".into()));
        }
        if t == "all" {
            return Ok(Spec::All);
        }
        if let Some(rest) = t.strip_prefix("every") {
            if rest.is_empty() || rest.starts_with(char::is_whitespace) {
                return parse_every(rest.trim(), &bad);
            }
        }
        let items: Vec<&str> = t.split(',').map(str::trim).collect();
        if items.iter().any(|i| i.is_empty()) {
            return Err(bad("it has an empty item between commas".into()));
        }
        let bare: Vec<bool> = items.iter().map(|i| is_bare(i)).collect();
        if bare.iter().all(|b| *b) {
            let mut list = Vec::with_capacity(items.len());
            for i in &items {
                list.push(if *i == "newest" { Item::Newest } else { Item::Exact(full_version(i).map_err(&bad)?) });
            }
            return Ok(Spec::List(list));
        }
        if bare.iter().any(|b| *b) {
            let b: Vec<&str> = items.iter().zip(&bare).filter(|(_, b)| **b).map(|(i, _)| *i).collect();
            return Err(bad(format!(
                "it mixes exact versions ({}) with range comparators; write a list of exact versions \
                 (`2.1.235,2.1.332`) or a range whose every part has an operator (`>=2.1.235, <2.1.300`; `={}` for exactly one)",
                b.join(", "),
                b.first().copied().unwrap_or("2.1.235")
            )));
        }
        Ok(Spec::Range(range(t).map_err(&bad)?))
    }
}

fn parse_every(rest: &str, bad: &dyn Fn(String) -> VersionError) -> Result<Spec, VersionError> {
    let (n, of) = match rest.split_once(char::is_whitespace) {
        Some((n, tail)) => (n, Some(tail.trim())),
        None => (rest, None),
    };
    let n: usize = n
        .parse()
        .ok()
        .filter(|n| *n >= 1)
        .ok_or_else(|| bad(format!("`every` wants a count ≥ 1, e.g. `every 10 of >=2.1.200`; {n:?} is not one")))?;
    let of = match of {
        None => None,
        Some(tail) => {
            let Some(r) = tail.strip_prefix("of").filter(|r| r.is_empty() || r.starts_with(char::is_whitespace)) else {
                return Err(bad(format!("write `every {n} of RANGE` (e.g. `every {n} of >=2.1.200`), not {tail:?}")));
            };
            let r = r.trim();
            if r == "all" {
                None
            } else if r.split(',').any(|c| is_bare(c.trim())) {
                return Err(bad(format!(
                    "`every {n} of` wants a range with an operator in every part (`>=2.1.200, <2.1.300`), not {r:?}"
                )));
            } else {
                Some(range(r).map_err(bad)?)
            }
        }
    };
    Ok(Spec::Every { n, of })
}

/// A bare item: `newest`, or digits and dots with an optional `-pre` / `+build` (no operator, no wildcard).
fn is_bare(item: &str) -> bool {
    if item == "newest" {
        return true;
    }
    let core = item.split(['-', '+']).next().unwrap_or("");
    !core.is_empty()
        && core.chars().all(|c| c.is_ascii_digit() || c == '.')
        && item.starts_with(|c: char| c.is_ascii_digit())
}

fn full_version(item: &str) -> Result<Version, String> {
    Version::parse(item).map_err(|e| {
        let dots = item.split(['-', '+']).next().unwrap_or("").matches('.').count();
        if dots < 2 {
            format!(
                "{item:?} is not a full version (MAJOR.MINOR.PATCH); for a range write `{item}.*` or `>={item}.0`, \
                 for one version write all three numbers"
            )
        } else {
            format!("{item:?} is not a version: {e}")
        }
    })
}

fn range(text: &str) -> Result<VersionReq, String> {
    VersionReq::parse(text).map_err(|e| {
        format!(
            "{text:?} is not a semver range ({e}); write comparators like `>=2.1.235, <2.1.300`, `~2.1.0` or `2.1.*`"
        )
    })
}

/// Whether a range matches a version, as npm means it: a range matches pre-releases only when they
/// are named (the semver crate's rule too).
fn matches(req: &VersionReq, v: &Version) -> bool {
    req.matches(v)
}

impl Catalogue {
    /// The versions a spec selects (see the module docs).
    pub fn select(&self, spec: &Spec) -> Result<Selection, VersionError> {
        let split = |ps: Vec<&Published>| {
            let (run, skip): (Vec<&Published>, Vec<&Published>) = ps.into_iter().partition(|p| p.linux_x64);
            (
                run.into_iter().map(|p| p.version.clone()).collect::<Vec<_>>(),
                skip.into_iter().map(|p| p.version.clone()).collect::<Vec<_>>(),
            )
        };
        match spec {
            Spec::All => {
                let (versions, skipped) = split(self.versions().iter().collect());
                Ok(Selection { versions, skipped })
            }
            Spec::List(items) => {
                let mut versions: Vec<Version> = Vec::with_capacity(items.len());
                for item in items {
                    let v = match item {
                        Item::Newest => {
                            self.newest().map(|p| p.version.clone()).ok_or_else(|| self.empty("newest", 0))?
                        }
                        Item::Exact(v) => self.runnable(v)?.version.clone(),
                    };
                    if !versions.contains(&v) {
                        versions.push(v);
                    }
                }
                Ok(Selection { versions, skipped: Vec::new() })
            }
            Spec::Range(req) => {
                let (versions, skipped) = split(self.versions().iter().filter(|p| matches(req, &p.version)).collect());
                if versions.is_empty() {
                    return Err(self.empty(&spec.to_string(), skipped.len()));
                }
                Ok(Selection { versions, skipped })
            }
            Spec::Every { n, of } => {
                let (all, skipped) = split(
                    self.versions().iter().filter(|p| of.as_ref().is_none_or(|r| matches(r, &p.version))).collect(),
                );
                if all.is_empty() {
                    return Err(self.empty(&spec.to_string(), skipped.len()));
                }
                let last = all.len() - 1;
                let versions =
                    all.into_iter().enumerate().filter(|(i, _)| i % n == 0 || *i == last).map(|(_, v)| v).collect();
                Ok(Selection { versions, skipped })
            }
        }
    }

    /// The versions strictly between two published ones, in npm order (oldest first, whichever of the
    /// two is older): what `bisect --good V1 --bad V2` chooses from. Both ends must be published and
    /// have the binary; versions without it in between are skipped (and listed).
    pub fn between(&self, good: &Version, bad: &Version) -> Result<Selection, VersionError> {
        self.runnable(good)?;
        self.runnable(bad)?;
        let (Some(a), Some(b)) = (self.position(good), self.position(bad)) else {
            return Ok(Selection::default());
        };
        let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
        let inner = self.versions().get(lo + 1..hi).unwrap_or_default();
        Ok(Selection {
            versions: inner.iter().filter(|p| p.linux_x64).map(|p| p.version.clone()).collect(),
            skipped: inner.iter().filter(|p| !p.linux_x64).map(|p| p.version.clone()).collect(),
        })
    }

    fn empty(&self, spec: &str, without_binary: usize) -> VersionError {
        let vs = self.versions();
        VersionError::EmptyRange {
            spec: spec.to_string(),
            what: if without_binary > 0 { "version with a linux-x64 binary" } else { "published version" },
            without_binary,
            first_linux_x64: self.first_linux_x64().map(Version::to_string),
            oldest: vs.first().map(|p| p.version.to_string()).unwrap_or_default(),
            newest: vs.last().map(|p| p.version.to_string()).unwrap_or_default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::catalogue::tests::{small, v};
    use super::*;
    use crate::versions::Failing;

    fn spec(s: &str) -> Spec {
        s.parse().unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    fn names(vs: &[Version]) -> Vec<String> {
        vs.iter().map(Version::to_string).collect()
    }

    fn select(s: &str) -> Selection {
        small().select(&spec(s)).unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    fn error(s: &str) -> String {
        match s.parse::<Spec>() {
            Err(e) => e.to_string(),
            Ok(p) => small().select(&p).map(|x| panic!("{s} selected {x:?}")).unwrap_or_else(|e| e.to_string()),
        }
    }

    #[test]
    fn a_comma_list_of_bare_versions_is_a_list_and_a_comparator_makes_a_range() {
        assert_eq!(spec("2.1.235,2.1.332"), Spec::List(vec![Item::Exact(v("2.1.235")), Item::Exact(v("2.1.332"))]));
        assert_eq!(spec(" 2.1.235 , newest "), Spec::List(vec![Item::Exact(v("2.1.235")), Item::Newest]));
        assert_eq!(spec("2.1.235"), Spec::List(vec![Item::Exact(v("2.1.235"))]), "exact, not ^2.1.235");
        assert!(matches!(spec(">=2.1.235, <2.1.300"), Spec::Range(_)));
        assert!(matches!(spec(">=2.1.235,<2.1.300"), Spec::Range(_)));
        assert!(matches!(spec("=2.1.235"), Spec::Range(_)));
        assert!(matches!(spec("2.1.*"), Spec::Range(_)));
        assert!(matches!(spec("~2.1.0"), Spec::Range(_)));
        assert!(matches!(spec("*"), Spec::Range(_)));
        assert_eq!(spec("all"), Spec::All);
        assert_eq!(spec("every 10"), Spec::Every { n: 10, of: None });
        assert_eq!(spec("every 3 of all"), Spec::Every { n: 3, of: None });
        assert!(matches!(spec("every 3 of >=2.1.0, <2.2.0"), Spec::Every { n: 3, of: Some(_) }));
    }

    #[test]
    fn specs_print_as_they_parse() {
        for s in ["2.1.235,newest", "every 3 of >=2.1.0, <2.2.0", "every 3", "all", ">=2.1.235, <2.1.300"] {
            assert_eq!(spec(s).to_string(), s);
            assert_eq!(spec(&spec(s).to_string()), spec(s));
        }
    }

    #[test]
    fn ambiguous_or_malformed_specs_say_how_to_write_them() {
        let cases = [
            ("", "it is empty"),
            ("2.1.235, >=2.1.300", "it mixes exact versions (2.1.235) with range comparators"),
            ("2.1.235, >=2.1.300", "`=2.1.235` for exactly one"),
            ("2.1", "\"2.1\" is not a full version (MAJOR.MINOR.PATCH); for a range write `2.1.*` or `>=2.1.0`"),
            ("2.1.235,,2.1.332", "an empty item between commas"),
            (">=2.1.x.y", "is not a semver range"),
            ("every", "`every` wants a count ≥ 1"),
            ("every 0", "`every` wants a count ≥ 1"),
            ("every ten", "`every` wants a count ≥ 1"),
            ("every 3 >=2.1.0", "write `every 3 of RANGE`"),
            ("every 3 of 2.1.0", "wants a range with an operator in every part"),
            ("latest", "is not a semver range"),
        ];
        for (s, want) in cases {
            let e = error(s);
            assert!(e.starts_with(&format!("bad version spec {s:?}: ")), "{s}: {e}");
            assert!(e.contains(want), "{s}: {e}\n  wanted: {want}");
        }
    }

    #[test]
    fn a_list_selects_exactly_its_versions_in_the_order_given() {
        assert_eq!(names(&select("2.1.7,2.1.1,newest").versions), ["2.1.7", "2.1.1", "2.2.0"]);
        assert_eq!(names(&select("2.2.0,newest").versions), ["2.2.0"], "no duplicates");
    }

    #[test]
    fn a_list_naming_an_unknown_version_or_one_without_the_binary_is_an_error() {
        let e = error("2.1.2,2.1.3");
        assert!(
            e.starts_with(
                "2.1.3 is not a published version of @anthropic-ai/claude-code; nearest published: 2.1.2, 2.1.5"
            ),
            "{e}"
        );
        let e = error("1.0.3");
        assert!(e.starts_with("1.0.3 has no linux-x64 binary"), "{e}");
        assert!(e.ends_with("pick a version from 2.1.0 on"), "{e}");
    }

    #[test]
    fn a_range_selects_in_npm_order_and_skips_versions_without_the_binary_saying_so() {
        let s = select(">=1.0.3, <2.1.5");
        assert_eq!(names(&s.versions), ["2.1.0", "2.1.1", "2.1.2"]);
        assert_eq!(names(&s.skipped), ["1.0.3", "2.0.1"]);
        assert_eq!(s.skipped_note().as_deref(), Some("skipped 2 versions without a linux-x64 binary (1.0.3 … 2.0.1)"));
        assert_eq!(names(&select("=2.1.10").versions), ["2.1.10"]);
        assert_eq!(names(&select("2.1.*").versions), ["2.1.0", "2.1.1", "2.1.2", "2.1.5", "2.1.7", "2.1.10"]);
        assert_eq!(select("2.1.*").skipped_note(), None);
    }

    #[test]
    fn a_range_with_no_versions_is_an_error_naming_what_exists() {
        let e = error(">=3.0.0");
        assert_eq!(
            e,
            "\">=3.0.0\" selects no published version (published: 1.0.0 … 2.2.0); widen the range or run \
             `probelab versions` to see the list"
        );
        let e = error("<2.1.0");
        assert_eq!(
            e,
            "\"<2.1.0\" selects no version with a linux-x64 binary: its 3 published version(s) have no linux-x64 \
             binary (those exist from 2.1.0 on)"
        );
        assert!(error("every 2 of >=3.0.0").starts_with("\"every 2 of >=3.0.0\" selects no published version"));
    }

    #[test]
    fn every_n_takes_each_nth_in_npm_order_and_always_the_first_and_the_last() {
        // with the binary: 2.1.0 2.1.1 2.1.2 2.1.5 2.1.7 2.1.10 2.2.0
        assert_eq!(names(&select("every 3").versions), ["2.1.0", "2.1.5", "2.2.0"]);
        assert_eq!(names(&select("every 4").versions), ["2.1.0", "2.1.7", "2.2.0"], "the last one too");
        assert_eq!(names(&select("every 3").skipped), ["1.0.0", "1.0.3", "2.0.1"]);
        assert_eq!(names(&select("every 2 of >=2.1.1, <2.2.0").versions), ["2.1.1", "2.1.5", "2.1.10"]);
        assert_eq!(names(&select("every 4 of >=2.1.1, <2.2.0").versions), ["2.1.1", "2.1.10"]);
        assert_eq!(names(&select("every 100").versions), ["2.1.0", "2.2.0"]);
        assert_eq!(names(&select("every 1 of ~2.1.5").versions), ["2.1.5", "2.1.7", "2.1.10"]);
        assert_eq!(names(&select("every 5 of =2.1.7").versions), ["2.1.7"]);
    }

    #[test]
    fn all_lists_every_published_version() {
        let s = select("all");
        assert_eq!(s.versions.len() + s.skipped.len(), small().versions().len());
    }

    #[test]
    fn between_gives_the_versions_strictly_inside_oldest_first_whichever_end_is_good() {
        let c = small();
        let s = c.between(&v("2.1.1"), &v("2.1.10")).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(names(&s.versions), ["2.1.2", "2.1.5", "2.1.7"]);
        assert_eq!(c.between(&v("2.1.10"), &v("2.1.1")).ok(), Some(s), "a fix bisected backwards");
        assert_eq!(c.between(&v("2.1.1"), &v("2.1.2")).map(|s| s.versions.len()).ok(), Some(0));
        assert_eq!(c.between(&v("2.1.5"), &v("2.1.5")).map(|s| s.versions.len()).ok(), Some(0));
        let e = c.between(&v("2.1.3"), &v("2.1.10")).failing("unknown good");
        assert!(e.to_string().contains("nearest published: 2.1.2, 2.1.5"), "{e}");
        let e = c.between(&v("1.0.0"), &v("2.1.10")).failing("no binary");
        assert!(e.to_string().starts_with("1.0.0 has no linux-x64 binary"), "{e}");
    }

    #[test]
    fn versions_published_without_the_binary_between_two_ends_are_skipped() {
        let mut vs = small().versions().to_vec();
        vs.push(Published { version: v("2.1.8"), published: None, linux_x64: false, platform_only: false });
        let c = Catalogue::from_versions(vs, jiff::Timestamp::UNIX_EPOCH);
        let s = c.between(&v("2.1.5"), &v("2.2.0")).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(names(&s.versions), ["2.1.7", "2.1.10"]);
        assert_eq!(names(&s.skipped), ["2.1.8"]);
    }
}
