package binlog

import "math"

// Record layout constants (section 4).
const (
	RecordHeaderSize = 40
	MinLength        = 36
	MaxLength        = 1<<31 - 1
	MaxPayload       = MaxLength - MinLength
	FrameData        = 1
	NoAsqn           = -1
)

// Record is a data record returned by a reader. Legacy records (version 1)
// carry no checksum, index, asqn or timestamp of their own: Checked is false.
type Record struct {
	Log         uint32
	Offset      uint64
	Index       uint64
	Asqn        int64
	TimestampUS int64
	Checked     bool
	Payload     []byte
}

// Ref returns the ref of the record (section 10.6).
func (r Record) Ref() Ref { return Ref{Log: r.Log, Offset: r.Offset, Index: r.Index} }

// AppendRecord appends the encoding of a data record to dst (W-6).
func AppendRecord(dst []byte, index uint64, asqn, timestampUS int64, payload []byte) []byte {
	var h [RecordHeaderSize]byte
	be.PutUint32(h[0:], uint32(MinLength+len(payload)))
	h[4] = FrameData
	be.PutUint64(h[8:], index)
	be.PutUint64(h[16:], uint64(asqn))
	be.PutUint64(h[24:], uint64(timestampUS))
	be.PutUint32(h[32:], MaskedCRC(payload))
	be.PutUint32(h[36:], MaskedCRC(h[:36]))
	return append(append(dst, h[:]...), payload...)
}

// walkState is what a record walk carries (section 4.3): the expected index
// E and the previous asqn A.
type walkState struct {
	E uint64
	A int64
}

// advance applies a verified record to the walk state.
func (st *walkState) advance(frame byte, index uint64, asqn int64) {
	if frame == FrameData {
		st.E = index + 1
		if asqn != NoAsqn {
			st.A = asqn
		}
	}
}

// decoded is a record that passed steps 1 to 8 of section 4.3.1.
type decoded struct {
	frame   byte
	index   uint64
	asqn    int64
	ts      int64
	payload []byte
	end     uint64
}

func (d decoded) record(log uint32, off uint64) Record {
	return Record{Log: log, Offset: off, Index: d.index, Asqn: d.asqn, TimestampUS: d.ts, Checked: true, Payload: d.payload}
}

// noBound stands for the absent segment end of tail mode.
const noBound = math.MaxUint64

// checkRecord applies steps 1 to 8 of section 4.3.1 to the record at o, with
// segment end c (noBound in tail mode, where step 4 checks only the length).
func checkRecord(s *segmentFile, o, c uint64, st walkState) (decoded, error) {
	return checkRecordKeeping(s, o, c, st, true)
}

// verifyRecord is checkRecord for a record that is walked over but not
// returned: its payload is checksummed in pieces and not kept.
func verifyRecord(s *segmentFile, o, c uint64, st walkState) (decoded, error) {
	return checkRecordKeeping(s, o, c, st, false)
}

func checkRecordKeeping(s *segmentFile, o, c uint64, st walkState, keep bool) (decoded, error) {
	fail := func(cl Class, msg string) (decoded, error) {
		return decoded{}, recordError(cl, s.log, o, st.E, msg)
	}
	// The arithmetic is safe from wrapping: o may be any u8 (a ref's
	// offset under a forged commit point near 2^64), and o + 40 or
	// o + 4 + length would wrap around and pass the bounds.
	b := min(c, s.size)
	if o > b || b-o < RecordHeaderSize {
		return fail(ClassTruncated, "record header cut short")
	}
	h, err := s.readAt(o, RecordHeaderSize)
	if err != nil {
		return decoded{}, err
	}
	if be.Uint32(h[36:]) != MaskedCRC(h[:36]) {
		return fail(ClassChecksumMismatch, "record header checksum")
	}
	frame := h[4]
	if (frame != FrameData && frame < 128) || h[5] != 0 || h[6] != 0 || h[7] != 0 {
		return fail(ClassUnsupportedFeature, "frame, flags or reserved bytes")
	}
	length := uint64(be.Uint32(h[0:]))
	// c >= b >= o + 40 here, so c - o - 4 does not wrap.
	if length < MinLength || length > MaxLength || length > c-o-4 {
		return fail(ClassLengthOutOfRange, "")
	}
	end := o + 4 + length
	if end > s.size {
		return fail(ClassTruncated, "payload cut short")
	}
	var payload []byte
	var sum uint32
	if keep {
		if payload, err = s.readAt(o+RecordHeaderSize, length-MinLength); err == nil {
			sum = MaskedCRC(payload)
		}
	} else {
		sum, err = s.maskedCRCAt(o+RecordHeaderSize, length-MinLength)
	}
	if err != nil {
		return decoded{}, err
	}
	if be.Uint32(h[32:]) != sum {
		return fail(ClassChecksumMismatch, "payload checksum")
	}
	d := decoded{frame: frame, index: be.Uint64(h[8:]), asqn: int64(be.Uint64(h[16:])),
		ts: int64(be.Uint64(h[24:])), payload: payload, end: end}
	if d.index != st.E {
		return fail(ClassIndexDiscontinuity, "")
	}
	if d.asqn != NoAsqn && (d.asqn < 0 || d.asqn <= st.A) {
		return fail(ClassAsqnNotIncreasing, "")
	}
	return d, nil
}

// walkCommitted walks records from o in committed mode with segment end c,
// calling emit for each data record, until it reaches limit (c, or an
// offset below it where the caller has a check to make). It returns where
// it stopped.
func walkCommitted(s *segmentFile, o, limit, c uint64, st *walkState, emit func(Record) error) (uint64, error) {
	for o < limit {
		d, err := checkRecord(s, o, c, *st)
		if err != nil {
			return o, err
		}
		if d.frame == FrameData {
			if err := emit(d.record(s.log, o)); err != nil {
				return o, err
			}
		}
		st.advance(d.frame, d.index, d.asqn)
		o = d.end
	}
	return o, nil
}

// tailResult is where a tail-mode walk stopped and the state it reached.
// The stop reason of section 4.3.2 is informative and not kept.
type tailResult struct {
	stop   uint64
	st     walkState
	lastTS int64
}

// walkTail walks in tail mode (section 4.3.2) from o. successorBase, when
// not nil, adds stop rule s. Only a failed read is returned as an error.
func walkTail(s *segmentFile, o uint64, st walkState, lastTS int64, successorBase *uint64) (tailResult, error) {
	for {
		res := tailResult{stop: o, st: st, lastTS: lastTS}
		if successorBase != nil && st.E >= *successorBase { // s: successor
			return res, nil
		}
		if o >= s.size { // a: end
			return res, nil
		}
		if o+5 <= s.size {
			fb, err := s.readAt(o+4, 1)
			if err != nil {
				return res, err
			}
			if fb[0] == 0 { // b: unwritten
				return res, nil
			}
		}
		d, err := verifyRecord(s, o, noBound, st)
		if err != nil {
			if c := ClassOf(err); c != ClassIOError && c != "" {
				return res, nil // 1..8: the class of the failing step
			}
			return res, err
		}
		if d.frame == FrameData {
			lastTS = d.ts
		}
		st.advance(d.frame, d.index, d.asqn)
		o = d.end
	}
}
