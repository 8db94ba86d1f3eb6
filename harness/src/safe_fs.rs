//! The lab's own reads and writes of project files (probes, `probelab.toml`, goldens, blobs, an import's
//! session, the run's evidence): a file it reads must be a regular file no larger than a cap — a FIFO
//! named `x.toml` or `/dev/zero` is an error, not a hang or the OOM killer — and a file it writes lands
//! inside the directory it is meant for with no symlink followed: the parent directories are resolved once
//! and must stay under that root, the file is written beside its place and renamed over it (a link in its
//! place is replaced, never written through).

use std::io::Read;
use std::path::{Component, Path, PathBuf};

/// The largest project text the lab reads: a probe file, `probelab.toml`, a golden.
pub const MAX_TEXT_BYTES: u64 = 64 << 20;
/// The largest blob or session transcript the lab reads (`probelab import` of a long session).
pub const MAX_DATA_BYTES: u64 = 512 << 20;

fn invalid(msg: String) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidInput, msg)
}

/// The bytes of `path`, a regular file (symlinks followed) of at most `cap` bytes; anything else (a
/// directory, a FIFO, a device, a larger file) is an error before the file is opened.
pub fn read_capped(path: &Path, cap: u64) -> std::io::Result<Vec<u8>> {
    let meta = std::fs::metadata(path)?;
    if !meta.is_file() {
        return Err(invalid("not a regular file".into()));
    }
    if meta.len() > cap {
        return Err(invalid(format!("{} bytes, more than the {cap} the lab reads", meta.len())));
    }
    let mut out = Vec::with_capacity(meta.len() as usize);
    // a file that grows between the check and the read is still cut at the cap
    std::fs::File::open(path)?.take(cap + 1).read_to_end(&mut out)?;
    if out.len() as u64 > cap {
        return Err(invalid(format!("more than the {cap} bytes the lab reads")));
    }
    Ok(out)
}

/// [`read_capped`] as UTF-8 text (at most [`MAX_TEXT_BYTES`]).
pub fn read_text(path: &Path) -> std::io::Result<String> {
    String::from_utf8(read_capped(path, MAX_TEXT_BYTES)?).map_err(|e| invalid(e.to_string()))
}

/// `name` as a relative path of normal components only (`read/window`): no absolute path, no `..`, no
/// empty name — what `probelab new` and `import` accept for a probe under `probes/`.
pub fn confined_name(name: &str) -> Result<PathBuf, String> {
    let p = Path::new(name);
    // a name that ends in `/` names a directory, not a probe (`x/` became `probes/x/.toml`), and a
    // hidden name is skipped by discovery
    let last_hidden = p.file_name().is_some_and(|n| n.to_string_lossy().starts_with('.'));
    let ok = !name.is_empty()
        && !name.ends_with('/')
        && !last_hidden
        && p.components().all(|c| matches!(c, Component::Normal(_)));
    if ok {
        Ok(p.to_path_buf())
    } else {
        Err(format!(
            "{name:?} is not a relative name under probes/ (no absolute path, no `..`, no `.`, no final `/`, no hidden name)"
        ))
    }
}

