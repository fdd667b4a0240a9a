//! The `process` durability mode's buffer of encoded records, compiled.
//!
//! The reference is `openbinlog._buffer.PureRecordBuffer`; the tests drive both with the
//! same appends and require the same bytes, refs and codes. An append here runs no
//! Python code apart from building its ref: it encodes the record (both checksums),
//! copies it into the buffer and returns where it will lie once committed. Anything
//! unusual (a payload that is not `bytes`, a full buffer or segment, an asqn out of
//! order) returns a code, and the Python caller takes its slower, checked path.
//!
//! Mapped (the `mmap` mode): after `map`, each append also publishes its record at once,
//! by stores into a shared mapping of the segment (records, then slot, then mirror fields,
//! each store ordered after the ones before it), with no system call.

use std::fs::File;
use std::mem::ManuallyDrop;
use std::os::fd::FromRawFd;
use std::os::unix::fs::FileExt;
use std::ptr::NonNull;
use std::sync::atomic::{fence, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError, TryLockError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use pyo3::exceptions::{PyOSError, PyOverflowError, PyRuntimeError, PyTypeError, PyValueError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyInt, PyTuple, PyType};

use crate::{masked_crc32c, type_slot, FRAME_DATA, HEADER_CRC_END, MIN_RECORD_LENGTH, NO_ASQN, RECORD_HEADER_SIZE};

/// The fields of `openbinlog.Ref`, a named tuple.
const REF_FIELDS: [&str; 3] = ["log", "offset", "index"];

/// The buffer was closed by a commit before a cutover: append to the writer's new buffer.
const CLOSED: u8 = 1;
/// The buffer holds its limit of bytes: commit it, then append again.
const FLUSH_FIRST: u8 = 2;
/// The record does not fit the segment, or the segment reached the size limit: cut over first.
const CUTOVER_FIRST: u8 = 3;
/// The asqn is not above the last one.
const ASQN_ORDER: u8 = 4;
/// The next index, or a mapped buffer's next generations, would not fit 64 bits.
const INDEXES_USED_UP: u8 = 5;
/// Not a plain case (a payload that is not `bytes`, too large, an asqn that is no `i64`): check in Python.
const CHECK_ARGUMENTS: u8 = 6;

/// How a commit makes its records durable before publishing them (`_buffer.SYNC_*`): not at all, by a
/// sync of the whole file, or by a synchronized write of the records alone (spec 6.2, step 8).
const SYNC_NONE: u8 = 0;
const SYNC_FILE: u8 = 1;
const SYNC_RECORDS: u8 = 2;

/// Where the slots of even and odd generations lie, and the mirror fields (`_format`).
pub(crate) const SLOT_OFFSETS: [u64; 2] = [96, 144];
pub(crate) const SLOT_CRC_COVERS: usize = 44;
/// The page size the mapping is made writable in.
const PAGE: usize = 4096;
/// Where the second slot ends: a mapping covers at least this much.
const SLOTS_END: u64 = 192;
pub(crate) const MIRROR_OFFSET: u64 = 6;
const STATUS_OPEN: u16 = 0;
const STATUS_CLOSED: u16 = 1;

/// The largest payload a record may carry (`_format.MAX_PAYLOAD_SIZE`).
const MAX_PAYLOAD_SIZE: usize = 0x7FFF_FFFF - MIN_RECORD_LENGTH as usize;

struct State {
    bytes: Vec<u8>,
    /// The segment offset of `bytes[0]`: the commit point once everything before is committed.
    start: u64,
    next_index: u64,
    last_asqn: i64,
    last_timestamp_us: i64,
    /// When the oldest record in `bytes` was appended.
    oldest: Option<Instant>,
    closed: bool,
    /// Bound: the segment commits go to (-1: not bound), and the file system object they go through
    /// (None: the file itself).
    fd: i32,
    fs: Option<Py<PyAny>>,
    strict: bool,
    /// An unsynced commit starts the writeback of its records (`write_behind`).
    write_behind: bool,
    /// Mapped: where each append publishes at once.
    mapped: Option<Target>,
    /// The active generation, and the newest one known durable with its commit offset: the slot of the
    /// durable one is not written until a newer one is (W-42).
    generation: u64,
    synced_generation: u64,
    synced_offset: u64,
    next_log_number: u32,
    /// The state of the active generation, as published.
    committed: Published,
    /// Mapped: the generation the last commit reported, or the bound one.
    reported_generation: u64,
    /// A batch syncs the whole file, not its records alone, once its commit point is this far beyond
    /// the durable slot's.
    full_sync_bytes: u64,
}

impl State {
    /// The commit state after the records taken so far.
    fn published(&self) -> Published {
        (
            self.generation,
            self.start,
            self.next_index,
            self.last_asqn,
            self.last_timestamp_us,
        )
    }
}

/// Group commit (`PureRecordBuffer.commit_through`): appenders waiting for their commit, and the one
/// leading it.
struct Group {
    state: Mutex<GroupState>,
    /// Followers wait on it for their commit.
    batching: Condvar,
    /// The gathering leader waits on it for the records of its batch.
    gathered: Condvar,
}

struct GroupState {
    /// The writer's lock, held by the leader while it commits; None: `group` was not called.
    io_lock: Option<Py<PyAny>>,
    /// `_group_commit.gathering`: how long a leader waits for its batch, the reference's own rule.
    gathering: Option<Py<PyAny>>,
    batch_sync: u8,
    group_delay: Duration,
    whole_delay: bool,
    leading: bool,
    /// Every index below is committed.
    committed_next: u64,
    /// One past the highest index an appender waits for.
    waiting_next: u64,
    /// Records the gathering leader waits for; 0: none is gathering, or it waits the whole delay.
    gather_target: u64,
    last_batch: u64,
    last_commit: Duration,
    closed: bool,
    /// Why a commit failed: its followers raise it too.
    failure: Option<String>,
}

/// What an appender waiting in `commit_through` does next.
enum Turn {
    Committed,
    Closed,
    Failed(String),
    /// Lead the next batch.
    Lead,
}

/// Where a mapped buffer's stores go: a shared mapping of the segment, or the writer's file system
/// object (the tests record and crash its `pwrite` calls as the mapping's stores).
enum Target {
    Memory(Mapping),
    Calls(Py<PyAny>, i32),
}

/// A shared, writable mapping of the first `len` bytes of a segment file.
struct Mapping {
    at: NonNull<u8>,
    len: usize,
    /// Where the pages made writable ahead of the stores end (`MADV_POPULATE_WRITE`).
    populated: AtomicUsize,
}

/// Pages are made writable a window ahead of the stores, in one system call per window: a store then
/// meets no page fault, and a sync writes at most a window of zeros beyond the records.
const POPULATE_WINDOW: usize = 1 << 20;

// SAFETY: the mapping is process-wide memory; its stores are made under the buffer's state mutex, and
// msync may run beside them.
unsafe impl Send for Mapping {}
// SAFETY: as above.
unsafe impl Sync for Mapping {}

impl Mapping {
    fn new(fd: i32, len: usize, from: usize) -> std::io::Result<Self> {
        // SAFETY: a fresh mapping chosen by the kernel; the arguments are checked by mmap itself.
        let at = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd,
                0,
            )
        };
        if at == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        NonNull::new(at.cast::<u8>())
            .map(|at| Self {
                at,
                len,
                populated: AtomicUsize::new(from),
            })
            .ok_or_else(|| std::io::Error::other("mmap returned a null mapping"))
    }

    /// Copy `data` to `offset`, after every store made before (release order: a reader that sees
    /// a slot sees the records it publishes).
    fn store(&self, data: &[u8], offset: u64) -> std::io::Result<()> {
        let start = usize::try_from(offset).unwrap_or(usize::MAX);
        if start.checked_add(data.len()).filter(|&end| end <= self.len).is_none() {
            return Err(std::io::Error::other("a store beyond the mapped segment"));
        }
        fence(Ordering::Release);
        // SAFETY: `start..start + data.len()` lies within the mapping (checked above), which lives
        // until `self` is dropped; `data` is a Rust slice, so the ranges do not overlap.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), self.at.as_ptr().add(start), data.len()) };
        let populated = self.populated.load(Ordering::Relaxed);
        let end = start.saturating_add(data.len());
        if populated < self.len && end.saturating_add(POPULATE_WINDOW / 2) > populated {
            let from = populated.max(end) & !(PAGE - 1);
            let to = from.saturating_add(POPULATE_WINDOW).min(self.len);
            // SAFETY: `from..to` lies within the mapping. A kernel without MADV_POPULATE_WRITE refuses
            // it: the stores then fault their pages in one by one, as without the call.
            unsafe {
                libc::madvise(
                    self.at.as_ptr().add(from).cast(),
                    to.saturating_sub(from),
                    libc::MADV_POPULATE_WRITE,
                )
            };
            self.populated.store(to, Ordering::Relaxed);
        }
        Ok(())
    }

    fn sync(&self) -> std::io::Result<()> {
        // SAFETY: the whole mapping, as created.
        if unsafe { libc::msync(self.at.as_ptr().cast(), self.len, libc::MS_SYNC) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(())
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: the mapping this value created; nothing uses it after the drop.
        unsafe { libc::munmap(self.at.as_ptr().cast(), self.len) };
    }
}

