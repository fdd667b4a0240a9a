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

// resyncWindow bounds the bytes read at once while searching for a record.
const resyncWindow = 1 << 20

// findCandidate returns the first position p ≥ from that satisfies
// conditions 1 to 6 of section 10.4: a whole data record with valid
// checksums that ends by bound (S' = min(S, F)) and carries an index ≥
// minIndex. A length is used only after its header checksum has passed.
func findCandidate(s *segmentFile, from, bound, minIndex uint64) (candidate, bool, error) {
	for base := from; bound >= RecordHeaderSize && base <= bound-RecordHeaderSize; base += resyncWindow {
		buf, err := s.readAt(base, min(bound-base, resyncWindow+RecordHeaderSize))
		if err != nil {
			return candidate{}, false, err
		}
		// Positions from resyncWindow on are looked at by the next window.
		for i := 0; i < resyncWindow && i+RecordHeaderSize <= len(buf); i++ {
			h := buf[i : i+RecordHeaderSize]
			if h[4] != FrameData || be.Uint32(h[36:]) != MaskedCRC(h[:36]) {
				continue
			}
			p := base + uint64(i)
			length, index := uint64(be.Uint32(h[0:])), be.Uint64(h[8:])
			if length < MinLength || p+4+length > bound || index < minIndex {
				continue
			}
			payload, err := s.readAt(p+RecordHeaderSize, length-MinLength)
			if err != nil {
				return candidate{}, false, err
			}
			if be.Uint32(h[32:]) == MaskedCRC(payload) {
				return candidate{at: p, index: index, end: p + 4 + length}, true, nil
			}
		}
	}
	return candidate{}, false, nil
}

// walkTolerant walks committed records from o up to limit like
// walkCommitted, with c for step 4; with onDamage set it reports record
// damage and resumes at the next position that satisfies conditions 1 to 6
// of section 10.4, searched up to S' = min(S, F), with the index
// found there and the previous asqn reset. segmentEnd gives S (section 6.1)
// when a search needs it. When there is no such position it ends the walk
// at S' and reports lost: nothing after the damage was read, so the walk's
// expected index is still the damaged one's.
func walkTolerant(s *segmentFile, o, limit, c uint64, segmentEnd func() (uint64, error), st *walkState, onDamage func(Damage), emit func(Record) error) (uint64, bool, error) {
	for {
		at, err := walkCommitted(s, o, limit, c, st, emit)
		if err == nil || onDamage == nil {
			return at, false, err
		}
		e, ok := steppable(err)
		if !ok {
			return at, false, err
		}
		end, err := segmentEnd()
		if err != nil {
			return at, false, err
		}
		bound := min(end, s.size)
		found, ok, err := findCandidate(s, at+1, bound, st.E)
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
