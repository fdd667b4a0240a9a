package binlog

import "os"

// Torn says that the last segment holds non-zero bytes beyond its segment
// end: a torn tail, never an error.
type Torn struct {
	Log    uint32
	Offset uint64
}

// ReadOptions select where a read starts and what it does with damage.
type ReadOptions struct {
	After *Ref // resume just after this record
	// OnDamage, when set, makes the read tolerant (section 10.4): record
	// damage and broken chains are reported to it and stepped over. A
	// damaged header still ends the read with its error.
	OnDamage func(Damage)
}

// logView is one listing of a log directory, as a reader sees it.
type logView struct {
	dir     string
	nums    []uint32 // segments present, a blank last segment removed
	blank   uint32   // the blank last segment's log number, 0 when there is none
	present map[uint32]bool
	open    map[uint32]*segmentFile
	headers map[uint32]*Header
}

func newLogView(dir string) (*logView, error) {
	nums, err := listSegments(dir)
	if err != nil {
		return nil, err
	}
	v := &logView{dir: dir, open: map[uint32]*segmentFile{}, headers: map[uint32]*Header{}}
	if len(nums) > 0 {
		last := nums[len(nums)-1]
		s, err := v.segment(last)
		if err != nil {
			v.close()
			return nil, err
		}
		isBlank, err := s.blank()
		if err != nil {
			v.close()
			return nil, err
		}
		if isBlank {
			nums = nums[:len(nums)-1]
			v.blank = last
		}
	}
	v.nums = nums
	v.present = map[uint32]bool{}
	for _, n := range nums {
		v.present[n] = true
	}
	return v, nil
}

func (v *logView) close() {
	for _, s := range v.open {
		s.close()
	}
}

func (v *logView) segment(n uint32) (*segmentFile, error) {
	if s, ok := v.open[n]; ok {
		return s, nil
	}
	s, err := openSegment(v.dir, n, os.O_RDONLY)
	if err != nil {
		return nil, err
	}
	v.open[n] = s
	return s, nil
}

func (v *logView) header(n uint32) (*segmentFile, *Header, error) {
	s, err := v.segment(n)
	if err != nil {
		return nil, nil, err
	}
	if h, ok := v.headers[n]; ok {
		return s, h, nil
	}
	h, err := s.header()
	if err != nil {
		return nil, nil, err
	}
	v.headers[n] = h
	return s, h, nil
}

// finished: the successor exists and is not a blank last segment.
func (v *logView) finished(n uint32) bool { return v.present[n+1] }

func (v *logView) highest() uint32 { return v.nums[len(v.nums)-1] }

// nextPresent is the lowest segment present above n; there must be one.
func (v *logView) nextPresent(n uint32) uint32 {
	for _, m := range v.nums {
		if m > n {
			return m
		}
	}
	panic("binlog: no segment above the highest")
}

// ReadLog reads the committed records of the log in dir, calling emit for
// each, and reports a torn tail of the last segment. It never writes.
func ReadLog(dir string, opts ReadOptions, emit func(Record) error) (*Torn, error) {
	v, err := newLogView(dir)
	if err != nil {
		return nil, err
	}
	defer v.close()
	if len(v.nums) == 0 {
		return nil, nil
	}
	var n uint32
	var pos uint64
	var st walkState
	if opts.After != nil {
		n, pos, st, err = v.resumeAfter(*opts.After)
		if err != nil {
			return nil, err
		}
	} else {
		n = v.nums[0]
		_, h, err := v.header(n)
		if err != nil {
			return nil, err
		}
		pos, st = firstRecord(h), walkState{E: 1, A: NoAsqn}
		if !h.Legacy() {
			st.E = h.BaseIndex
		}
	}
	for {
		h, end, err := v.readSegment(n, pos, &st, opts.OnDamage, emit)
		if err != nil {
			return nil, err
		}
		if !v.present[n+1] {
			if n+1 > v.highest() {
				return v.tornTail(n, end)
			}
			if opts.OnDamage == nil {
				return nil, &Error{Class: ClassChainBroken, Log: u32p(n + 1), Index: u64p(st.E), Msg: "missing segment"}
			}
			// Step over the gap to the next present segment, from its base index (section 10.4).
			later := v.nextPresent(n)
			_, lh, err := v.header(later)
			if err != nil {
				return nil, err
			}
			d := Damage{Class: ClassChainBroken, Log: n + 1, Index: st.E}
			if !lh.Legacy() {
				st.E = lh.BaseIndex
				d.ResumedIndex = u64p(st.E)
			}
			opts.OnDamage(d)
			n, pos = later, firstRecord(lh)
			continue
		}
		_, next, err := v.header(n + 1)
		if err != nil {
			return nil, err
		}
		if !h.Legacy() && !next.Legacy() && (next.LogID != h.LogID || next.BaseIndex != st.E) {
			why := "base index differs"
			if next.LogID != h.LogID {
				why = "log id differs"
			}
			if opts.OnDamage == nil {
				return nil, recordError(ClassChainBroken, n+1, 0, st.E, why)
			}
			opts.OnDamage(Damage{Class: ClassChainBroken, Log: n + 1, Offset: u64p(0), Index: st.E,
				ResumedIndex: u64p(next.BaseIndex)})
			st.E = next.BaseIndex
		}
		if h.Legacy() && !next.Legacy() {
			st.E = next.BaseIndex
		}
		n, pos = n+1, firstRecord(next)
	}
}

