//! The batch of a writer that shares its syncs (spec protocols 6.8), compiled.
//!
//! The reference is `openbinlog._shared_commit`: `_write_shared` (steps 1 to 5, with
//! `_rewrite_as_read`) and `_publish_shared` (steps 6 and 7). The same operations are made in the
//! same order with the same bytes, either on the files themselves or through the writer's file
//! system object (the crash tests record and crash them). Only the plain case is taken here: a
//! tail beyond the commit point that holds nothing but whole data records (or is clear), appends
//! that all fit, in order. Anything else (a torn tail, a skippable record, an asqn out of order, a
//! full segment, the size limit reached, `LOCK` replaced, a successor, an unusual header) makes
//! `shared_write` return None having written nothing, and the Python code takes the batch.

use std::fs::File;
use std::mem::ManuallyDrop;
use std::os::fd::FromRawFd;
use std::os::unix::fs::{FileExt, MetadataExt};

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyTuple};

use crate::buffer::{encode_mirror, encode_record, encode_slot, MIRROR_OFFSET, SLOT_CRC_COVERS, SLOT_OFFSETS};
use crate::{masked_crc32c, plain_record, RecordHeader, NO_ASQN, RECORD_HEADER_SIZE};

const HEADER_SIZE: usize = 256;
const SLOT_SIZE: usize = 48;
/// Generations and indexes are unsigned 64-bit fields (`_commit.MAX_COUNTER`).
const MAX_COUNTER: u64 = u64::MAX;
/// Bytes read at a time beyond the commit point.
const TAIL_CHUNK: usize = 1 << 16;
/// A record beyond the commit point longer than this is left to the Python code (never read whole here).
const MAX_TAIL_RECORD: u32 = 1 << 24;

/// `shared_publish`: published in the generation after the one read before the sync.
const PUBLISHED: u8 = 0;
/// `shared_publish`: `LOCK` was replaced, the segment sealed or its header unusual: the Python code
/// publishes (or reports why it cannot), under the append lock it takes again.
pub(crate) const PUBLISH_IN_PYTHON: u8 = 1;
/// `shared_publish`: another writer's publication covers the records already.
const COVERED: u8 = 2;
/// `shared_publish`: published two generations on, over the active slot (W-44).
const PUBLISHED_OVER: u8 = 3;

/// A commit slot's fields (`_segment.CommitState`).
#[derive(Clone, Copy)]
struct Slot {
    generation: u64,
    offset: u64,
    next_index: u64,
    last_asqn: i64,
    last_timestamp_us: i64,
    next_log_number: u32,
}

/// `_segment.decode_slot`: None when never written or its checksum fails.
fn decode_slot(raw: &[u8]) -> Option<Slot> {
    let raw = raw.get(..SLOT_SIZE)?;
    let field = |at: usize| -> Option<[u8; 8]> { raw.get(at..at.checked_add(8)?)?.try_into().ok() };
    let generation = u64::from_be_bytes(field(0)?);
    let crc = u32::from_be_bytes(raw.get(SLOT_CRC_COVERS..SLOT_SIZE)?.try_into().ok()?);
    if generation == 0 || masked_crc32c(raw.get(..SLOT_CRC_COVERS)?) != crc {
        return None;
    }
    Some(Slot {
        generation,
        offset: u64::from_be_bytes(field(8)?),
        next_index: u64::from_be_bytes(field(16)?),
        last_asqn: i64::from_be_bytes(field(24)?),
        last_timestamp_us: i64::from_be_bytes(field(32)?),
        next_log_number: u32::from_be_bytes(raw.get(40..44)?.try_into().ok()?),
    })
}

/// `_segment.active_commit`, or None wherever it raises (the Python code then reports it).
fn active_slot(header: &[u8], base_index: u64, log: u32) -> Option<Slot> {
    let at = |offset: u64| usize::try_from(offset).ok().and_then(|start| header.get(start..));
    let [even, odd] = SLOT_OFFSETS;
    let slots = [decode_slot(at(even)?), decode_slot(at(odd)?)];
    let commit = match slots {
        [None, None] => return None,
        [Some(a), Some(b)] if a.generation == b.generation => return None,
        [Some(a), Some(b)] => {
            if a.generation > b.generation {
                a
            } else {
                b
            }
        }
        [Some(a), None] => a,
        [None, Some(b)] => b,
    };
    let place = usize::from(commit.generation % 2 == 1);
    let in_place = slots
        .get(place)
        .copied()
        .flatten()
        .is_some_and(|slot| slot.generation == commit.generation);
    let next_log_ok = commit.next_log_number == 0 || Some(commit.next_log_number) == log.checked_add(1);
    let in_range = commit.offset >= HEADER_SIZE as u64 && commit.next_index >= base_index;
    (in_place && next_log_ok && in_range && commit.last_asqn >= NO_ASQN).then_some(commit)
}

