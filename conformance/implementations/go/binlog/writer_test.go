package binlog

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"unsafe"
)

func TestWriterRoundTripAcrossReopenAndCutovers(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "b", "log")
	refs := writeTestLog(t, dir, threeRecords, 2)
	w, err := OpenWriter(dir, WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	acks, err := w.AppendBatch([]Append{{[]byte("d"), 6}, {[]byte("e"), -1}, {[]byte("f"), 9}})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Cutover(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	for _, a := range acks {
		refs = append(refs, a.Ref)
	}
	out := readTestLog(t, dir, ReadOptions{})
	if out.err != nil || out.torn != nil || len(out.records) != 6 {
		t.Fatalf("%+v", out)
	}
	for i, r := range out.records {
		if r.Ref() != refs[i] || r.Index != uint64(i+1) {
			t.Fatalf("record %d at %v, acknowledged as %v", i, r.Ref(), refs[i])
		}
	}
	// The batch shares one timestamp; timestamps never decrease.
	if out.records[3].TimestampUS != out.records[5].TimestampUS || out.records[3].TimestampUS < out.records[2].TimestampUS {
		t.Fatalf("timestamps %d %d %d", out.records[2].TimestampUS, out.records[3].TimestampUS, out.records[5].TimestampUS)
	}
	// Segments 1 and 2 sealed, segment 3 open and empty with base index 7.
	for n, want := range map[uint32]uint32{1: 2, 2: 3, 3: 0} {
		h := headerOf(t, readFile(t, segPath(dir, n)), n)
		if h.Active.NextLogNumber != want {
			t.Fatalf("segment %d: next log number %d", n, h.Active.NextLogNumber)
		}
	}
	if h := headerOf(t, readFile(t, segPath(dir, 3)), 3); h.BaseIndex != 7 || h.Active.LastAsqn != 9 {
		t.Fatalf("segment 3: %+v", h)
	}
	if fi, err := os.Stat(filepath.Join(dir, "LOCK")); err != nil || fi.Size() != 0 {
		t.Fatalf("LOCK: %v %v", fi, err)
	}
}

func TestWriterRefusesOutOfOrderAsqnAndWritesTheRest(t *testing.T) {
	dir := t.TempDir()
	w, err := OpenWriter(dir, WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	acks, err := w.AppendBatch([]Append{{[]byte("a"), 5}, {[]byte("b"), 5}, {[]byte("c"), -2}, {[]byte("d"), 6}})
	if err != nil {
		t.Fatal(err)
	}
	if acks[0].Err != nil || ClassOf(acks[1].Err) != ClassAsqnNotIncreasing || ClassOf(acks[2].Err) != ClassAsqnNotIncreasing || acks[3].Err != nil {
		t.Fatalf("%+v", acks)
	}
	if _, err := w.Append([]byte("e"), 6); ClassOf(err) != ClassAsqnNotIncreasing {
		t.Fatalf("asqn 6 after 6: %v", err)
	}
	out := readTestLog(t, dir, ReadOptions{})
	if len(out.records) != 2 || out.records[1].Index != 2 || string(out.records[1].Payload) != "d" {
		t.Fatalf("%+v", out)
	}
}

func TestWriterKeepsTimestampsWhenTheClockGoesBack(t *testing.T) {
	dir := t.TempDir()
	clock := []int64{T0, T0 - 5}
	w, err := OpenWriter(dir, WriterOptions{Clock: func() int64 { c := clock[0]; clock = append(clock[1:], T0-9); return c }})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for range 3 {
		if _, err := w.Append(nil, -1); err != nil {
			t.Fatal(err)
		}
	}
	records := readTestLog(t, dir, ReadOptions{}).records
	for i := 1; i < len(records); i++ {
		if records[i].TimestampUS < records[i-1].TimestampUS {
			t.Fatalf("timestamp went back: %d after %d", records[i].TimestampUS, records[i-1].TimestampUS)
		}
	}
}

func TestRecoveryAdoptsWholeTailRecordsAndTruncatesTheRest(t *testing.T) {
	base := readFile(t, segPath(fixture(t), 1))
	publishInto(t, base, 1, func(s *Slot) { s.CommitOffset, s.NextIndex, s.LastAsqn = rec2, 2, -1 })
	for cut := rec2; cut <= rec3End; cut++ {
		dir := t.TempDir()
		writeFile(t, segPath(dir, 1), base[:cut])
		if err := Recover(dir); err != nil {
			t.Fatalf("cut at %d: %v", cut, err)
		}
		want := 1
		switch {
		case cut == rec3End:
			want = 3
		case cut >= rec3:
			want = 2
		}
		out := readTestLog(t, dir, ReadOptions{})
		if out.err != nil || out.torn != nil || len(out.records) != want {
			t.Fatalf("cut at %d: %+v", cut, out)
		}
		ends := map[int]int{1: rec2, 2: rec3, 3: rec3End}
		after := readFile(t, segPath(dir, 1))
		if len(after) != ends[want] {
			t.Fatalf("cut at %d: file is %d bytes", cut, len(after))
		}
		// Idempotent: recovering again changes nothing.
		if err := Recover(dir); err != nil || !bytes.Equal(after, readFile(t, segPath(dir, 1))) {
			t.Fatalf("cut at %d: second recovery changed the file (%v)", cut, err)
		}
	}
}

func TestRecoveryNeverSkipsAHoleToReachRecordsBehindIt(t *testing.T) {
	dir := fixture(t)
	patchFile(t, segPath(dir, 1), func(b []byte) []byte {
		publishInto(t, b, 1, func(s *Slot) { s.CommitOffset, s.NextIndex, s.LastAsqn = rec2, 2, -1 })
		clear(b[rec2 : rec2+10]) // a hole of zeros, record 3 intact behind it
		return b
	})
	if err := Recover(dir); err != nil {
		t.Fatal(err)
	}
	if out := readTestLog(t, dir, ReadOptions{}); len(out.records) != 1 || out.torn != nil {
		t.Fatalf("%+v", out)
	}
	if fi, _ := os.Stat(segPath(dir, 1)); fi.Size() != rec2 {
		t.Fatalf("file is %d bytes", fi.Size())
	}
}

func TestRecoveryCleansTemporaryFilesAndBlankLastSegments(t *testing.T) {
	dir := twoSegments(t)
	writeFile(t, segPath(dir, 3), make([]byte, 256))
	writeFile(t, segPath(dir, 4), []byte{0})
	tmp := filepath.Join(dir, ".00000003.dat.0badc0de.tmp")
	other := filepath.Join(dir, ".00000003.dat.XYZ.tmp")
	writeFile(t, tmp, []byte("x"))
	writeFile(t, other, []byte("x"))
	if err := Recover(dir); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{tmp, segPath(dir, 3), segPath(dir, 4)} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Fatalf("%s still exists", p)
		}
	}
	if _, err := os.Stat(other); err != nil {
		t.Fatalf("a file that is not a temporary file was removed: %v", err)
	}
}

