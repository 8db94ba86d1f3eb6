//! The parallel search: the walk on the calling thread, cut into numbered batches of consecutive
//! files that search threads (as many as ripgrep would use) search into their own buffers, each batch
//! printed once every batch before it is — the search overlaps the walk as in ripgrep, and the output
//! is the same bytes as one thread's whatever the timing ([`search_parallel`]); or, when the walk can be
//! cut at a depth ([`crate::walk::Split`]), the subtrees below the cut walked by every thread as tasks
//! beside the searches, printed slot by slot in walk order ([`search_split`]).

use super::file::{search_file, Plan};
use crate::print::{BatchDone, Facts, FilePrinter, Messages, Output};
use crate::walk::{Event, Piece, Split, SubtreeWalker, Walk};
use grep_regex::RegexMatcher;
use grep_searcher::Searcher;
use std::sync::atomic::{AtomicBool, Ordering};

/// Most walk events in one batch handed to a search thread.
const BATCH: usize = 64;

/// Batches per search thread the walk may run ahead of the searches before the walking thread searches
/// too. Deep, so that the search threads never wait on a walk that is itself waiting for a core (on a
/// loaded machine, with 1 per thread the walking thread's searches let them run dry; ripgrep's threads
/// walk and search alike and never wait on each other).
const AHEAD: usize = 32;

/// Fewest walk events in a batch handed out early (while fewer batches are queued than there are
/// search threads): enough that a search thread woken for it does not go back to sleep at once.
const FIRST_BATCH: usize = 16;

/// Walks on this thread (in path order) while `threads` threads search what it finds. The walk is cut
/// into numbered batches of consecutive events and queued; while more than [`AHEAD`] batches per search
/// thread wait, this thread searches the oldest itself rather than walk further ahead, and once the
/// walk is done it searches what is left. Between batches it writes every batch done whose
/// predecessors are all written, so the output is the same as one thread's whatever the timing.
///
/// What it costs: the walk (a third of a search's time on a source tree) is the one step no other thread
/// can do, so this thread does little else while the search threads keep up; it takes finished batches
/// off a channel between batches, never woken for each (a separate writer thread and a search thread
/// woken for every single-file batch made thousands of futex waits a run, ripgrep a few dozen).
pub(super) fn search_parallel(
    plan: &Plan<'_>,
    searcher: Searcher,
    walk: Walk,
    threads: usize,
    out: &mut Output<'_>,
    msgs: &mut Messages<'_>,
) {
    let queue = WorkQueue::default();
    let (done_tx, done_rx) = std::sync::mpsc::channel::<(usize, BatchDone)>();
    let stop = AtomicBool::new(false);
    let spare: std::sync::Mutex<Vec<Vec<u8>>> = std::sync::Mutex::new(Vec::new());
    let between = out.between.clone();
    let shared = Shared { plan, queue: &queue, stop: &stop, spare: &spare, between: &between };
    let sh = &shared;
    std::thread::scope(|scope| {
        for _ in 0..threads {
            let done_tx = done_tx.clone();
            let searcher = searcher.clone();
            scope.spawn(move || {
                let mut worker = Worker::new(plan, searcher);
                while let Some((index, batch)) = sh.queue.pop() {
                    if let Some(done) = worker.search(sh, batch) {
                        if done_tx.send((index, done)).is_err() {
                            sh.stop.store(true, Ordering::Relaxed);
                        }
                    }
                }
            });
        }
        drop(done_tx);
        let mut writer = InOrder { done_rx, pending: std::collections::BTreeMap::new(), next: 0 };
        feed(sh, walk, threads, Worker::new(plan, searcher), &mut writer, out, msgs);
        // the walk and this thread's searches are done: write the rest as the search threads finish it
        writer.finish(sh, out, msgs);
    });
}

/// What the walker and the search threads of one parallel search share.
struct Shared<'s, 'a> {
    plan: &'s Plan<'a>,
    queue: &'s WorkQueue,
    /// Set when the output stops (stdout gone, the caller's buffer full): no more walking or searching.
    stop: &'s AtomicBool,
    /// Output buffers written out, for the search threads to fill again.
    spare: &'s std::sync::Mutex<Vec<Vec<u8>>>,
    /// Between two non-empty outputs ([`Output::between`]).
    between: &'s Option<Vec<u8>>,
}