/// The whole records beyond a commit point: where they end, and the state after them.
#[derive(Clone, Copy)]
pub(crate) struct TailEnd {
    pub(crate) offset: u64,
    pub(crate) next_index: u64,
    pub(crate) last_asqn: i64,
    pub(crate) last_timestamp_us: i64,
}

/// The tail of a segment from the commit point, read as the walk asks for it.
trait Tail {
    /// The bytes from `offset`, at least `want` of them unless the file ends first.
    fn bytes(&mut self, offset: u64, want: usize) -> PyResult<&[u8]>;
}

/// The tail walk of format 4.3.2 from `from`, then the tail check of protocols 7.1 at its end
/// (`_written_end`), for the plain case only: None unless every record beyond `from` is a whole,
/// valid data record and the walk ends where nothing lies (the end of the file, or, with
/// `zero_probe`, 40 zero bytes of a preallocated segment).
fn walk_tail<T: Tail>(tail: &mut T, from: TailEnd, size: u64, zero_probe: bool) -> PyResult<Option<TailEnd>> {
    let mut at = from;
    loop {
        if at.offset >= size {
            return Ok(Some(at)); // the tail check: nothing lies beyond (size <= X)
        }
        let window = tail.bytes(at.offset, RECORD_HEADER_SIZE)?;
        let probe = window.get(..RECORD_HEADER_SIZE).unwrap_or(window);
        if probe.iter().all(|byte| *byte == 0) {
            // Zeros: the end in a preallocated segment this writer has checked, otherwise not the plain case.
            return Ok(zero_probe.then_some(at));
        }
        let Some(header) = RecordHeader::parse(window) else {
            return Ok(None); // fewer than 40 bytes: a torn record
        };
        if header.length > MAX_TAIL_RECORD {
            return Ok(None);
        }
        let whole = usize::try_from(header.length)
            .ok()
            .and_then(|length| length.checked_add(4));
        let Some(whole) = whole else { return Ok(None) };
        let Some(end) = at.offset.checked_add(whole as u64).filter(|end| *end <= size) else {
            return Ok(None);
        };
        let record = tail.bytes(at.offset, whole)?;
        let Some((header, _)) = plain_record(record, at.next_index, at.last_asqn) else {
            return Ok(None);
        };
        let Some(next_index) = at.next_index.checked_add(1) else {
            return Ok(None);
        };
        at = TailEnd {
            offset: end,
            next_index,
            last_asqn: if header.asqn == NO_ASQN {
                at.last_asqn
            } else {
                header.asqn
            },
            last_timestamp_us: header.timestamp_us,
        };
    }
}

/// The system calls of a batch, on the files or through the writer's file system object.
pub(crate) trait Ops {
    fn lock_append(&self) -> PyResult<()>;
    fn unlock_append(&self) -> PyResult<()>;
    /// W-38: the name `LOCK` still refers to the file locked.
    fn names_lock(&self) -> PyResult<bool>;
    fn exists(&self, path: &str) -> PyResult<bool>;
    fn pread(&self, size: usize, offset: u64) -> PyResult<Vec<u8>>;
    fn size(&self) -> PyResult<u64>;
    fn pwrite(&self, data: &[u8], offset: u64) -> PyResult<()>;
    fn fdatasync(&self) -> PyResult<()>;
}

/// Where the batch goes: the segment, the lock and the names the steps check. Made once for each segment a
/// sharing writer appends to (Python's `SharedTarget`), the argument `shared_write` and `shared_publish` share.
#[pyclass(frozen, name = "SharedTarget", module = "openbinlog._native")]
pub(crate) struct Target {
    segment_fd: i32,
    lock_fd: i32,
    lock_path: String,
    lock_identity: (u64, u64),
    successor_path: String,
    log: u32,
    base_index: u64,
}

/// Straight to the files, the interpreter released for the whole step.
pub(crate) struct Direct<'a> {
    target: &'a Target,
    segment: ManuallyDrop<File>,
}

impl<'a> Direct<'a> {
    pub(crate) fn new(target: &'a Target) -> Self {
        // SAFETY: the writer's open segment, which outlives this call; ManuallyDrop never closes it.
        let segment = ManuallyDrop::new(unsafe { File::from_raw_fd(target.segment_fd) });
        Self { target, segment }
    }

