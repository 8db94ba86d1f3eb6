//! Golden files in insta's `.snap` format under `golden/<subject>/<probe-id>.snap`, so `cargo test`
//! compares them with insta (and `cargo insta review` accepts them) while `probelab run` compares and
//! blesses the same files itself. Blobs go to `golden/blobs/<sha256>.json`.

use super::Blobs;
use std::path::{Path, PathBuf};

/// The `source` insta records for snapshots asserted by the probe test binary.
pub const SNAPSHOT_SOURCE: &str = "harness/tests/probes.rs";

/// The golden directory of Claude Code at `version`: `<golden>/claude-code@<version>` — the one place
/// the layout's directory name is made from a version (the subject's own name,
/// [`crate::subject::SubjectId`]'s `Display`).
pub fn claude_code_dir(golden_root: &Path, version: &str) -> PathBuf {
    golden_root.join(crate::subject::id::claude_code_name(&version))
}

/// The golden file of a probe on a subject.
pub fn path(golden_root: &Path, subject: &str, probe_id: &str) -> PathBuf {
    golden_root.join(subject).join(format!("{probe_id}.snap"))
}

/// The header line naming the subject (insta's `description`): the subject's own words
/// ([`crate::subject::id::describe`]; the subject module never reaches into this one).
pub use crate::subject::id::describe as description;

/// The whole file text: insta's header, then the body.
pub fn file_text(description: &str, body: &str) -> String {
    format!("---\nsource: {SNAPSHOT_SOURCE}\ndescription: {description}\nexpression: transcript\n---\n{body}")
}

/// The body of a snapshot file (after the second `---` line), or the whole text when it has no header.
pub fn body(text: &str) -> &str {
    if let Some(rest) = text.strip_prefix("---\n") {
        if let Some(i) = rest.find("\n---\n") {
            return &rest[i + 5..];
        }
    }
    text
}

/// Why a body is not a whole transcript (what a golden must be before it replaces one): empty, cut short
/// (the last line is not the run's last invariant verdict, or no final newline), or not the lab's render.
pub fn body_problem(body: &str) -> Option<String> {
    if body.trim().is_empty() {
        return Some("it is empty".into());
    }
    if !body.starts_with("probe: ") || !body.contains("\n## verdicts\n") {
        return Some("it is not a transcript (no `probe:` line first, or no `## verdicts`)".into());
    }
    let last = body.strip_suffix('\n').map(|b| b.rsplit('\n').next().unwrap_or(b));
    let whole =
        last.is_some_and(|l| ["pass", "FAIL", "skip"].iter().any(|w| l.starts_with(&format!("{w} invariant: "))));
    (!whole).then(|| "it is cut short (its last line is not the run's last verdict)".into())
}

/// How a transcript compares with its golden file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Compare {
    /// Identical bodies.
    Same,
    /// No golden file yet.
    Missing,
    /// Different: a unified diff, golden → new.
    Differs(String),
}

/// Compares a body with the golden file (trailing newlines ignored, as insta does).
pub fn compare(file: &Path, new_body: &str) -> Compare {
    compare_with(file, new_body, None)
}

/// [`compare`], where two bodies that `canon` makes equal are the same (a probe's `unordered` results:
/// their lines in any order, [`super::diff::unordered_sorted`]); a difference is shown as it is.
pub fn compare_with(file: &Path, new_body: &str, canon: Option<&dyn Fn(&str) -> String>) -> Compare {
    let Ok(old) = crate::safe_fs::read_text(file) else {
        return Compare::Missing;
    };
    let old = body(&old);
    if old.trim_end() == new_body.trim_end() {
        return Compare::Same;
    }
    if canon.is_some_and(|c| c(old).trim_end() == c(new_body).trim_end()) {
        return Compare::Same;
    }
    let diff = similar::TextDiff::from_lines(old, new_body)
        .unified_diff()
        .context_radius(3)
        .header("golden", "this run")
        .to_string();
    Compare::Differs(diff)
}

/// Writes the golden file and its blobs, inside the golden root `root` with no link followed
/// ([`crate::safe_fs::write_inside`]): a golden that is a symlink is replaced, its target left alone.
pub fn bless(
    root: &Path,
    file: &Path,
    description: &str,
    body: &str,
    blobs_dir: &Path,
    blobs: &Blobs,
) -> std::io::Result<()> {
    crate::safe_fs::write_inside(root, file, file_text(description, body).as_bytes())?;
    write_blobs(root, blobs_dir, blobs)
}

