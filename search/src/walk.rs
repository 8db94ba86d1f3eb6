//! The walk: the haystacks of a run in the order they are searched and reported — ignore rules (the
//! `.gitignore`s, `.ignore`, `.rgignore`), hidden files, `-t` / `-T` types, `-g` / `--iglob` globs, the
//! depth and symlink flags, and the sort — as ripgrep's `ignore` walker finds them, single-threaded in
//! path order; plus the caller's own rule ([`Skip`]) of what is not there.

use crate::args::{Mode, RgArgs, SortKind, TypeChange};
use std::path::{Path, PathBuf};

/// A predicate on paths for [`crate::Io::skip`].
pub type Skip = std::sync::Arc<dyn Fn(&Path) -> bool + Send + Sync>;

/// The walk's events, in order.
pub(crate) type Walk = Box<dyn Iterator<Item = Event> + Send>;

/// The walk without the haystacks `skip` leaves out.
fn without_skipped(walk: Walk, skip: Option<Skip>, cwd: &Path) -> Walk {
    match skip {
        None => walk,
        Some(f) => {
            let cwd = cwd.to_path_buf();
            Box::new(walk.filter(move |e| !matches!(e, Event::Hay(h) if f(&cwd.join(&h.path)))))
        }
    }
}

/// ripgrep's walker of the roots for these arguments (always in path order, unless the sort needs
/// every path first).
fn walker(a: &RgArgs, paths: &[PathBuf], cwd: &Path) -> Result<ignore::WalkBuilder, String> {
    let mut b = ignore::WalkBuilder::new(&paths[0]);
    for p in &paths[1..] {
        b.add(p);
    }
    let mut types = ignore::types::TypesBuilder::new();
    types.add_defaults();
    for t in &a.types {
        match t {
            TypeChange::Select(n) => types.select(n),
            TypeChange::Negate(n) => types.negate(n),
        };
    }
    let types = types.build().map_err(|e| e.to_string())?;
    let overrides = if a.globs.is_empty() && a.iglobs.is_empty() {
        ignore::overrides::Override::empty()
    } else {
        let mut o = ignore::overrides::OverrideBuilder::new(cwd);
        for g in &a.globs {
            o.add(g).map_err(|e| e.to_string())?;
        }
        o.case_insensitive(true).map_err(|e| e.to_string())?;
        for g in &a.iglobs {
            o.add(g).map_err(|e| e.to_string())?;
        }
        o.build().map_err(|e| e.to_string())?
    };
    let no_vcs = a.no_ignore || a.no_ignore_vcs;
    b.max_depth(a.max_depth)
        .follow_links(a.follow)
        .threads(1)
        .skip_stdout(a.mode != Mode::Files)
        .overrides(overrides)
        .types(types)
        .hidden(!a.hidden)
        .parents(!a.no_ignore)
        .ignore(!a.no_ignore)
        .git_global(!no_vcs)
        .git_ignore(!no_vcs)
        .git_exclude(!no_vcs)
        .require_git(true);
    if !a.no_ignore {
        b.add_custom_ignore_filename(".rgignore");
    }
    // Single-threaded and deterministic: always in path order (ripgrep does this for --sort path).
    if !matches!(a.sort, Some((_, true)) | Some((SortKind::Modified | SortKind::Accessed | SortKind::Created, _))) {
        // by file name: siblings' paths are their parent's path joined to their names, so comparing the
        // whole paths' bytes orders them as their names, without taking each name out of its path at
        // every comparison (sort_by_file_name's cost, a tenth of the walk)
        b.sort_by_file_path(|x, y| x.as_os_str().cmp(y.as_os_str()));
    }
    Ok(b)
}

/// One thing to search, as ripgrep's haystack: a walk entry that is a file, or a path given explicitly.
pub(crate) struct Haystack {
    pub(crate) path: PathBuf,
    pub(crate) explicit: bool,
}

/// What the walk yields, in order: a haystack, or an error to report at that point.
pub(crate) enum Event {
    Hay(Haystack),
    Error(String),
    /// A problem that does not stop the run nor change its exit status (a bad line in an ignore file).
    Warning(String),
}

