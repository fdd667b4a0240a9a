package binlog

import (
	"os"
	"path/filepath"
)

// prepare runs steps 2 to 5 of the write protocol under the lock and
// returns the open, recovered last segment, or nil for a log with no
// segment that this writer may not create.
func (w *Writer) prepare() (*writeTarget, error) {
	// Step 2: is the segment of the previous batch still the last one?
	if w.cur != nil {
		if _, err := os.Lstat(filepath.Join(w.dir, SegmentName(w.cur.log+1))); err == nil {
			w.cur.close()
			w.cur = nil
		} else if !os.IsNotExist(err) {
			return nil, ioError(u32p(w.cur.log+1), nil, err)
		}
	}
	if w.cur == nil {
		t, err := w.findLast()
		if err != nil || t == nil {
			return nil, err
		}
		w.cur = t
	}
	// Step 3: the header and, on the first batch, the committed records.
	t := w.cur
	if err := t.stat(); err != nil {
		return nil, err
	}
	h, err := t.header()
	if err != nil {
		return nil, err
	}
	t.h = h
	if h.Legacy() {
		return nil, segmentError(ClassUnsupportedVersion, t.log, 4, "the last segment is version 1")
	}
	if !w.validated {
		st := walkState{E: h.BaseIndex, A: NoAsqn}
		if _, err := walkCommitted(t.segmentFile, HeaderSize, h.Active.CommitOffset, h.Active.CommitOffset, &st, func(Record) error { return nil }); err != nil {
			return nil, err
		}
		w.validated = true
	}
	// Step 4: a sealed last segment without successor (W-29).
	if s := h.Active; s.NextLogNumber != 0 {
		next, err := w.createSegment(newNextSegment(t.log+1, h.LogID, s.NextIndex, s.LastAsqn, s.LastTimestampUS, w.now()))
		if err != nil {
			return nil, err
		}
		t.close()
		w.cur, t = next, next
	}
	// Step 5: the tail check (section 7.1).
	if err := w.checkTail(t); err != nil {
		return nil, err
	}
	return t, nil
}

// findLast lists and cleans the directory, seals a finished predecessor and
// opens the highest-numbered segment (step 2 of section 6.2).
func (w *Writer) findLast() (*writeTarget, error) {
	nums, err := w.cleanDirectory()
	if err != nil {
		return nil, err
	}
	if len(nums) == 0 {
		if !w.create {
			return nil, nil
		}
		return w.createSegment(newNextSegment(1, newLogID(), 1, NoAsqn, 0, w.now()))
	}
	last := nums[len(nums)-1]
	if len(nums) > 1 && nums[len(nums)-2] == last-1 {
		if err := w.sealPredecessor(last-1, last); err != nil {
			return nil, err
		}
	}
	return w.openTarget(last)
}

// cleanDirectory deletes stale temporary files and blank last segments and
// syncs the directory if it deleted anything (section 7.4, W-25). It
// returns the segments that remain.
func (w *Writer) cleanDirectory() ([]uint32, error) {
	entries, err := os.ReadDir(w.dir)
	if err != nil {
		return nil, ioError(nil, nil, err)
	}
	deleted := false
	for _, e := range entries {
		if tempNameRE.MatchString(e.Name()) {
			if err := os.Remove(filepath.Join(w.dir, e.Name())); err != nil && !os.IsNotExist(err) {
				return nil, ioError(nil, nil, err)
			}
			deleted = true
		}
	}
	nums, err := listSegments(w.dir)
	if err != nil {
		return nil, err
	}
	for len(nums) > 0 {
		last := nums[len(nums)-1]
		s, err := openSegment(w.dir, last, os.O_RDONLY)
		if err != nil {
			return nil, err
		}
		blank, err := s.blank()
		s.close()
		if err != nil {
			return nil, err
		}
		if !blank {
			break
		}
		if err := os.Remove(filepath.Join(w.dir, SegmentName(last))); err != nil {
			return nil, ioError(u32p(last), nil, err)
		}
		deleted = true
		nums = nums[:len(nums)-1]
	}
	if deleted {
		if err := syncDir(w.dir); err != nil {
			return nil, ioError(nil, nil, err)
		}
	}
	return nums, nil
}