/// Records encoded and waiting for their commit, for one segment of one exclusive writer.
#[pyclass(frozen, module = "openbinlog._native")]
pub struct RecordBuffer {
    /// `Ref` and its `tp_alloc`: a ref is built as `tuple.__new__(Ref, fields)` builds it, without
    /// the range check of `Ref.__new__`, which the fields of a record placed here cannot fail.
    ref_type: Py<PyType>,
    ref_alloc: ffi::allocfunc,
    log: u64,
    /// Where records must end: the capacity of a preallocated segment, or `u64::MAX`.
    end_limit: u64,
    /// The size limit of the segment: at or beyond it, the next append asks for a cutover.
    size_limit: u64,
    /// Bytes the buffer holds before an append asks for a commit first.
    buffer_bytes: usize,
    state: Mutex<State>,
    group: Group,
}

fn now_us() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .ok()
        .and_then(|elapsed| i64::try_from(elapsed.as_micros()).ok())
        .unwrap_or(0)
}

/// Append the record `openbinlog._records.encode_record` builds to `out`.
pub(crate) fn encode_record(out: &mut Vec<u8>, index: u64, payload: &[u8], asqn: i64, timestamp_us: i64) {
    let length = MIN_RECORD_LENGTH.saturating_add(u32::try_from(payload.len()).unwrap_or(u32::MAX));
    let mut head = [0u8; RECORD_HEADER_SIZE];
    put(&mut head, 0, &length.to_be_bytes());
    put(&mut head, 4, &[FRAME_DATA, 0, 0, 0]);
    put(&mut head, 8, &index.to_be_bytes());
    put(&mut head, 16, &asqn.to_be_bytes());
    put(&mut head, 24, &timestamp_us.to_be_bytes());
    put(&mut head, 32, &masked_crc32c(payload).to_be_bytes());
    let crc = head.get(..HEADER_CRC_END).map_or(0, masked_crc32c);
    put(&mut head, HEADER_CRC_END, &crc.to_be_bytes());
    out.extend_from_slice(&head);
    out.extend_from_slice(payload);
}

/// Copy `value` into `out` at `at` (fixed layouts: every call fits).
fn put(out: &mut [u8], at: usize, value: &[u8]) {
    if let Some(field) = out.get_mut(at..at.saturating_add(value.len())) {
        field.copy_from_slice(value);
    }
}

