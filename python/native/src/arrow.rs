//! Verified runs of records laid out for Arrow: `ArrowRuns.verify` of `openbinlog_spark.walk`
//! in one pass over the chunk, with no Python object per record.
//!
//! The pure-Python reference is `_pure_run` in `openbinlog_spark.walk` (a length walk, a gather
//! of the headers and numpy checks over whole arrays); a property test requires both to return
//! the same records from any state, on valid and damaged bytes alike. What comes out is what that
//! reference lays out: the record starts, the 40-byte headers as stored, and the payloads as the
//! offsets and data buffers of an Arrow binary array.

use pyo3::buffer::PyBuffer;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::{plain_record, NO_ASQN, RECORD_HEADER_SIZE};

/// Where the verified records lie in the chunk: record start and payload range, one per record.
struct Run {
    starts: Vec<usize>,
    payloads: Vec<(usize, usize)>,
    payload_bytes: usize,
}

/// The records from the start of `window` that lie wholly in it, start before `stop` and pass
/// every check of spec 4.3.1 with `next_index` and `last_asqn`: `RecordDecoder`'s batch loop.
fn verify(window: &[u8], next_index: u64, last_asqn: i64, stop: usize) -> Run {
    let mut run = Run {
        starts: Vec::new(),
        payloads: Vec::new(),
        payload_bytes: 0,
    };
    let mut expected = Some(next_index);
    let mut previous_asqn = last_asqn;
    let mut pos = 0usize;
    while pos < stop {
        let (Some(rest), Some(wanted)) = (window.get(pos..), expected) else { break };
        let Some((header, record)) = plain_record(rest, wanted, previous_asqn) else {
            break;
        };
        let Some(payload) = record.get(RECORD_HEADER_SIZE..) else {
            break;
        };
        // Arrow's binary offsets are int32: a run ends before a payload that would pass them.
        let Some(total) = run
            .payload_bytes
            .checked_add(payload.len())
            .filter(|total| i32::try_from(*total).is_ok())
        else {
            break;
        };
        // The record lies inside `window`, so none of these can saturate.
        let payload_start = pos.saturating_add(RECORD_HEADER_SIZE);
        run.starts.push(pos);
        run.payloads
            .push((payload_start, payload_start.saturating_add(payload.len())));
        run.payload_bytes = total;
        expected = header.index.checked_add(1);
        if header.asqn != NO_ASQN {
            previous_asqn = header.asqn;
        }
        pos = pos.saturating_add(record.len());
    }
    run
}

/// Bytes of `meta` per record: its start (int64), its header, its payload's end offset (int32).
const META_PER_RECORD: usize = 8 + RECORD_HEADER_SIZE + 4;

/// The bytes of a writable, contiguous buffer (an Arrow buffer from the memory pool, whose pages are reused:
/// buffers made here afresh would cost a page fault per 4 KiB each time).
fn writable<'a>(buffer: &'a mut PyBuffer<u8>, name: &str) -> PyResult<&'a mut [u8]> {
    if buffer.readonly() || !buffer.is_c_contiguous() {
        return Err(PyValueError::new_err(format!(
            "{name} is not a writable contiguous buffer"
        )));
    }
    // SAFETY: the buffer stays exported (so its memory stays allocated and in place) while `buffer` lives,
    // and `'a` cannot outlive it; it is C-contiguous, writable and `len_bytes` long. Nothing else writes to
    // it meanwhile: the caller made it for this call, and the lock is held while the slice is in use.
    Ok(unsafe { std::slice::from_raw_parts_mut(buffer.buf_ptr().cast::<u8>(), buffer.len_bytes()) })
}

/// The verified run at the start of `buf`; see `ArrowRuns.verify` in `openbinlog_spark.walk`.
///
/// `stop`: records must start before `buf[stop]`. The payloads go to `data` end to end (it must hold
/// `len(buf)` bytes); `meta` receives, native-endian, the record starts (int64), then the records'
/// 40-byte headers as stored, then the payloads' Arrow binary offsets (int32, one more than the records):
/// it must hold `META_PER_RECORD` bytes per record that can lie in `buf`, and 4 more. Returns the number of
/// records and of payload bytes, or None when the first record does not pass.
#[pyfunction]
#[pyo3(signature = (buf, next_index, last_asqn, stop, data, meta, /))]
pub(crate) fn arrow_run(
    py: Python<'_>,
    buf: &Bound<'_, PyBytes>,
    next_index: &Bound<'_, PyAny>,
    last_asqn: i64,
    stop: usize,
    mut data: PyBuffer<u8>,
    mut meta: PyBuffer<u8>,
) -> PyResult<Option<(usize, usize)>> {
    // An index no record can carry (negative, or 2**64 after the last possible one): no record passes.
    let Ok(next_index) = next_index.extract::<u64>() else {
        return Ok(None);
    };
    let window = buf.as_bytes();
    // `window` is immutable and `buf` keeps it alive: the checks need no lock.
    let run = py.detach(|| verify(window, next_index, last_asqn, stop));
    if run.starts.is_empty() {
        return Ok(None);
    }
    let count = run.starts.len();
    let too_small = || PyValueError::new_err("the buffers given cannot hold the run");
    let (data, meta) = (writable(&mut data, "data")?, writable(&mut meta, "meta")?);
    let payloads = data.get_mut(..run.payload_bytes).ok_or_else(too_small)?;
    let starts_end = count.checked_mul(8).ok_or_else(too_small)?;
    let headers_end = count.checked_mul(8 + RECORD_HEADER_SIZE).ok_or_else(too_small)?;
    let offsets_end = count
        .checked_mul(META_PER_RECORD)
        .and_then(|size| size.checked_add(4))
        .ok_or_else(too_small)?;
    let (starts, rest) = meta
        .get_mut(..offsets_end)
        .ok_or_else(too_small)?
        .split_at_mut(starts_end);
    let (headers, offsets) = rest.split_at_mut(headers_end.saturating_sub(starts_end));
    for (slot, start) in starts.chunks_exact_mut(8).zip(&run.starts) {
        slot.copy_from_slice(&i64::try_from(*start).unwrap_or(i64::MAX).to_ne_bytes());
    }
    for (slot, start) in headers.chunks_exact_mut(RECORD_HEADER_SIZE).zip(&run.starts) {
        let header = window
            .get(*start..start.saturating_add(RECORD_HEADER_SIZE))
            .ok_or_else(too_small)?;
        slot.copy_from_slice(header);
    }
    let mut ends = offsets.chunks_exact_mut(4);
    if let Some(first) = ends.next() {
        first.copy_from_slice(&0i32.to_ne_bytes());
    }
    let mut at = 0usize;
    for (slot, (begin, end)) in ends.zip(&run.payloads) {
        let payload = window.get(*begin..*end).ok_or_else(too_small)?;
        let next = at.saturating_add(payload.len());
        payloads
            .get_mut(at..next)
            .ok_or_else(too_small)?
            .copy_from_slice(payload);
        // `verify` ends a run before its payloads pass i32::MAX bytes.
        slot.copy_from_slice(&i32::try_from(next).map_err(|_| too_small())?.to_ne_bytes());
        at = next;
    }
    Ok(Some((count, run.payload_bytes)))
}