    fn fcntl_lock(&self, kind: libc::c_int) -> PyResult<()> {
        // Byte 0 alone: the append lock (spec 9).
        if ofd_lock(self.target.lock_fd, 0, kind, libc::F_OFD_SETLKW) {
            Ok(())
        } else {
            Err(std::io::Error::last_os_error().into())
        }
    }
}

/// An open file description lock of `kind` on byte `byte` of descriptor `fd` by `command`: `F_OFD_SETLK` or
/// `F_OFD_SETLKW`, whether it was taken (or released); `F_OFD_GETLK`, whether another description holds it.
/// Interrupted calls are made again; on false, `errno` says why.
pub(crate) fn ofd_lock(fd: i32, byte: usize, kind: libc::c_int, command: libc::c_int) -> bool {
    // SAFETY: an all-zero flock is a valid value of this plain C struct.
    let mut lock: libc::flock = unsafe { std::mem::zeroed() };
    lock.l_type = kind as libc::c_short;
    lock.l_whence = libc::SEEK_SET as libc::c_short;
    lock.l_start = libc::off_t::try_from(byte).unwrap_or(libc::off_t::MAX);
    lock.l_len = 1;
    loop {
        // SAFETY: a plain system call on the caller's descriptor with a flock it owns.
        if unsafe { libc::fcntl(fd, command, &raw mut lock) } == 0 {
            return command != libc::F_OFD_GETLK || lock.l_type != libc::F_UNLCK as libc::c_short;
        }
        if std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return false;
        }
    }
}

impl Ops for Direct<'_> {
    fn lock_append(&self) -> PyResult<()> {
        self.fcntl_lock(libc::F_WRLCK)
    }

    fn unlock_append(&self) -> PyResult<()> {
        self.fcntl_lock(libc::F_UNLCK)
    }

    fn names_lock(&self) -> PyResult<bool> {
        Ok(match std::fs::metadata(&self.target.lock_path) {
            Ok(found) => (found.dev(), found.ino()) == self.target.lock_identity,
            Err(_) => false,
        })
    }

    fn exists(&self, path: &str) -> PyResult<bool> {
        Ok(std::path::Path::new(path).exists())
    }

    fn pread(&self, size: usize, offset: u64) -> PyResult<Vec<u8>> {
        let mut data = vec![0u8; size];
        let mut done = 0usize;
        while let Some(rest) = data.get_mut(done..) {
            if rest.is_empty() {
                break;
            }
            match self.segment.read_at(rest, offset.saturating_add(done as u64)) {
                Ok(0) => break,
                Ok(count) => done = done.saturating_add(count),
                Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
                Err(error) => return Err(error.into()),
            }
        }
        data.truncate(done);
        Ok(data)
    }

    fn size(&self) -> PyResult<u64> {
        Ok(self.segment.metadata()?.len())
    }

    fn pwrite(&self, data: &[u8], offset: u64) -> PyResult<()> {
        Ok(self.segment.write_all_at(data, offset)?)
    }

    fn fdatasync(&self) -> PyResult<()> {
        Ok(self.segment.sync_data()?)
    }
}

/// Through the writer's file system object, with the interpreter held: what the tests record.
struct Calls<'a, 'py> {
    target: &'a Target,
    fs: &'a Bound<'py, PyAny>,
}

impl Ops for Calls<'_, '_> {
    fn lock_append(&self) -> PyResult<()> {
        self.fs.call_method1("lock_append", (self.target.lock_fd,)).map(|_| ())
    }

    fn unlock_append(&self) -> PyResult<()> {
        self.fs
            .call_method1("unlock_append", (self.target.lock_fd,))
            .map(|_| ())
    }

    fn names_lock(&self) -> PyResult<bool> {
        let identity = PyTuple::new(self.fs.py(), [self.target.lock_identity.0, self.target.lock_identity.1])?;
        self.fs
            .call_method1("names", (self.target.lock_path.as_str(), identity))?
            .extract()
    }

    fn exists(&self, path: &str) -> PyResult<bool> {
        self.fs.call_method1("exists", (path,))?.extract()
    }

    fn pread(&self, size: usize, offset: u64) -> PyResult<Vec<u8>> {
        self.fs
            .call_method1("pread", (self.target.segment_fd, size, offset))?
            .extract()
    }

    fn size(&self) -> PyResult<u64> {
        self.fs.call_method1("size", (self.target.segment_fd,))?.extract()
    }

