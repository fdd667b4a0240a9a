//! The `process` durability mode's buffer of encoded records, compiled.
//!
//! The reference is `openbinlog._buffer.PureRecordBuffer`; the tests drive both with the
//! same appends and require the same bytes, refs and codes. An append here runs no
//! Python code apart from building its ref: it encodes the record (both checksums),
//! copies it into the buffer and returns where it will lie once committed. Anything
//! unusual (a payload that is not `bytes`, a full buffer or segment, an asqn out of
//! order) returns a code, and the Python caller takes its slower, checked path.

use std::fs::File;
use std::mem::ManuallyDrop;
use std::os::fd::FromRawFd;
use std::os::unix::fs::FileExt;
use std::sync::{Mutex, PoisonError};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use pyo3::exceptions::{PyRuntimeError, PyTypeError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyInt, PyTuple, PyType};

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
/// The next index would not fit 64 bits.
const INDEXES_USED_UP: u8 = 5;
/// Not a plain case (a payload that is not `bytes`, too large, an asqn that is no `i64`): check in Python.
const CHECK_ARGUMENTS: u8 = 6;

/// Where the slots of even and odd generations lie, and the mirror fields (`_format`).
const SLOT_OFFSETS: [u64; 2] = [96, 144];
const SLOT_CRC_COVERS: usize = 44;
const MIRROR_OFFSET: u64 = 6;
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
}

fn now_us() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .ok()
        .and_then(|elapsed| i64::try_from(elapsed.as_micros()).ok())
        .unwrap_or(0)
}

/// Append the record `openbinlog._records.encode_record` builds to `out`.
fn encode_record(out: &mut Vec<u8>, index: u64, payload: &[u8], asqn: i64, timestamp_us: i64) {
    let mut head = [0u8; RECORD_HEADER_SIZE];
    let length = MIN_RECORD_LENGTH.saturating_add(u32::try_from(payload.len()).unwrap_or(u32::MAX));
    let fields = head.iter_mut();
    let values = length
        .to_be_bytes()
        .into_iter()
        .chain([FRAME_DATA, 0, 0, 0])
        .chain(index.to_be_bytes())
        .chain(asqn.to_be_bytes())
        .chain(timestamp_us.to_be_bytes())
        .chain(masked_crc32c(payload).to_be_bytes());
    for (field, value) in fields.zip(values) {
        *field = value;
    }
    let (covered, crc) = head.split_at_mut(HEADER_CRC_END);
    crc.copy_from_slice(&masked_crc32c(covered).to_be_bytes());
    out.extend_from_slice(&head);
    out.extend_from_slice(payload);
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
            }),
        })
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
        // Exactly bytes and int, as the reference asks: a subclass (bool among them) is checked in Python.
        let plain_clock = now_us.is_none() || now_us.is_exact_instance_of::<PyInt>();
        let (Ok(payload), true, true) = (
            payload.cast_exact::<PyBytes>(),
            asqn.is_exact_instance_of::<PyInt>(),
            plain_clock,
        ) else {
            return Ok(CHECK_ARGUMENTS.into_pyobject(py)?.into_any().unbind());
        };
        let (Ok(asqn), Ok(clock)) = (asqn.extract::<i64>(), now_us.extract::<Option<i64>>()) else {
            return Ok(CHECK_ARGUMENTS.into_pyobject(py)?.into_any().unbind());
        };
        let payload = payload.as_bytes();
        if payload.len() > MAX_PAYLOAD_SIZE || asqn < NO_ASQN {
            return Ok(CHECK_ARGUMENTS.into_pyobject(py)?.into_any().unbind());
        }
        let placed = {
            let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
            self.place(&mut state, payload, asqn, clock)
        };
        match placed {
            Ok((offset, index)) => Ok(self.new_ref(py, [self.log, offset, index])?.unbind()),
            Err(code) => Ok(code.into_pyobject(py)?.into_any().unbind()),
        }
    }

    /// The buffered records and the commit state after them: `(records, end offset, next index,
    /// last asqn, last timestamp)`; the buffer is then empty. `close`: later appends get `CLOSED`.
    #[pyo3(signature = (close, /))]
    fn take<'py>(&self, py: Python<'py>, close: bool) -> (Bound<'py, PyBytes>, u64, u64, i64, i64) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let records = PyBytes::new(py, &state.bytes);
        let taken = u64::try_from(state.bytes.len()).unwrap_or(u64::MAX);
        state.start = state.start.saturating_add(taken);
        state.bytes.clear();
        state.oldest = None;
        state.closed |= close;
        (
            records,
            state.start,
            state.next_index,
            state.last_asqn,
            state.last_timestamp_us,
        )
    }

    /// `PureRecordBuffer.commit`: write what the buffer holds at the commit point, sync it when
    /// `sync`, publish generation `generation + 1` (slot, then mirror fields), sync again when
    /// `strict`; return what was published, or None when the buffer held nothing (a `sync` still
    /// syncs). `fs` None: straight to `fd`, the interpreter released during each call; otherwise
    /// through `fs.pwrite` and `fs.fdatasync`. A failure closes the buffer (W-19).
    #[pyo3(signature = (fs, fd, generation, next_log_number, sync, strict, close, /))]
    #[allow(clippy::too_many_arguments)]
    fn commit(
        &self,
        py: Python<'_>,
        fs: Option<&Bound<'_, PyAny>>,
        fd: i32,
        generation: u64,
        next_log_number: u32,
        sync: bool,
        strict: bool,
        close: bool,
    ) -> PyResult<Option<Published>> {
        let (records, start, published) = {
            let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
            let records = std::mem::take(&mut state.bytes);
            let start = state.start;
            state.start = start.saturating_add(u64::try_from(records.len()).unwrap_or(u64::MAX));
            state.oldest = None;
            state.closed |= close;
            let published = (
                generation.saturating_add(1),
                state.start,
                state.next_index,
                state.last_asqn,
                state.last_timestamp_us,
            );
            (records, start, published)
        };
        let io = match fs {
            // SAFETY: `fd` is the writer's open segment, which outlives this call; ManuallyDrop
            // keeps the File from closing it.
            None => Io::Direct(ManuallyDrop::new(unsafe { File::from_raw_fd(fd) })),
            Some(fs) => Io::Calls(fs, fd),
        };
        let done = self.write_and_publish(py, &io, &records, start, published, next_log_number, sync, strict);
        if done.is_err() {
            self.state.lock().unwrap_or_else(PoisonError::into_inner).closed = true;
        }
        done.map(|()| (!records.is_empty()).then_some(published))
    }

    /// The bytes buffered.
    fn pending(&self) -> usize {
        self.state.lock().unwrap_or_else(PoisonError::into_inner).bytes.len()
    }

    /// Seconds since the oldest buffered record was appended; 0.0 when the buffer is empty.
    fn age(&self) -> f64 {
        let state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.oldest.map_or(0.0, |oldest| oldest.elapsed().as_secs_f64())
    }
}

