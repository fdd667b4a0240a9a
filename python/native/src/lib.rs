//! Compiled record walks for `openbinlog`: an accelerator, not a second implementation.
//!
//! Each walk here has a pure-Python reference (`RecordDecoder._verified_run_pure`
//! in `openbinlog._records`, `_walk_lengths` and `_pure_run` in `openbinlog_spark.walk`), and the
//! tests require both to give the same answer for every input. The byte layout is
//! declared in `openbinlog._format`; the package checks at import time that
//! `read_header` decodes a header it packed to the same fields, and does not use
//! this module otherwise.
//!
//! Every input is hostile: a length is used only after checking it against the
//! bytes present, nothing is allocated from a length field, and no input can reach
//! a panic (the lints below refuse indexing, unwrapping and unchecked arithmetic).
//! `unsafe` is limited to the C-API calls that build `Entry` objects and to the buffers Python
//! hands over for Spark's runs to be written into (`arrow`).

#![deny(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::arithmetic_side_effects
)]

mod arrow;
mod buffer;
mod queue;
mod shared;

use std::ffi::c_void;

use crc32c::crc32c;
use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyList, PyType};

const RECORD_HEADER_SIZE: usize = 40;
const LENGTH_FIELD_SIZE: usize = 4;
/// The header checksum covers the header bytes before it.
const HEADER_CRC_END: usize = RECORD_HEADER_SIZE - 4;
const MIN_RECORD_LENGTH: u32 = 36;
const MAX_RECORD_LENGTH: u32 = 0x7FFF_FFFF;
const FRAME_DATA: u8 = 1;
const NO_ASQN: i64 = -1;
const MASK_DELTA: u32 = 0xA282_EAD8;
/// `Entry`'s fields, in the order its slots are filled.
const ENTRY_FIELDS: [&str; 7] = ["log", "offset", "index", "payload", "asqn", "timestamp_us", "checked"];

/// The fields of a record header, in their order on disk (big-endian).
pub(crate) struct RecordHeader {
    length: u32,
    frame: u8,
    flags: u8,
    reserved: u16,
    index: u64,
    asqn: i64,
    timestamp_us: i64,
    payload_crc: u32,
    header_crc: u32,
}

/// The next `N` bytes of `rest`, which moves past them.
fn take<const N: usize>(rest: &mut &[u8]) -> Option<[u8; N]> {
    let (head, tail) = rest.split_first_chunk::<N>()?;
    *rest = tail;
    Some(*head)
}

impl RecordHeader {
    /// The header at the start of `bytes`, or None when fewer than 40 bytes are there.
    pub(crate) fn parse(bytes: &[u8]) -> Option<Self> {
        let mut rest = bytes.get(..RECORD_HEADER_SIZE)?;
        // Fields of a struct expression are evaluated in the order written: the order on disk.
        Some(Self {
            length: u32::from_be_bytes(take(&mut rest)?),
            frame: u8::from_be_bytes(take(&mut rest)?),
            flags: u8::from_be_bytes(take(&mut rest)?),
            reserved: u16::from_be_bytes(take(&mut rest)?),
            index: u64::from_be_bytes(take(&mut rest)?),
            asqn: i64::from_be_bytes(take(&mut rest)?),
            timestamp_us: i64::from_be_bytes(take(&mut rest)?),
            payload_crc: u32::from_be_bytes(take(&mut rest)?),
            header_crc: u32::from_be_bytes(take(&mut rest)?),
        })
    }
}

/// LevelDB's mask of a CRC32C, as `openbinlog._crc.mask`.
pub(crate) fn masked_crc32c(data: &[u8]) -> u32 {
    crc32c(data).rotate_right(15).wrapping_add(MASK_DELTA)
}

/// The bytes of the record at the start of `rest`, length field included, when `length` is at
/// least the minimum and the whole record is in `rest`.
fn whole_record(rest: &[u8], length: u32) -> Option<&[u8]> {
    if length < MIN_RECORD_LENGTH {
        return None;
    }
    rest.get(..usize::try_from(length).ok()?.checked_add(LENGTH_FIELD_SIZE)?)
}