#[pymethods]
impl RecordBuffer {
    #[new]
    #[pyo3(signature = (ref_type, log, start, next_index, last_asqn, last_timestamp_us, end_limit, size_limit, buffer_bytes, /))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        ref_type: &Bound<'_, PyType>,
        log: u64,
        start: u64,
        next_index: u64,
        last_asqn: i64,
        last_timestamp_us: i64,
        end_limit: u64,
        size_limit: u64,
        buffer_bytes: usize,
    ) -> PyResult<Self> {
        let fields: Vec<String> = ref_type.getattr("_fields")?.extract()?;
        if !ref_type.is_subclass_of::<PyTuple>()? || fields != REF_FIELDS {
            return Err(PyTypeError::new_err(format!(
                "the ref class must be a named tuple of {REF_FIELDS:?}"
            )));
        }
        // SAFETY: the Py_tp_alloc slot holds an allocfunc.
        let ref_alloc = unsafe { type_slot::<ffi::allocfunc>(ref_type, ffi::Py_tp_alloc) }
            .ok_or_else(|| PyTypeError::new_err("the ref class has no tp_alloc"))?;
        Ok(Self {
            ref_type: ref_type.clone().unbind(),
            ref_alloc,
            log,
            end_limit,
            size_limit,
            buffer_bytes,
            state: Mutex::new(State {
                bytes: Vec::new(),
                start,
                next_index,
                last_asqn,
                last_timestamp_us,
                oldest: None,
                closed: false,
                fd: -1,
                fs: None,
                strict: false,
                write_behind: false,
                mapped: None,
                generation: 0,
                synced_generation: 0,
                synced_offset: start,
                next_log_number: 0,
                committed: (0, start, next_index, last_asqn, last_timestamp_us),
                reported_generation: 0,
                full_sync_bytes: 0,
            }),
            group: Group {
                state: Mutex::new(GroupState {
                    io_lock: None,
                    gathering: None,
                    batch_sync: SYNC_NONE,
                    group_delay: Duration::ZERO,
                    whole_delay: false,
                    leading: false,
                    committed_next: next_index,
                    waiting_next: next_index,
                    gather_target: 0,
                    last_batch: 0,
                    last_commit: Duration::ZERO,
                    closed: false,
                    failure: None,
                }),
                batching: Condvar::new(),
                gathered: Condvar::new(),
            },
        })
    }

    /// `PureRecordBuffer.bind`: commit to `fd` through `fs` (None: the file itself) from the active
    /// slot of `generation` and `next_log_number`, which the caller has made durable; `strict`: sync
    /// after each publication too.
    #[pyo3(signature = (fs, fd, generation, next_log_number, strict, /))]
    fn bind(
        &self,
        py: Python<'_>,
        fs: Option<&Bound<'_, PyAny>>,
        fd: i32,
        generation: u64,
        next_log_number: u32,
        strict: bool,
    ) {
        let mut state = self.lock_state(py);
        state.fs = fs.map(|fs| fs.clone().unbind());
        state.fd = fd;
        state.next_log_number = next_log_number;
        state.strict = strict;
        state.generation = generation;
        state.synced_generation = generation;
        state.reported_generation = generation;
        state.synced_offset = state.start;
        state.committed = state.published();
    }

    /// `PureRecordBuffer.write_behind`: from now on, a commit that does not sync starts the writeback of its
    /// records.
    fn write_behind(&self, py: Python<'_>) {
        self.lock_state(py).write_behind = true;
    }

    /// `PureRecordBuffer.group`: let appenders wait for their commit (`commit_through`).
    #[pyo3(signature = (io_lock, batch_sync, full_sync_bytes, group_delay, whole_delay, /))]
    fn group(
        &self,
        py: Python<'_>,
        io_lock: &Bound<'_, PyAny>,
        batch_sync: u8,
        full_sync_bytes: u64,
        group_delay: f64,
        whole_delay: bool,
    ) -> PyResult<()> {
        if !matches!(batch_sync, SYNC_NONE | SYNC_FILE | SYNC_RECORDS) {
            return Err(PyValueError::new_err(format!(
                "sync {batch_sync} is not one of SYNC_NONE, SYNC_FILE, SYNC_RECORDS"
            )));
        }
        let group_delay = Duration::try_from_secs_f64(group_delay)
            .map_err(|_| PyValueError::new_err("group_delay must be a duration of seconds"))?;
        let gathering = py.import("openbinlog._group_commit")?.getattr("gathering")?.unbind();
        self.lock_state(py).full_sync_bytes = full_sync_bytes;
        let mut group = self.lock_group();
        group.io_lock = Some(io_lock.clone().unbind());
        group.gathering = Some(gathering);
        group.batch_sync = batch_sync;
        group.group_delay = group_delay;
        group.whole_delay = whole_delay;
        Ok(())
    }

    /// `PureRecordBuffer.map`: from now on each append publishes at once, through a shared mapping of
    /// the bound segment's first `length` bytes (or, bound to a file system object, through its `pwrite`).
    #[pyo3(signature = (length, /))]
    fn map(&self, py: Python<'_>, length: u64) -> PyResult<()> {
        if length < self.end_limit || length < SLOTS_END {
            return Err(PyValueError::new_err(
                "the mapping must cover the header and every record",
            ));
        }
        let mut state = self.lock_state(py);
        if !state.bytes.is_empty() || state.mapped.is_some() || state.fd < 0 {
            return Err(PyValueError::new_err("map a bound buffer before its first append, once"));
        }
        state.mapped = Some(match &state.fs {
            None => Target::Memory(Mapping::new(
                state.fd,
                usize::try_from(length).unwrap_or(usize::MAX),
                usize::try_from(state.start).unwrap_or(usize::MAX),
            )?),
            Some(fs) => Target::Calls(fs.clone_ref(py), state.fd),
        });
        Ok(())
    }

    /// Encode one record and return its ref, or a code saying what the caller must do first.
    #[pyo3(signature = (payload, asqn, now_us, /))]
    fn append(
        &self,
        py: Python<'_>,
        payload: &Bound<'_, PyAny>,
        asqn: &Bound<'_, PyAny>,
        now_us: &Bound<'_, PyAny>,
    ) -> PyResult<Py<PyAny>> {
        match self.append_record(py, payload, asqn, now_us)? {
            Ok((placed, _)) => Ok(placed.unbind()),
            Err(code) => Ok(code.into_pyobject(py)?.into_any().unbind()),
        }
    }

    /// The buffered records and the commit state after them: `(records, end offset, next index,
    /// last asqn, last timestamp)`; the buffer is then empty. `close`: later appends get `CLOSED`.
    #[pyo3(signature = (close, /))]
    fn take<'py>(&self, py: Python<'py>, close: bool) -> (Bound<'py, PyBytes>, u64, u64, i64, i64) {
        let taken = {
            let mut state = self.lock_state(py);
            let records = PyBytes::new(py, &state.bytes);
            let taken = u64::try_from(state.bytes.len()).unwrap_or(u64::MAX);
            state.start = state.start.saturating_add(taken);
            state.bytes.clear();
            state.oldest = None;
            state.closed |= close;
            if state.closed {
                state.mapped = None;
            }
            (
                records,
                state.start,
                state.next_index,
                state.last_asqn,
                state.last_timestamp_us,
            )
        };
        if close {
            self.settle(0, true, None);
        }
        taken
    }

    /// `PureRecordBuffer.commit`: write what the buffer holds at the commit point, sync the file before
    /// publishing when `sync`, publish the next generation (slot, then mirror fields), sync again when
    /// bound `strict`; return what was published, or None when the buffer held nothing (a `sync` still
    /// syncs). Bound to no file system object: straight to the file, the interpreter released during
    /// each call. A failure closes the buffer (W-19).
    #[pyo3(signature = (sync, close, /))]
    fn commit(&self, py: Python<'_>, sync: bool, close: bool) -> PyResult<Option<Published>> {
        self.commit_batch(py, if sync { SYNC_FILE } else { SYNC_NONE }, close)
    }

    /// The state of the active generation: generation, commit offset, next index, last asqn, last timestamp.
    fn committed(&self, py: Python<'_>) -> Published {
        self.lock_state(py).committed
    }

    /// `PureRecordBuffer.commit_through`: return once the record `index` is committed, leading the
    /// commit of a batch if nobody is; `CLOSED` if the buffer closed without committing it. Appenders
    /// wait without the interpreter; the leader holds it only to take the writer's lock.
    #[pyo3(signature = (index, /))]
    fn commit_through(&self, py: Python<'_>, index: u64) -> PyResult<Option<u8>> {
        self.wait_for_commit(py, index)
    }

    /// The bytes buffered.
    fn pending(&self, py: Python<'_>) -> usize {
        self.lock_state(py).bytes.len()
    }

    /// Seconds since the oldest buffered record was appended; 0.0 when the buffer is empty.
    fn age(&self, py: Python<'_>) -> f64 {
        let state = self.lock_state(py);
        state.oldest.map_or(0.0, |oldest| oldest.elapsed().as_secs_f64())
    }
}