    fn pwrite(&self, data: &[u8], offset: u64) -> PyResult<()> {
        let data = PyBytes::new(self.fs.py(), data);
        self.fs
            .call_method1("pwrite", (self.target.segment_fd, data, offset))
            .map(|_| ())
    }

    fn fdatasync(&self) -> PyResult<()> {
        self.fs.call_method1("fdatasync", (self.target.segment_fd,)).map(|_| ())
    }
}

/// The segment's bytes from a commit point, read through `Ops` in chunks as the walk goes.
struct ReadTail<'a, O: Ops + ?Sized> {
    ops: &'a O,
    start: u64,
    data: Vec<u8>,
    size: u64,
}

impl<O: Ops + ?Sized> Tail for ReadTail<'_, O> {
    fn bytes(&mut self, offset: u64, want: usize) -> PyResult<&[u8]> {
        let skip = usize::try_from(offset.saturating_sub(self.start)).unwrap_or(usize::MAX);
        let needed = skip.saturating_add(want);
        while self.data.len() < needed {
            let read_at = self.start.saturating_add(self.data.len() as u64);
            if read_at >= self.size {
                break;
            }
            let chunk = self
                .ops
                .pread(TAIL_CHUNK.max(needed.saturating_sub(self.data.len())), read_at)?;
            if chunk.is_empty() {
                break;
            }
            self.data.extend_from_slice(&chunk);
        }
        Ok(self.data.get(skip..).unwrap_or_default())
    }
}

/// Payloads and asqns to append.
pub(crate) type Payloads = Vec<(Vec<u8>, i64)>;

/// Where the records of a batch come from, asked under the append lock once the written end is known
/// (a round of the commit table takes its entries only then): None to write nothing.
pub(crate) type Take<'a> = dyn FnMut(&TailEnd, i64) -> PyResult<Option<Payloads>> + 'a;

/// What a batch asks besides its payloads: the clock's reading, and the segment's limits.
pub(crate) struct Batch {
    pub(crate) now_us: i64,
    pub(crate) capacity: u64,
    pub(crate) size_limit: Option<u64>,
    pub(crate) zero_probe: bool,
}

/// What `shared_write` wrote: the generation and commit offset read, where its records start (beyond the
/// records of other writers written again), their first index, and the state after them (commit offset,
/// next index, last asqn, last timestamp).
pub(crate) type Written = (u64, u64, u64, u64, u64, u64, i64, i64);

/// Steps 2 to 4 of 6.8 under the append lock (`_write_shared`), or None having written nothing.
fn write_locked<O: Ops + ?Sized>(
    ops: &O,
    target: &Target,
    batch: &Batch,
    take: &mut Take<'_>,
) -> PyResult<Option<Written>> {
    if !ops.names_lock()? || ops.exists(&target.successor_path)? {
        return Ok(None);
    }
    let header = ops.pread(HEADER_SIZE, 0)?;
    let Some(commit) = active_slot(&header, target.base_index, target.log) else {
        return Ok(None);
    };
    if header.len() != HEADER_SIZE || commit.next_log_number != 0 || commit.generation >= MAX_COUNTER.saturating_sub(2)
    {
        return Ok(None);
    }
    let size = ops.size()?;
    let from = TailEnd {
        offset: commit.offset,
        next_index: commit.next_index,
        last_asqn: commit.last_asqn,
        last_timestamp_us: commit.last_timestamp_us,
    };
    let mut tail = ReadTail {
        ops,
        start: commit.offset,
        data: Vec::new(),
        size,
    };
    let Some(end) = walk_tail(&mut tail, from, size, batch.zero_probe)? else {
        return Ok(None);
    };
    if batch.size_limit.is_some_and(|limit| end.offset >= limit) {
        return Ok(None); // a cutover first (_due_for_cutover), under the whole lock
    }
    let now = batch.now_us.max(end.last_timestamp_us);
    let Some(payloads) = take(&end, now)? else {
        return Ok(None);
    };
    let (mut offset, mut index, mut last_asqn) = (end.offset, end.next_index, end.last_asqn);
    let mut records = Vec::new();
    for (payload, asqn) in &payloads {
        let length = (RECORD_HEADER_SIZE as u64).saturating_add(payload.len() as u64);
        let next = offset.checked_add(length);
        let fits = next.is_some_and(|next| batch.capacity == 0 || next <= batch.capacity);
        let in_order = *asqn == NO_ASQN || (*asqn >= 0 && *asqn > last_asqn);
        let (Some(next), true, true, true) = (next, fits, in_order, index < MAX_COUNTER) else {
            return Ok(None);
        };
        encode_record(&mut records, index, payload, *asqn, now);
        (offset, index) = (next, index.saturating_add(1));
        if *asqn != NO_ASQN {
            last_asqn = *asqn;
        }
    }
    // The header and the bytes from C to X again, exactly as read, then the records (W-43, _rewrite_as_read).
    let unpublished = usize::try_from(end.offset.saturating_sub(commit.offset)).unwrap_or(usize::MAX);
    let mut out = tail
        .bytes(commit.offset, unpublished)?
        .get(..unpublished)
        .unwrap_or_default()
        .to_vec();
    out.extend_from_slice(&records);
    ops.pwrite(&header, 0)?;
    if !out.is_empty() {
        ops.pwrite(&out, commit.offset)?;
    }
    Ok(Some((
        commit.generation,
        commit.offset,
        end.offset,
        end.next_index,
        offset,
        index,
        last_asqn,
        now,
    )))
}