// D1: a short last segment holding a non-zero byte is not blank: recovery
// reports it and removes nothing.
func TestRecoveryRefusesAShortLastSegmentWithANonZeroByte(t *testing.T) {
	dir := twoSegments(t)
	writeFile(t, segPath(dir, 3), []byte{0, 0, 1})
	three := uint32(3)
	wantError(t, Recover(dir), ClassTruncated, &three, u64p(0), nil)
	if b := readFile(t, segPath(dir, 3)); !bytes.Equal(b, []byte{0, 0, 1}) {
		t.Fatalf("segment 3 changed: %x", b)
	}
}

func TestRecoverySealsAFinishedPredecessorAndAdoptsItsEnd(t *testing.T) {
	dir := twoSegments(t)
	unseal(t, dir, rec2, 2, -1)
	if err := Recover(dir); err != nil {
		t.Fatal(err)
	}
	h := headerOf(t, readFile(t, segPath(dir, 1)), 1)
	if h.Active.NextLogNumber != 2 || h.Active.CommitOffset != rec3 || h.Active.NextIndex != 3 || h.Active.LastAsqn != 5 {
		t.Fatalf("segment 1 not sealed at its end: %+v", h.Active)
	}
	if out := readTestLog(t, dir, ReadOptions{}); out.err != nil || len(out.records) != 3 {
		t.Fatalf("%+v", out)
	}
}