/// The batches cut by the walker and not yet taken by a thread, oldest first.
#[derive(Default)]
struct WorkQueue {
    state: std::sync::Mutex<WorkState>,
    /// Signalled when a batch is queued (and a thread waits) or the walk ends.
    ready: std::sync::Condvar,
    /// How many batches are queued, for the walker to look at without the lock.
    len: std::sync::atomic::AtomicUsize,
}

#[derive(Default)]
struct WorkState {
    batches: std::collections::VecDeque<(usize, Vec<Event>)>,
    /// The walk has ended: nothing more will be queued.
    closed: bool,
    /// Search threads waiting for a batch.
    waiting: usize,
}

impl WorkQueue {
    fn state(&self) -> std::sync::MutexGuard<'_, WorkState> {
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn push(&self, job: (usize, Vec<Event>)) {
        let mut s = self.state();
        s.batches.push_back(job);
        self.len.store(s.batches.len(), Ordering::Relaxed);
        if s.waiting > 0 {
            self.ready.notify_one();
        }
    }

    /// The walk has ended: a thread waiting for a batch that will not come gets none.
    fn close(&self) {
        self.state().closed = true;
        self.ready.notify_all();
    }

    /// The oldest batch, waiting for one while the walk goes on (`wait`); None when there is none (and,
    /// waiting, the walk has ended).
    fn pop_or(&self, wait: bool) -> Option<(usize, Vec<Event>)> {
        let mut s = self.state();
        loop {
            if let Some(job) = s.batches.pop_front() {
                self.len.store(s.batches.len(), Ordering::Relaxed);
                return Some(job);
            }
            if s.closed || !wait {
                return None;
            }
            s.waiting += 1;
            s = self.ready.wait(s).unwrap_or_else(std::sync::PoisonError::into_inner);
            s.waiting -= 1;
        }
    }

    fn pop(&self) -> Option<(usize, Vec<Event>)> {
        self.pop_or(true)
    }

    fn len(&self) -> usize {
        self.len.load(Ordering::Relaxed)
    }
}

/// A thread's own matcher (a clone: a shared one's cache pool is slow off its owner thread), searcher
/// and printer, made once and used for every batch the thread searches.
struct Worker {
    matcher: RegexMatcher,
    searcher: Searcher,
    printer: FilePrinter,
}

impl Worker {
    fn new(plan: &Plan<'_>, searcher: Searcher) -> Worker {
        Worker { matcher: plan.matcher.clone(), searcher, printer: plan.printer(None) }
    }

    /// Searches a batch taken from the queue, its output in the batch's; None once the output has
    /// stopped (the batch is only taken off the queue, so that nothing waits on it).
    fn search(&mut self, sh: &Shared<'_, '_>, batch: Vec<Event>) -> Option<BatchDone> {
        if sh.stop.load(Ordering::Relaxed) {
            return None;
        }
        let mut done =
            search_batch(sh.plan, &self.matcher, &mut self.searcher, &mut self.printer, batch, sh.between, sh.stop);
        let fresh = sh.spare.lock().ok().and_then(|mut s| s.pop()).unwrap_or_default();
        done.out = std::mem::replace(self.printer.buf(), fresh);
        Some(done)
    }
}

/// The walker of a parallel search, also a searcher and the writer: queues the walk's events in numbered
/// batches (a batch goes out when it holds [`BATCH`] events, or [`FIRST_BATCH`] while fewer than
/// `searchers` are queued); searches the oldest queued batch itself whenever more than [`AHEAD`] per
/// search thread were queued, then what is left once the walk is done; writes what is done after each batch it queues.
/// Stops walking at a cancel or when the output stops; the queue is closed on every way out.
fn feed(
    sh: &Shared<'_, '_>,
    walk: Walk,
    searchers: usize,
    mut worker: Worker,
    writer: &mut InOrder,
    out: &mut Output<'_>,
    msgs: &mut Messages<'_>,
) {
    let mut index = 0;
    let mut batch = Vec::new();
    for e in walk {
        if sh.stop.load(Ordering::Relaxed) || sh.plan.cancelled() {
            // (what was cut so far is not searched)
            batch.clear();
            break;
        }
        batch.push(e);
        let queued = sh.queue.len();
        if batch.len() >= BATCH || (queued < searchers && batch.len() >= FIRST_BATCH) {
            sh.queue.push((index, std::mem::take(&mut batch)));
            index += 1;
            if queued > searchers * AHEAD {
                // the search threads are far behind: search rather than walk further ahead
                if let Some((i, job)) = sh.queue.pop_or(false) {
                    if let Some(done) = worker.search(sh, job) {
                        writer.add(sh, i, done, out, msgs);
                    }
                }
            }
            writer.take_done(sh, out, msgs);
        }
    }
    if !batch.is_empty() {
        sh.queue.push((index, batch));
    }
    sh.queue.close();
    while let Some((i, job)) = sh.queue.pop_or(false) {
        if let Some(done) = worker.search(sh, job) {
            writer.add(sh, i, done, out, msgs);
        }
        writer.take_done(sh, out, msgs);
    }
}

