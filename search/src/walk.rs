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

/// The `-t` / `-T` types and the `-g` / `--iglob` globs of a run, built once for all its walkers.
#[derive(Clone)]
struct Filters {
    types: ignore::types::Types,
    overrides: ignore::overrides::Override,
}

impl Filters {
    fn new(a: &RgArgs, cwd: &Path) -> Result<Filters, String> {
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
        Ok(Filters { types, overrides })
    }
}

/// ripgrep's walker of the roots for these arguments (always in path order, unless the sort needs
/// every path first).
fn walker(a: &RgArgs, paths: &[PathBuf], filters: &Filters) -> ignore::WalkBuilder {
    let mut b = ignore::WalkBuilder::new(&paths[0]);
    for p in &paths[1..] {
        b.add(p);
    }
    let Filters { types, overrides } = filters.clone();
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
    b
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
    let walk = walker(a, paths, &Filters::new(a, cwd)?)
        .build()
        .flat_map(move |result| event(result, strip_dot, parallel).into_iter().flatten());
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

/// A walk cut at one depth ([`split`]): the part above the cut (the roots down to the cut's depth) as
/// one walk, each directory at the cut's depth standing for the walk of its subtree, which any thread
/// may run on its own; put back in order, the pieces are the whole walk's events, in its order.
///
/// How the subtrees are walked, and why that is the same walk: each subtree is ignore's own sequential
/// `Walk` rooted at the cut directory, with the run's options (types, globs, hidden, the sort, the depth
/// left below the cut), so everything inside it is decided as in the whole walk; the ignore files above
/// it reach it through ignore's `parents` (the rules of every directory above a root, which the whole
/// walk uses for the directories above its own roots). Those are matched the same way as in the whole
/// walk for a pattern without a `/` (it matches a name wherever it is), but not for one with a `/` in it
/// (ignore matches a parent's pattern against the path joined to the root's absolute path, which is not
/// the whole walk's path for what lies deeper than the root's children): so the walk is only cut when
/// no ignore file above the cut (from `/` down) has such a pattern ([`safe_dir`]; a `.git` that is a file,
/// a worktree's, counts as unsafe). Not cut either: with `-L` (a link may lead to a directory above the
/// cut, which a subtree's walk does not know as an ancestor, so would not see as a loop), with a sort,
/// and when the tree is too small to gain.
///
/// What the cut costs: the walk above reads the listing of each directory at the cut's depth once more
/// than the whole walk (ignore's walker lists a directory before it knows not to descend), and each
/// subtree's walk reads the ignore files above it again (once per group of cut directories walked
/// together, which share them).
pub(crate) struct Split {
    /// What [`Split::above`] yields.
    above: Option<ignore::Walk>,
    subtrees: SubtreeWalker,
    strip_dot: bool,
    parallel: bool,
    depth: usize,
    skip: Option<(Skip, PathBuf)>,
    /// How many directories at the cut to walk as one task.
    pub(crate) group: usize,
}

/// What builds the walks of subtrees (shared by the threads).
#[derive(Clone)]
pub(crate) struct SubtreeWalker {
    a: std::sync::Arc<RgArgs>,
    filters: Filters,
    /// The depth left below the cut (`--max-depth` minus the cut's depth).
    max_depth: Option<usize>,
    strip_dot: bool,
    parallel: bool,
    skip: Option<(Skip, PathBuf)>,
}

/// One piece of a cut walk, in order: an event of the walk above the cut, or a directory at the cut
/// whose subtree's events come here.
pub(crate) enum Piece {
    Event(Event),
    Subtree(PathBuf),
}

/// Fewest directories at the cut's depth for a cut, per search thread.
const CUT_DIRS_PER_THREAD: usize = 8;
/// Walk tasks per thread: a walk streams its batches to every thread, so a few are enough to keep the
/// threads busy, and each costs the building of its matchers.
const GROUPS_PER_THREAD: usize = 4;
/// Deepest cut.
const MAX_CUT_DEPTH: usize = 3;
/// Most directory entries read (plain listings) to choose the cut's depth.
const MAX_PROBED: usize = 20_000;

/// The walk cut at a depth for `threads` threads, or None when it is not cut (see [`Split`]).
pub(crate) fn split(
    a: &RgArgs,
    paths: &[PathBuf],
    strip_dot: bool,
    (cwd, skip): (&Path, Option<Skip>),
    parallel: bool,
    threads: usize,
) -> Result<Option<Split>, String> {
    if a.follow || a.sort.is_some() {
        return Ok(None);
    }
    let Some((depth, dirs)) = cut_depth(a, paths, threads * CUT_DIRS_PER_THREAD) else { return Ok(None) };
    let filters = Filters::new(a, cwd)?;
    let above = walker(a, paths, &filters).max_depth(Some(depth)).build();
    let skip = skip.map(|f| (f, cwd.to_path_buf()));
    let subtrees = SubtreeWalker {
        a: std::sync::Arc::new(a.clone()),
        filters,
        max_depth: a.max_depth.map(|m| m - depth),
        strip_dot,
        parallel,
        skip: skip.clone(),
    };
    // (each walk builds its matchers: ignore's global gitignore among them, read from git's config)
    let group = dirs.div_ceil(threads * GROUPS_PER_THREAD).max(1);
    Ok(Some(Split { above: Some(above), subtrees, strip_dot, parallel, depth, skip, group }))
}

impl Split {
    /// What builds the subtrees' walks.
    pub(crate) fn subtrees(&self) -> SubtreeWalker {
        self.subtrees.clone()
    }

    /// The walk above the cut, in order (once).
    pub(crate) fn above(&mut self) -> impl Iterator<Item = Piece> + '_ {
        let walk = self.above.take().into_iter().flatten();
        let (strip_dot, parallel, depth) = (self.strip_dot, self.parallel, self.depth);
        let skip = self.skip.clone();
        walk.flat_map(move |result| match result {
            // (a real directory: no links are followed here)
            Ok(d) if d.depth() == depth && d.file_type().is_some_and(|t| t.is_dir()) => {
                // the directory's own problem (its ignore file) is said here, as the whole walk does
                let warning = d.error().map(|e| Piece::Event(Event::Warning(e.to_string())));
                [warning, Some(Piece::Subtree(d.into_path()))]
            }
            result => {
                let [x, y] = event(result, strip_dot, parallel);
                [x, y].map(|e| e.filter(|e| !skipped(&skip, e)).map(Piece::Event))
            }
        })
        .flatten()
    }
}

