//! The parallel search: the walk on the calling thread, cut into numbered batches of consecutive
//! files that search threads (as many as ripgrep would use) search into their own buffers, each batch
//! printed once every batch before it is — the search overlaps the walk as in ripgrep, and the output
//! is the same bytes as one thread's whatever the timing.
//!
//! Why one thread walks (ripgrep walks on all of its threads): measured on 2 cores, this thread and the
//! search thread are each busy nearly the whole run (perf: 1678 and 1618 samples over a 179 ms run, the
//! walking thread searching what the walk leaves it time for), so a walk on more threads has no idle
//! core to use and can only add work. A walk cut at a depth, its subtrees walked by every thread with
//! ignore's sequential `Walk` and printed in order (commit 662bce10c, reverted), was the same bytes but
//! 1.09-1.20x ripgrep's time at the default against this design's 1.02-1.05x (on a 484 MB tree of
//! crates): ignore's walker lists every directory at the cut (and reads its ignore files) once more
//! before its max depth stops it, each sub-walk reads the ignore files above it again, and the cut is
//! only the same walk when no ignore file above it has a pattern with a `/` (ignore matches a parent
//! directory's rules against another path below a sub-walk's root). It would pay only where the one
//! walking thread is what the others wait on: more cores than the walk's share of the work (about a
//! third on a source tree) keeps busy.

use super::file::{search_file, Plan};
use crate::print::{BatchDone, Facts, FilePrinter, Messages, Output};
use crate::walk::{Event, Walk};
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
