package binlog

import "errors"

// Damage is one damaged region a tolerant read stepped over (section 10.4,
// the error class, where it was found, the expected index there, the
// bytes skipped and the index reading resumed at (nil when it found no
// record to resume at).
type Damage struct {
	Class        Class
	Log          uint32
	Offset       *uint64 // nil for a missing segment
	Index        uint64
	BytesSkipped uint64
	ResumedIndex *uint64
}

// steppable reports whether a tolerant reader steps over err: damage found
// by the record checks of section 4.3.1. Header damage and failed reads stop it.
func steppable(err error) (*Error, bool) {
	var e *Error
	if !errors.As(err, &e) {
		return nil, false
	}
	switch e.Class {
	case ClassTruncated, ClassChecksumMismatch, ClassUnsupportedFeature, ClassLengthOutOfRange,
		ClassIndexDiscontinuity, ClassAsqnNotIncreasing:
		return e, true
	}
	return nil, false
}

// candidate is a position that satisfies conditions 1 to 6 of section 10.4.
type candidate struct {
	at, index, end uint64
}

// scanChunk bounds the bytes read at once while searching for a record. It
// bounds memory only: every position of the search is tried, whatever the
// size of the candidate record there.
const scanChunk = 1 << 20

// indexRange is condition 6 of section 10.4: lo ≤ index < hi, with lo the
// expected index E (or the base index, for a boundary search) and hi the
// end index I_S of the segment, the index a walk expects at its end S.
type indexRange struct{ lo, hi uint64 }

func (r indexRange) holds(index uint64) bool { return r.lo <= index && index < r.hi }

// findCandidate returns the first position p ≥ from that satisfies
// conditions 1 to 6 of section 10.4: a whole data record with valid
// checksums that ends by bound (S' = min(S, F)) and carries an index in
// want. A length is used only after its header checksum has passed. The
// search is exhaustive up to bound: there is no search window, and a
// candidate's payload is checksummed in pieces whatever its length.
func findCandidate(s *segmentFile, from, bound uint64, want indexRange) (candidate, bool, error) {
	if want.lo >= want.hi {
		return candidate{}, false, nil // no index can satisfy condition 6
	}
	for base := from; bound >= RecordHeaderSize && base <= bound-RecordHeaderSize; base += scanChunk {
		buf, err := s.readAt(base, min(bound-base, scanChunk+RecordHeaderSize))
		if err != nil {
			return candidate{}, false, err
		}
		// Positions from scanChunk on are looked at by the next chunk.
		for i := 0; i < scanChunk && i+RecordHeaderSize <= len(buf); i++ {
			h := buf[i : i+RecordHeaderSize]
			if h[4] != FrameData || be.Uint32(h[36:]) != MaskedCRC(h[:36]) {
				continue
			}
			p := base + uint64(i)
			length, index := uint64(be.Uint32(h[0:])), be.Uint64(h[8:])
			if length < MinLength || p+4+length > bound || !want.holds(index) {
				continue
			}
			sum, err := s.maskedCRCAt(p+RecordHeaderSize, length-MinLength)
			if err != nil {
				return candidate{}, false, err
			}
			if be.Uint32(h[32:]) == sum {
				return candidate{at: p, index: index, end: p + 4 + length}, true, nil
			}
		}
	}
	return candidate{}, false, nil
}

// segmentBounds is the end S of a segment (section 6.1) and its end index
// I_S: the active slot's next_index for an open or sealed segment, the
// expected index where the tail walk of section 8.4 stopped for a finished
// one that is not sealed.
type segmentBounds struct {
	end, endIndex uint64
}

// walkTolerant walks committed records from o up to limit like
// walkCommitted, with c for step 4; with onDamage set it reports record
// damage and resumes at the next position that satisfies conditions 1 to 6
// of section 10.4, searched up to S' = min(S, F) for an index E ≤
// index < I_S, with the index found there and the previous asqn reset.
// bounds gives S and I_S when a search needs them. When there is no such
// position it ends the walk at S' and reports lost: nothing after the
// damage was read, so the walk's expected index is still the damaged one's.
func walkTolerant(s *segmentFile, o, limit, c uint64, bounds func() (segmentBounds, error), st *walkState, onDamage func(Damage), emit func(Record) error) (uint64, bool, error) {
	for {
		at, err := walkCommitted(s, o, limit, c, st, emit)
		if err == nil || onDamage == nil {
			return at, false, err
		}
		e, ok := steppable(err)
		if !ok {
			return at, false, err
		}
		sb, err := bounds()
		if err != nil {
			return at, false, err
		}
		bound := min(sb.end, s.size)
		found, ok, err := findCandidate(s, at+1, bound, indexRange{st.E, sb.endIndex})
		if err != nil {
			return at, false, err
		}
		d := Damage{Class: e.Class, Log: s.log, Offset: u64p(at), Index: st.E}
		if !ok {
			d.BytesSkipped = skippedTo(bound, at)
			onDamage(d)
			return max(bound, at), true, nil
		}
		d.BytesSkipped, d.ResumedIndex = found.at-at, u64p(found.index)
		onDamage(d)
		*st = walkState{E: found.index, A: NoAsqn}
		o = found.at
	}
}

// skippedTo is the number of bytes from the damage at o to the end of the
// segment's bytes: 0 when the damage lies at or beyond that end.
func skippedTo(end, o uint64) uint64 {
	if end > o {
		return end - o
	}
	return 0
}