/// Writes `bytes` to `path`, which must lie lexically under `root`: the directories between are made
/// (each one that exists must be a directory, not a link), the parent is resolved once and must stay under
/// the resolved root, and the file is written beside its place and renamed over it — a symlink in its place
/// is replaced, never followed. The file is readable by all (0644), as `std::fs::write` leaves it.
pub fn write_inside(root: &Path, path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let rel =
        path.strip_prefix(root).map_err(|_| invalid(format!("{} is not under {}", path.display(), root.display())))?;
    let ok = rel.components().all(|c| matches!(c, Component::Normal(_)));
    let (Some(name), true) = (rel.file_name(), ok) else {
        return Err(invalid(format!("{} is not a file name under {}", path.display(), root.display())));
    };
    std::fs::create_dir_all(root)?;
    let root = std::fs::canonicalize(root)?;
    let mut dir = root.clone();
    for c in rel.parent().into_iter().flat_map(Path::components) {
        dir.push(c);
        match std::fs::symlink_metadata(&dir) {
            Ok(m) if m.is_dir() => {}
            Ok(_) => return Err(invalid(format!("{} is not a directory (a link is not followed)", dir.display()))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => std::fs::create_dir(&dir)?,
            Err(e) => return Err(e),
        }
    }
    if !std::fs::canonicalize(&dir)?.starts_with(&root) {
        return Err(invalid(format!("{} leaves {}", dir.display(), root.display())));
    }
    let mut tmp = tempfile::NamedTempFile::new_in(&dir)?;
    std::io::Write::write_all(&mut tmp, bytes)?;
    std::fs::set_permissions(tmp.path(), std::os::unix::fs::PermissionsExt::from_mode(0o644))?;
    tmp.persist(dir.join(name)).map_err(|e| e.error)?;
    Ok(())
}

/// [`write_inside`] the file's own directory: the file itself is replaced, a link in its place never
/// followed (the run's durations, an HTML report).
pub fn write_no_follow(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let name = path.file_name().ok_or_else(|| invalid(format!("{} names no file", path.display())))?;
    write_inside(parent, &parent.join(name), bytes)
}

/// Every file under `dir` (directories walked, symlinks to directories followed once each: a link back to
/// a directory already on the walk — two links to `.` — is not walked again) for which `keep` holds, in
/// path order.
pub fn walk_files(dir: &Path, keep: &dyn Fn(&Path) -> bool) -> std::io::Result<Vec<PathBuf>> {
    use std::os::unix::fs::MetadataExt;
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let m = std::fs::metadata(&d)?;
        if !seen.insert((m.dev(), m.ino())) {
            continue;
        }
        for e in std::fs::read_dir(&d)? {
            let p = e?.path();
            // a dangling link or one that cannot be followed is a file to the filter
            if std::fs::metadata(&p).is_ok_and(|m| m.is_dir()) {
                stack.push(p);
            } else if keep(&p) {
                out.push(p);
            }
        }
    }
    out.sort();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmp() -> tempfile::TempDir {
        tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn a_write_replaces_a_link_in_its_place_and_never_follows_one_out() {
        let d = tmp();
        let (root, outside) = (d.path().join("root"), d.path().join("outside"));
        std::fs::create_dir_all(root.join("g")).unwrap_or_else(|e| panic!("{e}"));
        std::fs::create_dir_all(&outside).unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(outside.join("victim"), "keep").unwrap_or_else(|e| panic!("{e}"));
        std::os::unix::fs::symlink(outside.join("victim"), root.join("g/x.snap")).unwrap_or_else(|e| panic!("{e}"));
        write_inside(&root, &root.join("g/x.snap"), b"new").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(std::fs::read_to_string(outside.join("victim")).unwrap_or_default(), "keep");
        assert_eq!(std::fs::read_to_string(root.join("g/x.snap")).unwrap_or_default(), "new");
        // a linked directory on the way is refused, nothing is written where it points
        std::os::unix::fs::symlink(&outside, root.join("out")).unwrap_or_else(|e| panic!("{e}"));
        assert!(write_inside(&root, &root.join("out/y.snap"), b"x").is_err());
        assert!(!outside.join("y.snap").exists());
        assert!(write_inside(&root, &root.join("../z"), b"x").is_err());
        assert!(write_inside(&root, &d.path().join("z"), b"x").is_err());
        write_no_follow(&root.join("g/x.snap"), b"again").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(std::fs::read_to_string(root.join("g/x.snap")).unwrap_or_default(), "again");
    }

    #[test]
    fn a_read_takes_regular_files_within_the_cap_only() {
        let d = tmp();
        let f = d.path().join("a.toml");
        std::fs::write(&f, "0123456789").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(read_capped(&f, 10).map_err(|e| e.to_string()), Ok(b"0123456789".to_vec()));
        assert!(read_capped(&f, 9).is_err_and(|e| e.to_string().contains("more than the 9")));
        assert!(read_capped(d.path(), 9).is_err_and(|e| e.to_string().contains("not a regular file")));
        assert!(read_capped(Path::new("/dev/zero"), 9).is_err_and(|e| e.to_string().contains("not a regular file")));
        let fifo = d.path().join("p.toml");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status().is_ok_and(|s| s.success());
        assert!(made, "mkfifo");
        assert!(read_capped(&fifo, 9).is_err_and(|e| e.to_string().contains("not a regular file")));
    }

    #[test]
    fn a_walk_visits_each_directory_once_whatever_links_lead_back() {
        let d = tmp();
        std::fs::create_dir_all(d.path().join("a")).unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(d.path().join("a/x.toml"), "").unwrap_or_else(|e| panic!("{e}"));
        for l in ["l1", "l2", "a/up"] {
            std::os::unix::fs::symlink(d.path(), d.path().join(l)).unwrap_or_else(|e| panic!("{e}"));
        }
        let found = walk_files(d.path(), &|p| p.extension().is_some_and(|x| x == "toml"));
        assert_eq!(found.map(|v| v.len()).map_err(|e| e.to_string()), Ok(1));
    }

    #[test]
    fn names_stay_under_probes() {
        assert_eq!(confined_name("read/window"), Ok(PathBuf::from("read/window")));
        for bad in ["../../x", "/etc/x", "a/../../b", "", "./a", "a/./b/..", "x/", "a/.hidden"] {
            assert!(confined_name(bad).is_err(), "{bad}");
        }
    }
}