/// Searches one batch's haystacks into `printer`'s buffer (taken out by the caller as the batch's
/// output), `between` placed between two files that printed; its walk errors and warnings, and each
/// search error after what its file printed. A file whose output fills the caller's buffer sets `stop`.
fn search_batch(
    plan: &Plan<'_>,
    matcher: &RegexMatcher,
    searcher: &mut Searcher,
    printer: &mut FilePrinter,
    batch: Vec<Event>,
    between: &Option<Vec<u8>>,
    stop: &AtomicBool,
) -> BatchDone {
    let mut done = BatchDone { out: Vec::new(), errors: Vec::new(), facts: Facts::new() };
    for e in batch {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        let h = match e {
            Event::Error(e) => {
                done.errors.push((printer.buf().len(), e, true));
                continue;
            }
            Event::Warning(e) => {
                done.errors.push((printer.buf().len(), e, false));
                continue;
            }
            Event::Hay(h) => h,
        };
        let start = printer.buf().len();
        let r = search_file(plan, matcher, searcher, &h, printer);
        if let Some(e) = done.facts.record(r, &h) {
            done.errors.push((usize::MAX, e, true));
        }
        if done.facts.full {
            stop.store(true, Ordering::Relaxed);
        }
        let buf = printer.buf();
        if let (Some(sep), true) = (between, start > 0 && buf.len() > start) {
            buf.splice(start..start, sep.iter().copied().chain([b'\n']));
        }
        // a search error comes after what the file printed
        let end = buf.len();
        if let Some(last) = done.errors.last_mut().filter(|(at, _, _)| *at == usize::MAX) {
            last.0 = end;
        }
    }
    done
}

/// Writes the batches to `out` in walk order as they are done (they come in any order: each once all
/// before it are), giving their buffers back for the search threads to fill again; when stdout is gone
/// or the caller's buffer is full, sets `stop` (the walk and the searches stop at their next step).
struct InOrder {
    /// Batches the search threads have done.
    done_rx: std::sync::mpsc::Receiver<(usize, BatchDone)>,
    /// Batches done and not yet written (one before them is not done).
    pending: std::collections::BTreeMap<usize, BatchDone>,
    /// The batch to write next.
    next: usize,
}

impl InOrder {
    fn add(
        &mut self,
        sh: &Shared<'_, '_>,
        index: usize,
        done: BatchDone,
        out: &mut Output<'_>,
        msgs: &mut Messages<'_>,
    ) {
        if out.broken || out.facts.full {
            return;
        }
        self.pending.insert(index, done);
        while let Some(mut done) = self.pending.remove(&self.next) {
            self.next += 1;
            out.batch(msgs, &done);
            done.out.clear();
            if let Ok(mut s) = sh.spare.lock() {
                s.push(done.out);
            }
            if out.broken || out.facts.full {
                sh.stop.store(true, Ordering::Relaxed);
                return;
            }
        }
    }

    /// Writes what the search threads have done so far (without waiting).
    fn take_done(&mut self, sh: &Shared<'_, '_>, out: &mut Output<'_>, msgs: &mut Messages<'_>) {
        while let Ok((index, done)) = self.done_rx.try_recv() {
            self.add(sh, index, done, out, msgs);
        }
    }

    /// Writes the rest, as the search threads finish it.
    fn finish(mut self, sh: &Shared<'_, '_>, out: &mut Output<'_>, msgs: &mut Messages<'_>) {
        while let Ok((index, done)) = self.done_rx.recv() {
            self.add(sh, index, done, out, msgs);
        }
    }
}