/// The record at the start of `rest` when it is whole in it and a valid data record: steps 1 to 8 of spec
/// 4.3.1 with frame 1, index `expected` and an asqn above `last_asqn`. Its header and its bytes. The one
/// compiled check of a plain record, for Spark's runs (`arrow`) and the shared batch's tail walk (`shared`).
fn plain_record(rest: &[u8], expected: u64, last_asqn: i64) -> Option<(RecordHeader, &[u8])> {
    let header = RecordHeader::parse(rest)?;
    let record = whole_record(rest, header.length)?;
    let in_order = header.asqn == NO_ASQN || (header.asqn >= 0 && header.asqn > last_asqn);
    let plain = header.frame == FRAME_DATA && header.flags == 0 && header.reserved == 0;
    if !plain || header.index != expected || !in_order {
        return None;
    }
    let (covered, payload) = (record.get(..HEADER_CRC_END)?, record.get(RECORD_HEADER_SIZE..)?);
    let intact = masked_crc32c(covered) == header.header_crc && masked_crc32c(payload) == header.payload_crc;
    intact.then_some((header, record))
}

/// What `walk_lengths` found: per record its start and two raw CRC32Cs, as native-endian bytes.
struct LengthWalk {
    starts: Vec<u8>,
    header_crcs: Vec<u8>,
    payload_crcs: Vec<u8>,
    stop: usize,
}

fn walk(window: &[u8]) -> LengthWalk {
    let mut found = LengthWalk {
        starts: Vec::new(),
        header_crcs: Vec::new(),
        payload_crcs: Vec::new(),
        stop: 0,
    };
    let mut pos = 0usize;
    while let Some(rest) = window.get(pos..) {
        if rest.len() < RECORD_HEADER_SIZE {
            break;
        }
        let Some(length) = rest
            .first_chunk::<LENGTH_FIELD_SIZE>()
            .map(|field| u32::from_be_bytes(*field))
        else {
            break;
        };
        let Some(record) = whole_record(rest, length) else {
            break;
        };
        let (Some(covered), Some(payload), Ok(start)) = (
            record.get(..HEADER_CRC_END),
            record.get(RECORD_HEADER_SIZE..),
            i64::try_from(pos),
        ) else {
            break;
        };
        found.starts.extend_from_slice(&start.to_ne_bytes());
        found.header_crcs.extend_from_slice(&crc32c(covered).to_ne_bytes());
        found.payload_crcs.extend_from_slice(&crc32c(payload).to_ne_bytes());
        // The record lies inside `window`, so this cannot saturate.
        pos = pos.saturating_add(record.len());
    }
    found.stop = pos;
    found
}

/// Follow length fields from 0 in `buf[:end]`; see `_walk_lengths` in `openbinlog_spark.walk`.
///
/// Returns the record starts (int64), the CRC32C of each record's first 36 bytes and of its
/// payload (uint32), all native-endian, and where the walk stopped.
#[pyfunction]
#[pyo3(signature = (buf, end, /))]
#[allow(clippy::type_complexity)]
fn walk_lengths<'py>(
    py: Python<'py>,
    buf: &Bound<'py, PyBytes>,
    end: usize,
) -> PyResult<(Bound<'py, PyBytes>, Bound<'py, PyBytes>, Bound<'py, PyBytes>, usize)> {
    let bytes = buf.as_bytes();
    let window = bytes
        .get(..end)
        .ok_or_else(|| PyValueError::new_err(format!("end {end} lies beyond the {} bytes given", bytes.len())))?;
    // `bytes` is immutable and `buf` keeps it alive: the walk needs no lock.
    let found = py.detach(|| walk(window));
    Ok((
        PyBytes::new(py, &found.starts),
        PyBytes::new(py, &found.header_crcs),
        PyBytes::new(py, &found.payload_crcs),
        found.stop,
    ))
}