/// Steps 1 to 5: the append lock around steps 2 to 4, released whatever happens.
pub(crate) fn write_batch<O: Ops + ?Sized>(
    ops: &O,
    target: &Target,
    batch: &Batch,
    take: &mut Take<'_>,
) -> PyResult<Option<Written>> {
    ops.lock_append()?;
    let written = write_locked(ops, target, batch, take);
    let unlocked = ops.unlock_append();
    let written = written?;
    unlocked?;
    Ok(written)
}

/// Step 7 under the append lock (`_publish_shared`): what it did (`PUBLISHED`, `COVERED`, `PUBLISHED_OVER`),
/// or `PUBLISH_IN_PYTHON`.
fn publish_locked<O: Ops + ?Sized>(ops: &O, target: &Target, seen: u64, end: TailEnd) -> PyResult<u8> {
    if !ops.names_lock()? {
        return Ok(PUBLISH_IN_PYTHON);
    }
    let header = ops.pread(HEADER_SIZE, 0)?;
    let Some(current) = active_slot(&header, target.base_index, target.log) else {
        return Ok(PUBLISH_IN_PYTHON);
    };
    if current.offset >= end.offset {
        return Ok(COVERED);
    }
    // W-44: the next generation beside a slot known durable, two on over one that may not be.
    let step = if current.generation == seen { 1 } else { 2 };
    let Some(generation) = current.generation.checked_add(step) else {
        return Ok(PUBLISH_IN_PYTHON);
    };
    if current.next_log_number != 0 {
        return Ok(PUBLISH_IN_PYTHON); // sealed meanwhile: the Python code reports it
    }
    let published = (
        generation,
        end.offset,
        end.next_index,
        end.last_asqn,
        end.last_timestamp_us,
    );
    let [even, odd] = SLOT_OFFSETS;
    let place = if generation % 2 == 1 { odd } else { even };
    ops.pwrite(&encode_slot(published, 0), place)?;
    ops.pwrite(&encode_mirror(end.offset, target.log, 0), MIRROR_OFFSET)?;
    Ok(if step == 1 { PUBLISHED } else { PUBLISHED_OVER })
}

/// Steps 6 and 7: the sync holding no lock, the active slot read as a reader reads it, then, unless a
/// publication covers the records already, the publication under the append lock.
pub(crate) fn publish<O: Ops + ?Sized>(ops: &O, target: &Target, seen: u64, end: TailEnd) -> PyResult<u8> {
    ops.fdatasync()?;
    // A slot torn by a publication in progress fails its checksum and is not taken: the lock then decides.
    let header = ops.pread(HEADER_SIZE, 0)?;
    if active_slot(&header, target.base_index, target.log).is_some_and(|current| current.offset >= end.offset) {
        return Ok(COVERED);
    }
    ops.lock_append()?;
    let code = publish_locked(ops, target, seen, end);
    let unlocked = ops.unlock_append();
    let code = code?;
    unlocked?;
    Ok(code)
}

/// `step` on the files, the interpreter released, or through the file system object `fs`.
fn through<R: Send>(
    py: Python<'_>,
    fs: Option<Bound<'_, PyAny>>,
    target: &Target,
    step: impl Fn(&dyn Ops) -> PyResult<R> + Send + Sync,
) -> PyResult<R> {
    match fs {
        Some(fs) => step(&Calls { target, fs: &fs }),
        None => py.detach(|| step(&Direct::new(target))),
    }
}

