//! Small file helpers of the cache: atomic writes.

use super::VersionError;
use std::io::Write;
use std::path::Path;

/// Writes `bytes` to `path` through a temporary sibling renamed over it: a reader sees the old file
/// or the new one, never half of one.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), VersionError> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_writes_replace() {
        let d = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let f = d.path().join("m.json");
        write_atomic(&f, b"one").unwrap_or_else(|e| panic!("{e}"));
        write_atomic(&f, b"two").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(std::fs::read_to_string(&f).unwrap_or_default(), "two");
        let left: Vec<_> = std::fs::read_dir(d.path()).into_iter().flatten().flatten().map(|e| e.file_name()).collect();
        assert_eq!(left, vec![std::ffi::OsString::from("m.json")]);
    }
}