/// The nine fields of the record header at the start of `data`, for the import-time layout check.
#[pyfunction]
#[pyo3(signature = (data, /))]
#[allow(clippy::type_complexity)]
fn read_header(data: &Bound<'_, PyBytes>) -> PyResult<(u32, u8, u8, u16, u64, i64, i64, u32, u32)> {
    let header = RecordHeader::parse(data.as_bytes())
        .ok_or_else(|| PyValueError::new_err(format!("a record header needs {RECORD_HEADER_SIZE} bytes")))?;
    Ok((
        header.length,
        header.frame,
        header.flags,
        header.reserved,
        header.index,
        header.asqn,
        header.timestamp_us,
        header.payload_crc,
        header.header_crc,
    ))
}

/// A C-API slot of a type as the function it holds; None when the type leaves it empty.
///
/// # Safety
/// `F` must be the function pointer type the C API documents for `slot`.
pub(crate) unsafe fn type_slot<F: Copy>(type_object: &Bound<'_, PyType>, slot: std::ffi::c_int) -> Option<F> {
    if std::mem::size_of::<Option<F>>() != std::mem::size_of::<*mut c_void>() {
        return None;
    }
    // SAFETY: PyType_GetSlot accepts any type object since Python 3.10 and returns the slot's
    // function or NULL. `F` is a function pointer type (the caller's contract), so Option<F> has
    // the layout of a nullable pointer: NULL becomes None.
    unsafe {
        let function: *mut c_void = ffi::PyType_GetSlot(type_object.as_type_ptr(), slot);
        std::mem::transmute_copy::<*mut c_void, Option<F>>(&function)
    }
}

/// Verified runs of records, returned as `Entry` objects built without running Python code.
///
/// Made once per process from the `Entry` class. An `Entry` is allocated with the class's own
/// `tp_alloc` and each of its seven slots is filled through that slot's member descriptor, the
/// same store `object.__setattr__` ends in, but without the frozen dataclass's guard around it.
#[pyclass(frozen, module = "openbinlog._native")]
struct Verifier {
    entry_type: Py<PyType>,
    alloc: ffi::allocfunc,
    slots: [(Py<PyAny>, ffi::descrsetfunc); ENTRY_FIELDS.len()],
}

#[pymethods]
impl Verifier {
    #[new]
    #[pyo3(signature = (entry_type, /))]
    fn new(entry_type: &Bound<'_, PyType>) -> PyResult<Self> {
        let py = entry_type.py();
        let fields: Vec<String> = entry_type.getattr("__slots__")?.extract()?;
        if fields != ENTRY_FIELDS {
            return Err(PyTypeError::new_err(format!(
                "entry slots {fields:?}, expected {ENTRY_FIELDS:?}"
            )));
        }
        // Entries are allocated by tp_alloc and never pass through tp_new: sound only when nothing
        // but `object` lies under the class (a dict, set or exception base would be left unset).
        let object = py.get_type::<pyo3::types::PyAny>();
        let mro = entry_type.getattr("__mro__")?;
        if mro.len()? != 2
            || !mro.get_item(1)?.is(&object)
            || !entry_type.getattr("__new__")?.is(&object.getattr("__new__")?)
        {
            return Err(PyTypeError::new_err(
                "the entry class must derive from object alone, with object's __new__",
            ));
        }
        // Entries are made without calling __init__: it must do nothing but fill the slots.
        if entry_type.hasattr("__post_init__")? {
            return Err(PyTypeError::new_err("the entry class has a __post_init__"));
        }
        let member_descriptor = py.import("types")?.getattr("MemberDescriptorType")?;
        let mut slots = Vec::with_capacity(ENTRY_FIELDS.len());
        for name in ENTRY_FIELDS {
            let descriptor = entry_type.getattr(name)?;
            if !descriptor.get_type().is(&member_descriptor) || !descriptor.getattr("__objclass__")?.is(entry_type) {
                return Err(PyTypeError::new_err(format!(
                    "{name} is not a slot of the entry class itself"
                )));
            }
            // SAFETY: the Py_tp_descr_set slot holds a descrsetfunc.
            let set = unsafe { type_slot::<ffi::descrsetfunc>(&descriptor.get_type(), ffi::Py_tp_descr_set) }
                .ok_or_else(|| PyTypeError::new_err(format!("the {name} slot cannot be set")))?;
            slots.push((descriptor.unbind(), set));
        }
        // SAFETY: the Py_tp_alloc slot holds an allocfunc.
        let alloc = unsafe { type_slot::<ffi::allocfunc>(entry_type, ffi::Py_tp_alloc) }
            .ok_or_else(|| PyTypeError::new_err("the entry class has no tp_alloc"))?;
        let slots = slots
            .try_into()
            .map_err(|_| PyTypeError::new_err("entry slots changed while read"))?;
        Ok(Self {
            entry_type: entry_type.clone().unbind(),
            alloc,
            slots,
        })
    }

