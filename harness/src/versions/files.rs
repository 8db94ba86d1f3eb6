//! Small file helpers of the cache: atomic writes, directory sizes, streaming SHA-256.

use super::error::VersionError;
use sha2::{Digest, Sha256};
use std::io::{Read, Write};
use std::path::Path;

/// Writes `bytes` to `path` through a temporary sibling renamed over it: a reader sees the old file
/// or the new one, never half of one.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), VersionError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut tmp = tempfile::Builder::new()
        .prefix(".write-")
        .tempfile_in(dir)
        .map_err(|e| VersionError::io("create a file in", dir, e))?;
    tmp.write_all(bytes).and_then(|()| tmp.flush()).map_err(|e| VersionError::io("write", tmp.path(), e))?;
    // tempfile makes it 0600; the cache's files are read by whoever runs probes
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o644))
        .map_err(|e| VersionError::io("write", tmp.path(), e))?;
    tmp.persist(path).map_err(|e| VersionError::io("write", path, e.error))?;
    Ok(())
}

/// The bytes the files under `dir` hold (apparent sizes; symlinks count as their own small size).
pub(crate) fn dir_size(dir: &Path) -> u64 {
    let mut total = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else { continue };
        for e in entries.flatten() {
            let Ok(meta) = e.path().symlink_metadata() else { continue };
            if meta.is_dir() {
                stack.push(e.path());
            } else {
                total += meta.len();
            }
        }
    }
    total
}

/// The SHA-256 of a file, hex, read in 1 MiB blocks (the binary is ~330 MB; about a second).
pub(crate) fn sha256_file(path: &Path) -> Result<String, VersionError> {
    let mut f = std::fs::File::open(path).map_err(|e| VersionError::io("read", path, e))?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = f.read(&mut buf).map_err(|e| VersionError::io("read", path, e))?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(hex(&hasher.finalize()))
}

/// Lower-case hex.
pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Removes a directory tree by renaming it to a hidden sibling first, so that no one ever sees a
/// half-removed install under its real name.
pub(crate) fn remove_dir_atomic(dir: &Path) -> Result<(), VersionError> {
    let Some(parent) = dir.parent() else {
        return std::fs::remove_dir_all(dir).map_err(|e| VersionError::io("remove", dir, e));
    };
    let name = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let trash = parent.join(format!(".trash-{name}-{}-{}", std::process::id(), unique()));
    match std::fs::rename(dir, &trash) {
        Ok(()) => std::fs::remove_dir_all(&trash).map_err(|e| VersionError::io("remove", &trash, e)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(VersionError::io("remove", dir, e)),
    }
}

/// A number unique within this process (for temporary names).
pub(crate) fn unique() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    N.fetch_add(1, Ordering::Relaxed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sha256_of_a_file_is_the_hash_of_its_bytes() {
        let d = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let f = d.path().join("f");
        std::fs::write(&f, b"abc").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            sha256_file(&f).unwrap_or_else(|e| panic!("{e}")),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn atomic_writes_replace_and_removals_leave_nothing() {
        let d = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let f = d.path().join("m.json");
        write_atomic(&f, b"one").unwrap_or_else(|e| panic!("{e}"));
        write_atomic(&f, b"two").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(std::fs::read_to_string(&f).unwrap_or_default(), "two");
        let v = d.path().join("v");
        std::fs::create_dir_all(v.join("a/b")).unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(v.join("a/b/x"), b"12345").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(dir_size(&v), 5);
        remove_dir_atomic(&v).unwrap_or_else(|e| panic!("{e}"));
        let left: Vec<_> = std::fs::read_dir(d.path()).into_iter().flatten().flatten().map(|e| e.file_name()).collect();
        assert_eq!(left, vec![std::ffi::OsString::from("m.json")]);
        remove_dir_atomic(&v).unwrap_or_else(|e| panic!("removing what is gone is fine: {e}"));
    }
}
