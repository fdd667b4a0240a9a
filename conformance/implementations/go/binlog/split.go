package binlog

import "os"

// ReadSplit calls emit for the committed records of segment log whose
// offset lies in [start, stop) (section 10.5, R-27): it starts at the first
// record boundary at or after start and returns the records before stop.
// It then walks on, returning nothing, up to the boundary found from stop
// (or the segment end S when there is none), where the next split starts:
// damage before that point is reported here, so that consecutive splits
// either return every record exactly once or one of them fails. A walk that
// does not land exactly on the boundary found from stop, because that
// boundary lies inside a record it walked over (a payload holding a valid
// record of the log with the right index), cannot resolve where the split
// ends: it reports ambiguous_split at that boundary, with the index stored
// there (decision D3). A split that lands on that boundary checks the
// record there by steps 7 and 8 of section 4.3.1 against its walk (the
// next split, starting there, knows neither the expected index nor the
// previous asqn) and reports index_discontinuity or asqn_not_increasing
// there, after the records it returned. When that record passes, carries no
// asqn and the walk holds one, the split looks on to the first record that
// carries an asqn (LOOK of section 10.2.2, R-27; lookPast), since the splits
// that start among the records without an asqn know no earlier asqn.
// The checks use S and the file size as a sequential
// reader's do; min(S, F) only bounds the boundary searches, which look for
// an index from the base index up to below the segment's end index I_S.
func ReadSplit(dir string, log uint32, start, stop uint64, emit func(Record) error) error {
	v, err := newLogView(dir)
	if err != nil {
		return err
	}
	defer v.close()
	if log == v.blank {
		return nil // a blank last segment holds no record
	}
	if !v.present[log] {
		return ioError(u32p(log), nil, os.ErrNotExist)
	}
	s, h, err := v.header(log)
	if err != nil {
		return err
	}
	if h.Legacy() {
		return segmentError(ClassUnsupportedVersion, log, 4, "version 1 records carry nothing to find a boundary by")
	}
	slot, sb, err := v.segmentEnd(log, s, h)
	if err != nil {
		return err
	}
	bound, want := min(sb.end, s.size), indexRange{h.BaseIndex, sb.endIndex}
	first, ok, err := findBoundary(s, max(start, HeaderSize), bound, want)
	if err != nil || !ok || stop <= first.at {
		return err
	}
	until := candidate{at: sb.end}
	next, found, err := findBoundary(s, stop, bound, want)
	if err != nil {
		return err
	}
	if found {
		until = next
	}
	// Step 4's bound is a sequential reader's: the commit point for a
	// record that starts below it, S for one at or beyond it (the two
	// differ only in a finished segment that is not sealed).
	u := func(o uint64) uint64 {
		if o < slot.CommitOffset {
			return slot.CommitOffset
		}
		return sb.end
	}
	st := walkState{E: first.index, A: NoAsqn}
	o := first.at
	for {
		if o == slot.CommitOffset {
			if err := checkNextIndex(s, slot, &st, nil); err != nil {
				return err
			}
		}
		if o == until.at {
			if !found {
				return nil // S: nothing lies beyond
			}
			if err := checkContinuityAt(s, o, u(o), st); err != nil {
				return err
			}
			return lookPast(s, slot, sb.end, o, u, st)
		}
		if o > until.at {
			// The walk stepped from a record before the boundary found from
			// stop to one after it: that boundary lies inside a record.
			return &Error{Class: ClassAmbiguousSplit, Log: u32p(log), Offset: u64p(until.at), Index: u64p(until.index),
				Msg: "the boundary found from the stop offset lies inside a record: split elsewhere or read the segment sequentially"}
		}
		var d decoded
		if o < stop {
			d, err = checkRecord(s, o, u(o), st)
		} else {
			d, err = verifyRecord(s, o, u(o), st)
		}
		if err != nil {
			return err
		}
		if d.frame == FrameData && o < stop {
			if err := emit(d.record(log, o)); err != nil {
				return err
			}
		}
		st.advance(d.frame, d.index, d.asqn)
		o = d.end
	}
}