impl Target {
    pub(crate) fn log(&self) -> u32 {
        self.log
    }
}

#[pymethods]
impl Target {
    #[new]
    #[pyo3(signature = (segment_fd, lock_fd, lock_path, lock_identity, successor_path, log, base_index))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        segment_fd: i32,
        lock_fd: i32,
        lock_path: String,
        lock_identity: (u64, u64),
        successor_path: String,
        log: u32,
        base_index: u64,
    ) -> Self {
        Self {
            segment_fd,
            lock_fd,
            lock_path,
            lock_identity,
            successor_path,
            log,
            base_index,
        }
    }
}

/// Steps 1 to 5 of spec 6.8 for `payloads` (`(payload, asqn)` pairs): None, having written nothing,
/// unless the plain case holds; otherwise `Written`. `fs`: None for the files
/// themselves, else the writer's file system object, called for every operation.
#[pyfunction]
#[pyo3(signature = (fs, target, capacity, size_limit, zero_probe, payloads, now_us))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn shared_write(
    py: Python<'_>,
    fs: Option<Bound<'_, PyAny>>,
    target: &Target,
    capacity: u64,
    size_limit: Option<u64>,
    zero_probe: bool,
    payloads: Vec<(Vec<u8>, i64)>,
    now_us: i64,
) -> PyResult<Option<Written>> {
    let batch = Batch {
        now_us,
        capacity,
        size_limit,
        zero_probe,
    };
    through(py, fs, target, |ops| {
        write_batch(ops, target, &batch, &mut |_, _| Ok(Some(payloads.clone())))
    })
}

/// Steps 6 and 7 of spec 6.8 after `shared_write`, for `end` (commit offset, next index, last asqn, last
/// timestamp): 0 published in the next generation, 2 covered already by another writer's publication, 3
/// published two generations on (W-44); 1 when the Python code must publish.
#[pyfunction]
#[pyo3(signature = (fs, target, seen, end))]
pub(crate) fn shared_publish(
    py: Python<'_>,
    fs: Option<Bound<'_, PyAny>>,
    target: &Target,
    seen: u64,
    end: (u64, u64, i64, i64),
) -> PyResult<u8> {
    let end = TailEnd {
        offset: end.0,
        next_index: end.1,
        last_asqn: end.2,
        last_timestamp_us: end.3,
    };
    through(py, fs, target, |ops| publish(ops, target, seen, end))
}

/// Bytes held in memory, for `tail_end`.
struct Held<'a> {
    data: &'a [u8],
    start: u64,
}

impl Tail for Held<'_> {
    fn bytes(&mut self, offset: u64, _want: usize) -> PyResult<&[u8]> {
        let skip = usize::try_from(offset.saturating_sub(self.start)).unwrap_or(usize::MAX);
        Ok(self.data.get(skip..).unwrap_or_default())
    }
}

/// The walk `shared_write` makes beyond the commit point, over `data` (the segment's bytes from
/// `commit_offset` to its end), for the tests to compare with `walk.tail_walk` and the tail check:
/// `(commit offset, next index, last asqn, last timestamp)` where it ends, or None.
#[pyfunction]
pub(crate) fn tail_end(
    data: &[u8],
    commit_offset: u64,
    next_index: u64,
    last_asqn: i64,
    last_timestamp_us: i64,
    zero_probe: bool,
) -> PyResult<Option<(u64, u64, i64, i64)>> {
    let from = TailEnd {
        offset: commit_offset,
        next_index,
        last_asqn,
        last_timestamp_us,
    };
    let size = commit_offset.saturating_add(data.len() as u64);
    let end = walk_tail(
        &mut Held {
            data,
            start: commit_offset,
        },
        from,
        size,
        zero_probe,
    )?;
    Ok(end.map(|end| (end.offset, end.next_index, end.last_asqn, end.last_timestamp_us)))
}

/// The slot `shared_write` takes as active in `header` (the segment's first 256 bytes), for the tests
/// to compare with `_segment.active_commit`: `(generation, commit offset, next index, last asqn, last
/// timestamp, next log number)`, or None where the batch declines (the reference raises bad_header).
#[pyfunction]
pub(crate) fn active_commit(header: &[u8], base_index: u64, log: u32) -> Option<(u64, u64, u64, i64, i64, u32)> {
    active_slot(header, base_index, log).map(|slot| {
        (
            slot.generation,
            slot.offset,
            slot.next_index,
            slot.last_asqn,
            slot.last_timestamp_us,
            slot.next_log_number,
        )
    })
}