/// The commit state a commit publishes: generation, commit offset, next index, last asqn, last timestamp.
pub(crate) type Published = (u64, u64, u64, i64, i64);

/// The 48-byte slot `openbinlog._segment.encode_slot` builds.
pub(crate) fn encode_slot(published: Published, next_log_number: u32) -> [u8; 48] {
    let (generation, offset, next_index, last_asqn, last_timestamp_us) = published;
    let mut slot = [0u8; 48];
    put(&mut slot, 0, &generation.to_be_bytes());
    put(&mut slot, 8, &offset.to_be_bytes());
    put(&mut slot, 16, &next_index.to_be_bytes());
    put(&mut slot, 24, &last_asqn.to_be_bytes());
    put(&mut slot, 32, &last_timestamp_us.to_be_bytes());
    put(&mut slot, 40, &next_log_number.to_be_bytes());
    let crc = slot.get(..SLOT_CRC_COVERS).map_or(0, masked_crc32c);
    put(&mut slot, SLOT_CRC_COVERS, &crc.to_be_bytes());
    slot
}

/// The 18 mirror bytes `openbinlog._segment.encode_mirror` builds.
pub(crate) fn encode_mirror(offset: u64, log: u32, next_log_number: u32) -> [u8; 18] {
    let status = if next_log_number == 0 {
        STATUS_OPEN
    } else {
        STATUS_CLOSED
    };
    let mut mirror = [0u8; 18];
    put(&mut mirror, 0, &status.to_be_bytes());
    put(&mut mirror, 2, &offset.to_be_bytes());
    put(&mut mirror, 10, &log.to_be_bytes());
    put(&mut mirror, 14, &next_log_number.to_be_bytes());
    mirror
}

/// The writes and syncs of a commit, in the order the protocol makes them.
trait Ops {
    fn pwrite(&self, data: &[u8], offset: u64) -> PyResult<()>;
    /// Write `data` at `offset` and return once those bytes are durable, without syncing the rest of
    /// the file (`RWF_DSYNC`); where the kernel lacks it, a write and a sync of the whole file.
    fn pwrite_synced(&self, data: &[u8], offset: u64) -> PyResult<()>;
    fn fdatasync(&self) -> PyResult<()>;
    /// Start writing `data`, written at `offset`, to the disk, without waiting (`sync_file_range`).
    fn start_writeback(&self, data: &[u8], offset: u64) -> PyResult<()>;
}

/// How a commit makes its records durable: step 8's sync (`SYNC_*`), step 10's, and whether an unsynced
/// commit starts the writeback of its records.
#[derive(Clone, Copy)]
struct Commit {
    sync: u8,
    strict: bool,
    write_behind: bool,
}

impl Commit {
    /// A mapped append's publication: stores, no sync.
    const PUBLISH: Self = Self {
        sync: SYNC_NONE,
        strict: false,
        write_behind: false,
    };
}

/// Straight to the file: a whole commit runs without the interpreter, which is released once for it
/// rather than around each call (a release per call cost more than the slot's write itself).
struct Direct<'a>(&'a File);