/// Whether the caller's rule leaves this event out.
fn skipped(skip: &Option<(Skip, PathBuf)>, e: &Event) -> bool {
    matches!((skip, e), (Some((f, cwd)), Event::Hay(h)) if f(&cwd.join(&h.path)))
}

impl SubtreeWalker {
    /// The events of the subtrees of these directories at the cut, one after the other, in the order of
    /// the whole walk (the directories themselves and what the walk above said of them left out).
    pub(crate) fn walk(&self, dirs: &[PathBuf]) -> SubtreeEvents<'_> {
        let walk = walker(&self.a, dirs, &self.filters).max_depth(self.max_depth).build();
        SubtreeEvents { walk, of: self, held: None, queued: Vec::new() }
    }
}

/// The events of a group of subtrees ([`SubtreeWalker::walk`]).
pub(crate) struct SubtreeEvents<'w> {
    walk: ignore::Walk,
    of: &'w SubtreeWalker,
    /// A problem that is not of an entry, held until it is known whether a root comes next: ignore says
    /// a problem reading the ignore files above a root just before the root, where the walk above (as
    /// the whole walk) has said it already.
    held: Option<ignore::Error>,
    /// Events to yield before walking on, last first.
    queued: Vec<Event>,
}

impl Iterator for SubtreeEvents<'_> {
    type Item = Event;

    fn next(&mut self) -> Option<Event> {
        loop {
            if let Some(e) = self.queued.pop() {
                if skipped(&self.of.skip, &e) {
                    continue;
                }
                return Some(e);
            }
            let parallel = self.of.parallel;
            let Some(result) = self.walk.next() else {
                return self.held.take().map(|e| Event::Error(walk_error(e, parallel)));
            };
            match result {
                Ok(d) if d.depth() == 0 => self.held = None,
                Err(e) if !matches!(e, ignore::Error::WithDepth { .. }) => {
                    if let Some(e) = self.held.replace(e) {
                        return Some(Event::Error(walk_error(e, parallel)));
                    }
                }
                result => {
                    let [x, y] = event(result, self.of.strip_dot, parallel);
                    self.queued.extend(y);
                    self.queued.extend(x);
                    if let Some(e) = self.held.take() {
                        self.queued.push(Event::Error(walk_error(e, parallel)));
                    }
                }
            }
        }
    }
}