// sealPredecessor seals segment n, finished because last = n+1 exists, when
// it is still open (section 8.5, W-30). A predecessor that cannot be sealed
// (damaged header, version 1, broken chain) is left untouched.
func (w *Writer) sealPredecessor(n, last uint32) error {
	succ, err := w.openTarget(last)
	if err != nil {
		if ClassOf(err) == ClassIOError {
			return err
		}
		return nil // the last segment's header error is reported by step 3
	}
	succ.close()
	p, err := w.openTarget(n)
	if err != nil {
		if ClassOf(err) == ClassIOError {
			return err
		}
		return nil
	}
	defer p.close()
	if p.h.Legacy() || succ.h.Legacy() || p.h.Active.NextLogNumber != 0 {
		return nil
	}
	s := p.h.Active
	tr, err := walkTail(p.segmentFile, s.CommitOffset, walkState{E: s.NextIndex, A: s.LastAsqn}, s.LastTimestampUS, &succ.h.BaseIndex)
	if err != nil {
		return err
	}
	if tr.st.E != succ.h.BaseIndex {
		return nil // chain broken: readers report it, a writer does not hide it
	}
	changed, err := removeAfter(p, tr.stop)
	if err != nil {
		return err
	}
	if changed || tr.stop > s.CommitOffset {
		if err := w.sync(p); err != nil {
			return err
		}
	}
	seal := Slot{Generation: s.Generation + 1, CommitOffset: tr.stop, NextIndex: tr.st.E,
		LastAsqn: tr.st.A, LastTimestampUS: tr.lastTS, NextLogNumber: last}
	if err := w.publish(p, seal); err != nil {
		return err
	}
	return w.sync(p)
}

// checkTail runs the tail check of section 7.1 and, when it says so, the
// recovery procedure of section 7.2 (W-20).
func (w *Writer) checkTail(t *writeTarget) error {
	c := t.h.Active.CommitOffset
	need := t.size > c
	if t.h.Preallocated() {
		if !w.probed[t.log] {
			need = true
		} else {
			need = false
			if c < t.size {
				probe, err := t.readAt(c, min(RecordHeaderSize, t.size-c))
				if err != nil {
					return err
				}
				need = !allZero(probe)
			}
		}
	}
	if need {
		if err := w.recoverTail(t); err != nil {
			return err
		}
	}
	w.probed[t.log] = true
	return nil
}

// recoverTail is the recovery procedure of section 7.2 on the last segment.
func (w *Writer) recoverTail(t *writeTarget) error {
	s := t.h.Active
	tr, err := walkTail(t.segmentFile, s.CommitOffset, walkState{E: s.NextIndex, A: s.LastAsqn}, s.LastTimestampUS, nil)
	if err != nil {
		return err
	}
	changed, err := removeAfter(t, tr.stop)
	if err != nil {
		return err
	}
	if !changed && tr.stop == s.CommitOffset {
		return nil
	}
	if err := w.sync(t); err != nil {
		return err
	}
	if tr.stop == s.CommitOffset {
		return nil
	}
	adopted := Slot{Generation: s.Generation + 1, CommitOffset: tr.stop, NextIndex: tr.st.E,
		LastAsqn: tr.st.A, LastTimestampUS: tr.lastTS}
	if err := w.publish(t, adopted); err != nil {
		return err
	}
	return w.sync(t)
}

// removeAfter makes the file hold nothing but zeros, or nothing, after x
// (section 7.2 step 3, W-22) and reports whether it changed anything.
func removeAfter(t *writeTarget, x uint64) (bool, error) {
	if err := t.stat(); err != nil {
		return false, err
	}
	size := t.size
	if size <= x {
		return false, nil
	}
	if t.h.Preallocated() {
		nz, err := t.firstNonZero(x)
		if err != nil {
			return false, err
		}
		if nz == size {
			return false, nil
		}
	}
	// Truncating first and extending again keeps the crash-safe order for
	// a preallocated segment: zeros at x never precede non-zero bytes.
	if err := t.f.Truncate(int64(x)); err != nil {
		return false, ioError(u32p(t.log), u64p(x), err)
	}
	if t.h.Preallocated() {
		if err := t.f.Truncate(int64(size)); err != nil {
			return false, ioError(u32p(t.log), u64p(x), err)
		}
	}
	return true, t.stat()
}
