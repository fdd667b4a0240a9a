package binlog

import (
	"os"
	"path/filepath"
	"regexp"
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
	// Step 3: the header (the committed records were checked on the first
	// batch by findLast, before anything changed).
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

// compressionTempNameRE is the second pattern of section 7.4 step 1: the
// temporary file of a compression (section 2.6).
var compressionTempNameRE = regexp.MustCompile(`^\.[0-9]{8}\.dat\.(gz|zst)\.[0-9a-f]+\.tmp$`)

// indexTempNameRE is the third pattern of section 7.4 step 1: the temporary
// file of an index builder (section 18.4).
var indexTempNameRE = regexp.MustCompile(`^\.[0-9]{8}\.idx\.[0-9a-f]+\.tmp$`)

// isTempName: a name of any pattern of section 7.4 step 1, matched exactly.
func isTempName(name string) bool {
	return tempNameRE.MatchString(name) || compressionTempNameRE.MatchString(name) || indexTempNameRE.MatchString(name)
}

// findLast finds the last segment, decides every refusal of the open, and
// only then cleans the directory and seals a finished predecessor (step 2
// of section 6.2, sections 7.4 and 8.5): a refusal changes nothing (W-37).
func (w *Writer) findLast() (*writeTarget, error) {
	temps, nums, blanks, err := w.planClean()
	if err != nil {
		return nil, err
	}
	var t *writeTarget
	var last uint32
	if len(nums) > 0 {
		last = nums[len(nums)-1]
		if t, err = w.openTarget(last); err != nil {
			return nil, err
		}
		if err := w.decide(t, nums); err != nil {
			t.close()
			return nil, err
		}
	}
	if err := w.clean(temps, blanks); err != nil {
		if t != nil {
			t.close()
		}
		return nil, err
	}
	if t == nil {
		if !w.create {
			return nil, nil // recovery on its own creates no log (section 2.4)
		}
		return w.createSegment(newNextSegment(1, newLogID(), 1, NoAsqn, 0, w.now()))
	}
	if len(nums) > 1 && nums[len(nums)-2] == last-1 {
		if err := w.sealPredecessor(last-1, t); err != nil {
			t.close()
			return nil, err
		}
	}
	return t, nil
}

// planClean lists what clean-up deletes (section 7.4): the temporary files
// no process holds, and the blank segments at the top, highest first. It
// returns the segments that remain. It deletes nothing.
func (w *Writer) planClean() (temps []string, nums []uint32, blanks []uint32, err error) {
	entries, err := os.ReadDir(w.dir)
	if err != nil {
		return nil, nil, nil, ioError(nil, nil, err)
	}
	for _, e := range entries {
		if !isTempName(e.Name()) {
			continue
		}
		held, err := heldByOther(filepath.Join(w.dir, e.Name()))
		if err != nil {
			return nil, nil, nil, ioError(nil, nil, err)
		}
		if !held {
			temps = append(temps, e.Name())
		}
	}
	if nums, err = listSegments(w.dir); err != nil {
		return nil, nil, nil, err
	}
	for len(nums) > 0 {
		top := nums[len(nums)-1]
		s, err := openSegment(w.dir, top, os.O_RDONLY)
		if err != nil {
			return nil, nil, nil, err
		}
		blank, err := s.blank()
		s.close()
		if err != nil {
			return nil, nil, nil, err
		}
		if !blank {
			break
		}
		blanks = append(blanks, top)
		nums = nums[:len(nums)-1]
	}
	return temps, nums, blanks, nil
}

// decide makes every check that refuses the open before anything changes
// (W-37): a version 1 last segment (W-35); on the first batch, the last
// segment's committed records, walked on their own from its base index
// with previous asqn -1, and the check of R-39 at its commit point (W-26);
// and the header of its predecessor, which sealing needs (section 8.5).
func (w *Writer) decide(t *writeTarget, nums []uint32) error {
	h := t.h
	if h.Legacy() {
		return segmentError(ClassUnsupportedVersion, t.log, 4, "the last segment is version 1")
	}
	if !w.validated {
		st := walkState{E: h.BaseIndex, A: NoAsqn}
		if _, err := walkCommitted(t.segmentFile, HeaderSize, h.Active.CommitOffset, h.Active.CommitOffset, &st, func(Record) error { return nil }); err != nil {
			return err
		}
		if err := checkNextIndex(t.segmentFile, h.Active, &st, nil); err != nil {
			return err
		}
		w.validated = true
	}
	if n := len(nums); n > 1 && nums[n-2] == t.log-1 {
		p, err := w.openTarget(t.log - 1)
		if err != nil {
			return err
		}
		p.close()
	}
	return nil
}

// clean deletes what planClean found and syncs the directory, whether or
// not anything was deleted (section 7.4, W-25).
func (w *Writer) clean(temps []string, blanks []uint32) error {
	for _, name := range temps {
		if err := os.Remove(filepath.Join(w.dir, name)); err != nil && !os.IsNotExist(err) {
			return ioError(nil, nil, err)
		}
	}
	for _, n := range blanks {
		if err := os.Remove(filepath.Join(w.dir, SegmentName(n))); err != nil {
			return ioError(u32p(n), nil, err)
		}
	}
	if err := syncDir(w.dir); err != nil {
		return ioError(nil, nil, err)
	}
	return nil
}

// sealPredecessor seals segment n, finished because the last segment succ
// (n+1) exists, when it is still open (section 8.5, W-30). Its header was
// checked by decide; a version 1 segment or a broken chain is left untouched.
func (w *Writer) sealPredecessor(n uint32, succ *writeTarget) error {
	p, err := w.openTarget(n)
	if err != nil {
		return err
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
		LastAsqn: tr.st.A, LastTimestampUS: tr.lastTS, NextLogNumber: n + 1}
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