func TestRecoveryLeavesABrokenPredecessorUntouched(t *testing.T) {
	dir := twoSegments(t)
	unseal(t, dir, rec2, 2, -1)
	patchFile(t, segPath(dir, 1), func(b []byte) []byte { b[rec2+41] ^= 1; return b })
	before := readFile(t, segPath(dir, 1))
	if err := Recover(dir); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, readFile(t, segPath(dir, 1))) {
		t.Fatal("recovery modified a predecessor whose end does not reach the successor")
	}
}

func TestWriterRecreatesTheMissingSuccessorOfASealedSegment(t *testing.T) {
	dir := twoSegments(t)
	if err := os.Remove(segPath(dir, 2)); err != nil {
		t.Fatal(err)
	}
	w, err := OpenWriter(dir, WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	ref, err := w.Append([]byte("x"), 6)
	if err != nil || ref != (Ref{2, 256, 3}) {
		t.Fatalf("%v %v", ref, err)
	}
	h := headerOf(t, readFile(t, segPath(dir, 2)), 2)
	if h.BaseIndex != 3 || h.LogID != headerOf(t, readFile(t, segPath(dir, 1)), 1).LogID {
		t.Fatalf("%+v", h)
	}
}

func TestWriterRefusesToAppendBehindCommittedDamage(t *testing.T) {
	dir := fixture(t)
	patchFile(t, segPath(dir, 1), func(b []byte) []byte { b[rec2+41] ^= 1; return b })
	before := readFile(t, segPath(dir, 1))
	w, err := OpenWriter(dir, WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := w.Append([]byte("x"), -1); ClassOf(err) != ClassChecksumMismatch {
		t.Fatalf("append behind damage: %v", err)
	}
	if ClassOf(Recover(dir)) != ClassChecksumMismatch {
		t.Fatal("recovery did not report the committed damage")
	}
	if !bytes.Equal(before, readFile(t, segPath(dir, 1))) {
		t.Fatal("the damaged segment was modified")
	}
}

func TestWriterRefusesAVersion1Log(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, segPath(dir, 1), loadVectors(t)["TV-13"].data)
	w, err := OpenWriter(dir, WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := w.Append([]byte("x"), -1); ClassOf(err) != ClassUnsupportedVersion {
		t.Fatalf("%v", err)
	}
}

// preallocated writes a preallocated segment 1 holding records 1 and 2 of
// the fixture committed, optionally record 3 after a hole, and zeros to
// capacity.
func preallocated(t *testing.T, capacity uint64, stale bool) string {
	t.Helper()
	src := readFile(t, segPath(fixture(t), 1))
	seg := NewHeader{LogNumber: 1, LogID: vectorLogID, BaseIndex: 1, CreatedUS: T0, Capacity: capacity, LastAsqn: NoAsqn}.Encode()
	seg = append(seg, src[256:rec3]...)
	if stale {
		seg = append(seg, make([]byte, 64)...)  // a hole
		seg = append(seg, src[rec3:rec3End]...) // a stale record behind it
	}
	seg = append(seg, make([]byte, int(capacity)-len(seg))...)
	publishInto(t, seg, 1, func(s *Slot) { s.CommitOffset, s.NextIndex, s.LastAsqn = rec3, 3, 5 })
	dir := t.TempDir()
	writeFile(t, segPath(dir, 1), seg)
	return dir
}

func TestPreallocatedRecoveryClearsStaleRecordsBehindAHole(t *testing.T) {
	dir := preallocated(t, 1024, true)
	if err := Recover(dir); err != nil {
		t.Fatal(err)
	}
	b := readFile(t, segPath(dir, 1))
	if len(b) != 1024 || !allZero(b[rec3:]) {
		t.Fatalf("size %d, remainder zero: %v", len(b), allZero(b[rec3:]))
	}
	if out := readTestLog(t, dir, ReadOptions{}); out.err != nil || out.torn != nil || len(out.records) != 2 {
		t.Fatalf("%+v", out)
	}
}

func TestPreallocatedSegmentFullCutsOverToTheNextSegment(t *testing.T) {
	dir := preallocated(t, 400, false)
	w, err := OpenWriter(dir, WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	acks, err := w.AppendBatch([]Append{{[]byte("d"), -1}, {[]byte(strings.Repeat("e", 30)), -1}})
	if err != nil {
		t.Fatal(err)
	}
	if acks[0].Ref != (Ref{1, rec3, 3}) || acks[1].Ref != (Ref{2, 256, 4}) {
		t.Fatalf("%+v", acks)
	}
	if b := readFile(t, segPath(dir, 1)); len(b) != 400 {
		t.Fatalf("preallocated segment resized to %d", len(b))
	}
	if out := readTestLog(t, dir, ReadOptions{}); out.err != nil || len(out.records) != 4 {
		t.Fatalf("%+v", out)
	}
}

func TestLockExcludesASecondOpenFileDescription(t *testing.T) {
	dir := t.TempDir()
	w, err := OpenWriter(dir, WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	other, err := os.OpenFile(filepath.Join(dir, "LOCK"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	const fOFDSetlk = 37 // the non-blocking variant
	try := func() syscall.Errno {
		fl := syscall.Flock_t{Type: syscall.F_WRLCK}
		_, _, e := syscall.Syscall(syscall.SYS_FCNTL, other.Fd(), fOFDSetlk, uintptr(unsafe.Pointer(&fl)))
		if e == 0 {
			fl.Type = syscall.F_UNLCK
			syscall.Syscall(syscall.SYS_FCNTL, other.Fd(), fOFDSetlk, uintptr(unsafe.Pointer(&fl)))
		}
		return e
	}
	if err := ofdLock(w.lockFile, syscall.F_WRLCK); err != nil {
		t.Fatal(err)
	}
	if e := try(); e != syscall.EAGAIN {
		t.Fatalf("second description took the lock while it was held: %v", e)
	}
	if err := ofdLock(w.lockFile, syscall.F_UNLCK); err != nil {
		t.Fatal(err)
	}
	if e := try(); e != 0 {
		t.Fatalf("lock not released: %v", e)
	}
	// A batch releases the lock when it ends.
	if _, err := w.Append([]byte("x"), -1); err != nil {
		t.Fatal(err)
	}
	if e := try(); e != 0 {
		t.Fatalf("lock held after a batch: %v", e)
	}
}

func TestOversizedPayloadIsRefused(t *testing.T) {
	dir := t.TempDir()
	w, err := OpenWriter(dir, WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	// A slice header that claims MaxPayload+1 bytes costs one byte of memory.
	big := unsafe.Slice(new(byte), MaxPayload+1)
	if _, err := w.Append(big, -1); ClassOf(err) != ClassLengthOutOfRange {
		t.Fatalf("%v", err)
	}
}

func TestSegmentSizeLimitCutsOverAfterTheBatchThatReachesIt(t *testing.T) {
	dir := t.TempDir()
	w, err := OpenWriter(dir, WriterOptions{MaxSegmentBytes: 340})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	var refs []Ref
	for i := range 5 {
		ref, err := w.Append([]byte{byte(i)}, -1) // 41 bytes each
		if err != nil {
			t.Fatal(err)
		}
		refs = append(refs, ref)
	}
	// 256+41+41 = 338 < 340, 379 >= 340: three records per segment.
	want := []Ref{{1, 256, 1}, {1, 297, 2}, {1, 338, 3}, {2, 256, 4}, {2, 297, 5}}
	for i := range want {
		if refs[i] != want[i] {
			t.Fatalf("refs %v, want %v", refs, want)
		}
	}
	if h := headerOf(t, readFile(t, segPath(dir, 1)), 1); h.Active.NextLogNumber != 2 {
		t.Fatal("segment 1 not sealed at the size limit")
	}
}

// W-37: every refusal is decided before clean-up deletes anything, so a
// refused recovery leaves temporary files and blank last segments in place.
func TestRecoveryDecidesItsRefusalBeforeCleaningUp(t *testing.T) {
	dir := fixture(t)
	patchFile(t, segPath(dir, 1), func(b []byte) []byte { b[rec2+41] ^= 1; return b })
	left := []string{filepath.Join(dir, ".00000002.dat.5eed.tmp"), filepath.Join(dir, ".00000001.dat.gz.5eed.tmp"), segPath(dir, 2)}
	for _, p := range left {
		writeFile(t, p, nil)
	}
	if ClassOf(Recover(dir)) != ClassChecksumMismatch {
		t.Fatal("recovery did not report the committed damage")
	}
	for _, p := range left {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("a refused recovery removed %s: %v", p, err)
		}
	}
}

// Section 7.4 step 1: an index builder's temporary file is deleted when no
// process holds it, and left alone while one does; the index itself stays.
func TestRecoveryRemovesUnheldIndexTemporaryFilesOnly(t *testing.T) {
	dir := twoSegments(t)
	stale := filepath.Join(dir, ".00000001.idx.5eed.tmp")
	live := filepath.Join(dir, ".00000001.idx.0c0ffee.tmp")
	index := filepath.Join(dir, "00000001.idx")
	for _, p := range []string{stale, live, index} {
		writeFile(t, p, []byte("x"))
	}
	f, err := os.OpenFile(live, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := ofdLock(f, syscall.F_WRLCK); err != nil {
		t.Fatal(err)
	}
	if err := Recover(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Fatal("an unheld index temporary file was left")
	}
	for _, p := range []string{live, index} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("clean-up removed %s: %v", p, err)
		}
	}
}

// Section 7.4 step 1: a compression's temporary file is deleted when no
// process holds it, and left alone while one does.
func TestRecoveryRemovesUnheldCompressionTemporaryFilesOnly(t *testing.T) {
	dir := twoSegments(t)
	stale := filepath.Join(dir, ".00000001.dat.gz.5eed.tmp")
	live := filepath.Join(dir, ".00000001.dat.zst.0c0ffee.tmp")
	writeFile(t, stale, []byte("x"))
	writeFile(t, live, []byte("x"))
	f, err := os.OpenFile(live, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := ofdLock(f, syscall.F_WRLCK); err != nil {
		t.Fatal(err)
	}
	if err := Recover(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Fatal("an unheld compression temporary file was left")
	}
	if _, err := os.Stat(live); err != nil {
		t.Fatalf("a held temporary file was removed: %v", err)
	}
}

// W-26 with R-39: a slot whose next_index the committed records contradict
// refuses the open; the predecessor's damaged header does too (section 8.5).
func TestRecoveryRefusesAContradictedSlotAndADamagedPredecessorHeader(t *testing.T) {
	dir := fixture(t)
	patchFile(t, segPath(dir, 1), func(b []byte) []byte {
		publishInto(t, b, 1, func(s *Slot) { s.NextIndex++ })
		return b
	})
	h := headerOf(t, readFile(t, segPath(dir, 1)), 1)
	one := uint32(1)
	wantError(t, Recover(dir), ClassBadHeader, &one, u64p(uint64(SlotOffset(h.Active.Generation))), u64p(h.Active.NextIndex-1))

	dir = twoSegments(t)
	patchFile(t, segPath(dir, 1), func(b []byte) []byte { b[headerCRCOffset] ^= 1; return b })
	before := readFile(t, segPath(dir, 1))
	wantError(t, Recover(dir), ClassBadHeader, &one, u64p(headerCRCOffset), nil)
	if !bytes.Equal(before, readFile(t, segPath(dir, 1))) {
		t.Fatal("a refused recovery changed segment 1")
	}
}