/// The parallel search of a walk cut at a depth ([`crate::walk::Split`]): every thread walks and searches
/// alike. The walk above the cut runs on this thread first; it numbers the run's slots in walk order — a
/// run of its own events, or a group of directories at the cut whose subtrees' walk is a task — and the
/// walk of a slot numbers its batches. A thread takes the oldest task queued (a walk, or a batch to
/// search; a walk queues its batches as it goes, and searches the oldest one itself when the searches
/// are far behind, as [`search_parallel`]'s walker does), so the oldest slots are walked and searched
/// first; this thread, between tasks, writes every batch done whose predecessors are all written, slot by
/// slot, so the output is the same as one thread's whatever the timing.
pub(super) fn search_split(
    plan: &Plan<'_>,
    searcher: Searcher,
    mut split: Split,
    threads: usize,
    out: &mut Output<'_>,
    msgs: &mut Messages<'_>,
) {
    let pool = Pool::default();
    let stop = AtomicBool::new(false);
    let spare: std::sync::Mutex<Vec<Vec<u8>>> = std::sync::Mutex::new(Vec::new());
    let between = out.between.clone();
    let queue = WorkQueue::default();
    let shared = Shared { plan, queue: &queue, stop: &stop, spare: &spare, between: &between };
    let subtrees = split.subtrees();
    let run = Run { sh: &shared, pool: &pool, subtrees: &subtrees, threads };
    let run = &run;
    std::thread::scope(|scope| {
        for _ in 1..threads {
            let searcher = searcher.clone();
            scope.spawn(move || {
                let mut worker = Worker::new(plan, searcher);
                while let Some((key, task)) = run.pool.take(false) {
                    run.task(&mut worker, key, task, None);
                }
            });
        }
        let mut io = Writer { slots: Slots::default(), out, msgs };
        let mut worker = Worker::new(plan, searcher.clone());
        run.above(&mut split, &mut io);
        // then this thread is one of the pool until everything is written
        loop {
            run.write(&mut io);
            if io.slots.complete() || stop.load(Ordering::Relaxed) {
                break;
            }
            if let Some((key, task)) = pool.take(true) {
                run.task(&mut worker, key, task, Some(&mut io));
            }
        }
        // (stopped: nothing more is taken; the threads end after the task at hand)
        pool.close_all();
    });
}

/// A task's key: its slot, its batch in the slot, and 0 for a walk (first), 1 for a batch.
type Key = (usize, usize, u8);

enum Task {
    /// Walk the subtrees of these directories at the cut.
    Walk(Vec<std::path::PathBuf>),
    Search(Vec<Event>),
}

/// What a thread tells the writer.
enum Note {
    /// A batch searched: its slot and number in the slot.
    Done(usize, usize, BatchDone),
    /// A slot's walk is over: it has this many batches.
    Slot(usize, usize),
}

/// The tasks of a cut walk's search and what is done, for this thread to write.
#[derive(Default)]
struct Pool {
    state: std::sync::Mutex<PoolState>,
    /// Signalled when a task is queued and a thread waits, or when there will be no more.
    work: std::sync::Condvar,
    /// Signalled when this thread waits and a task or a note comes.
    main: std::sync::Condvar,
    /// How many batches are queued, to look at without the lock.
    batches: std::sync::atomic::AtomicUsize,
}

#[derive(Default)]
struct PoolState {
    tasks: std::collections::BTreeMap<Key, Task>,
    notes: Vec<Note>,
    /// Walks being run.
    walking: usize,
    /// The walk above the cut is over (or the run stopped).
    above_done: bool,
    waiting: usize,
    main_waiting: bool,
}

impl Pool {
    fn state(&self) -> std::sync::MutexGuard<'_, PoolState> {
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn push(&self, key: Key, task: Task) {
        let mut s = self.state();
        if matches!(task, Task::Search(_)) {
            self.batches.fetch_add(1, Ordering::Relaxed);
        }
        s.tasks.insert(key, task);
        if s.waiting > 0 {
            self.work.notify_one();
        }
        if s.main_waiting {
            self.main.notify_one();
        }
    }

    fn note(&self, note: Note) {
        let mut s = self.state();
        s.notes.push(note);
        if s.main_waiting {
            self.main.notify_one();
        }
    }