func firstRecord(h *Header) uint64 {
	if h.Legacy() {
		return LegacyFirstRecord
	}
	return HeaderSize
}

// readSegment returns the records of segment n from pos up to its segment
// end (section 6.1), and returns the segment's header and that end.
func (v *logView) readSegment(n uint32, pos uint64, st *walkState, onDamage func(Damage), emit func(Record) error) (*Header, uint64, error) {
	s, h, err := v.header(n)
	if err != nil {
		return nil, 0, err
	}
	if h.Legacy() {
		end, err := readLegacySegment(s, h, pos, st, onDamage, emit)
		return h, end, err
	}
	end, err := v.readVersion2Segment(n, s, h, pos, st, onDamage, emit)
	return h, end, err
}

// readVersion2Segment walks the committed records up to the segment end S
// (section 6.1), checking at the commit point that the walk and the slot
// agree on the next index. A tolerant walk searches for a record to
// resume at up to min(S, F) and, when it finds none, ends the segment there
// (section 10.4). The end of a finished segment needs its successor's
// header, so it is computed only once the records below the commit point
// read first have been returned, or when a search needs it.
func (v *logView) readVersion2Segment(n uint32, s *segmentFile, h *Header, pos uint64, st *walkState, onDamage func(Damage), emit func(Record) error) (uint64, error) {
	slot, end, known := h.Active, h.Active.CommitOffset, !v.finished(n)
	segmentEnd := func() (uint64, error) {
		if !known {
			var err error
			if slot, end, err = v.segmentEnd(n, s, h); err != nil {
				return 0, err
			}
			known = true
		}
		return end, nil
	}
	c := h.Active.CommitOffset
	pos, lost, err := walkTolerant(s, pos, c, c, segmentEnd, st, onDamage, emit)
	if err != nil || lost {
		return pos, err
	}
	if _, err := segmentEnd(); err != nil {
		return pos, err
	}
	if c = slot.CommitOffset; pos < c { // the slot re-read for a finished segment has moved on
		if pos, lost, err = walkTolerant(s, pos, c, c, segmentEnd, st, onDamage, emit); err != nil || lost {
			return pos, err
		}
	}
	if pos == c {
		if err := checkNextIndex(s, slot, st, onDamage); err != nil {
			return pos, err
		}
	}
	if pos < end {
		pos, _, err = walkTolerant(s, pos, end, end, segmentEnd, st, onDamage, emit)
	}
	return pos, err
}

// checkNextIndex is R-39: a walk that reaches the commit point must expect
// the slot's next_index there. A tolerant reader reports a disagreement as
// a damaged region of no bytes and goes on with the slot's next_index.
func checkNextIndex(s *segmentFile, slot Slot, st *walkState, onDamage func(Damage)) error {
	if st.E == slot.NextIndex {
		return nil
	}
	at := uint64(SlotOffset(slot.Generation))
	if onDamage == nil {
		return recordError(ClassBadHeader, s.log, at, st.E, "the walk expects another index at the commit point than the slot's next_index")
	}
	onDamage(Damage{Class: ClassBadHeader, Log: s.log, Offset: u64p(at), Index: st.E, ResumedIndex: u64p(slot.NextIndex)})
	st.E = slot.NextIndex
	return nil
}