    /// `RecordDecoder._verified_run_pure` over `buf[pos:end]`: the data records from `pos` on that
    /// lie wholly before `end` and pass every check of spec 4.3, up to `most`.
    ///
    /// `offset` is the segment offset of `buf[pos]`. Returns the entries, then the buffer position,
    /// segment offset, next index and last asqn after them (the arguments when there are none).
    #[pyo3(signature = (buf, pos, end, most, offset, log, next_index, last_asqn, /))]
    #[allow(clippy::too_many_arguments, clippy::type_complexity)]
    fn verified_run<'py>(
        &self,
        buf: &Bound<'py, PyBytes>,
        pos: usize,
        end: isize,
        most: usize,
        offset: u64,
        log: &Bound<'py, PyAny>,
        next_index: &Bound<'py, PyAny>,
        last_asqn: &Bound<'py, PyAny>,
    ) -> PyResult<(Bound<'py, PyList>, usize, u64, Bound<'py, PyAny>, Bound<'py, PyAny>)> {
        let py = buf.py();
        let bytes = buf.as_bytes();
        // A negative end proves nothing; an end beyond the buffer is the buffer's end.
        let window = bytes
            .get(..usize::try_from(end).unwrap_or(0).min(bytes.len()))
            .unwrap_or_default();
        // An index no record can carry (negative, or 2**64 after the last possible one) stops the run.
        let mut expected = next_index.extract::<u64>().ok();
        // Every asqn is an i64: a previous asqn beyond that range compares as the nearest bound.
        let mut previous_asqn = match last_asqn.extract::<i64>() {
            Ok(value) => value,
            Err(_) if last_asqn.lt(0)? => i64::MIN,
            Err(_) => i64::MAX,
        };
        let mut asqn_seen = false;
        let mut last_index = None;
        let (mut at, mut record_offset) = (pos, offset);
        let mut entries = Vec::new();
        let checked = PyBool::new(py, true).to_owned().into_any();
        while entries.len() < most {
            let Some(rest) = window.get(at..) else { break };
            let (Some(header), Some(wanted)) = (RecordHeader::parse(rest), expected) else {
                break;
            };
            if header.frame != FRAME_DATA
                || header.flags != 0
                || header.reserved != 0
                || header.index != wanted
                || header.length > MAX_RECORD_LENGTH
                || (header.asqn != NO_ASQN && (header.asqn < NO_ASQN || header.asqn <= previous_asqn))
            {
                break;
            }
            let Some(record) = whole_record(rest, header.length) else {
                break;
            };
            let (Some(covered), Some(payload), Some(next_offset)) = (
                record.get(..HEADER_CRC_END),
                record.get(RECORD_HEADER_SIZE..),
                u64::try_from(record.len())
                    .ok()
                    .and_then(|size| record_offset.checked_add(size)),
            ) else {
                break;
            };
            if masked_crc32c(covered) != header.header_crc || masked_crc32c(payload) != header.payload_crc {
                break;
            }
            entries.push(self.entry(
                py,
                [
                    log.clone(),
                    record_offset.into_pyobject(py)?.into_any(),
                    header.index.into_pyobject(py)?.into_any(),
                    PyBytes::new(py, payload).into_any(),
                    header.asqn.into_pyobject(py)?.into_any(),
                    header.timestamp_us.into_pyobject(py)?.into_any(),
                    checked.clone(),
                ],
            )?);
            last_index = Some(header.index);
            expected = header.index.checked_add(1);
            if header.asqn != NO_ASQN {
                previous_asqn = header.asqn;
                asqn_seen = true;
            }
            // The record lies inside `window`, so this cannot saturate.
            at = at.saturating_add(record.len());
            record_offset = next_offset;
        }
        let next_index = match last_index {
            Some(index) => (u128::from(index).saturating_add(1)).into_pyobject(py)?.into_any(),
            None => next_index.clone(),
        };
        let last_asqn = if asqn_seen {
            previous_asqn.into_pyobject(py)?.into_any()
        } else {
            last_asqn.clone()
        };
        Ok((PyList::new(py, entries)?, at, record_offset, next_index, last_asqn))
    }
}

