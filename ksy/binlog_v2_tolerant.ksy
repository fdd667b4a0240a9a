meta:
  id: binlog_v2_tolerant
  title: BinLog segment file, format version 2, tolerant view
  file-extension: dat
  license: MIT
  ks-version: '0.11'
  endian: be
  imports:
    - binlog_v2
doc: |
  A view of a version 2 segment that does not fail on a torn tail: the state
  a crash may leave beyond the commit point (a partly written record, zeros,
  garbage). It shows the header when there is one, every whole record from
  offset 256 on (committed or not: compare `ofs_record` with
  `header.active_slot.ofs_commit`), and the bytes after the last whole record
  as `torn_tail`.

  A record counts as whole when the file holds all of its bytes and its fixed
  fields pass the checks of `binlog_v2::record` (see
  `binlog_v2::record_probe`); checksums are not part of that, so a caller
  walking the tail stops at the first record whose checksums fail, as the
  recovery scan does. A file without a header (shorter than 256 bytes, or
  not starting a version 2 header, such as the all-zero header of a segment
  that was never written) is all `torn_tail`.

  It still fails on a header that carries the signature but breaks a header
  check: that is corruption, not a torn tail.
doc-ref: spec/format.md#4-records
seq:
  - id: header
    type: binlog_v2::segment_header
    size: 256
    if: has_header
  - id: records
    type: binlog_v2::record
    if: has_header and first_record_probe.is_complete
    repeat: until
    repeat-until: not _.next_record_probe.is_complete
    doc: Every whole record from offset 256 on, in file order.
  - id: torn_tail
    size-eos: true
    doc: The bytes after the last whole record (the whole file when there is no header).
instances:
  signature_probe:
    pos: 24
    size: 8
    if: _io.size >= 256
  has_header:
    value: _io.size >= 256 and signature_probe == [0x89, 0x42, 0x4c, 0x4f, 0x47, 0x0d, 0x0a, 0x1a]
  first_record_probe:
    # Clamped rather than guarded by `if`: generated Go evaluates both operands
    # of `and`, so this must be safe to read on any file.
    pos: '_io.size < 256 ? _io.size.as<s8> : 256'
    type: binlog_v2::record_probe
  ofs_torn_tail:
    value: (_io.size - torn_tail.size.as<s8>).as<s8>
    doc: Where the whole records end; the file size when nothing is torn.