impl Ops for Direct<'_> {
    fn pwrite(&self, data: &[u8], offset: u64) -> PyResult<()> {
        Ok(self.0.write_all_at(data, offset)?)
    }

    fn pwrite_synced(&self, data: &[u8], offset: u64) -> PyResult<()> {
        Ok(write_synced(self.0, data, offset)?)
    }

    fn fdatasync(&self) -> PyResult<()> {
        Ok(self.0.sync_data()?)
    }

    fn start_writeback(&self, data: &[u8], offset: u64) -> PyResult<()> {
        use std::os::fd::AsRawFd;
        let at = libc::off64_t::try_from(offset).map_err(|_| std::io::Error::from_raw_os_error(libc::EFBIG))?;
        let length = libc::off64_t::try_from(data.len()).map_err(|_| std::io::Error::from_raw_os_error(libc::EFBIG))?;
        // SAFETY: a plain system call on the writer's open segment.
        if unsafe { libc::sync_file_range(self.0.as_raw_fd(), at, length, libc::SYNC_FILE_RANGE_WRITE) } != 0 {
            return Err(std::io::Error::last_os_error().into());
        }
        Ok(())
    }
}

/// Through the writer's file system object (the tests record and crash its operations), or the stores
/// of a mapped buffer.
enum Io<'a, 'py> {
    Calls(&'a Bound<'py, PyAny>, i32),
    Memory(&'a Mapping),
}

impl Ops for Io<'_, '_> {
    fn pwrite(&self, data: &[u8], offset: u64) -> PyResult<()> {
        match self {
            Self::Calls(fs, fd) => fs
                .call_method1("pwrite", (*fd, PyBytes::new(fs.py(), data), offset))
                .map(|_| ()),
            Self::Memory(mapping) => Ok(mapping.store(data, offset)?),
        }
    }

    fn pwrite_synced(&self, data: &[u8], offset: u64) -> PyResult<()> {
        match self {
            Self::Calls(fs, fd) => fs
                .call_method1("pwrite_synced", (*fd, PyBytes::new(fs.py(), data), offset))
                .map(|_| ()),
            Self::Memory(_) => {
                self.pwrite(data, offset)?;
                self.fdatasync()
            }
        }
    }

    fn fdatasync(&self) -> PyResult<()> {
        match self {
            Self::Calls(fs, fd) => fs.call_method1("fdatasync", (*fd,)).map(|_| ()),
            // A mapped append publishes without a sync; `commit_mapped` syncs, releasing the interpreter.
            Self::Memory(mapping) => Ok(mapping.sync()?),
        }
    }

    fn start_writeback(&self, data: &[u8], offset: u64) -> PyResult<()> {
        match self {
            Self::Calls(fs, fd) => fs.call_method1("start_writeback", (*fd, offset, data.len())).map(|_| ()),
            Self::Memory(_) => Ok(()), // a mapped buffer never writes behind
        }
    }
}

/// `pwritev2(RWF_DSYNC)` until every byte is written: each call returns once its bytes are durable.
fn write_synced(file: &File, data: &[u8], offset: u64) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    let mut done = 0usize;
    while done < data.len() {
        let rest = data.get(done..).unwrap_or_default();
        let iov = libc::iovec {
            iov_base: rest.as_ptr().cast_mut().cast(),
            iov_len: rest.len(),
        };
        let at = offset.saturating_add(u64::try_from(done).unwrap_or(u64::MAX));
        let at = libc::off_t::try_from(at).map_err(|_| std::io::Error::from_raw_os_error(libc::EFBIG))?;
        // SAFETY: one iovec over `rest`, which outlives the call; the kernel only reads it.
        let written = unsafe { libc::pwritev2(file.as_raw_fd(), &raw const iov, 1, at, libc::RWF_DSYNC) };
        match usize::try_from(written) {
            Ok(0) => return Err(std::io::Error::from_raw_os_error(libc::EIO)),
            Ok(count) => done = done.saturating_add(count),
            Err(_) => {
                let error = std::io::Error::last_os_error();
                match error.raw_os_error() {
                    Some(libc::EINTR) => {}
                    // A kernel without RWF_DSYNC: the same durability by a write and a sync of the file.
                    Some(libc::EOPNOTSUPP | libc::ENOSYS) if done == 0 => {
                        file.write_all_at(data, offset)?;
                        return file.sync_data();
                    }
                    _ => return Err(error),
                }
            }
        }
    }
    Ok(())
}