/// The commit state a commit publishes: generation, commit offset, next index, last asqn, last timestamp.
type Published = (u64, u64, u64, i64, i64);

/// The 48-byte slot `openbinlog._segment.encode_slot` builds.
fn encode_slot(published: Published, next_log_number: u32) -> [u8; 48] {
    let (generation, offset, next_index, last_asqn, last_timestamp_us) = published;
    let mut slot = [0u8; 48];
    let values = generation
        .to_be_bytes()
        .into_iter()
        .chain(offset.to_be_bytes())
        .chain(next_index.to_be_bytes())
        .chain(last_asqn.to_be_bytes())
        .chain(last_timestamp_us.to_be_bytes())
        .chain(next_log_number.to_be_bytes());
    for (byte, value) in slot.iter_mut().zip(values) {
        *byte = value;
    }
    let (covered, crc) = slot.split_at_mut(SLOT_CRC_COVERS);
    crc.copy_from_slice(&masked_crc32c(covered).to_be_bytes());
    slot
}

/// The 18 mirror bytes `openbinlog._segment.encode_mirror` builds.
fn encode_mirror(offset: u64, log: u32, next_log_number: u32) -> [u8; 18] {
    let status = if next_log_number == 0 {
        STATUS_OPEN
    } else {
        STATUS_CLOSED
    };
    let mut mirror = [0u8; 18];
    let values = status
        .to_be_bytes()
        .into_iter()
        .chain(offset.to_be_bytes())
        .chain(log.to_be_bytes())
        .chain(next_log_number.to_be_bytes());
    for (byte, value) in mirror.iter_mut().zip(values) {
        *byte = value;
    }
    mirror
}

/// Where a commit's writes and syncs go: straight to the file, or through the writer's file system
/// object (the tests record and crash its operations), in the same order.
enum Io<'a, 'py> {
    Direct(ManuallyDrop<File>),
    Calls(&'a Bound<'py, PyAny>, i32),
}

impl Io<'_, '_> {
    fn pwrite(&self, py: Python<'_>, data: &[u8], offset: u64) -> PyResult<()> {
        match self {
            Self::Direct(file) => Ok(py.detach(|| file.write_all_at(data, offset))?),
            Self::Calls(fs, fd) => fs
                .call_method1("pwrite", (*fd, PyBytes::new(py, data), offset))
                .map(|_| ()),
        }
    }

    fn fdatasync(&self, py: Python<'_>) -> PyResult<()> {
        match self {
            Self::Direct(file) => Ok(py.detach(|| file.sync_data())?),
            Self::Calls(fs, fd) => fs.call_method1("fdatasync", (*fd,)).map(|_| ()),
        }
    }
}

impl RecordBuffer {
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
        py: Python<'_>,
        io: &Io<'_, '_>,
        records: &[u8],
        start: u64,
        published: Published,
        next_log_number: u32,
        sync: bool,
        strict: bool,
    ) -> PyResult<()> {
        if !records.is_empty() {
            io.pwrite(py, records, start)?;
        }
        if sync {
            io.fdatasync(py)?;
        }
        if records.is_empty() {
            return Ok(());
        }
        let slot_at = SLOT_OFFSETS
            .get(usize::from(published.0 % 2 == 1))
            .copied()
            .unwrap_or(SLOT_OFFSETS[0]);
        io.pwrite(py, &encode_slot(published, next_log_number), slot_at)?;
        let log = u32::try_from(self.log).unwrap_or(u32::MAX);
        io.pwrite(py, &encode_mirror(published.1, log, next_log_number), MIRROR_OFFSET)?;
        if strict {
            io.fdatasync(py)?;
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
        if state.next_index == u64::MAX {
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
