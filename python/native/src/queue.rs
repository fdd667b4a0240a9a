//! The commit table (spec protocols 6.9): the batches of sharing writers of several processes
//! committed together, as one batch of 6.8, by whichever of them takes the next round.
//!
//! The table is a file in /dev/shm named after the log's `LOCK` (its device, inode and change
//! time), so it is valid within one boot and for one `LOCK`. Each writer owns one entry. Open file
//! description locks on the table file's bytes, released when their process dies, say who is alive:
//! byte 0 is the round token, byte 1 + i is held by the owner of entry i for as long as it lives.
//!
//! Every field of the table is written by other processes: it is read as hostile input (lengths
//! checked against the entry, nothing allocated from them). `OPENBINLOG_TABLE_FAILPOINT` makes a
//! round die or fail at a chosen step, for the tests of 6.9.2.

use std::cell::UnsafeCell;
use std::fs::{File, OpenOptions};
use std::os::fd::AsRawFd;
use std::os::unix::fs::MetadataExt;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use pyo3::prelude::*;

use crate::shared::{
    ofd_lock, publish, write_batch, Batch, Direct, Payloads, TailEnd, Target, Written, PUBLISH_IN_PYTHON,
};
use crate::RECORD_HEADER_SIZE;

const ENTRIES: usize = 16;
/// Bytes an entry holds for its batch (each payload after a 12-byte item head): larger batches go alone.
const ENTRY_DATA: usize = 1 << 16;
const ITEM_HEAD: usize = 12;
/// How long a round waits for the writers of the rounds before it to come back with their next batch.
const GATHER: Duration = Duration::from_micros(100);
/// How long a waiting writer sleeps before it looks again: a round may have died.
const WAIT_NS: i64 = 2_000_000;
/// Rounds at most this long are waited for by polling, for up to twice the last round's time, before
/// sleeping: waking a writer that sleeps costs tens of microseconds on virtual machines, a good part of a
/// round, while a longer round makes that cost small beside it.
const POLLED_ROUND: Duration = Duration::from_micros(500);

const IDLE: u32 = 0;
const PENDING: u32 = 1;
const CLAIMED: u32 = 2;
const DONE: u32 = 3;
const DECLINED: u32 = 4;
const FAILED: u32 = 5;

/// `commit`'s outcomes.
pub(crate) const COMMITTED: u8 = 0;
pub(crate) const ALONE: u8 = 1;
pub(crate) const UNKNOWN: u8 = 2;

/// Where a round put, or was to put, an entry's records, and the state after the round's records.
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct Plan {
    log: u64,
    offset: u64,
    index: u64,
    timestamp_us: i64,
    end: [u64; 4],
}

/// What the owner says of its batch.
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct Head {
    items: u32,
    reserved: u32,
}

#[repr(C)]
struct Entry {
    state: AtomicU32,
    reserved: u32,
    /// The round after which this entry was last committed: the gather's measure of who is active.
    last_round: AtomicU64,
    head: UnsafeCell<Head>,
    plan: UnsafeCell<Plan>,
    data: UnsafeCell<[u8; ENTRY_DATA]>,
}

// SAFETY: the cells pass between owner and round by Release stores and Acquire loads of `state`.
unsafe impl Sync for Entry {}

impl Entry {
    /// The entry's batch and plan. SAFETY: only for the side that holds the entry: its owner while it
    /// is IDLE, DONE, DECLINED or FAILED; the round that holds the token while it is PENDING or CLAIMED.
    #[allow(clippy::mut_from_ref)]
    unsafe fn parts(&self) -> (&mut Head, &mut Plan, &mut [u8; ENTRY_DATA]) {
        (&mut *self.head.get(), &mut *self.plan.get(), &mut *self.data.get())
    }

    /// The payloads and asqns of the batch. SAFETY: as `parts`.
    unsafe fn items(&self) -> Payloads {
        let (head, _, data) = self.parts();
        let mut payloads = Vec::new();
        let mut at = 0usize;
        for _ in 0..head.items {
            let start = at.saturating_add(ITEM_HEAD);
            let Some(item) = data.get(at..start) else { break };
            let (length, asqn) = item.split_at(4);
            let length = u32::from_be_bytes(length.try_into().unwrap_or_default()) as usize;
            let asqn = i64::from_be_bytes(asqn.try_into().unwrap_or_default());
            let Some(payload) = data.get(start..start.saturating_add(length)) else {
                break;
            };
            payloads.push((payload.to_vec(), asqn));
            at = start.saturating_add(length);
        }
        payloads
    }
}