// readLegacySegment walks version 1 records from p up to the last element
// position (Appendix B.4). Nothing in them can be resynchronised on: a
// tolerant read reports damage with the bytes up to min(S, F) skipped and
// ends the segment there, its expected index still the damaged record's.
func readLegacySegment(s *segmentFile, h *Header, p uint64, st *walkState, onDamage func(Damage), emit func(Record) error) (uint64, error) {
	end := h.LastElementPosition
	for p < end {
		data, next, err := legacyRecord(s, p, end, s.size, st.E)
		if err != nil {
			e, ok := steppable(err)
			if !ok || onDamage == nil {
				return 0, err
			}
			onDamage(Damage{Class: e.Class, Log: s.log, Offset: u64p(p), Index: st.E, BytesSkipped: skippedTo(min(end, s.size), p)})
			return end, nil
		}
		if err := emit(Record{Log: s.log, Offset: p, Index: st.E, Asqn: NoAsqn, Payload: data}); err != nil {
			return 0, err
		}
		st.E++
		p = next
	}
	return p, nil
}

// segmentEnd computes the end S of segment n (section 6.1) without
// returning records, with the active slot it was computed from (re-read
// for a finished segment, R-4). A version 1 segment has no slot.
func (v *logView) segmentEnd(n uint32, s *segmentFile, h *Header) (Slot, uint64, error) {
	if h.Legacy() {
		return Slot{}, h.LastElementPosition, nil
	}
	if !v.finished(n) {
		return h.Active, h.Active.CommitOffset, nil
	}
	// Finished: the successor's header first, then N's slots again (8.4).
	_, next, err := v.header(n + 1)
	if err != nil {
		return Slot{}, 0, err
	}
	slot, err := s.activeSlot(h.BaseIndex)
	if err != nil {
		return Slot{}, 0, err
	}
	if slot.NextLogNumber != 0 || next.Legacy() {
		return slot, slot.CommitOffset, nil
	}
	tr, err := walkTail(s, slot.CommitOffset, walkState{E: slot.NextIndex, A: slot.LastAsqn},
		slot.LastTimestampUS, &next.BaseIndex)
	return slot, tr.stop, err
}

// resumeAfter validates ref by steps 1 to 4 of section 10.6 (B.6 for a
// version 1 segment) and returns where reading continues after it.
func (v *logView) resumeAfter(ref Ref) (uint32, uint64, walkState, error) {
	var st walkState
	if ref.Log > MaxLogNumber || !v.present[ref.Log] {
		return 0, 0, st, ref.invalid("no such segment")
	}
	s, h, err := v.header(ref.Log)
	if err != nil {
		return 0, 0, st, err
	}
	_, end, err := v.segmentEnd(ref.Log, s, h)
	if err != nil {
		return 0, 0, st, err
	}
	asInvalid := func(err error) error {
		if ClassOf(err) == ClassIOError {
			return err
		}
		return ref.invalid(err.Error())
	}
	if h.Legacy() {
		if ref.Offset < LegacyFirstRecord || ref.Offset >= end {
			return 0, 0, st, ref.invalid("offset outside the segment's records")
		}
		_, next, err := legacyRecord(s, ref.Offset, end, s.size, ref.Index)
		if err != nil {
			return 0, 0, st, asInvalid(err)
		}
		return ref.Log, next, walkState{E: ref.Index + 1, A: NoAsqn}, nil
	}
	if ref.Offset < HeaderSize || ref.Offset >= end {
		return 0, 0, st, ref.invalid("offset outside the segment's records")
	}
	d, err := checkRecord(s, ref.Offset, end, walkState{E: ref.Index, A: NoAsqn})
	if err != nil {
		return 0, 0, st, asInvalid(err)
	}
	if d.frame != FrameData {
		return 0, 0, st, ref.invalid("not a data record")
	}
	st = walkState{E: ref.Index, A: NoAsqn}
	st.advance(d.frame, d.index, d.asqn)
	return ref.Log, d.end, st, nil
}

// tornTail reports non-zero bytes beyond the end of the last segment.
func (v *logView) tornTail(n uint32, end uint64) (*Torn, error) {
	s, err := v.segment(n)
	if err != nil {
		return nil, err
	}
	if err := s.stat(); err != nil {
		return nil, err
	}
	nz, err := s.firstNonZero(end)
	if err != nil {
		return nil, err
	}
	if nz < s.size {
		return &Torn{Log: n, Offset: end}, nil
	}
	return nil, nil
}
