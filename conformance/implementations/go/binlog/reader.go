package binlog

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

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

// logView is the listing of a log directory a reader works with. It lists
// again when a segment it listed cannot be opened any more (retention, or
// recovery removing a blank last segment, since the listing): a segment that
// no fresh listing shows is absent (section 10.2.2, OPEN).
type logView struct {
	dir     string
	nums    []uint32 // segments present, a blank last segment removed
	blank   uint32   // the blank last segment's log number, 0 when there is none
	present map[uint32]bool
	open    map[uint32]*segmentFile
	headers map[uint32]*Header
}

// maxListings bounds how often a reader lists the directory again because
// the segment it must look at went away since the listing.
const maxListings = 8

func newLogView(dir string) (*logView, error) {
	v := &logView{dir: dir, open: map[uint32]*segmentFile{}, headers: map[uint32]*Header{}}
	if err := v.list(); err != nil {
		v.close()
		return nil, err
	}
	return v, nil
}

// list lists the directory and determines the segments present: a blank
// highest-numbered segment is absent. Compressed segments are listed
// (section 2.6): opening one reports unsupported_feature.
func (v *logView) list() error {
	var err error
	for i := 0; i < maxListings; i++ {
		var nums []uint32
		if nums, err = listSegmentNumbers(v.dir, true); err != nil {
			return err
		}
		if len(nums) == 0 {
			// A directory with neither a segment nor LOCK is not a log.
			if _, serr := os.Lstat(filepath.Join(v.dir, "LOCK")); serr != nil {
				return &Error{Class: ClassIOError, Err: serr, Msg: "not a log directory: it holds neither a segment nor LOCK"}
			}
		}
		blank := uint32(0)
		if len(nums) > 0 {
			last := nums[len(nums)-1]
			var s *segmentFile
			s, err = v.openFile(last)
			switch {
			case isAbsent(err):
				continue // removed since the listing: list again
			case ClassOf(err) == ClassUnsupportedFeature:
				// A compressed segment is not blank.
			case err != nil:
				return err
			default:
				if err = s.stat(); err != nil {
					return err
				}
				isBlank, err := s.blank()
				if err != nil {
					return err
				}
				if isBlank {
					nums = nums[:len(nums)-1]
					blank = last
				}
			}
		}
		v.nums, v.blank = nums, blank
		v.present = map[uint32]bool{}
		for _, n := range nums {
			v.present[n] = true
		}
		return nil
	}
	return err
}

func (v *logView) close() {
	for _, s := range v.open {
		s.close()
	}
}

// isAbsent reports whether err says that no file of a segment exists.
func isAbsent(err error) bool { return err != nil && errors.Is(err, fs.ErrNotExist) }

// openFile opens segment n by its plain name. When only a compressed form
// exists, it reports unsupported_feature: this reader does not decompress
// (section 2.6). When no name of n exists, the error satisfies isAbsent.
func (v *logView) openFile(n uint32) (*segmentFile, error) {
	if s, ok := v.open[n]; ok {
		return s, nil
	}
	s, err := openSegment(v.dir, n, os.O_RDONLY)
	if isAbsent(err) {
		for _, suffix := range compressedSuffixes {
			if _, serr := os.Lstat(filepath.Join(v.dir, SegmentName(n)+suffix)); serr == nil {
				return nil, &Error{Class: ClassUnsupportedFeature, Log: u32p(n), Offset: u64p(0),
					Msg: "only a compressed form of the segment exists, and this reader reads plain segments"}
			}
		}
	}
	if err != nil {
		return nil, err
	}
	v.open[n] = s
	return s, nil
}

// listed reports whether the last listing showed a file of segment n.
func (v *logView) listed(n uint32) bool { return v.present[n] || (n != 0 && v.blank == n) }