#[repr(C)]
struct Table {
    seq: AtomicU32,
    reserved: u32,
    rounds: AtomicU64,
    /// Entries of live writers claimed by rounds that died, failed by the rounds after them.
    orphans: AtomicU64,
    /// Set by a round while it holds the token, so that waiting writers do not try to take it meanwhile: a hint,
    /// which a writer ignores once it has slept without seeing a round end (the round's process may have died).
    leading: AtomicU32,
    reserved_2: u32,
    /// How long the last round took, in nanoseconds: how long waiting writers poll.
    round_ns: AtomicU64,
    spare: [u64; 3],
    entries: [Entry; ENTRIES],
}

struct Mapping(*mut Table);
// SAFETY: shared memory made for concurrent use (see `Entry`).
unsafe impl Send for Mapping {}
// SAFETY: as above.
unsafe impl Sync for Mapping {}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Failpoint {
    None,
    DieBeforeWrite,
    DieAfterWrite,
    DieAfterPublish,
    SyncFails,
}

/// A sharing writer's entry in its log's commit table.
#[pyclass(frozen, name = "CommitTable", module = "openbinlog._native")]
pub(crate) struct CommitTable {
    table: Mapping,
    file: File,
    path: String,
    entry: usize,
    pid: u32,
    failpoint: Failpoint,
}

/// Where tables live, and how their names begin.
const TABLES: &str = "/dev/shm";
const TABLE_PREFIX: &str = "openbinlog-";

/// Remove the name of a table that no writer uses (every byte could be locked through `file`, whose locks
/// the other writers' would exclude), if the name still refers to `file`. A writer that opens the name later
/// makes a new table; one that opened it just before uses the old one alone, which costs it only company.
fn remove_unused(file: &File, path: &str) {
    let unused = (0..=ENTRIES).all(|byte| byte_lock(file, byte, libc::F_WRLCK, libc::F_OFD_SETLK));
    let named = std::fs::metadata(path).ok().zip(file.metadata().ok());
    if unused && named.is_some_and(|(named, held)| (named.dev(), named.ino()) == (held.dev(), held.ino())) {
        let _ = std::fs::remove_file(path);
    }
}

/// Remove the tables that writers killed (which release their locks but cannot remove a name) left behind
/// with nobody using them: those of logs since deleted would otherwise stay in memory until the next boot.
/// A table in use costs a look: an open, one lock refused and a close.
fn sweep(own: &str) {
    let Ok(listing) = std::fs::read_dir(TABLES) else { return };
    let tables = listing.flatten().map(|entry| entry.path()).filter(|path| {
        path.file_name()
            .and_then(|name| name.to_str())
            .is_some_and(|name| name.starts_with(TABLE_PREFIX))
    });
    for path in tables
        .filter_map(|path| path.to_str().map(str::to_owned))
        .filter(|path| path != own)
    {
        // Another user's table does not open for writing: left alone.
        if let Ok(file) = OpenOptions::new().read(true).write(true).open(&path) {
            remove_unused(&file, &path);
        }
    }
}

/// `shared::ofd_lock` on a byte of the table file.
fn byte_lock(file: &File, byte: usize, kind: libc::c_int, command: libc::c_int) -> bool {
    ofd_lock(file.as_raw_fd(), byte, kind, command)
}

fn futex(word: &AtomicU32, op: libc::c_int, value: u32) {
    let time = libc::timespec {
        tv_sec: 0,
        tv_nsec: WAIT_NS,
    };
    let timeout: *const libc::timespec = if op == libc::FUTEX_WAIT {
        &raw const time
    } else {
        std::ptr::null()
    };
    // SAFETY: a futex call on a word of the shared table.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            op,
            value,
            timeout,
            std::ptr::null::<u32>(),
            0,
        );
    }
}

impl CommitTable {
    fn table(&self) -> &Table {
        // SAFETY: the mapping lives as long as this object.
        unsafe { &*self.table.0 }
    }

    fn alive(&self, at: usize) -> bool {
        at == self.entry || byte_lock(&self.file, at.saturating_add(1), libc::F_WRLCK, libc::F_OFD_GETLK)
    }

    fn fail_at(&self, point: Failpoint) {
        if self.failpoint == point {
            // SAFETY: ends this process at once, as a SIGKILL would.
            unsafe { libc::_exit(9) };
        }
    }