impl Verifier {
    /// A new `Entry` holding `values`, in the order of `ENTRY_FIELDS`.
    fn entry<'py>(
        &self,
        py: Python<'py>,
        values: [Bound<'py, PyAny>; ENTRY_FIELDS.len()],
    ) -> PyResult<Bound<'py, PyAny>> {
        // SAFETY: `alloc` is the entry class's own tp_alloc, called with that class, as its C-API
        // contract asks. It returns a new reference to a zero-filled instance (every slot NULL,
        // which its deallocator and the garbage collector accept) or NULL with an exception set;
        // `from_owned_ptr_or_err` takes over either.
        let object = unsafe { Bound::from_owned_ptr_or_err(py, (self.alloc)(self.entry_type.as_ptr().cast(), 0)) }?;
        for ((descriptor, set), value) in self.slots.iter().zip(values) {
            // SAFETY: `set` is the tp_descr_set of `descriptor`'s type, called as the C API says
            // (descriptor, instance, value), with three live objects held by references here. A
            // member descriptor checks the instance's type, then stores a new reference to `value`.
            if unsafe { set(descriptor.as_ptr(), object.as_ptr(), value.as_ptr()) } != 0 {
                return Err(PyErr::take(py).unwrap_or_else(|| PyRuntimeError::new_err("an entry slot was not set")));
            }
        }
        Ok(object)
    }
}

#[pymodule]
fn _native(module: &Bound<'_, PyModule>) -> PyResult<()> {
    // Every constant of the format this module repeats, for the package to compare with its own.
    module.add("RECORD_HEADER_SIZE", RECORD_HEADER_SIZE)?;
    module.add("MIN_RECORD_LENGTH", MIN_RECORD_LENGTH)?;
    module.add("MAX_RECORD_LENGTH", MAX_RECORD_LENGTH)?;
    module.add("FRAME_DATA", FRAME_DATA)?;
    module.add("NO_ASQN", NO_ASQN)?;
    module.add("MASK_DELTA", MASK_DELTA)?;
    module.add_function(wrap_pyfunction!(walk_lengths, module)?)?;
    module.add_function(wrap_pyfunction!(read_header, module)?)?;
    module.add_function(wrap_pyfunction!(arrow::arrow_run, module)?)?;
    module.add_class::<Verifier>()?;
    module.add_class::<buffer::RecordBuffer>()?;
    module.add_class::<buffer::Appender>()?;
    module.add("PUBLISH_IN_PYTHON", shared::PUBLISH_IN_PYTHON)?;
    module.add_class::<shared::Target>()?;
    module.add_class::<queue::CommitTable>()?;
    module.add("TABLE_COMMITTED", queue::COMMITTED)?;
    module.add("TABLE_ALONE", queue::ALONE)?;
    module.add("TABLE_UNKNOWN", queue::UNKNOWN)?;
    module.add_function(wrap_pyfunction!(shared::shared_write, module)?)?;
    module.add_function(wrap_pyfunction!(shared::shared_publish, module)?)?;
    module.add_function(wrap_pyfunction!(shared::tail_end, module)?)?;
    module.add_function(wrap_pyfunction!(shared::active_commit, module)?)?;
    Ok(())
}
