//! Path resolution as the OS does it ([`real_path`]): the one resolver that confinement
//! ([`crate::fs`]), the permission matcher ([`crate::permissions`]) and the search walks ask. A leaf: it
//! knows no context, no tool and no rule.

use std::path::{Component, Path, PathBuf};

/// Symlinks followed at most in one path, as the kernel does (Linux's `MAXSYMLINKS`; past it
/// `ELOOP`): a longer chain (or a loop) is refused, never followed further.
pub const MAX_SYMLINK_HOPS: usize = 40;

/// The path the OS would really touch: every component resolved through symlinks, the last one
/// included, and a dangling link followed to where its target would be (the parts that do not exist
/// are kept as written). `..` after a symlink goes up from the link's target, as the kernel does, and
/// `/proc/self/root`-style magic links resolve to what they name. None when the path holds a symlink
/// loop, more than [`MAX_SYMLINK_HOPS`] links or a link that cannot be read (`/proc/1/root` of
/// another namespace). This is the one resolver: confinement ([`crate::fs::resolve`]),
/// the permission matcher and the search walks all ask it.
pub fn real_path(path: &Path) -> Option<PathBuf> {
    use std::collections::VecDeque;
    use std::ffi::OsString;
    let mut out = PathBuf::from("/");
    let mut todo: VecDeque<OsString> = VecDeque::new();
    let push_front = |todo: &mut VecDeque<OsString>, p: &Path| {
        for c in p.components().rev() {
            match c {
                Component::Normal(n) => todo.push_front(n.to_os_string()),
                Component::ParentDir => todo.push_front("..".into()),
                _ => {}
            }
        }
    };
    push_front(&mut todo, path);
    let mut hops = 0;
    while let Some(c) = todo.pop_front() {
        if c == ".." {
            out.pop();
            continue;
        }
        let next = out.join(&c);
        match std::fs::symlink_metadata(&next) {
            Ok(m) if m.file_type().is_symlink() => {
                hops += 1;
                if hops > MAX_SYMLINK_HOPS {
                    return None;
                }
                let target = std::fs::read_link(&next).ok()?;
                if target.is_absolute() {
                    out = PathBuf::from("/");
                }
                push_front(&mut todo, &target);
            }
            _ => out = next,
        }
    }
    Some(out)
}