    /// One round, holding the token: every pending entry of a live owner, and every entry a round that
    /// died claimed, committed as one batch of 6.8 (6.9 steps 4 to 8).
    fn lead(&self, target: &Target, batch: &Batch) -> PyResult<()> {
        let table = self.table();
        let round = table.rounds.fetch_add(1, Ordering::AcqRel);
        let recent = |entry: &Entry| entry.last_round.load(Ordering::Relaxed).saturating_add(3) > round;
        let active = table.entries.iter().filter(|entry| recent(entry)).count();
        let started = Instant::now();
        while started.elapsed() < GATHER {
            let pending = table
                .entries
                .iter()
                .filter(|entry| entry.state.load(Ordering::Acquire) == PENDING)
                .count();
            if pending >= active {
                break;
            }
            std::thread::yield_now();
        }
        let ops = Direct::new(target);
        let mut claimed: Vec<usize> = Vec::new();
        let mut take = |end: &TailEnd, now: i64| -> PyResult<Option<Payloads>> {
            let mut payloads = Payloads::new();
            let (mut offset, mut index) = (end.offset, end.next_index);
            for (at, entry) in table.entries.iter().enumerate() {
                if entry.state.load(Ordering::Acquire) == CLAIMED {
                    // Claimed by a round that died (this one has claimed nothing yet): its writer finds out
                    // under the whole lock whether that round committed it (6.9 step 9).
                    entry.state.store(FAILED, Ordering::Release);
                    if self.alive(at) {
                        table.orphans.fetch_add(1, Ordering::Relaxed);
                    }
                    continue;
                }
                // A pending entry whose owner died is nobody's batch: left alone (its owner acknowledges nothing).
                if entry.state.load(Ordering::Acquire) != PENDING
                    || !self.alive(at)
                    || entry
                        .state
                        .compare_exchange(PENDING, CLAIMED, Ordering::AcqRel, Ordering::Acquire)
                        .is_err()
                {
                    continue;
                }
                // SAFETY: claimed by this round, which holds the token.
                let (items, plan) = unsafe { (entry.items(), entry.parts().1) };
                *plan = Plan {
                    log: u64::from(target.log()),
                    offset,
                    index,
                    timestamp_us: now,
                    end: [0; 4],
                };
                for (payload, _) in &items {
                    let length = (RECORD_HEADER_SIZE as u64).saturating_add(payload.len() as u64);
                    (offset, index) = (offset.saturating_add(length), index.saturating_add(1));
                }
                claimed.push(at);
                payloads.extend(items);
            }
            self.fail_at(Failpoint::DieBeforeWrite);
            Ok(Some(payloads))
        };
        let written = write_batch(&ops, target, batch, &mut take);
        let entry = |at: usize| table.entries.get(at);
        let set_all = |state: u32| {
            for at in &claimed {
                entry(*at).inspect(|entry| entry.state.store(state, Ordering::Release));
            }
        };
        let written = match written {
            Ok(Some(written)) => written,
            Ok(None) => {
                // Not the plain case (a torn tail, a cutover due, an asqn out of order): each writer alone.
                set_all(PENDING);
                if let Some(mine) = entry(self.entry) {
                    if mine
                        .state
                        .compare_exchange(PENDING, DECLINED, Ordering::AcqRel, Ordering::Acquire)
                        .is_err()
                    {
                        // Claimed by a round that died, and declined before it was looked at: the log needs
                        // recovery first, under the whole lock, which then tells.
                        let _ = mine
                            .state
                            .compare_exchange(CLAIMED, FAILED, Ordering::AcqRel, Ordering::Acquire);
                    }
                }
                return Ok(());
            }
            Err(error) => {
                set_all(FAILED);
                return Err(error);
            }
        };
        self.fail_at(Failpoint::DieAfterWrite);
        let (seen, _, _, _, end_offset, next_index, last_asqn, now) = written;
        let end = TailEnd {
            offset: end_offset,
            next_index,
            last_asqn,
            last_timestamp_us: now,
        };
        let published = if self.failpoint == Failpoint::SyncFails {
            Err(std::io::Error::from_raw_os_error(libc::EIO).into())
        } else {
            publish(&ops, target, seen, end)
        };
        match published {
            Ok(code) if code != PUBLISH_IN_PYTHON => {}
            Ok(_) => {
                set_all(FAILED); // LOCK replaced or the segment sealed meanwhile: each writer finds out alone
                return Ok(());
            }
            Err(error) => {
                set_all(FAILED); // a failed sync: no batch of the round is acknowledged (6.6)
                return Err(error);
            }
        }
        self.fail_at(Failpoint::DieAfterPublish);
        let state = [end_offset, next_index, last_asqn as u64, now as u64];
        let took = u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX);
        table.round_ns.store(took, Ordering::Relaxed);
        for at in &claimed {
            let Some(entry) = entry(*at) else { continue };
            // SAFETY: claimed by this round until DONE hands it back to its owner.
            unsafe { entry.parts().1.end = state };
            entry.last_round.store(round.saturating_add(1), Ordering::Relaxed);
            entry.state.store(DONE, Ordering::Release);
        }
        Ok(())
    }
}

