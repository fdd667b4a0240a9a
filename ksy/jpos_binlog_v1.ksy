meta:
  id: jpos_binlog_v1
  title: jPOS-EE BinLog segment file, legacy format version 1
  file-extension: dat
  license: MIT
  ks-version: '0.11'
  endian: be
doc: |
  A segment file written by the jPOS-EE BinLog (format version 1), which the
  version 2 readers still read. jPOS-EE writes a 256-byte header, but its
  records start at offset 248, so the first record overwrites the last 8
  header bytes. A record is a signed 4-byte length and that many bytes of
  data: no checksum, no index, no timestamp. The data ends at
  `ofs_last_element`; bytes after it are not parsed.

  A version 1 file is recognised by version 1 and the absence of the version
  2 signature at offset 24. Readers number its records themselves, counting
  from 1 across the segments of the log, and mark them unchecked.
doc-ref: spec/legacy-v1.md#appendix-b-legacy-jpos-ee-version-1
seq:
  - id: header
    type: legacy_header
    size: 248
  - id: records
    type: record
    if: header.ofs_last_element > 248
    repeat: until
    repeat-until: _io.pos >= _root.header.ofs_last_element.as<s8>
  - id: end_of_data
    size: 0
    valid:
      # `_.size == 0` always holds; without a use of `_` the Go output does not compile.
      expr: _.size == 0 and _io.pos == _root.header.ofs_last_element.as<s8>
    doc: Reads nothing. Its check fails when the last record crosses `ofs_last_element`.
types:
  legacy_header:
    doc: The 248 header bytes that the records do not overwrite.
    doc-ref: spec/legacy-v1.md#appendix-b-legacy-jpos-ee-version-1
    seq:
      - id: len_header
        -orig-id: header_length
        type: u4
        valid: 252
        doc: |
          252: jPOS-EE's file magic, which it checks on open ("Invalid jPOS BinLog
          version" otherwise); a reader reports bad_signature at offset 0.
      - id: version
        type: u2
        valid: 1
      - id: status
        type: u2
        enum: segment_status
        valid:
          any-of:
            - segment_status::open
            - segment_status::closed
      - id: ofs_last_element
        -orig-id: last_element_position
        type: u8
        valid:
          min: 248
        doc: End of the data; 248 when the segment holds no record.
      - id: log_number
        type: u4
      - id: next_log_number
        type: u4
        doc: 0 while open; the successor's number once closed.
      - id: not_signature
        size: 8
        valid:
          expr: _ != [0x89, 0x42, 0x4c, 0x4f, 0x47, 0x0d, 0x0a, 0x1a]
        doc: Any bytes but the version 2 signature, which would make the file a malformed version 2 segment.
      - id: unused
        size: 216
        doc: Not used by version 1 readers.
  record:
    doc-ref: spec/legacy-v1.md#appendix-b-legacy-jpos-ee-version-1
    seq:
      - id: invoke_ofs_record
        size: 0
        if: ofs_record >= 0
        doc: Reads nothing; makes `ofs_record` capture the position before the record is read.
      - id: len_data
        -orig-id: length
        type: s4
        valid:
          min: 0
      - id: data
        size: len_data
    instances:
      ofs_record:
        value: _io.pos.as<s8>
        doc: Offset of the record in the segment file.
enums:
  segment_status:
    0: open
    1: closed