impl RecordBuffer {
    /// Encode one record: its ref and index, or a code saying what the caller must do first.
    fn append_record<'py>(
        &self,
        py: Python<'py>,
        payload: &Bound<'py, PyAny>,
        asqn: &Bound<'py, PyAny>,
        now_us: &Bound<'py, PyAny>,
    ) -> PyResult<Result<(Bound<'py, PyAny>, u64), u8>> {
        // Exactly bytes and int, as the reference asks: a subclass (bool among them) is checked in Python.
        let plain_clock = now_us.is_none() || now_us.is_exact_instance_of::<PyInt>();
        let (Ok(payload), true, true) = (
            payload.cast_exact::<PyBytes>(),
            asqn.is_exact_instance_of::<PyInt>(),
            plain_clock,
        ) else {
            return Ok(Err(CHECK_ARGUMENTS));
        };
        let (Ok(asqn), Ok(clock)) = (asqn.extract::<i64>(), now_us.extract::<Option<i64>>()) else {
            return Ok(Err(CHECK_ARGUMENTS));
        };
        let payload = payload.as_bytes();
        if payload.len() > MAX_PAYLOAD_SIZE || asqn < NO_ASQN {
            return Ok(Err(CHECK_ARGUMENTS));
        }
        let placed = {
            let mut state = self.lock_state(py);
            let placed = self.place(&mut state, payload, asqn, clock);
            if placed.is_ok() && state.mapped.is_some() {
                self.publish_mapped(py, &mut state)?;
            }
            placed
        };
        match placed {
            Ok((offset, index)) => Ok(Ok((self.new_ref(py, [self.log, offset, index])?, index))),
            Err(code) => Ok(Err(code)),
        }
    }

    /// The group commit's state, locked. It is never held while waiting for the interpreter.
    fn lock_group(&self) -> MutexGuard<'_, GroupState> {
        self.group.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A commit ended, or the buffer closed: wake the appenders waiting for theirs.
    fn settle(&self, committed_next: u64, closed: bool, failure: Option<String>) {
        let mut group = self.lock_group();
        group.committed_next = group.committed_next.max(committed_next);
        group.closed |= closed || failure.is_some();
        if group.failure.is_none() {
            group.failure = failure;
        }
        self.group.batching.notify_all();
    }

    /// `PureRecordBuffer._commit`: one batch, its records made durable as `sync` (`SYNC_*`) says.
    fn commit_batch(&self, py: Python<'_>, sync: u8, close: bool) -> PyResult<Option<Published>> {
        let (records, offset, generation, published, how, io, next_log_number) = {
            let mut state = self.lock_state(py);
            if state.fd < 0 {
                return Err(PyValueError::new_err("bind the buffer to its segment before a commit"));
            }
            if state.mapped.is_some() {
                return Self::commit_mapped(py, &mut state, sync != SYNC_NONE, close);
            }
            if state.closed {
                return Ok(None); // closed by an earlier commit, a failure or the writer's close: nothing to do
            }
            let (generation, offset) = (state.generation, state.start);
            let records = std::mem::take(&mut state.bytes);
            state.start = offset.saturating_add(u64::try_from(records.len()).unwrap_or(u64::MAX));
            state.oldest = None;
            state.closed |= close;
            // A whole-file sync now and then bounds how far readers fall back, and recovery walks, after
            // a power loss.
            let sync = if sync == SYNC_RECORDS && offset.saturating_sub(state.synced_offset) >= state.full_sync_bytes {
                SYNC_FILE
            } else {
                sync
            };
            // W-42: publishing over an active generation not yet durable (no sync, or one of the records
            // alone), skip one, so that the slot of the newest durable generation stays as it is.
            let skip = u64::from(sync != SYNC_FILE && generation != state.synced_generation);
            let next = match generation.checked_add(skip.saturating_add(1)) {
                Some(next) => next,
                None if records.is_empty() => generation,
                None => {
                    state.closed = true;
                    return Err(PyOverflowError::new_err("the commit generation is used up"));
                }
            };
            let published = (next, state.start, state.next_index, state.last_asqn, state.last_timestamp_us);
            let io = state.fs.as_ref().map(|fs| fs.clone_ref(py));
            let how = Commit {
                sync,
                strict: state.strict,
                write_behind: state.write_behind,
            };
            (records, offset, generation, published, how, (io, state.fd), state.next_log_number)
        };
        let (fs, fd) = io;
        let done = match &fs {
            None => {
                // SAFETY: `fd` is the writer's open segment, which outlives this call; ManuallyDrop
                // keeps the File from closing it.
                let file = ManuallyDrop::new(unsafe { File::from_raw_fd(fd) });
                let direct = Direct(&file);
                py.detach(|| self.write_and_publish(&direct, &records, offset, published, next_log_number, how))
            }
            Some(fs) => {
                let calls = Io::Calls(fs.bind(py), fd);
                self.write_and_publish(&calls, &records, offset, published, next_log_number, how)
            }
        };
        if let Err(error) = done {
            self.lock_state(py).closed = true;
            let why = error
                .value(py)
                .str()
                .map_or_else(|_| String::from("the commit failed"), |why| why.to_string());
            self.settle(0, true, Some(why));
            return Err(error);
        }
        {
            let mut state = self.lock_state(py);
            if how.sync == SYNC_FILE {
                // The step 8 sync made the active slot durable.
                state.synced_generation = generation;
                state.synced_offset = offset;
            }
            if !records.is_empty() {
                state.generation = published.0;
                state.committed = published;
                if how.strict {
                    state.synced_generation = published.0;
                    state.synced_offset = published.1;
                }
            }
        }
        self.settle(published.2, close, None);
        Ok((!records.is_empty()).then_some(published))
    }

    /// `PureRecordBuffer.commit_through`.
    fn wait_for_commit(&self, py: Python<'_>, index: u64) -> PyResult<Option<u8>> {
        let (io_lock, gathering, batch_sync) = {
            let group = self.lock_group();
            let (Some(io_lock), Some(gathering)) = (group.io_lock.as_ref(), group.gathering.as_ref()) else {
                return Err(PyValueError::new_err("the buffer commits no groups: call group() first"));
            };
            (io_lock.clone_ref(py), gathering.clone_ref(py), group.batch_sync)
        };
        loop {
            match py.detach(|| self.take_turn(index)) {
                Turn::Committed => return Ok(None),
                Turn::Closed => return Ok(Some(CLOSED)),
                Turn::Failed(why) => return Err(PyOSError::new_err((libc::EIO, why))),
                Turn::Lead => {
                    let mut gathered = None;
                    let done = self.gathering_plan(py, &gathering).and_then(|plan| {
                        gathered = Some((py.detach(|| self.gather(plan)), Instant::now()));
                        io_lock.call_method0(py, "acquire").and_then(|_| {
                            let committed = self.commit_batch(py, batch_sync, false);
                            let released = io_lock.call_method0(py, "release");
                            committed.and(released)
                        })
                    });
                    let mut group = self.lock_group();
                    group.leading = false;
                    if let Some((before, started)) = gathered {
                        group.last_batch = group.committed_next.saturating_sub(before);
                        group.last_commit = started.elapsed();
                    }
                    self.group.batching.notify_all();
                    drop(group);
                    done?;
                }
            }
        }
    }

    /// Without the interpreter: wait until the record `index` is committed, or lead the next batch.
    fn take_turn(&self, index: u64) -> Turn {
        let mut group = self.lock_group();
        group.waiting_next = group.waiting_next.max(index.saturating_add(1));
        if group.gather_target > 0 && group.waiting_next.saturating_sub(group.committed_next) >= group.gather_target {
            self.group.gathered.notify_one(); // only the leader, and only once it has what it waits for
        }
        loop {
            if group.committed_next > index {
                return Turn::Committed;
            }
            if let Some(why) = &group.failure {
                return Turn::Failed(why.clone());
            }
            if group.closed {
                return Turn::Closed;
            }
            if !group.leading {
                group.leading = true;
                break;
            }
            group = self.group.batching.wait(group).unwrap_or_else(PoisonError::into_inner);
        }
        Turn::Lead
    }

    /// What `_group_commit.gathering` says the leader of the next batch waits for: seconds and records.
    fn gathering_plan(&self, py: Python<'_>, gathering: &Py<PyAny>) -> PyResult<Option<(f64, u64)>> {
        let (whole_delay, group_delay, last_batch, last_commit) = {
            let group = self.lock_group();
            let delay = group.group_delay.as_secs_f64();
            (group.whole_delay, delay, group.last_batch, group.last_commit.as_secs_f64())
        };
        gathering.call1(py, (whole_delay, group_delay, last_batch, last_commit))?.extract(py)
    }

    /// Without the interpreter: wait, as `plan` says, for the records of the batch this thread leads; return
    /// the committed index before it.
    fn gather(&self, plan: Option<(f64, u64)>) -> u64 {
        let mut group = self.lock_group();
        if let Some((seconds, target)) = plan {
            let delay = Duration::try_from_secs_f64(seconds).unwrap_or(Duration::ZERO);
            let now = Instant::now();
            let deadline = now.checked_add(delay).unwrap_or(now);
            group.gather_target = target;
            while target == 0 || group.waiting_next.saturating_sub(group.committed_next) < target {
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    break;
                }
                group = self
                    .group
                    .gathered
                    .wait_timeout(group, left)
                    .unwrap_or_else(PoisonError::into_inner)
                    .0;
            }
            group.gather_target = 0;
        }
        group.committed_next
    }

    /// The state, locked. A mapped buffer calls the file system object under this lock, which needs
    /// the interpreter: a thread that has to wait for it waits without holding the interpreter.
    fn lock_state(&self, py: Python<'_>) -> MutexGuard<'_, State> {
        loop {
            match self.state.try_lock() {
                Ok(state) => return state,
                Err(TryLockError::Poisoned(poisoned)) => return poisoned.into_inner(),
                Err(TryLockError::WouldBlock) => py.detach(|| drop(self.state.lock())),
            }
        }
    }

    /// Publish what `place` just encoded, through the mapping: records, slot, mirror fields.
    fn publish_mapped(&self, py: Python<'_>, state: &mut State) -> PyResult<()> {
        let start = state.start;
        state.start = start.saturating_add(u64::try_from(state.bytes.len()).unwrap_or(u64::MAX));
        state.oldest = None;
        // W-42: the slot of the newest durable generation stays as it is until a sync; an unsynced
        // active generation is overwritten by the one two above it, which belongs to the same slot.
        let step = if state.generation == state.synced_generation {
            1
        } else {
            2
        };
        state.generation = state.generation.saturating_add(step);
        let published = state.published();
        let records = &state.bytes;
        let done = match &state.mapped {
            Some(Target::Memory(mapping)) => {
                let io = Io::Memory(mapping);
                self.write_and_publish(&io, records, start, published, state.next_log_number, Commit::PUBLISH)
            }
            Some(Target::Calls(fs, fd)) => {
                let io = Io::Calls(fs.bind(py), *fd);
                self.write_and_publish(&io, records, start, published, state.next_log_number, Commit::PUBLISH)
            }
            None => Ok(()),
        };
        state.bytes.clear();
        if done.is_err() {
            state.closed = true;
        } else {
            state.committed = published;
        }
        done
    }

    /// `commit` of a mapped buffer: everything is published already; sync the mapping when `sync`,
    /// unmap it when `close`, and return the state published since the last commit, if any.
    fn commit_mapped(py: Python<'_>, state: &mut State, sync: bool, close: bool) -> PyResult<Option<Published>> {
        state.closed |= close;
        let published = state.published();
        let synced = match (&state.mapped, sync) {
            (Some(Target::Memory(mapping)), true) => py.detach(|| mapping.sync()).map_err(PyErr::from),
            (Some(Target::Calls(fs, fd)), true) => fs.bind(py).call_method1("fdatasync", (*fd,)).map(|_| ()),
            _ => Ok(()),
        };
        match synced {
            Ok(()) if sync => state.synced_generation = state.generation,
            Ok(()) => {}
            Err(_) => state.closed = true,
        }
        if state.closed {
            state.mapped = None;
        }
        let reported = std::mem::replace(&mut state.reported_generation, state.generation);
        synced.map(|()| (published.0 > reported).then_some(published))
    }

    /// A `Ref` of `fields`, made as `tuple.__new__` makes an instance of a tuple subclass.
    fn new_ref<'py>(&self, py: Python<'py>, fields: [u64; 3]) -> PyResult<Bound<'py, PyAny>> {
        // SAFETY: `ref_alloc` is the ref class's own tp_alloc, called with that class and the
        // number of items, as its C-API contract asks; it returns a new reference to a tuple of
        // that class with every item NULL (which its deallocator and the garbage collector
        // accept), or NULL with an exception set, which `from_owned_ptr_or_err` turns into an error.
        let object = unsafe { Bound::from_owned_ptr_or_err(py, (self.ref_alloc)(self.ref_type.as_ptr().cast(), 3)) }?;
        for (position, value) in (0..).zip(fields) {
            let item = value.into_pyobject(py)?.into_ptr();
            // SAFETY: `object` is a tuple (its class derives from tuple) of three items that only
            // this function holds, as PyTuple_SetItem requires; it steals the new reference `item`.
            if unsafe { ffi::PyTuple_SetItem(object.as_ptr(), position, item) } != 0 {
                return Err(PyErr::take(py).unwrap_or_else(|| PyRuntimeError::new_err("a ref field was not set")));
            }
        }
        Ok(object)
    }

    #[allow(clippy::too_many_arguments)]
    fn write_and_publish(
        &self,
        io: &impl Ops,
        records: &[u8],
        start: u64,
        published: Published,
        next_log_number: u32,
        how: Commit,
    ) -> PyResult<()> {
        let Commit { sync, strict, write_behind } = how;
        if sync == SYNC_RECORDS && !records.is_empty() {
            io.pwrite_synced(records, start)?;
        } else {
            if !records.is_empty() {
                io.pwrite(records, start)?;
            }
            if sync != SYNC_NONE {
                io.fdatasync()?;
            }
        }
        if records.is_empty() {
            return Ok(());
        }
        let slot_at = SLOT_OFFSETS
            .get(usize::from(published.0 % 2 == 1))
            .copied()
            .unwrap_or(SLOT_OFFSETS[0]);
        io.pwrite(&encode_slot(published, next_log_number), slot_at)?;
        let log = u32::try_from(self.log).unwrap_or(u32::MAX);
        io.pwrite(&encode_mirror(published.1, log, next_log_number), MIRROR_OFFSET)?;
        if strict {
            io.fdatasync()?;
        }
        if write_behind && sync == SYNC_NONE {
            io.start_writeback(records, start)?;
        }
        Ok(())
    }

    fn place(&self, state: &mut State, payload: &[u8], asqn: i64, clock: Option<i64>) -> Result<(u64, u64), u8> {
        if state.closed {
            return Err(CLOSED);
        }
        if state.bytes.len() >= self.buffer_bytes {
            return Err(FLUSH_FIRST);
        }
        // A commit may publish two generations above the active one (W-42).
        if state.next_index == u64::MAX || (state.fd >= 0 && state.generation >= u64::MAX - 1) {
            return Err(INDEXES_USED_UP);
        }
        if asqn != NO_ASQN && asqn <= state.last_asqn {
            return Err(ASQN_ORDER);
        }
        let offset = state
            .start
            .saturating_add(u64::try_from(state.bytes.len()).unwrap_or(u64::MAX));
        let size = u64::try_from(RECORD_HEADER_SIZE.saturating_add(payload.len())).unwrap_or(u64::MAX);
        if offset >= self.size_limit || offset.saturating_add(size) > self.end_limit {
            return Err(CUTOVER_FIRST);
        }
        let timestamp_us = clock.unwrap_or_else(now_us).max(state.last_timestamp_us);
        let index = state.next_index;
        encode_record(&mut state.bytes, index, payload, asqn, timestamp_us);
        state.next_index = index.saturating_add(1);
        if asqn != NO_ASQN {
            state.last_asqn = asqn;
        }
        state.last_timestamp_us = timestamp_us;
        if state.oldest.is_none() {
            state.oldest = Some(Instant::now());
        }
        Ok((offset, index))
    }
}

