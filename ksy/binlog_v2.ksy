meta:
  id: binlog_v2
  title: BinLog segment file, format version 2
  file-extension: dat
  license: MIT
  ks-version: '0.11'
  endian: be
doc: |
  One segment file (`NNNNNNNN.dat`) of a BinLog event log, format version 2:
  a 256-byte header holding two commit slots, then contiguous records, each a
  40-byte record header and a payload. All integers are big-endian.

  This is the strict view. It parses the committed records only: from offset
  256 up to the commit offset of the active commit slot, and it fails unless
  they end exactly there. Bytes beyond the commit point (the tail) are not
  parsed; `binlog_v2_tolerant` shows them.

  Kaitai expressions cannot compute a CRC, so every checksum is left to the
  caller: each covered byte range is exposed (`crc_covered*` instances, and
  `payload`). Every stored checksum is the masked CRC32C of its range (spec
  section 5). A full reader also has to add what this description cannot
  express: choosing the active slot among those whose checksum holds (here it
  is simply the higher generation), index continuity, asqn order, and the
  chain of segments.
doc-ref: spec/format.md#3-the-segment-header
seq:
  - id: header
    type: segment_header
    size: 256
  - id: records
    type: record
    if: header.active_slot.ofs_commit > 256
    repeat: until
    repeat-until: _io.pos >= _root.header.active_slot.ofs_commit.as<s8>
    doc: The committed records, in file order. Absent when the segment holds none.
  - id: commit_point
    size: 0
    valid:
      # `_.size == 0` always holds; without a use of `_` the Go output does not compile.
      expr: _.size == 0 and _io.pos == _root.header.active_slot.ofs_commit.as<s8>
    doc: |
      Reads nothing. Its check fails when the last committed record crosses
      the commit point (records end exactly on it) or when the active slot's
      commit offset is below 256, as in a header whose slots were never written.