    /// The oldest task, waiting for one; None once there will be none. `main`: this thread's wait, which
    /// also ends (with None) when a note comes.
    fn take(&self, main: bool) -> Option<(Key, Task)> {
        let mut s = self.state();
        loop {
            if let Some((key, task)) = s.tasks.pop_first() {
                match task {
                    Task::Walk(_) => s.walking += 1,
                    Task::Search(_) => {
                        self.batches.fetch_sub(1, Ordering::Relaxed);
                    }
                }
                return Some((key, task));
            }
            if main {
                if !s.notes.is_empty() {
                    return None;
                }
                s.main_waiting = true;
                s = self.main.wait(s).unwrap_or_else(std::sync::PoisonError::into_inner);
                s.main_waiting = false;
                if s.tasks.is_empty() {
                    return None;
                }
                continue;
            }
            if s.above_done && s.walking == 0 {
                return None;
            }
            s.waiting += 1;
            s = self.work.wait(s).unwrap_or_else(std::sync::PoisonError::into_inner);
            s.waiting -= 1;
        }
    }

    /// The oldest batch, if the oldest task is one.
    fn take_batch(&self) -> Option<(Key, Vec<Event>)> {
        let mut s = self.state();
        let entry = s.tasks.first_entry()?;
        if !matches!(entry.get(), Task::Search(_)) {
            return None;
        }
        let (key, task) = entry.remove_entry();
        self.batches.fetch_sub(1, Ordering::Relaxed);
        match task {
            Task::Search(b) => Some((key, b)),
            Task::Walk(_) => None,
        }
    }

    /// A walk is over: its slot's length for the writer; the threads end once nothing is left.
    fn walked(&self, slot: usize, batches: usize) {
        let mut s = self.state();
        s.walking -= 1;
        s.notes.push(Note::Slot(slot, batches));
        if s.above_done && s.walking == 0 && s.tasks.is_empty() {
            self.work.notify_all();
        }
        if s.main_waiting {
            self.main.notify_one();
        }
    }

    /// The walk above the cut is over: no more walks will be queued but those queued.
    fn above_done(&self) {
        let mut s = self.state();
        s.above_done = true;
        self.work.notify_all();
    }

    /// The run stops: no more tasks.
    fn close_all(&self) {
        let mut s = self.state();
        s.above_done = true;
        s.tasks.clear();
        self.batches.store(0, Ordering::Relaxed);
        self.work.notify_all();
    }

    fn notes(&self) -> Vec<Note> {
        std::mem::take(&mut self.state().notes)
    }
}

/// This thread's writer, and where it writes.
struct Writer<'w, 'o, 'm> {
    slots: Slots,
    out: &'w mut Output<'o>,
    msgs: &'w mut Messages<'m>,
}

/// What every thread of a cut walk's search uses.
struct Run<'r, 's, 'a> {
    sh: &'r Shared<'s, 'a>,
    pool: &'r Pool,
    subtrees: &'r SubtreeWalker,
    threads: usize,
}