/// `Writer.append` of a writer with the compiled buffer: the buffer's append, called without a Python
/// frame, then (where appends wait for their commit) the buffer's group commit. Any code the append
/// returns goes to the writer's own path, `slow`; a commit that failed or did not happen, to `settle`.
#[pyclass(frozen, module = "openbinlog._native")]
pub struct Appender {
    /// The writer's buffer of the moment: a cutover gives the writer a new one.
    buffer: Mutex<Py<RecordBuffer>>,
    slow: Py<PyAny>,
    /// None: appends return at once (the process and mmap modes). Otherwise `settle(ref, error)`, called
    /// when the commit of `ref` failed (`error`) or the buffer closed before it (`error` None).
    settle: Option<Py<PyAny>>,
}

#[pymethods]
impl Appender {
    #[new]
    #[pyo3(signature = (buffer, slow, settle, /))]
    fn new(buffer: Py<RecordBuffer>, slow: Py<PyAny>, settle: Option<Py<PyAny>>) -> Self {
        Self {
            buffer: Mutex::new(buffer),
            slow,
            settle,
        }
    }

    /// Append to `buffer` from now on.
    #[pyo3(signature = (buffer, /))]
    fn use_buffer(&self, buffer: Py<RecordBuffer>) {
        *self.buffer.lock().unwrap_or_else(PoisonError::into_inner) = buffer;
    }

