package binlog

import (
	"math"
	"os"
	"strings"
	"testing"
)

func TestResumeAfterEveryRecordReturnsExactlyTheRest(t *testing.T) {
	dir := twoSegments(t)
	all := readTestLog(t, dir, ReadOptions{}).records
	for i, r := range all {
		ref := r.Ref()
		out := readTestLog(t, dir, ReadOptions{After: &ref})
		if out.err != nil || len(out.records) != len(all)-i-1 {
			t.Fatalf("after %v: %+v", ref, out)
		}
		for j, got := range out.records {
			if got.Ref() != all[i+1+j].Ref() {
				t.Fatalf("after %v: record %d is %v", ref, j, got.Ref())
			}
		}
	}
}

func TestTextRefAcceptsSurroundingWhiteSpaceAndLeadingZeros(t *testing.T) {
	ref, err := ParseRef(" \t0001:00297:02\n")
	if err != nil || ref != (Ref{1, 297, 2}) {
		t.Fatalf("%v %v", ref, err)
	}
}

func TestMalformedRefsAreInvalidRef(t *testing.T) {
	for _, text := range []string{"", "1:256", "1:256:1:1", "0:256:1", "4294967296:256:1", "1:18446744073709551616:1",
		"1:256:18446744073709551616", "12345678901:1:1", "-1:256:1", "1: 256:1", "1:256:1x", "a:b:c",
		"00000000001:256:1", "\f1:256:1", "1:256:1\v", "\u00a01:256:1"} { // section 10.6: widths; ASCII space, tab, CR, LF only
		if _, err := ParseRef(text); ClassOf(err) != ClassInvalidRef {
			t.Errorf("%q: %v", text, err)
		}
	}
	for _, n := range []int{0, 19, 21} {
		if _, err := ParseBinaryRef(make([]byte, n)); ClassOf(err) != ClassInvalidRef {
			t.Errorf("binary ref of %d bytes: %v", n, err)
		}
	}
	if _, err := ParseRef(strings.Repeat("9", 10) + ":1:1"); ClassOf(err) != ClassInvalidRef {
		t.Errorf("log number above 2^32-1: %v", err)
	}
}

func TestRefsThatNameNoCommittedRecordAreInvalidRef(t *testing.T) {
	dir := fixture(t)
	writeFile(t, segPath(dir, 2), make([]byte, 256)) // a blank last segment
	patchFile(t, segPath(dir, 1), func(b []byte) []byte {
		publishInto(t, b, 1, func(s *Slot) { s.CommitOffset, s.NextIndex, s.LastAsqn = rec3, 3, 5 })
		return b
	})
	for _, ref := range []Ref{
		{1, rec2, 3},        // wrong index
		{1, rec2 + 1, 2},    // not a record boundary
		{1, 200, 1},         // inside the header
		{1, rec3, 3},        // a valid record beyond the commit point
		{2, 256, 3},         // a blank last segment
		{7, 256, 1},         // no such segment
		{100000000, 256, 1}, // beyond eight digits
	} {
		out := readTestLog(t, dir, ReadOptions{After: &ref})
		wantError(t, out.err, ClassInvalidRef, &ref.Log, &ref.Offset, &ref.Index)
		if len(out.records) != 0 {
			t.Fatalf("%v: records returned", ref)
		}
	}
}

func TestRefIntoADamagedHeaderReportsTheHeaderError(t *testing.T) {
	dir := twoSegments(t)
	patchFile(t, segPath(dir, 2), func(b []byte) []byte { b[40] ^= 1; return b })
	ref := Ref{2, 256, 3}
	two := uint32(2)
	wantError(t, readTestLog(t, dir, ReadOptions{After: &ref}).err, ClassBadHeader, &two, u64p(92), nil)
}

func TestRefIntoTheAdoptedEndOfAFinishedSegmentIsValid(t *testing.T) {
	dir := twoSegments(t)
	unseal(t, dir, rec2, 2, -1)
	ref := Ref{1, rec2, 2}
	out := readTestLog(t, dir, ReadOptions{After: &ref})
	if out.err != nil || len(out.records) != 1 || out.records[0].Ref() != (Ref{2, 256, 3}) {
		t.Fatalf("%+v", out)
	}
}

func TestLegacyRefValidatesTheRecordButNotTheIndex(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, segPath(dir, 1), loadVectors(t)["TV-13"].data)
	writeFile(t, segPath(dir, 2), legacySegment(2, false)) // the successor a closed segment has
	ref := Ref{1, 248, 41}
	out := readTestLog(t, dir, ReadOptions{After: &ref})
	if out.err != nil || len(out.records) != 2 || out.records[0].Index != 42 || out.records[1].Index != 43 {
		t.Fatalf("%+v", out)
	}
	for _, bad := range []Ref{{1, 247, 1}, {1, 284, 1}, {1, 250, 1}} {
		wantError(t, readTestLog(t, dir, ReadOptions{After: &bad}).err, ClassInvalidRef, &bad.Log, &bad.Offset, &bad.Index)
	}
}

// A ref whose offset lies near 2^64, below a forged commit point of 2^64-1,
// names bytes far beyond the file: the record check fails step 1
// (truncated), which is invalid_ref (section 10.6 step 4, R-29). The
// bounds o + 40 and o + 4 + length must not wrap around and pass, which
// made the read at a negative file offset fail as io_error.
func TestRefNear2To64UnderAForgedCommitPointIsInvalidRef(t *testing.T) {
	dir := fixture(t)
	patchFile(t, segPath(dir, 1), func(b []byte) []byte {
		publishInto(t, b, 1, func(s *Slot) { s.CommitOffset = math.MaxUint64 })
		return b
	})
	for _, ref := range []Ref{
		{1, math.MaxUint64 - 1, 1},
		{1, math.MaxUint64 - 40, 1},
		{1, math.MaxUint64 - 41, 1},
		{1, 1 << 63, 1},
		{1, rec3End, 4}, // the end of the file
	} {
		out := readTestLog(t, dir, ReadOptions{After: &ref})
		wantError(t, out.err, ClassInvalidRef, &ref.Log, &ref.Offset, &ref.Index)
		if len(out.records) != 0 {
			t.Fatalf("%v: records returned", ref)
		}
	}
	// The record check itself, at offsets where o + 40 and o + 4 + length
	// would wrap: step 1 fails, never a read.
	s, err := openSegment(dir, 1, os.O_RDONLY)
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	for _, o := range []uint64{math.MaxUint64, math.MaxUint64 - 1, math.MaxUint64 - 39, 1 << 63} {
		if _, err := checkRecord(s, o, math.MaxUint64, walkState{E: 1, A: NoAsqn}); ClassOf(err) != ClassTruncated {
			t.Fatalf("offset %d: %v", o, err)
		}
	}
}