impl Run<'_, '_, '_> {
    /// Runs a task taken from the pool; `io`: on this thread, which writes between batches.
    fn task(&self, worker: &mut Worker, (slot, part, _): Key, task: Task, mut io: Option<&mut Writer<'_, '_, '_>>) {
        match task {
            Task::Search(batch) => {
                if let Some(done) = worker.search(self.sh, batch) {
                    self.pool.note(Note::Done(slot, part, done));
                }
            }
            Task::Walk(dirs) => {
                let mut cut = Cutter { slot, part: 0, batch: Vec::new() };
                for e in self.subtrees.walk(&dirs) {
                    if self.sh.stop.load(Ordering::Relaxed) || self.sh.plan.cancelled() {
                        cut.batch.clear();
                        break;
                    }
                    if cut.add(self, e) {
                        self.ahead(worker);
                        if let Some(io) = io.as_deref_mut() {
                            self.write(io);
                        }
                    }
                }
                cut.flush(self);
                self.pool.walked(slot, cut.part);
            }
        }
    }

    /// When the searches are far behind the walks, the walking thread searches the oldest batch itself.
    fn ahead(&self, worker: &mut Worker) {
        if self.pool.batches.load(Ordering::Relaxed) > self.threads * AHEAD {
            if let Some(((slot, part, _), batch)) = self.pool.take_batch() {
                if let Some(done) = worker.search(self.sh, batch) {
                    self.pool.note(Note::Done(slot, part, done));
                }
            }
        }
    }

    /// The walk above the cut on this thread, its pieces queued in slots (see [`search_split`]).
    fn above(&self, split: &mut Split, io: &mut Writer<'_, '_, '_>) {
        let mut slot = 0;
        // the events since the last directory at the cut, or the directories since the last event
        let mut cut: Option<Cutter> = None;
        let mut group: Vec<std::path::PathBuf> = Vec::new();
        let split_group = split.group;
        for piece in split.above() {
            if self.sh.stop.load(Ordering::Relaxed) || self.sh.plan.cancelled() {
                cut = cut.map(|mut c| {
                    c.batch.clear();
                    c
                });
                break;
            }
            match piece {
                Piece::Event(e) => {
                    if !group.is_empty() {
                        self.pool.push((slot, 0, 0), Task::Walk(std::mem::take(&mut group)));
                        slot += 1;
                    }
                    let c = cut.get_or_insert_with(|| Cutter { slot, part: 0, batch: Vec::new() });
                    if c.add(self, e) {
                        self.write(io);
                    }
                }
                Piece::Subtree(dir) => {
                    if let Some(mut c) = cut.take() {
                        c.flush(self);
                        io.slots.lens.insert(slot, c.part);
                        slot += 1;
                    }
                    group.push(dir);
                    if group.len() >= split_group {
                        self.pool.push((slot, 0, 0), Task::Walk(std::mem::take(&mut group)));
                        slot += 1;
                        self.write(io);
                    }
                }
            }
        }
        if let Some(mut c) = cut.take() {
            c.flush(self);
            io.slots.lens.insert(slot, c.part);
            slot += 1;
        }
        if !group.is_empty() {
            self.pool.push((slot, 0, 0), Task::Walk(group));
            slot += 1;
        }
        io.slots.slots = Some(slot);
        self.pool.above_done();
    }

    /// Writes what is done, in order (on this thread).
    fn write(&self, io: &mut Writer<'_, '_, '_>) {
        for note in self.pool.notes() {
            match note {
                Note::Done(slot, part, done) => {
                    io.slots.pending.insert((slot, part), done);
                }
                Note::Slot(slot, n) => {
                    io.slots.lens.insert(slot, n);
                }
            }
        }
        let s = &mut io.slots;
        loop {
            if io.out.broken || io.out.facts.full {
                self.sh.stop.store(true, Ordering::Relaxed);
                return;
            }
            if let Some(mut done) = s.pending.remove(&(s.slot, s.part)) {
                s.part += 1;
                io.out.batch(io.msgs, &done);
                done.out.clear();
                if let Ok(mut spare) = self.sh.spare.lock() {
                    spare.push(done.out);
                }
                continue;
            }
            if s.lens.get(&s.slot) == Some(&s.part) {
                s.lens.remove(&s.slot);
                s.slot += 1;
                s.part = 0;
                continue;
            }
            return;
        }
    }
}

/// Cuts a slot's events into numbered batches (see [`feed`]).
struct Cutter {
    slot: usize,
    /// The batches queued so far.
    part: usize,
    batch: Vec<Event>,
}

impl Cutter {
    /// Adds an event; true when a batch went out.
    fn add(&mut self, run: &Run<'_, '_, '_>, e: Event) -> bool {
        self.batch.push(e);
        let queued = run.pool.batches.load(Ordering::Relaxed);
        if self.batch.len() >= BATCH || (queued < run.threads && self.batch.len() >= FIRST_BATCH) {
            self.flush(run);
            return true;
        }
        false
    }

    fn flush(&mut self, run: &Run<'_, '_, '_>) {
        if !self.batch.is_empty() {
            run.pool.push((self.slot, self.part, 1), Task::Search(std::mem::take(&mut self.batch)));
            self.part += 1;
        }
    }
}

/// The writer's account of slots: the batches done and not yet written, the slots' lengths known, and
/// where it is.
#[derive(Default)]
struct Slots {
    pending: std::collections::BTreeMap<(usize, usize), BatchDone>,
    lens: std::collections::HashMap<usize, usize>,
    /// The slot and batch to write next.
    slot: usize,
    part: usize,
    /// How many slots there are, once the walk above the cut is over.
    slots: Option<usize>,
}

impl Slots {
    fn complete(&self) -> bool {
        self.slots == Some(self.slot)
    }
}