    /// Append one record (`Writer.append(payload, *, asqn=-1)`); return its ref.
    #[pyo3(signature = (payload, **options))]
    fn __call__(
        &self,
        py: Python<'_>,
        payload: &Bound<'_, PyAny>,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Py<PyAny>> {
        let asqn = match options {
            None => NO_ASQN.into_pyobject(py)?.into_any(),
            Some(options) => match (options.len(), options.get_item("asqn")?) {
                (1, Some(asqn)) => asqn,
                (0, _) => NO_ASQN.into_pyobject(py)?.into_any(),
                _ => {
                    let names: Vec<String> = options.keys().extract()?;
                    return Err(PyTypeError::new_err(format!(
                        "append() got unexpected keyword arguments {names:?}: only asqn"
                    )));
                }
            },
        };
        let buffer = self.buffer.lock().unwrap_or_else(PoisonError::into_inner).clone_ref(py);
        let (placed, index) = match buffer.get().append_record(py, payload, &asqn, &py.None().into_bound(py))? {
            Ok(placed) => placed,
            Err(_) => return self.slow.call1(py, (payload, asqn)),
        };
        let Some(settle) = &self.settle else {
            return Ok(placed.unbind());
        };
        match buffer.get().wait_for_commit(py, index) {
            Ok(None) => Ok(placed.unbind()),
            Ok(Some(_)) => settle.call1(py, (placed, py.None())),
            Err(error) => settle.call1(py, (placed, error.into_value(py))),
        }
    }
}
