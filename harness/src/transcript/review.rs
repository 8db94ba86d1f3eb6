//! Pending goldens: the `.snap.new` files insta writes beside a golden when `cargo test` finds its
//! transcript changed (or missing), reviewed one by one — `probelab review` does what `cargo insta
//! review` does for them, without cargo-insta installed. Accepting writes the golden in the lab's own
//! format ([`super::golden::file_text`]: insta's run-time `assertion_line` dropped, the description
//! kept); rejecting removes the `.snap.new`.

use super::golden::{body, file_text};
use std::path::{Path, PathBuf};

/// A pending golden.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pending {
    /// The `.snap.new` file.
    pub new: PathBuf,
    /// The golden it would replace (maybe not there yet).
    pub golden: PathBuf,
}

/// Every `.snap.new` under `golden_root`, in path order (a link back up the tree is walked once).
pub fn pending(golden_root: &Path) -> std::io::Result<Vec<Pending>> {
    let found = crate::safe_fs::walk_files(golden_root, &|p| {
        p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.ends_with(".snap.new"))
    })?;
    let mut out = Vec::new();
    for new in found {
        let Some(name) = new.file_name().and_then(|n| n.to_str()).and_then(|n| n.strip_suffix(".snap.new")) else {
            continue;
        };
        let golden = new.with_file_name(format!("{name}.snap"));
        out.push(Pending { new, golden });
    }
    Ok(out)
}

/// The `description` of an insta header (`description: …`, maybe a quoted YAML string).
fn description(text: &str) -> Option<String> {
    let header = text.strip_prefix("---\n")?.split("\n---\n").next()?;
    let value = header.lines().find_map(|l| l.strip_prefix("description: "))?;
    Some(serde_json::from_str::<String>(value).unwrap_or_else(|_| value.to_string()))
}

/// The golden's text: empty when there is none yet; an error when it is there and cannot be read.
fn golden_text(path: &Path) -> std::io::Result<String> {
    match crate::safe_fs::read_text(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(String::new()),
        other => other,
    }
}

impl Pending {
    /// What accepting would change: a unified diff of the golden's body → the pending one (all lines
    /// added when there is no golden yet).
    pub fn diff(&self) -> std::io::Result<String> {
        let new = crate::safe_fs::read_text(&self.new)?;
        let old = golden_text(&self.golden)?;
        let (old_body, new_body) = (body(&old), body(&new));
        let old_name = if self.golden.exists() { "golden" } else { "golden (none yet)" };
        Ok(similar::TextDiff::from_lines(old_body, new_body)
            .unified_diff()
            .context_radius(3)
            .header(old_name, "pending")
            .to_string())
    }

