//! Golden files in insta's `.snap` format under `golden/<subject>/<probe-id>.snap`, so `cargo test`
//! compares them with insta (and `cargo insta review` accepts them) while `probelab run` compares and
//! blesses the same files itself. Blobs go to `golden/blobs/<sha256>.json`.

use super::Blobs;
use std::path::{Path, PathBuf};

/// The `source` insta records for snapshots asserted by the probe test binary.
pub const SNAPSHOT_SOURCE: &str = "harness/tests/probes.rs";

/// The golden file of a probe on a subject.
pub fn path(golden_root: &Path, subject: &str, probe_id: &str) -> PathBuf {
    golden_root.join(subject).join(format!("{probe_id}.snap"))
}

/// The header line naming the subject (insta's `description`).
pub fn description(subject: &str, version: &str, sha256: Option<&str>) -> String {
    match sha256 {
        Some(h) => format!("subject {subject} {version}, binary sha256 {h}"),
        None => format!("subject {subject} {version}, embedded"),
    }
}

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
    let Ok(old) = std::fs::read_to_string(file) else {
        return Compare::Missing;
    };
    let old = body(&old);
    if old.trim_end() == new_body.trim_end() {
        return Compare::Same;
    }
    let diff = similar::TextDiff::from_lines(old, new_body)
        .unified_diff()
        .context_radius(3)
        .header("golden", "this run")
        .to_string();
    Compare::Differs(diff)
}

/// Writes the golden file and its blobs.
pub fn bless(file: &Path, description: &str, body: &str, blobs_dir: &Path, blobs: &Blobs) -> std::io::Result<()> {
    if let Some(parent) = file.parent() {
        std::fs::create_dir_all(parent)?;
    }
    std::fs::write(file, file_text(description, body))?;
    write_blobs(blobs_dir, blobs)
}

/// Writes blobs not yet in the store. Each is written beside its place and renamed into it, so probes
/// blessed side by side (`probelab run -j N --bless`) never see a half-written blob.
pub fn write_blobs(dir: &Path, blobs: &Blobs) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    for (hash, text) in blobs {
        let p = dir.join(format!("{hash}.json"));
        if !p.exists() {
            let tmp = tempfile::NamedTempFile::new_in(dir)?;
            std::fs::write(tmp.path(), text)?;
            std::fs::set_permissions(tmp.path(), std::os::unix::fs::PermissionsExt::from_mode(0o644))?;
            tmp.persist(&p).map_err(|e| e.error)?;
        }
    }
    Ok(())
}

/// Blobs a transcript references that the store lacks.
pub fn missing_blobs(dir: &Path, blobs: &Blobs) -> Vec<String> {
    blobs.keys().filter(|h| !dir.join(format!("{h}.json")).exists()).cloned().collect()
}

/// Blob files of the store that no golden under `golden_root` names (goldens name a blob by the first 12
/// hex digits of its hash: `Read@3b5b…`, `system: af7b…`, `blob 9c1e…`, `input@…`). Blessing a new
/// version of a transcript leaves the old blobs behind; `probelab gc-blobs` removes them.
pub fn unreferenced_blobs(golden_root: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut named = std::collections::BTreeSet::new();
    for dir in std::fs::read_dir(golden_root)?.flatten() {
        if !dir.path().is_dir() || dir.file_name() == "blobs" {
            continue;
        }
        for f in std::fs::read_dir(dir.path())?.flatten() {
            if f.path().extension().is_some_and(|x| x == "snap") {
                let text = std::fs::read_to_string(f.path())?;
                let bytes = text.as_bytes();
                let mut i = 0;
                while i + 12 <= bytes.len() {
                    let run =
                        bytes[i..].iter().take_while(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()).count();
                    if run >= 12 {
                        named.insert(text[i..i + 12].to_string());
                        i += run;
                    } else {
                        i += run.max(1);
                    }
                }
            }
        }
    }
    let mut out = Vec::new();
    for b in std::fs::read_dir(golden_root.join("blobs"))?.flatten() {
        let name = b.file_name().to_string_lossy().into_owned();
        if name.len() >= 12 && !named.contains(&name[..12]) {
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
