//! Writes of the lab's own files into a sandbox a subject can change (issue 41, item 3): the runtime's
//! file history, persisted tool results, session logs, transcripts, mailboxes, tasks and plans, and the
//! lab's fixture files, settings and seeded files. A confined subject writes that sandbox too, and can
//! put a symlink anywhere in it — in place of the file, or of a directory on the way — to make the lab,
//! which runs on the host, write through it over a host file.
//!
//! So each such write opens every component of its path, from the sandbox root down, with no link
//! followed (`openat` with `O_NOFOLLOW`, directories with `O_DIRECTORY`; missing directories made
//! with `mkdirat` and opened the same way): a link anywhere on the way is an error (`ELOOP`, or
//! `ENOTDIR` for a link in place of a directory), never followed, however late the subject planted it.
//! The root itself is a directory the lab made outside the subject's reach (the sandbox root is the
//! subject's bind mount point: its entries can change, it cannot).
//!
//! A path under none of the roots is written as it is (the runtime outside the lab, its own tests).
//! The tools the model calls (Write, Edit, NotebookEdit) are not written here: they follow links as
//! the reference does, inside the sandbox the resolver confines them to.

use nix::fcntl::{openat, OFlag};
use nix::sys::stat::Mode;
use std::io::Write as _;
use std::os::fd::OwnedFd;
use std::path::{Component, Path, PathBuf};

/// The root of `path` among `roots`, and the path below it: `Ok(None)` when no root holds it; an error
/// when one does but the rest is not plain names (a `..` would climb out of it).
fn split<'a>(roots: &'a [PathBuf], path: &'a Path) -> std::io::Result<Option<(&'a Path, &'a Path)>> {
    let Some((root, rel)) = roots.iter().find_map(|r| Some((r.as_path(), path.strip_prefix(r).ok()?))) else {
        return Ok(None);
    };
    if rel.components().all(|c| matches!(c, Component::Normal(_))) {
        Ok(Some((root, rel)))
    } else {
        Err(std::io::Error::other(format!("{} climbs out of {}", path.display(), root.display())))
    }
}

fn io(e: nix::Error) -> std::io::Error {
    std::io::Error::from_raw_os_error(e as i32)
}

/// The directory `rel` under `root`, each component opened with no link followed and made when
/// missing.
fn open_dirs(root: &Path, rel: &Path) -> std::io::Result<OwnedFd> {
    let dir_flags = OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC | OFlag::O_RDONLY;
    let mut fd = nix::fcntl::open(root, dir_flags, Mode::empty()).map_err(io)?;
    for c in rel.components() {
        let name = c.as_os_str();
        let next = match openat(&fd, name, dir_flags, Mode::empty()) {
            Err(nix::Error::ENOENT) => {
                match nix::sys::stat::mkdirat(&fd, name, Mode::from_bits_truncate(0o755)) {
                    Ok(()) | Err(nix::Error::EEXIST) => {}
                    Err(e) => return Err(io(e)),
                }
                openat(&fd, name, dir_flags, Mode::empty()).map_err(io)?
            }
            // something that is no directory there: a link is refused (ELOOP), anything else is in the
            // way as `mkdir -p` says it (EEXIST), the error the stores word as node does
            Err(nix::Error::ENOTDIR | nix::Error::ELOOP) => {
                let st = nix::sys::stat::fstatat(&fd, name, nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW).map_err(io)?;
                let link = nix::sys::stat::SFlag::from_bits_truncate(st.st_mode) & nix::sys::stat::SFlag::S_IFMT
                    == nix::sys::stat::SFlag::S_IFLNK;
                return Err(io(if link { nix::Error::ELOOP } else { nix::Error::EEXIST }));
            }
            other => other.map_err(io)?,
        };
        fd = next;
    }
    Ok(fd)
}

/// Makes the directory `dir` (and those above it, under its root) with no link followed.
pub fn create_dir_all(roots: &[PathBuf], dir: &Path) -> std::io::Result<()> {
    match split(roots, dir)? {
        Some((root, rel)) => open_dirs(root, rel).map(drop),
        None => std::fs::create_dir_all(dir),
    }
}

/// Opens `path` for writing (created 0644; emptied, or appended to with `append`), every component
/// from its root down opened with no link followed, its directories made.
pub fn open(roots: &[PathBuf], path: &Path, append: bool) -> std::io::Result<std::fs::File> {
    let Some((root, rel)) = split(roots, path)? else {
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        return std::fs::OpenOptions::new().create(true).write(true).append(append).truncate(!append).open(path);
    };
    let name = rel.file_name().ok_or_else(|| std::io::Error::other(format!("{} names no file", path.display())))?;
    let dir = open_dirs(root, rel.parent().unwrap_or(Path::new("")))?;
    let mut flags = OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC | OFlag::O_NONBLOCK;
    flags |= if append { OFlag::O_APPEND } else { OFlag::O_TRUNC };
    let fd = openat(&dir, name, flags, Mode::from_bits_truncate(0o644)).map_err(io)?;
    let file = std::fs::File::from(fd);
    // a FIFO or a device the subject put in place is not the lab's file
    if !file.metadata()?.is_file() {
        return Err(std::io::Error::other(format!("{} is not a regular file", path.display())));
    }
    Ok(file)
}

/// Writes `bytes` to `path` ([`open`]: no link followed on the way or in its place).
pub fn write(roots: &[PathBuf], path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    open(roots, path, false)?.write_all(bytes)
}

/// Appends `bytes` to `path` ([`open`]).
pub fn append(roots: &[PathBuf], path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    open(roots, path, true)?.write_all(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_link_anywhere_on_the_way_is_refused_never_followed() {
        let host = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let victim = host.path().join("victim");
        std::fs::write(&victim, "host\n").unwrap_or_else(|e| panic!("{e}"));
        let sb = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let roots = vec![sb.path().to_path_buf()];
        // written, directories made
        write(&roots, &sb.path().join("home/a/b.txt"), b"one").unwrap_or_else(|e| panic!("{e}"));
        append(&roots, &sb.path().join("home/a/b.txt"), b"two").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(std::fs::read_to_string(sb.path().join("home/a/b.txt")).unwrap_or_default(), "onetwo");
        // a link in place of the file
        std::os::unix::fs::symlink(&victim, sb.path().join("home/a/link.txt")).unwrap_or_else(|e| panic!("{e}"));
        assert!(write(&roots, &sb.path().join("home/a/link.txt"), b"x").is_err());
        // a link in place of a directory on the way
        std::os::unix::fs::symlink(host.path(), sb.path().join("home/d")).unwrap_or_else(|e| panic!("{e}"));
        assert!(write(&roots, &sb.path().join("home/d/victim"), b"x").is_err());
        assert!(create_dir_all(&roots, &sb.path().join("home/d/new")).is_err());
        assert!(!host.path().join("new").exists());
        // a FIFO in place of the file
        let fifo = sb.path().join("home/a/fifo");
        assert!(std::process::Command::new("mkfifo").arg(&fifo).status().is_ok_and(|s| s.success()));
        assert!(write(&roots, &fifo, b"x").is_err());
        assert_eq!(std::fs::read_to_string(&victim).unwrap_or_default(), "host\n");
        // a `..` is refused under a root; outside every root: written as is
        assert!(write(&roots, &sb.path().join("home/../../x"), b"x").is_err());
        write(&[], &host.path().join("plain"), b"p").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(std::fs::read_to_string(host.path().join("plain")).unwrap_or_default(), "p");
    }
}