// findBoundary returns the first record boundary at or after start
// (section 10.5): a position that satisfies conditions 1 to 6 of section
// 10.4 with an index in want, followed either by bound (S' = min(S, F)) or
// by a record that passes steps 1 to 6 of section 4.3.1 and carries the
// next index. Offset 256 is always a boundary, with the segment's base
// index (want.lo), whatever the segment holds there (section 10.5 step 1):
// also in an empty segment (C = 256), whose walk makes the check of R-39
// at once, and in a file cut short at or below 256 + 40, whose walk reports
// truncated at 256 as a sequential reader's does.
func findBoundary(s *segmentFile, start, bound uint64, want indexRange) (candidate, bool, error) {
	if start == HeaderSize {
		return candidate{at: HeaderSize, index: want.lo}, true, nil
	}
	for from := start; ; {
		c, ok, err := findCandidate(s, from, bound, want)
		if err != nil || !ok || c.end == bound {
			return c, ok, err
		}
		_, err = verifyRecord(s, c.end, bound, walkState{E: c.index + 1, A: NoAsqn})
		// Step 8 (the asqn) is not part of the continuity check.
		if err == nil || ClassOf(err) == ClassAsqnNotIncreasing {
			return c, true, nil
		}
		if ClassOf(err) == ClassIOError {
			return c, false, err
		}
		from = c.at + 1
	}
}

// checkContinuityAt ends a split that landed on the boundary b found from
// its stop offset (section 10.5): the next split starts there with E := the
// index stored at b and A := -1, so it cannot see a record at b that breaks
// the walk's continuity (a resurrected record, a missing one, an asqn going
// back). Only this split knows E and A there: it checks the record at b by
// steps 7 and 8 of section 4.3.1 and reports index_discontinuity or
// asqn_not_increasing at b. A failure of steps 1 to 6 at b stays the next
// split's to report.
func checkContinuityAt(s *segmentFile, b, c uint64, st walkState) error {
	_, err := verifyRecord(s, b, c, st)
	switch ClassOf(err) {
	case ClassIndexDiscontinuity, ClassAsqnNotIncreasing, ClassIOError:
		return err
	}
	return nil
}

// lookPast is LOOK(b(t)) of section 10.2.2, for a split that landed
// on the boundary b found from its stop offset with the walk state st. The
// split that starts at b starts with A := -1, and so does every split after
// it that meets no asqn before its own stop: when the record at b carries no
// asqn, only this split holds the asqn a sequential reader compares the
// next asqn with. So, holding one, it walks on from b in committed mode,
// returning nothing, over the records without an asqn (and skippable ones,
// which set no A) up to the first data record that carries an asqn, and
// reports asqn_not_increasing there (or at a skippable record whose asqn
// fails on the way). Any other damage ends the look without a report (the
// split that holds it reports it, and a sequential reader resynchronises
// after it with A := -1), and so do S and a failure of R-39 at the commit
// point, which the split that reaches it reports first. It reads nothing
// beyond the record where it ends.
func lookPast(s *segmentFile, slot Slot, end, b uint64, u func(uint64) uint64, st walkState) error {
	if st.A == NoAsqn {
		return nil
	}
	for o := b; o < end; {
		if o == slot.CommitOffset && o != b && st.E != slot.NextIndex {
			return nil
		}
		d, err := verifyRecord(s, o, u(o), st)
		if err != nil {
			switch ClassOf(err) {
			case ClassAsqnNotIncreasing, ClassIOError:
				return err
			}
			return nil
		}
		if d.frame == FrameData && d.asqn != NoAsqn {
			return nil // the first asqn follows the split's: the split that holds it goes on from there
		}
		st.advance(d.frame, d.index, d.asqn)
		o = d.end
	}
	return nil
}