// segment opens segment n (OPEN of section 10.2.2). When no name of n
// exists, it lists the directory again: when the fresh listing shows no
// name of n, n is absent (the error satisfies isAbsent, and the view no
// longer holds n); when it shows one, it tries once more, and a second
// failure is io_error.
func (v *logView) segment(n uint32) (*segmentFile, error) {
	s, err := v.openFile(n)
	if !isAbsent(err) {
		return s, err
	}
	if lerr := v.list(); lerr != nil {
		return nil, lerr
	}
	if !v.listed(n) {
		return nil, err
	}
	if s, err = v.openFile(n); isAbsent(err) {
		return nil, &Error{Class: ClassIOError, Log: u32p(n), Err: errors.New(err.Error()),
			Msg: "the segment is listed but no name of it can be opened"}
	}
	return s, err
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
// For version 2 segments only: a version 1 segment is finished only when
// it is closed (Appendix B.4).
func (v *logView) finished(n uint32) bool { return v.present[n+1] }

// listedAbove reports whether the listing shows a segment numbered above
// n, blank or not (section 10.2.2, NEXT step 4).
func (v *logView) listedAbove(n uint32) bool {
	return v.blank > n || (len(v.nums) > 0 && v.nums[len(v.nums)-1] > n)
}

// nextPresent is the lowest segment present above n, if any.
func (v *logView) nextPresent(n uint32) (uint32, bool) {
	for _, m := range v.nums {
		if m > n {
			return m, true
		}
	}
	return 0, false
}

// start opens the lowest segment present, listing again when it went away
// since the listing (retention): the read then starts at the new lowest.
func (v *logView) start() (uint32, *Header, bool, error) {
	for i := 0; ; i++ {
		if len(v.nums) == 0 {
			return 0, nil, false, nil
		}
		n := v.nums[0]
		_, h, err := v.header(n)
		if isAbsent(err) && i < maxListings && !v.present[n] {
			continue
		}
		return n, h, err == nil, err
	}
}

// ReadLog reads the committed records of the log in dir, calling emit for
// each, and reports a torn tail of the last segment. It never writes.
func ReadLog(dir string, opts ReadOptions, emit func(Record) error) (*Torn, error) {
	v, err := newLogView(dir)
	if err != nil {
		return nil, err
	}
	defer v.close()
	var n uint32
	var pos uint64
	var st walkState
	if opts.After != nil {
		n, pos, st, err = v.resumeAfter(*opts.After)
		if err != nil {
			return nil, err
		}
	} else {
		var h *Header
		var ok bool
		if n, h, ok, err = v.start(); err != nil || !ok {
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
		next, nh, last, err := v.step(n, h, &st, opts.OnDamage)
		if err != nil {
			return nil, err
		}
		if last {
			return v.tornTail(n, end)
		}
		n, pos = next, firstRecord(nh)
	}
}

// step moves the walk on from segment n, whose header is h, at its end
// (section 8.6, section 10.2 step 5, Appendix B.4): it returns the segment
// the walk continues with, or last when the log ends at n. A segment that
// went away since the listing is absent: the step is decided again.
func (v *logView) step(n uint32, h *Header, st *walkState, onDamage func(Damage)) (uint32, *Header, bool, error) {
	for i := 0; ; i++ {
		next, nh, last, err := v.stepOnce(n, h, st, onDamage)
		if isAbsent(err) && i < maxListings {
			continue
		}
		return next, nh, last, err
	}
}

// stepOnce is one decision of step (NEXT steps 3 and 4 of section 10.2.2).
// It reads the successor's header, when the successor is present, before
// it decides, and reports damage only after every header it needs has been
// read, so that a decision taken again after a segment went away reports
// nothing twice.
func (v *logView) stepOnce(n uint32, h *Header, st *walkState, onDamage func(Damage)) (uint32, *Header, bool, error) {
	var next *Header
	if v.present[n+1] {
		_, nh, err := v.header(n + 1)
		if err != nil {
			return 0, nil, false, err
		}
		next = nh
	}
	closedV1 := h.Legacy() && h.Closed()
	if next == nil {
		if !closedV1 && !v.listedAbove(n+1) {
			return 0, nil, true, nil // the last segment: the log currently ends here
		}
		// A missing segment below a listed one, or the successor a
		// closed version 1 segment always has (Appendix B.4).
		return v.missingSuccessor(n, st, onDamage)
	}
	if h.Legacy() && !closedV1 {
		// An open version 1 segment is not finished by a successor (B.4).
		if !v.listedAbove(n+1) && next.Legacy() && !next.Closed() && next.LastElementPosition == LegacyFirstRecord {
			// The leftover of a cutover that died: the log ends at n for now.
			return 0, nil, true, nil
		}
		return v.brokenSuccessor(n, next, st, onDamage, "an open version 1 segment is followed by a segment that is not the empty, open leftover of a cutover")
	}
	if !h.Legacy() && !next.Legacy() && (next.LogID != h.LogID || next.BaseIndex != st.E) {
		why := "base index differs"
		if next.LogID != h.LogID {
			why = "log id differs"
		}
		return v.brokenSuccessor(n, next, st, onDamage, why)
	}
	if h.Legacy() && !next.Legacy() {
		st.E = next.BaseIndex
	}
	return n + 1, next, false, nil
}

// missingSuccessor reports chain_broken at the absent segment n+1, with no
// offset and the expected index after n. A tolerant reader goes on with the
// lowest segment present above n+1, from its base index when it is version
// 2, numbering on when it is version 1; with none, the walk ends (BROKEN).
func (v *logView) missingSuccessor(n uint32, st *walkState, onDamage func(Damage)) (uint32, *Header, bool, error) {
	if onDamage == nil {
		return 0, nil, false, &Error{Class: ClassChainBroken, Log: u32p(n + 1), Index: u64p(st.E), Msg: "missing segment"}
	}
	d := Damage{Class: ClassChainBroken, Log: n + 1, Index: st.E}
	later, ok := v.nextPresent(n + 1)
	if !ok {
		onDamage(d)
		return 0, nil, true, nil
	}
	_, lh, err := v.header(later)
	if err != nil {
		return 0, nil, false, err
	}
	if !lh.Legacy() {
		st.E = lh.BaseIndex
		d.ResumedIndex = u64p(st.E)
	}
	onDamage(d)
	return later, lh, false, nil
}

// brokenSuccessor reports chain_broken at the present segment n+1, whose
// header is next, at offset 0 with the expected index after n; a tolerant
// reader goes on with n+1 (section 10.4): from its base index when it is
// version 2, numbering on when it is version 1.
func (v *logView) brokenSuccessor(n uint32, next *Header, st *walkState, onDamage func(Damage), why string) (uint32, *Header, bool, error) {
	if onDamage == nil {
		return 0, nil, false, recordError(ClassChainBroken, n+1, 0, st.E, why)
	}
	d := Damage{Class: ClassChainBroken, Log: n + 1, Offset: u64p(0), Index: st.E}
	if !next.Legacy() {
		st.E = next.BaseIndex
		d.ResumedIndex = u64p(st.E)
	}
	onDamage(d)
	return n + 1, next, false, nil
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
// resume at up to min(S, F), with an index below the end index I_S, and,
// when it finds none, ends the segment there (section 10.4). The end of a
// finished segment needs its successor's header, so it is computed only
// once the records below the commit point read first have been returned,
// or when a search needs it.
func (v *logView) readVersion2Segment(n uint32, s *segmentFile, h *Header, pos uint64, st *walkState, onDamage func(Damage), emit func(Record) error) (uint64, error) {
	slot, sb, known := h.Active, segmentBounds{h.Active.CommitOffset, h.Active.NextIndex}, !v.finished(n)
	bounds := func() (segmentBounds, error) {
		if !known {
			var err error
			if slot, sb, err = v.segmentEnd(n, s, h); err != nil {
				return segmentBounds{}, err
			}
			known = true
		}
		return sb, nil
	}
	c := h.Active.CommitOffset
	pos, lost, err := walkTolerant(s, pos, c, c, bounds, st, onDamage, emit)
	if err != nil || lost {
		return pos, err
	}
	if _, err := bounds(); err != nil {
		return pos, err
	}
	if c = slot.CommitOffset; pos < c { // the slot re-read for a finished segment has moved on
		if pos, lost, err = walkTolerant(s, pos, c, c, bounds, st, onDamage, emit); err != nil || lost {
			return pos, err
		}
	}
	if pos == c {
		if err := checkNextIndex(s, slot, st, onDamage); err != nil {
			return pos, err
		}
	}
	if pos < sb.end {
		pos, _, err = walkTolerant(s, pos, sb.end, sb.end, bounds, st, onDamage, emit)
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

// segmentEnd computes the end S of segment n (section 6.1) and its end
// index I_S without returning records, with the active slot they were
// computed from (re-read for a finished segment, R-4). A version 1 segment
// has no slot and no end index.
func (v *logView) segmentEnd(n uint32, s *segmentFile, h *Header) (Slot, segmentBounds, error) {
	if h.Legacy() {
		return Slot{}, segmentBounds{end: h.LastElementPosition}, nil
	}
	unfinished := segmentBounds{h.Active.CommitOffset, h.Active.NextIndex}
	if !v.finished(n) {
		return h.Active, unfinished, nil
	}
	// Finished: the successor's header first, then N's slots again (8.4).
	_, next, err := v.header(n + 1)
	if isAbsent(err) && !v.finished(n) {
		return h.Active, unfinished, nil // the successor went away since the listing
	}
	if err != nil {
		return Slot{}, segmentBounds{}, err
	}
	slot, err := s.activeSlot(h.BaseIndex)
	if err != nil {
		return Slot{}, segmentBounds{}, err
	}
	if slot.NextLogNumber != 0 || next.Legacy() {
		return slot, segmentBounds{slot.CommitOffset, slot.NextIndex}, nil
	}
	tr, err := walkTail(s, slot.CommitOffset, walkState{E: slot.NextIndex, A: slot.LastAsqn},
		slot.LastTimestampUS, &next.BaseIndex)
	return slot, segmentBounds{tr.stop, tr.st.E}, err
}

// resumeAfter validates ref by steps 1 to 4 of section 10.6 (B.6 for a
// version 1 segment) and returns where reading continues after it.
func (v *logView) resumeAfter(ref Ref) (uint32, uint64, walkState, error) {
	var st walkState
	if ref.Log > MaxLogNumber || !v.present[ref.Log] {
		return 0, 0, st, ref.invalid("no such segment")
	}
	s, h, err := v.header(ref.Log)
	if isAbsent(err) {
		return 0, 0, st, ref.invalid("no such segment")
	}
	if err != nil {
		return 0, 0, st, err
	}
	_, sb, err := v.segmentEnd(ref.Log, s, h)
	if err != nil {
		return 0, 0, st, err
	}
	end := sb.end
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