/// The walk's events in the order they are searched and reported: streamed in path order, or, for the
/// sorts that need every path first (times, reversed path), collected, sorted and handed out with the
/// walk's errors first (ripgrep reports them while it collects).
/// `parallel`: word errors as ripgrep's parallel walker does. The haystacks `skip` leaves out (given the
/// path joined to `cwd`) are not there.
pub(crate) fn events(
    a: &RgArgs,
    paths: &[PathBuf],
    strip_dot: bool,
    (cwd, skip): (&Path, Option<Skip>),
    parallel: bool,
) -> Result<Walk, String> {
    let walk =
        walker(a, paths, cwd)?.build().flat_map(move |result| event(result, strip_dot, parallel).into_iter().flatten());
    let Some((kind, reverse)) = a.sort else { return Ok(without_skipped(Box::new(walk), skip, cwd)) };
    if kind == SortKind::Path && !reverse {
        // the walk itself is in path order
        return Ok(without_skipped(Box::new(walk), skip, cwd));
    }
    let mut errors = Vec::new();
    let mut out = Vec::new();
    for e in walk {
        match e {
            Event::Hay(h) => out.push(h),
            e => errors.push(e),
        }
    }
    let key = |p: &Path| -> Option<std::time::SystemTime> {
        let m = p.metadata().ok()?;
        match kind {
            SortKind::Path => None,
            SortKind::Modified => m.modified().ok(),
            SortKind::Accessed => m.accessed().ok(),
            SortKind::Created => m.created().ok(),
        }
    };
    match kind {
        SortKind::Path => out.sort_by(|x, y| y.path.cmp(&x.path)),
        _ => {
            let mut keyed: Vec<_> = out.into_iter().map(|h| (key(&h.path), h)).collect();
            keyed.sort_by(|(t1, _), (t2, _)| {
                let o = match (t1, t2) {
                    (Some(a), Some(b)) => a.cmp(b),
                    (Some(_), None) => std::cmp::Ordering::Less,
                    (None, Some(_)) => std::cmp::Ordering::Greater,
                    (None, None) => std::cmp::Ordering::Equal,
                };
                if reverse {
                    o.reverse()
                } else {
                    o
                }
            });
            out = keyed.into_iter().map(|(_, h)| h).collect();
        }
    }
    Ok(without_skipped(Box::new(errors.into_iter().chain(out.into_iter().map(Event::Hay))), skip, cwd))
}

/// One walk result as events: the entry's own problem (ripgrep's "ignore message", e.g. a bad glob in the
/// directory's .gitignore), then the haystack (none for what is not searched: directories, special files).
fn event(result: Result<ignore::DirEntry, ignore::Error>, strip_dot: bool, parallel: bool) -> [Option<Event>; 2] {
    let dent = match result {
        Ok(d) => d,
        Err(e) => return [Some(Event::Error(walk_error(e, parallel))), None],
    };
    let warning = dent.error().map(|e| Event::Warning(e.to_string()));
    let ft = dent.file_type();
    let is_dir = ft.is_some_and(|t| t.is_dir()) || (dent.path_is_symlink() && dent.path().is_dir());
    let explicit = dent.depth() == 0 && !is_dir;
    let is_file = ft.is_some_and(|t| t.is_file());
    if !explicit && !is_file {
        return [warning, None];
    }
    let path = if strip_dot && dent.path().starts_with("./") {
        dent.path().strip_prefix("./").map(Path::to_path_buf).unwrap_or_else(|_| dent.into_path())
    } else {
        dent.into_path()
    };
    [warning, Some(Event::Hay(Haystack { path, explicit }))]
}

/// A walk error's text. ripgrep's parallel walker words an entry it cannot read (a broken symlink under
/// -L) `PATH: ERROR`, where the sequential walker this engine uses wraps walkdir's `IO error for operation
/// on PATH: ERROR`; runs ripgrep would make parallel get the parallel wording.
fn walk_error(e: ignore::Error, parallel: bool) -> String {
    if let (true, ignore::Error::WithPath { path, err }) = (parallel, &e) {
        if let ignore::Error::Io(io) = &**err {
            let text = io.to_string();
            if let Some(rest) = text.strip_prefix(&format!("IO error for operation on {}: ", path.display())) {
                return format!("{}: {rest}", path.display());
            }
        }
    }
    e.to_string()
}