    /// Writes the golden from the pending file and removes the pending file — when the pending file is
    /// a whole transcript ([`super::golden::body_problem`]): an empty or cut-short `.snap.new` is refused
    /// and the golden kept. The golden is written inside `golden_root` with no link followed.
    pub fn accept(&self, golden_root: &Path) -> std::io::Result<()> {
        let new = crate::safe_fs::read_text(&self.new)?;
        if let Some(why) = super::golden::body_problem(body(&new)) {
            let msg = format!("{} is not accepted: {why}; the golden is kept", self.new.display());
            return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, msg));
        }
        let old = golden_text(&self.golden)?;
        let desc = description(&new).or_else(|| description(&old)).unwrap_or_default();
        crate::safe_fs::write_inside(golden_root, &self.golden, file_text(&desc, body(&new)).as_bytes())?;
        std::fs::remove_file(&self.new)
    }

    /// Removes the pending file; the golden stays as it was.
    pub fn reject(&self) -> std::io::Result<()> {
        std::fs::remove_file(&self.new)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const INSTA_NEW: &str =
        "---\nsource: harness/tests/probes.rs\nassertion_line: 110\ndescription: subject builtin 0.2.0, embedded\nexpression: transcript\n---\nprobe: x\n\n## verdicts\npass invariant: B\n";

    #[test]
    fn accepting_writes_the_golden_in_the_lab_format_and_rejecting_keeps_it() {
        let d = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let sub = d.path().join("builtin");
        std::fs::create_dir_all(&sub).unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(
            sub.join("x.snap"),
            file_text("subject builtin 0.1.0, embedded", "probe: x\n\n## verdicts\npass invariant: b\n"),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(sub.join("x.snap.new"), INSTA_NEW).unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(sub.join("y.snap.new"), INSTA_NEW).unwrap_or_else(|e| panic!("{e}"));
        let p = pending(d.path()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            p.iter().map(|p| p.golden.clone()).collect::<Vec<_>>(),
            vec![sub.join("x.snap"), sub.join("y.snap")]
        );
        let diff = p[0].diff().unwrap_or_else(|e| panic!("{e}"));
        assert!(diff.contains("--- golden\n+++ pending\n@@ -1,4 +1,4 @@\n probe: x\n \n ## verdicts\n-pass invariant: b\n+pass invariant: B\n"), "{diff}");
        assert!(p[1].diff().unwrap_or_default().contains("--- golden (none yet)"));
        p[0].accept(d.path()).unwrap_or_else(|e| panic!("{e}"));
        p[1].reject().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            std::fs::read_to_string(sub.join("x.snap")).unwrap_or_default(),
            file_text("subject builtin 0.2.0, embedded", "probe: x\n\n## verdicts\npass invariant: B\n")
        );
        assert!(!sub.join("y.snap").exists() && pending(d.path()).map(|p| p.len()).unwrap_or(9) == 0);
        assert_eq!(description("---\ndescription: \"a: b\"\n---\nx"), Some("a: b".into()));
    }

    #[test]
    fn a_cut_short_pending_golden_is_refused_and_the_golden_kept() {
        let d = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let good = file_text("d", "probe: x\n\n## verdicts\npass invariant: b\n");
        std::fs::write(d.path().join("x.snap"), &good).unwrap_or_else(|e| panic!("{e}"));
        for bad in ["", "---\ndescription: d\n---\n", &INSTA_NEW[..INSTA_NEW.len() - 9]] {
            std::fs::write(d.path().join("x.snap.new"), bad).unwrap_or_else(|e| panic!("{e}"));
            let p = pending(d.path()).unwrap_or_default();
            assert!(p[0].accept(d.path()).is_err(), "{bad:?} accepted");
            assert_eq!(std::fs::read_to_string(d.path().join("x.snap")).unwrap_or_default(), good);
        }
        // a golden that is a link: replaced, its target untouched
        let outside = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(outside.path().join("t"), "keep").unwrap_or_else(|e| panic!("{e}"));
        std::fs::remove_file(d.path().join("x.snap")).unwrap_or_else(|e| panic!("{e}"));
        std::os::unix::fs::symlink(outside.path().join("t"), d.path().join("x.snap")).unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(d.path().join("x.snap.new"), INSTA_NEW).unwrap_or_else(|e| panic!("{e}"));
        pending(d.path()).unwrap_or_default()[0].accept(d.path()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(std::fs::read_to_string(outside.path().join("t")).unwrap_or_default(), "keep");
        assert!(std::fs::read_to_string(d.path().join("x.snap")).unwrap_or_default().ends_with("pass invariant: B\n"));
    }

    #[test]
    fn a_golden_that_is_there_but_cannot_be_read_is_an_error_not_an_empty_golden() {
        let d = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let sub = d.path().join("builtin");
        // a directory where the golden should be: it cannot be read (not a regular file), it does not vanish
        std::fs::create_dir_all(sub.join("x.snap")).unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(sub.join("x.snap.new"), INSTA_NEW).unwrap_or_else(|e| panic!("{e}"));
        let p = pending(d.path()).unwrap_or_else(|e| panic!("{e}"));
        assert!(p[0].diff().is_err(), "a diff against an empty golden: {:?}", p[0].diff());
        assert!(p[0].accept(d.path()).is_err());
        assert!(sub.join("x.snap.new").exists(), "nothing was accepted");
    }
}