/// Writes blobs not yet in the store (or there but not what their name says). Each is written beside
/// its place and renamed into it, so probes blessed side by side (`probelab run -j N --bless`) never see
/// a half-written blob.
pub fn write_blobs(root: &Path, dir: &Path, blobs: &Blobs) -> std::io::Result<()> {
    for (hash, text) in blobs {
        let p = dir.join(format!("{hash}.json"));
        if read_blob(&p).is_err() {
            crate::safe_fs::write_inside(root, &p, text.as_bytes())?;
        }
    }
    Ok(())
}

/// A blob's text, read from its file and checked against the SHA-256 its name gives: a blob whose bytes
/// are not its hash (garbage, a truncated write) is an error, never taken for the real one.
pub fn read_blob(path: &Path) -> Result<String, String> {
    let bytes = crate::safe_fs::read_capped(path, crate::safe_fs::MAX_DATA_BYTES).map_err(|e| e.to_string())?;
    let named = path.file_stem().and_then(|s| s.to_str()).unwrap_or_default();
    let h = super::sha256(&bytes);
    if h != named {
        return Err(format!("corrupt: its SHA-256 is {h}"));
    }
    String::from_utf8(bytes).map_err(|e| e.to_string())
}

/// Blobs a transcript references that the store lacks, or holds corrupt ([`read_blob`]).
pub fn missing_blobs(dir: &Path, blobs: &Blobs) -> Vec<String> {
    blobs.keys().filter(|h| read_blob(&dir.join(format!("{h}.json"))).is_err()).cloned().collect()
}

/// The blobs of the store that are not what their names say, with why.
pub fn corrupt_blobs(dir: &Path) -> Vec<(PathBuf, String)> {
    let files = std::fs::read_dir(dir).into_iter().flatten().flatten().map(|e| e.path());
    files.filter_map(|p| read_blob(&p).err().map(|e| (p, e))).collect()
}

/// Blob files of the store that no golden under `golden_root` names, at any depth, pending (`.snap.new`)
/// goldens included (goldens name a blob by the first 12 hex digits of its hash: `Read@3b5b…`,
/// `system: af7b…`, `blob 9c1e…`, `input@…`). Blessing a new version of a transcript leaves the old blobs
/// behind; `probelab gc-blobs` removes them.
pub fn unreferenced_blobs(golden_root: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut named = std::collections::BTreeSet::new();
    let blobs = golden_root.join("blobs");
    let goldens = crate::safe_fs::walk_files(golden_root, &|p| {
        let name = p.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        !p.starts_with(&blobs) && (name.ends_with(".snap") || name.ends_with(".snap.new"))
    })?;
    for f in goldens {
        let text = crate::safe_fs::read_text(&f)
            .map_err(|e| std::io::Error::new(e.kind(), format!("{}: {e}", f.display())))?;
        let bytes = text.as_bytes();
        let mut i = 0;
        while i + 12 <= bytes.len() {
            let run = bytes[i..].iter().take_while(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()).count();
            if run >= 12 {
                named.insert(text[i..i + 12].to_string());
                i += run;
            } else {
                i += run.max(1);
            }
        }
    }
    let mut out = Vec::new();
    for b in std::fs::read_dir(&blobs)?.flatten() {
        let name = b.file_name().to_string_lossy().into_owned();
        // a name that is not a blob's (not 12 hex digits first) is not the store's to remove
        if name.get(..12).is_some_and(|h| h.bytes().all(|c| c.is_ascii_hexdigit()) && !named.contains(h)) {
            out.push(b.path());
        }
    }
    out.sort();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn body_follows_the_header() {
        assert_eq!(body(&file_text("d", "a\nb\n")), "a\nb\n");
        assert_eq!(body("plain"), "plain");
    }

    #[test]
    fn a_whole_transcript_has_its_verdicts_to_the_last_line() {
        let whole = "probe: x\n\n## verdicts\npass check 1: result 1\npass invariant: every scripted turn served\n";
        assert_eq!(body_problem(whole), None);
        for cut in [0, 3, 20, whole.len() - 1, whole.len() - 12] {
            assert!(body_problem(&whole[..cut]).is_some(), "{:?}", &whole[..cut]);
        }
        assert!(body_problem("").is_some_and(|w| w.contains("empty")));
    }

    #[test]
    fn compare_reports_missing_same_and_a_diff() {
        let d = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let f = d.path().join("x.snap");
        assert_eq!(compare(&f, "a\n"), Compare::Missing);
        std::fs::write(&f, file_text("d", "a\nb\n")).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(compare(&f, "a\nb"), Compare::Same);
        match compare(&f, "a\nc\n") {
            Compare::Differs(d) => assert!(d.contains("-b") && d.contains("+c"), "{d}"),
            other => panic!("{other:?}"),
        }
    }
}
