meta:
  id: binlog_index
  title: BinLog sparse index file, format revision 2.1
  file-extension: idx
  license: MIT
  ks-version: '0.11'
  endian: be
doc: |
  The sparse index (`NNNNNNNN.idx`) of one finished segment of a BinLog event
  log, added by format revision 2.1: a 72-byte header, then `num_entries`
  entries of 32 bytes, each pointing to one data record of the segment (its
  index, offset and timestamp). All integers are big-endian.

  An index is never authoritative: a reader uses it only when it passes the
  index check, and starts a walk at an entry only when that entry passes the
  entry check (spec section 18.5); otherwise it reads the segment as if
  there were no index, and reports nothing.

  `entries` holds every whole 32-byte entry the file holds, however many the
  header claims, so a hostile `num_entries` never makes a parser read or
  allocate beyond the file; `has_expected_size` tells whether the file is
  exactly as long as the header says (a shorter one is a torn write).

  Kaitai expressions cannot compute a CRC, so every checksum is left to the
  caller: each covered byte range is exposed (`crc_covered` instances).
  Every stored checksum is the masked CRC32C of its range (spec section 5).
  `span_crc` covers bytes of the segment, not of the index.
doc-ref: spec/index.md#182-file-layout
seq:
  - id: header
    type: index_header
    size: 72
  - id: entries
    type: entry
    size: 32
    repeat: expr
    repeat-expr: num_entries_in_file
    doc: |
      Every whole entry in the file, in file order: entry `k` at offset
      `72 + 32 * k`. As many as `header.num_entries` when `has_expected_size`.
  - id: trailing
    size-eos: true
    doc: |
      The bytes after the last whole entry: empty in a well-formed index,
      part of an entry in a torn one.
instances:
  num_entries_in_file:
    value: ((_io.size - 72) / 32).as<s8>
    doc: The number of whole 32-byte entries after the header.
  has_expected_size:
    value: trailing.size == 0 and num_entries_in_file == header.num_entries.as<s8>
    doc: |
      The file is exactly `72 + 32 * num_entries` bytes long (index check,
      step 3). A reader ignores an index for which this does not hold.
    doc-ref: spec/index.md#185-reading-with-an-index
types:
  index_header:
    doc: |
      Which segment the index describes (its version, number, log id, base
      index, end `S` and end index `I_S`), and how many entries follow at
      which spacing. A reader compares all of it with the segment before it
      uses the index.
    doc-ref: spec/index.md#182-file-layout
    seq:
      - id: signature
        contents: [0x89, BLIDX, 0x0d, 0x0a]
        doc: PNG-style, so 7-bit and newline-translating transfers break it.
      - id: version
        type: u2
        valid: 1
        doc: |
          1: this layout. An index of another version is ignored by readers
          of this revision (a later one may define it); this description
          does not read it.
      - id: segment_version
        type: u2
        doc: The `version` of the indexed segment's header; 2, or 1 for a legacy segment.
        doc-ref: spec/index.md#186-version-1-segments
      - id: log_number
        type: u4
        doc: The indexed segment's log number, as in both file names.
      - id: log_id
        size: 16
        doc: The indexed segment's `log_id`; all zero for a version 1 segment.
      - id: base_index
        type: u8
        doc: The segment's `base_index`; 1 for a version 1 segment.
      - id: ofs_segment_end
        -orig-id: segment_end
        type: u8
        doc: |
          `S`: the offset where the segment's records end (of a version 1
          segment: its last element position).
      - id: end_index
        type: u8
        doc: |
          `I_S`: the index after the segment's last record; `end_index -
          base_index` data records.
      - id: num_entries
        -orig-id: entry_count
        type: u8
        doc: The number of entries that follow; not to be trusted before `header_crc` is verified.
      - id: interval
        type: u4
        doc: The spacing of entries in bytes (spec section 18.3); at least 1.
        doc-ref: spec/index.md#183-the-entry-rule
      - id: header_crc
        type: u4
        doc: Masked CRC32C of `crc_covered` (bytes 0..67).
        doc-ref: spec/format.md#5-checksums
    instances:
      is_legacy_segment:
        value: segment_version == 1
      crc_covered:
        pos: 0
        size: 68
        doc: Header bytes 0..67, covered by `header_crc`.
  entry:
    doc: |
      One data record of the segment: where a walk may start. Entries lie in
      strictly increasing order of `ofs_record` and `index`; a reader checks
      that, and that a walk from the previous entry lands on this one,
      before it starts a walk here.
    doc-ref: spec/index.md#182-file-layout
    seq:
      - id: index
        type: u8
        doc: |
          The index of the data record (of a version 1 segment: its number
          within the segment, from 1).
      - id: ofs_record
        -orig-id: offset
        type: u8
        doc: The offset of that record's first byte (its length field) in the segment.
      - id: timestamp_us
        type: s8
        doc: That record's `timestamp_us`; 0 for a version 1 segment.
      - id: span_crc
        type: u4
        doc: |
          Masked CRC32C of the segment's bytes from `ofs_record` up to the
          next entry's `ofs_record` (for the last entry, up to
          `ofs_segment_end`). Checking it needs the segment.
        doc-ref: spec/format.md#5-checksums
      - id: entry_crc
        type: u4
        doc: Masked CRC32C of `crc_covered` (entry bytes 0..27).
        doc-ref: spec/format.md#5-checksums
    instances:
      crc_covered:
        pos: 0
        size: 28
        doc: Entry bytes 0..27, covered by `entry_crc`.