impl Drop for CommitTable {
    fn drop(&mut self) {
        // The last writer of the log removes the table's name.
        remove_unused(&self.file, &self.path);
        // SAFETY: the mapping made in `new`, of this size, used by no one after this.
        unsafe { libc::munmap(self.table.0.cast(), std::mem::size_of::<Table>()) };
    }
}

#[pymethods]
impl CommitTable {
    /// The commit table of the log whose `LOCK` is `lock_path`, and an entry of it for this writer.
    #[new]
    fn new(lock_path: &str) -> PyResult<Self> {
        let found = std::fs::metadata(lock_path)?;
        let path = format!(
            "{TABLES}/{TABLE_PREFIX}{}-{}-{}.{}",
            found.dev(),
            found.ino(),
            found.ctime(),
            found.ctime_nsec()
        );
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)?;
        let size = std::mem::size_of::<Table>();
        if file.metadata()?.len() != size as u64 {
            file.set_len(size as u64)?; // zero bytes are an empty table
        }
        // SAFETY: a shared mapping of the whole file.
        let pointer = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                size,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                file.as_raw_fd(),
                0,
            )
        };
        if pointer == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error().into());
        }
        let failpoint = match std::env::var("OPENBINLOG_TABLE_FAILPOINT").as_deref() {
            Ok("die-before-write") => Failpoint::DieBeforeWrite,
            Ok("die-after-write") => Failpoint::DieAfterWrite,
            Ok("die-after-publish") => Failpoint::DieAfterPublish,
            Ok("sync-fails") => Failpoint::SyncFails,
            _ => Failpoint::None,
        };
        let table = Mapping(pointer.cast::<Table>());
        let mut this = Self {
            table,
            file,
            path,
            entry: ENTRIES,
            pid: std::process::id(),
            failpoint,
        };
        // Under the token no round is under way: an entry whose owner died is nobody's, even claimed.
        if !byte_lock(&this.file, 0, libc::F_WRLCK, libc::F_OFD_SETLKW) {
            return Err(std::io::Error::last_os_error().into());
        }
        for at in 0..ENTRIES {
            if byte_lock(&this.file, at.saturating_add(1), libc::F_WRLCK, libc::F_OFD_SETLK) {
                if let Some(entry) = this.table().entries.get(at) {
                    entry.state.store(IDLE, Ordering::Release);
                    entry.last_round.store(0, Ordering::Relaxed);
                    this.entry = at;
                }
                break;
            }
        }
        byte_lock(&this.file, 0, libc::F_UNLCK, libc::F_OFD_SETLK);
        if this.entry == ENTRIES {
            return Err(std::io::Error::other("every entry of the commit table is taken").into());
        }
        sweep(&this.path);
        Ok(this)
    }

    /// The rounds made so far, and the entries of rounds that died that the rounds after them failed.
    fn counters(&self) -> (u64, u64) {
        let table = self.table();
        (
            table.rounds.load(Ordering::Relaxed),
            table.orphans.load(Ordering::Relaxed),
        )
    }

    /// Commit `payloads` (`(payload, asqn)` pairs) through the table. `(COMMITTED, fields)` once committed
    /// and published, fields as `shared_write`'s with the log number first; `(ALONE, _)` when the writer
    /// must commit the batch itself, nothing of it written; `(UNKNOWN, (log, timestamp, offset, index, ..))`
    /// when the round that took it died or failed: its records may be where that plan says, and the
    /// writer finds out under the whole lock (6.9 step 9).
    #[allow(clippy::too_many_arguments)]
    #[pyo3(signature = (target, capacity, size_limit, zero_probe, payloads, now_us))]
    fn commit(
        &self,
        py: Python<'_>,
        target: &Target,
        capacity: u64,
        size_limit: Option<u64>,
        zero_probe: bool,
        payloads: Vec<(Vec<u8>, i64)>,
        now_us: i64,
    ) -> PyResult<(u8, Written)> {
        let table = self.table();
        let Some(mine) = table.entries.get(self.entry) else {
            return Ok((ALONE, Default::default()));
        };
        if std::process::id() != self.pid {
            return Ok((ALONE, Default::default())); // a forked child shares its parent's locks: not its entry
        }
        // SAFETY: an IDLE entry is its owner's.
        let (head, _, data) = unsafe { mine.parts() };
        let mut at = 0usize;
        for (payload, asqn) in &payloads {
            let start = at.saturating_add(ITEM_HEAD);
            let end = start.saturating_add(payload.len());
            let Some(item) = data.get_mut(at..start) else {
                return Ok((ALONE, Default::default()));
            };
            let Ok(length) = u32::try_from(payload.len()) else {
                return Ok((ALONE, Default::default()));
            };
            let (length_field, asqn_field) = item.split_at_mut(4);
            length_field.copy_from_slice(&length.to_be_bytes());
            asqn_field.copy_from_slice(&asqn.to_be_bytes());
            let Some(body) = data.get_mut(start..end) else {
                return Ok((ALONE, Default::default()));
            };
            body.copy_from_slice(payload);
            at = end;
        }
        let Ok(items) = u32::try_from(payloads.len()) else {
            return Ok((ALONE, Default::default()));
        };
        *head = Head { items, reserved: 0 };
        mine.state.store(PENDING, Ordering::Release);
        let batch = Batch {
            now_us,
            capacity,
            size_limit,
            zero_probe,
        };
        let last_round = Duration::from_nanos(table.round_ns.load(Ordering::Relaxed));
        let poll = if last_round <= POLLED_ROUND {
            last_round.saturating_mul(2)
        } else {
            Duration::ZERO
        };
        let entered = Instant::now();
        let mut slept_through = false; // slept a whole wait without a round ending
        py.detach(|| loop {
            let seq = table.seq.load(Ordering::Acquire);
            let may_lead = slept_through || table.leading.load(Ordering::Acquire) == 0;
            match mine.state.load(Ordering::Acquire) {
                state @ (DONE | DECLINED | FAILED) => {
                    // SAFETY: these states hand the entry back to its owner.
                    let plan = unsafe { *mine.parts().1 };
                    mine.state.store(IDLE, Ordering::Release);
                    let [offset, next_index, last_asqn, last_timestamp] = plan.end;
                    return Ok(match state {
                        DONE => (
                            COMMITTED,
                            (
                                plan.log,
                                0,
                                plan.offset,
                                plan.index,
                                offset,
                                next_index,
                                last_asqn as i64,
                                last_timestamp as i64,
                            ),
                        ),
                        DECLINED => (ALONE, Default::default()),
                        _ => (
                            UNKNOWN,
                            (plan.log, plan.timestamp_us as u64, plan.offset, plan.index, 0, 0, 0, 0),
                        ),
                    });
                }
                PENDING | CLAIMED if may_lead && byte_lock(&self.file, 0, libc::F_WRLCK, libc::F_OFD_SETLK) => {
                    table.leading.store(1, Ordering::Release);
                    // Holding the token, a claimed entry is a dead round's: the round looks at it.
                    let state = mine.state.load(Ordering::Acquire);
                    let led = if state == PENDING || state == CLAIMED {
                        self.lead(target, &batch)
                    } else {
                        Ok(())
                    };
                    table.leading.store(0, Ordering::Release);
                    byte_lock(&self.file, 0, libc::F_UNLCK, libc::F_OFD_SETLK);
                    table.seq.fetch_add(1, Ordering::AcqRel);
                    futex(&table.seq, libc::FUTEX_WAKE, i32::MAX as u32);
                    if let Err(error) = led {
                        let _ = mine
                            .state
                            .compare_exchange(FAILED, IDLE, Ordering::AcqRel, Ordering::Acquire);
                        return Err(error);
                    }
                }
                _ if entered.elapsed() < poll => std::thread::yield_now(),
                _ => {
                    futex(&table.seq, libc::FUTEX_WAIT, seq);
                    slept_through = table.seq.load(Ordering::Acquire) == seq;
                }
            }
        })
    }
}