types:
  segment_header:
    doc: |
      The first 256 bytes of a segment. The fields up to `header_crc` never
      change after creation; the commit slots and the three mirror fields
      (`status`, `ofs_last_element`, `next_log_number`) do.
    doc-ref: spec/format.md#3-the-segment-header
    seq:
      - id: len_header
        -orig-id: header_length
        type: u4
        valid: 252
        doc: Bytes after this field, so that the header reads as one record.
      - id: version
        type: u2
        valid: 2
      - id: status
        type: u2
        enum: segment_status
        doc: Mirror of the active slot; informative only.
      - id: ofs_last_element
        -orig-id: last_element_position
        type: u8
        doc: Mirror of the active slot's commit offset; informative only.
      - id: log_number
        type: u4
        doc: This segment's number; equals the number in the file name.
      - id: next_log_number
        type: u4
        doc: Mirror of the active slot's `next_log_number`; informative only.
      - id: signature
        contents: [0x89, BLOG, 0x0d, 0x0a, 0x1a]
        doc: PNG-style, so 7-bit and newline-translating transfers break it.
      - id: log_id
        size: 16
        doc: Random id of the log, the same in every segment of it.
      - id: base_index
        type: u8
        doc: Index of the first record of this segment.
      - id: created_us
        type: s8
        doc: Creation time, microseconds since 1970-01-01T00:00:00Z.
      - id: flags
        type: u4
        valid:
          expr: (_ & 0xfffffffe) == 0
        doc: |
          Must-understand feature bits. Bit 0: PREALLOCATED (the file was
          extended to `capacity` with zeros). Any other bit is unsupported.
      - id: reserved_68
        -orig-id: reserved
        type: u4
        valid: 0
      - id: capacity
        type: u8
        doc: Preallocated file size when PREALLOCATED is set, else 0.
      - id: reserved_80
        -orig-id: reserved
        size: 12
        valid:
          expr: _.max == 0
      - id: header_crc
        type: u4
        doc: |
          Masked CRC32C of `crc_covered_length_version`,
          `crc_covered_log_number` and `crc_covered_signature_to_reserved`,
          in that order: the immutable fields.
        doc-ref: spec/format.md#5-checksums
      - id: commit_slots
        -orig-id: commit_slot
        type: commit_slot
        size: 48
        repeat: expr
        repeat-expr: 2
      - id: reserved_192
        -orig-id: reserved
        size: 64
        valid:
          expr: _.max == 0
    instances:
      is_preallocated:
        value: (flags & 1) != 0
      active_slot_index:
        value: 'commit_slots[1].generation > commit_slots[0].generation ? 1 : 0'
        doc: |
          The slot with the higher generation, chosen without checksums. A
          reader first discards a slot whose `slot_crc` fails; the two choices
          differ only after a torn slot write, and then the `slot_crc` of
          `active_slot` does not verify.
        doc-ref: spec/format.md#32-commit-slots
      active_slot:
        value: commit_slots[active_slot_index]
      crc_covered_length_version:
        pos: 0
        size: 6
        doc: Bytes 0..5, the first part covered by `header_crc`.
      crc_covered_log_number:
        pos: 16
        size: 4
        doc: Bytes 16..19, the second part covered by `header_crc`.
      crc_covered_signature_to_reserved:
        pos: 24
        size: 68
        doc: Bytes 24..91, the third part covered by `header_crc`.
  commit_slot:
    doc: |
      One of the two places the commit point is published. Generation g is
      written to slot g % 2; a generation of 0 means never written.
    doc-ref: spec/format.md#32-commit-slots
    seq:
      - id: generation
        type: u8
      - id: ofs_commit
        -orig-id: commit_offset
        type: u8
        doc: End of the last committed record; 256 when there is none.
      - id: next_index
        type: u8
        doc: Index the next data record will carry.
      - id: last_asqn
        type: s8
        doc: Highest asqn in the log up to this commit point; -1 if none.
      - id: last_timestamp_us
        type: s8
        doc: Timestamp of the log's last record up to this commit point; 0 if none.
      - id: next_log_number
        type: u4
        doc: 0 while the segment is open; the successor's number once sealed.
      - id: slot_crc
        type: u4
        doc: Masked CRC32C of `crc_covered`.
        doc-ref: spec/format.md#5-checksums
    instances:
      is_written:
        value: generation != 0
      is_sealed:
        value: next_log_number != 0
      crc_covered:
        pos: 0
        size: 44
        doc: Slot bytes 0..43, covered by `slot_crc`.
  record:
    doc: |
      A 40-byte record header and its payload. The record header is checked
      by `header_crc` before `len_record` may be trusted; a parser that has
      not verified it may read a wrong amount of payload.
    doc-ref: spec/format.md#4-records
    seq:
      - id: invoke_ofs_record
        size: 0
        if: ofs_record >= 0
        doc: Reads nothing; makes `ofs_record` capture the position before the record is read.
      - id: len_record
        -orig-id: length
        type: u4
        valid:
          min: 36
          max: 0x7fffffff
        doc: Bytes after this field, 36 + payload size.
      - id: frame
        type: u1
        valid:
          expr: _ == 1 or _ >= 128
        doc: |
          1 = data record. 128..255 = skippable frame: verify its checksums,
          then skip it; it is not an entry and consumes no index. 0 (unwritten
          space) and 2..127 (must-understand) are never valid records.
      - id: flags
        type: u1
        valid: 0
      - id: reserved
        type: u2
        valid: 0
      - id: index
        type: u8
        doc: |
          1 for a log's first record, +1 for every data record across
          segments; a segment's first record carries the header's `base_index`.
      - id: asqn
        type: s8
        doc: Application sequence number, -1 when absent.
      - id: timestamp_us
        type: s8
        doc: Microseconds since 1970-01-01T00:00:00Z.
      - id: payload_crc
        type: u4
        doc: Masked CRC32C of `payload`.
        doc-ref: spec/format.md#5-checksums
      - id: header_crc
        type: u4
        doc: Masked CRC32C of `crc_covered_header`.
        doc-ref: spec/format.md#5-checksums
      - id: payload
        size: len_record - 36
    instances:
      ofs_record:
        value: _io.pos.as<s8>
        doc: Offset of the record in the segment file.
      ofs_end:
        value: (ofs_record + 4 + len_record.as<s8>).as<s8>
        doc: Offset just past the record, where the next one starts.
      is_data:
        value: frame == 1
      has_asqn:
        value: asqn != -1
      crc_covered_header:
        pos: ofs_record
        size: 36
        doc: Record bytes 0..35, covered by `header_crc`.
      next_record_probe:
        pos: ofs_end
        type: record_probe
        doc: Whether a whole record follows this one (used by `binlog_v2_tolerant`).
  record_probe:
    doc: |
      Looks at the bytes at one offset: is there room for a whole record whose
      fixed fields pass the `valid` checks of `record`? A `record` parsed
      where `is_complete` holds cannot fail. Checksums are not looked at.
    doc-ref: spec/format.md#4-records
    seq:
      - id: len_record
        type: u4
        if: len_available >= 40
        doc: Evaluates `len_available` first, before anything is read.
      - id: frame
        type: u1
        if: len_available >= 40
      - id: flags
        type: u1
        if: len_available >= 40
      - id: reserved
        type: u2
        if: len_available >= 40
    instances:
      len_available:
        value: (_io.size - _io.pos).as<s8>
      is_complete:
        value: >-
          len_available >= 40
          and len_record >= 36 and len_record <= 0x7fffffff
          and len_record.as<s8> <= len_available - 4
          and (frame == 1 or frame >= 128)
          and flags == 0 and reserved == 0
enums:
  segment_status:
    0: open
    1: closed
