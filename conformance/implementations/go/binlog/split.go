package binlog

import "os"

// ReadSplit calls emit for the committed records of segment log whose
// offset lies in [start, stop) (section 10.5, R-27): it starts at the first
// record boundary at or after start and returns the records before stop.
// It then walks on, returning nothing, up to the boundary found from stop
// (or the segment end S when there is none), where the next split starts:
// damage before that point is reported here, so that consecutive splits
// either return every record exactly once or one of them fails. The checks
// use S and the file size as a sequential reader's do; min(S, F) only bounds
// the boundary searches.
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
	slot, end, err := v.segmentEnd(log, s, h)
	if err != nil {
		return err
	}
	bound := min(end, s.size)
	first, ok, err := findBoundary(s, max(start, HeaderSize), bound, h.BaseIndex)
	if err != nil || !ok || stop <= first.at {
		return err
	}
	until := end
	next, ok, err := findBoundary(s, stop, bound, h.BaseIndex)
	if err != nil {
		return err
	}
	if ok {
		until = next.at
	}
	st := walkState{E: first.index, A: NoAsqn}
	o := first.at
	for {
		if o == slot.CommitOffset {
			if err := checkNextIndex(s, slot, &st, nil); err != nil {
				return err
			}
		}
		if o >= until {
			return nil
		}
		d, err := checkRecord(s, o, end, st)
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
// 10.4, followed either by bound (S' = min(S, F)) or by a record that passes
// steps 1 to 6 of section 4.3.1 and carries the next index. Offset 256 is
// always a boundary, with the segment's base index.
func findBoundary(s *segmentFile, start, bound, baseIndex uint64) (candidate, bool, error) {
	if start == HeaderSize {
		return candidate{at: HeaderSize, index: baseIndex}, HeaderSize < bound, nil
	}
	for from := start; ; {
		c, ok, err := findCandidate(s, from, bound, baseIndex)
		if err != nil || !ok || c.end == bound {
			return c, ok, err
		}
		_, err = checkRecord(s, c.end, bound, walkState{E: c.index + 1, A: NoAsqn})
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