/// The depth to cut the walk at, and how many directories it has: the first (from 1 to [`MAX_CUT_DEPTH`], above `--max-depth`) at which
/// the roots have `want` directories or more (plain listings: ignore rules are not applied to choose),
/// every directory above which is [`safe_dir`]. None for no cut: a tree too small, too wide to list
/// (more than [`MAX_PROBED`] entries above the cut), or an unsafe directory.
fn cut_depth(a: &RgArgs, paths: &[PathBuf], want: usize) -> Option<(usize, usize)> {
    let mut level: Vec<PathBuf> = Vec::new();
    for p in paths {
        if !p.is_dir() {
            continue;
        }
        // the roots and every directory above them
        let abs = p.canonicalize().ok()?;
        if !abs.ancestors().all(|d| safe_dir(a, d)) {
            return None;
        }
        level.push(p.clone());
    }
    let mut probed = 0;
    for depth in 1..=MAX_CUT_DEPTH {
        if a.max_depth.is_some_and(|m| depth >= m) || level.is_empty() {
            return None;
        }
        let mut next = Vec::new();
        for dir in &level {
            for e in std::fs::read_dir(dir).ok()?.flatten() {
                probed += 1;
                if e.file_type().is_ok_and(|t| t.is_dir()) {
                    next.push(e.path());
                }
            }
            if probed > MAX_PROBED {
                return None;
            }
        }
        if next.len() >= want {
            return Some((depth, next.len()));
        }
        if !next.iter().all(|d| safe_dir(a, d)) {
            return None;
        }
        level = next;
    }
    None
}

/// Whether the ignore files of `dir` this run reads (`.rgignore`, `.ignore`, `.gitignore`,
/// `.git/info/exclude`) have no pattern with a `/` other than a last one (see [`Split`]); a `.git` that is
/// not a directory (a worktree's) is not looked into, and is unsafe.
fn safe_dir(a: &RgArgs, dir: &Path) -> bool {
    if a.no_ignore {
        return true;
    }
    let no_vcs = a.no_ignore_vcs;
    let mut files = vec![dir.join(".rgignore"), dir.join(".ignore")];
    if !no_vcs {
        files.push(dir.join(".gitignore"));
        let git = dir.join(".git");
        match std::fs::metadata(&git) {
            Ok(m) if m.is_dir() => files.push(git.join("info/exclude")),
            Ok(_) => return false,
            Err(_) => {}
        }
    }
    files.iter().all(|f| match std::fs::read(f) {
        Ok(text) => String::from_utf8_lossy(&text).lines().all(|line| {
            let line = line.trim_end();
            if line.is_empty() || line.starts_with('#') {
                return true;
            }
            match line.strip_suffix('/') {
                Some(name) => !name.is_empty() && !name.contains('/'),
                None => !line.contains('/'),
            }
        }),
        // (an ignore file that cannot be read has no rules for either walk)
        Err(_) => true,
    })
}
