package binlog

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// readTolerantly reads dir as a tolerant reader and collects the damage it reports.
func readTolerantly(t *testing.T, dir string) (readOutcome, []Damage) {
	t.Helper()
	var damage []Damage
	out := readTestLog(t, dir, ReadOptions{OnDamage: func(d Damage) { damage = append(damage, d) }})
	return out, damage
}

func refsOf(records []Record) []Ref {
	refs := []Ref{}
	for _, r := range records {
		refs = append(refs, r.Ref())
	}
	return refs
}

func wantDamage(t *testing.T, got []Damage, want ...Damage) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("damage:\n got  %s\n want %s", fmtDamage(got), fmtDamage(want))
	}
}

func fmtDamage(ds []Damage) string {
	var b strings.Builder
	for _, d := range ds {
		fmt.Fprintf(&b, "%s %d %v %d %d %v; ", d.Class, d.Log, fmtp(d.Offset), d.Index, d.BytesSkipped, fmtp(d.ResumedIndex))
	}
	return b.String()
}

func TestTolerantReadResumesAtTheNextValidRecord(t *testing.T) {
	dir := fixture(t)
	patchFile(t, segPath(dir, 1), func(b []byte) []byte { b[rec2+41] ^= 1; return b })
	out, damage := readTolerantly(t, dir)
	if out.err != nil || out.torn != nil {
		t.Fatalf("%+v", out)
	}
	if got, want := refsOf(out.records), []Ref{{1, rec1, 1}, {1, rec3, 3}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("records %v, want %v", got, want)
	}
	wantDamage(t, damage, Damage{ClassChecksumMismatch, 1, u64p(rec2), 2, rec3 - rec2, u64p(3)})
}

func TestTolerantReadSearchesFromTheByteAfterTheDamageNotFromItsLength(t *testing.T) {
	dir := fixture(t)
	// A length of 2^31 - 1 with a valid header checksum: trusting it would skip record 3.
	patchFile(t, segPath(dir, 1), func(b []byte) []byte {
		be.PutUint32(b[rec2:], MaxLength)
		resealRecord(b[rec2:])
		return b
	})
	out, damage := readTolerantly(t, dir)
	if out.err != nil || len(out.records) != 2 {
		t.Fatalf("%+v", out)
	}
	wantDamage(t, damage, Damage{ClassLengthOutOfRange, 1, u64p(rec2), 2, rec3 - rec2, u64p(3)})
}

func TestTolerantReadSkipsARecordWhoseIndexIsBelowTheExpectedOne(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "log")
	stale := AppendRecord(nil, 1, NoAsqn, T0, []byte("old"))
	payload := append(bytes.Repeat([]byte{0xee}, 20), stale...)
	refs := writeTestLog(t, dir, []appendSpec{{"a", -1}, {string(payload), -1}, {"c", -1}})
	// Damage record 2's header: the stale copy of index 1 inside its payload is valid but too old.
	patchFile(t, segPath(dir, 1), func(b []byte) []byte { b[refs[1].Offset+20] ^= 1; return b })
	out, damage := readTolerantly(t, dir)
	if got, want := refsOf(out.records), []Ref{refs[0], refs[2]}; out.err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("records %v (%v), want %v", got, out.err, want)
	}
	wantDamage(t, damage, Damage{ClassChecksumMismatch, 1, u64p(refs[1].Offset), 2, refs[2].Offset - refs[1].Offset, u64p(3)})
}

// D2, issue case 1: no search window; a candidate's payload is read
// whatever its size.
func TestTolerantReadResumesAtARecordLargerThan32MiBAfterDamage(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "log")
	big := bytes.Repeat([]byte("0123456789abcdef"), (33<<20)/16)
	refs := writeTestLog(t, dir, []appendSpec{{"a", -1}, {"bb", -1}, {string(big), -1}, {"d", -1}})
	patchFile(t, segPath(dir, 1), func(b []byte) []byte { b[refs[1].Offset+41] ^= 1; return b })
	out, damage := readTolerantly(t, dir)
	if got, want := refsOf(out.records), []Ref{refs[0], refs[2], refs[3]}; out.err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("records %v (%v), want %v", got, out.err, want)
	}
	if !bytes.Equal(out.records[1].Payload, big) {
		t.Fatal("the large record's payload differs")
	}
	wantDamage(t, damage, Damage{ClassChecksumMismatch, 1, u64p(refs[1].Offset), 2, refs[2].Offset - refs[1].Offset, u64p(3)})
}

// D2, issue case 2: condition 6 is E <= index < I_S.
func TestTolerantReadDoesNotResumeAtAForgedRecordWithAnIndexBeyondTheSegmentEnd(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "log")
	forged := AppendRecord(nil, 100, NoAsqn, T0, []byte("from the future"))
	refs := writeTestLog(t, dir, []appendSpec{{"a", -1}, {string(append([]byte("xx"), forged...)), -1}, {"c", -1}})
	// Damage record 2's header: the forged record in its payload is whole and
	// valid, but no record of this segment can carry index 100 (I_S = 4).
	patchFile(t, segPath(dir, 1), func(b []byte) []byte { b[refs[1].Offset+20] ^= 1; return b })
	out, damage := readTolerantly(t, dir)
	if got, want := refsOf(out.records), []Ref{refs[0], refs[2]}; out.err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("records %v (%v), want %v", got, out.err, want)
	}
	wantDamage(t, damage, Damage{ClassChecksumMismatch, 1, u64p(refs[1].Offset), 2, refs[2].Offset - refs[1].Offset, u64p(3)})
}

// D2: I_S of a finished, unsealed segment is where the tail walk of 8.4
// stopped: a record beyond the commit point below I_S is a resync point, a
// forged one carrying I_S (the successor's first index) is not.
func TestTolerantSearchInAFinishedUnsealedSegmentIsBoundedByTheTailWalksEndIndex(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "log")
	forged := AppendRecord(nil, 3, NoAsqn, T0, []byte("the successor's index"))
	refs := writeTestLog(t, dir, []appendSpec{{string(append([]byte("xx"), forged...)), -1}, {"b", -1}, {"c", -1}}, 3)
	unseal(t, dir, refs[1].Offset, 2, -1) // record 2 beyond the commit point; I_S = 3, the slot says 2
	patchFile(t, segPath(dir, 1), func(b []byte) []byte { b[refs[0].Offset+20] ^= 1; return b })
	out, damage := readTolerantly(t, dir)
	if got, want := refsOf(out.records), []Ref{refs[1], refs[2]}; out.err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("records %v (%v), want %v", got, out.err, want)
	}
	wantDamage(t, damage, Damage{ClassChecksumMismatch, 1, u64p(refs[0].Offset), 1, refs[1].Offset - refs[0].Offset, u64p(2)})
}

func TestTolerantReadEndsTheSegmentAtMinOfCommitPointAndFileSize(t *testing.T) {
	t.Run("damage in the last record", func(t *testing.T) {
		dir := fixture(t)
		patchFile(t, segPath(dir, 1), func(b []byte) []byte { b[rec3+41] ^= 1; return b })
		out, damage := readTolerantly(t, dir)
		if out.err != nil || len(out.records) != 2 {
			t.Fatalf("%+v", out)
		}
		wantDamage(t, damage, Damage{ClassChecksumMismatch, 1, u64p(rec3), 3, rec3End - rec3, nil})
	})
	t.Run("file shorter than the commit point", func(t *testing.T) {
		dir := fixture(t)
		patchFile(t, segPath(dir, 1), func(b []byte) []byte { return b[:rec2+20] })
		out, damage := readTolerantly(t, dir)
		if out.err != nil || out.torn != nil || len(out.records) != 1 {
			t.Fatalf("%+v", out)
		}
		wantDamage(t, damage, Damage{ClassTruncated, 1, u64p(rec2), 2, 20, nil})
	})
	t.Run("commit point inside a payload", func(t *testing.T) {
		dir := fixture(t)
		patchFile(t, segPath(dir, 1), func(b []byte) []byte {
			publishInto(t, b, 1, func(s *Slot) { s.CommitOffset = rec2 + 41 })
			return b
		})
		out, damage := readTolerantly(t, dir)
		if out.err != nil || len(out.records) != 1 || out.torn == nil || *out.torn != (Torn{1, rec2 + 41}) {
			t.Fatalf("%+v", out)
		}
		wantDamage(t, damage, Damage{ClassLengthOutOfRange, 1, u64p(rec2), 2, 41, nil})
	})
}

func TestTolerantReadReportsTheChainAfterRecordsLostUpToTheSegmentEnd(t *testing.T) {
	dir := twoSegments(t)
	patchFile(t, segPath(dir, 1), func(b []byte) []byte { b[rec2+41] ^= 1; return b })
	out, damage := readTolerantly(t, dir)
	if got, want := refsOf(out.records), []Ref{{1, rec1, 1}, {2, 256, 3}}; out.err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("records %v (%v), want %v", got, out.err, want)
	}
	wantDamage(t, damage,
		Damage{ClassChecksumMismatch, 1, u64p(rec2), 2, rec3 - rec2, nil},
		Damage{ClassChainBroken, 2, u64p(0), 2, 0, u64p(3)})
}

func TestTolerantReadStepsOverAMissingSegment(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "log")
	writeTestLog(t, dir, threeRecords, 2, 3)
	if err := os.Remove(segPath(dir, 2)); err != nil {
		t.Fatal(err)
	}
	out, damage := readTolerantly(t, dir)
	if got, want := refsOf(out.records), []Ref{{1, rec1, 1}, {3, 256, 3}}; out.err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("records %v (%v), want %v", got, out.err, want)
	}
	wantDamage(t, damage, Damage{ClassChainBroken, 2, nil, 2, 0, u64p(3)})
}

func TestTolerantReadStopsAtADamagedHeader(t *testing.T) {
	dir := twoSegments(t)
	patchFile(t, segPath(dir, 2), func(b []byte) []byte { b[40] ^= 1; return b })
	out, damage := readTolerantly(t, dir)
	two := uint32(2)
	wantError(t, out.err, ClassBadHeader, &two, u64p(92), nil)
	if len(out.records) != 2 || len(damage) != 0 {
		t.Fatalf("%+v %v", out, damage)
	}
}

// splitLog writes records of many sizes, one of whose payloads ends with a
// whole valid record carrying index 9, and returns the directory and refs.
func splitLog(t *testing.T) (string, []Ref) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "log")
	var appends []appendSpec
	for i := 0; i < 12; i++ {
		payload := bytes.Repeat([]byte{byte('a' + i)}, (i*37)%90)
		if i == 4 {
			payload = append(payload, AppendRecord(nil, 9, NoAsqn, T0, []byte("inside"))...)
		}
		appends = append(appends, appendSpec{string(payload), -1})
	}
	return dir, writeTestLog(t, dir, appends)
}

func readSplit(t *testing.T, dir string, log uint32, start, stop uint64) []Ref {
	t.Helper()
	var records []Record
	if err := ReadSplit(dir, log, start, stop, func(r Record) error { records = append(records, r); return nil }); err != nil {
		t.Fatal(err)
	}
	return refsOf(records)
}

func TestConsecutiveSplitsReturnEveryRecordExactlyOnce(t *testing.T) {
	dir, refs := splitLog(t)
	size := uint64(len(readFile(t, segPath(dir, 1))))
	for parts := uint64(1); parts <= 9; parts++ {
		var union []Ref
		for part := uint64(0); part < parts; part++ {
			start, stop := 256+(size-256)*part/parts, 256+(size-256)*(part+1)/parts
			union = append(union, readSplit(t, dir, 1, start, stop)...)
		}
		if !reflect.DeepEqual(union, refs) {
			t.Fatalf("%d splits returned %v, want %v", parts, union, refs)
		}
	}
}

func TestSplitBoundaries(t *testing.T) {
	dir, refs := splitLog(t)
	cases := []struct {
		name        string
		start, stop uint64
		want        []Ref
	}{
		{"start inside a record header", refs[2].Offset + 7, math.MaxUint64, refs[3:]},
		{"start on a boundary", refs[2].Offset, math.MaxUint64, refs[2:]},
		{"stop inside a record", 256, refs[6].Offset + 1, refs[:7]},
		{"stop on a boundary", 256, refs[6].Offset, refs[:6]},
		{"start before a record inside a payload", refs[4].Offset + 41, math.MaxUint64, refs[5:]},
		{"start inside the last record", refs[11].Offset + 1, math.MaxUint64, []Ref{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := readSplit(t, dir, 1, c.start, c.stop); !reflect.DeepEqual(got, c.want) {
				t.Fatalf("split [%d, %d): %v, want %v", c.start, c.stop, got, c.want)
			}
		})
	}
}

// D2: the split boundary search uses the same upper bound I_S.
func TestSplitDoesNotStartAtAForgedRecordWithAnIndexBeyondTheSegmentEnd(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "log")
	forged := AppendRecord(nil, 100, NoAsqn, T0, []byte("from the future"))
	refs := writeTestLog(t, dir, []appendSpec{{"a", -1}, {"bb", -1}, {string(append([]byte("xx"), forged...)), -1}})
	// The forged record ends where the segment ends: no continuity check
	// applies, and only its index tells it is not a boundary.
	if got := readSplit(t, dir, 1, refs[2].Offset+1, math.MaxUint64); len(got) != 0 {
		t.Fatalf("%v", got)
	}
	if got := readSplit(t, dir, 1, 256, refs[2].Offset+1); !reflect.DeepEqual(got, refs) {
		t.Fatalf("%v, want %v", got, refs)
	}
}

// D3, issue case 3: one embedded record with the right index makes a false
// boundary; the split that walks over it reports ambiguous_split.
func TestSplitWhoseStopBoundaryLiesInsideARecordIsAmbiguous(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "log")
	// Record 3's payload ends with a valid record carrying index 3: followed
	// by record 4, it passes the continuity check.
	inner := AppendRecord(nil, 3, NoAsqn, T0, []byte("inner"))
	refs := writeTestLog(t, dir, []appendSpec{{"a", -1}, {"bb", -1}, {string(append([]byte("log of logs"), inner...)), -1}, {"d", -1}, {"e", -1}})
	innerAt := refs[3].Offset - uint64(len(inner))
	one := uint32(1)
	for _, stop := range []uint64{refs[2].Offset + 1, refs[2].Offset + 41, innerAt} {
		var records []Record
		err := ReadSplit(dir, 1, 256, stop, func(r Record) error { records = append(records, r); return nil })
		wantError(t, err, ClassAmbiguousSplit, &one, u64p(innerAt), u64p(3))
		if got := refsOf(records); !reflect.DeepEqual(got, refs[:3]) {
			t.Fatalf("stop %d: records before the error %v, want %v", stop, got, refs[:3])
		}
	}
	// A split that starts after the record is not affected, nor is one whose
	// stop boundary is a real one.
	if got := readSplit(t, dir, 1, innerAt+1, math.MaxUint64); !reflect.DeepEqual(got, refs[3:]) {
		t.Fatalf("%v", got)
	}
	if got := readSplit(t, dir, 1, 256, refs[2].Offset); !reflect.DeepEqual(got, refs[:2]) {
		t.Fatalf("%v", got)
	}
	if got := readSplit(t, dir, 1, 256, innerAt+1); !reflect.DeepEqual(got, refs[:3]) {
		t.Fatalf("%v", got)
	}
}

func TestSplitNeverReturnsARecordBeyondTheCommitPoint(t *testing.T) {
	dir := fixture(t)
	patchFile(t, segPath(dir, 1), func(b []byte) []byte { return AppendRecord(b, 4, NoAsqn, T0, []byte("unpublished")) })
	if got, want := readSplit(t, dir, 1, 256, math.MaxUint64), []Ref{{1, rec1, 1}, {1, rec2, 2}, {1, rec3, 3}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("%v, want %v", got, want)
	}
	if got := readSplit(t, dir, 1, rec3End, math.MaxUint64); len(got) != 0 {
		t.Fatalf("a split beyond the commit point returned %v", got)
	}
}

func TestReadRejectsASlotWhoseNextIndexDisagreesWithTheRecords(t *testing.T) {
	dir := fixture(t)
	patchFile(t, segPath(dir, 1), func(b []byte) []byte {
		publishInto(t, b, 1, func(s *Slot) { s.NextIndex++ })
		return b
	})
	slot := uint64(SlotOffset(headerOf(t, readFile(t, segPath(dir, 1)), 1).Active.Generation))
	one := uint32(1)
	out := readTestLog(t, dir, ReadOptions{})
	wantError(t, out.err, ClassBadHeader, &one, u64p(slot), u64p(4))
	if len(out.records) != 3 {
		t.Fatalf("%+v", out)
	}
	out, damage := readTolerantly(t, dir)
	if out.err != nil || len(out.records) != 3 {
		t.Fatalf("%+v", out)
	}
	wantDamage(t, damage, Damage{ClassBadHeader, 1, u64p(slot), 4, 0, u64p(5)})
}

func TestTolerantReadOfAVersion1SegmentSkipsItsRestAndGoesOn(t *testing.T) {
	dir := t.TempDir()
	tv := loadVectors(t)["TV-13"].data
	damaged := append([]byte{}, tv...)
	damaged[260] = 0xff // record 2's length is negative
	writeFile(t, segPath(dir, 1), damaged)
	writeFile(t, segPath(dir, 2), tv) // the same records again, as segment 2
	patchFile(t, segPath(dir, 2), func(b []byte) []byte {
		b[19] = 2          // log number 2
		b[7], b[23] = 0, 0 // open: the last segment
		return b
	})
	out, damage := readTolerantly(t, dir)
	if out.err != nil || len(out.records) != 4 {
		t.Fatalf("%+v", out)
	}
	if got, want := refsOf(out.records), []Ref{{1, 248, 1}, {2, 248, 2}, {2, 260, 3}, {2, 272, 4}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("records %v, want %v", got, want)
	}
	wantDamage(t, damage, Damage{ClassLengthOutOfRange, 1, u64p(260), 2, uint64(len(tv)) - 260, nil})
}

func TestTolerantSearchInAFinishedSegmentRunsToItsEndNotItsCommitPoint(t *testing.T) {
	dir := twoSegments(t)
	// Segment 1 finished, its seal and the publication of record 2 lost.
	patchFile(t, segPath(dir, 1), func(b []byte) []byte {
		publishInto(t, b, 1, func(s *Slot) { s.CommitOffset, s.NextIndex, s.LastAsqn, s.NextLogNumber = rec2, 2, NoAsqn, 0 })
		b[rec1+40] ^= 1
		return b
	})
	out, damage := readTolerantly(t, dir)
	if got, want := refsOf(out.records), []Ref{{1, rec2, 2}, {2, 256, 3}}; out.err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("records %v (%v), want %v", got, out.err, want)
	}
	wantDamage(t, damage, Damage{ClassChecksumMismatch, 1, u64p(rec1), 1, rec2 - rec1, u64p(2)})
}

func TestSplitReportsDamageBeforeWhereTheNextSplitStarts(t *testing.T) {
	dir := fixture(t)
	patchFile(t, segPath(dir, 1), func(b []byte) []byte { b[rec2+41] ^= 1; return b })
	var records []Record
	err := ReadSplit(dir, 1, rec1, rec2, func(r Record) error { records = append(records, r); return nil })
	one := uint32(1)
	wantError(t, err, ClassChecksumMismatch, &one, u64p(rec2), u64p(2))
	if got := refsOf(records); !reflect.DeepEqual(got, []Ref{{1, rec1, 1}}) {
		t.Fatalf("records %v", got)
	}
	if got := readSplit(t, dir, 1, rec2, math.MaxUint64); !reflect.DeepEqual(got, []Ref{{1, rec3, 3}}) {
		t.Fatalf("the next split returned %v", got)
	}
}

func TestSplitOfABlankLastSegmentReturnsNothing(t *testing.T) {
	dir := fixture(t)
	writeFile(t, segPath(dir, 2), make([]byte, 256))
	if got := readSplit(t, dir, 2, 256, math.MaxUint64); len(got) != 0 {
		t.Fatalf("%v", got)
	}
	three := uint32(3)
	wantError(t, ReadSplit(dir, 3, 256, math.MaxUint64, func(Record) error { return nil }), ClassIOError, &three, nil, nil)
}

// A split's checks are a sequential reader's: in a finished, unsealed
// segment whose end S lies beyond the commit point C, a record that starts
// below C must end at or below C (step 4's bound U).
func TestSplitChecksARecordStartingBelowTheCommitPointAgainstIt(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "log")
	inner := AppendRecord(nil, 2, NoAsqn, T0, []byte("inner"))
	payload := append([]byte("xx"), inner...)
	refs := writeTestLog(t, dir, []appendSpec{{"a", -1}, {string(payload), -1}, {"c", -1}}, 3)
	innerAt := refs[1].Offset + RecordHeaderSize + 2
	// The commit point at the record inside record 2's payload, which ends
	// where record 2 ends: the tail walk of 8.4 goes from there over it (S
	// beyond C, at the end of record 2).
	unseal(t, dir, innerAt, 2, -1)
	one := uint32(1)
	out := readTestLog(t, dir, ReadOptions{})
	wantError(t, out.err, ClassLengthOutOfRange, &one, u64p(refs[1].Offset), u64p(2))
	var records []Record
	err := ReadSplit(dir, 1, 256, math.MaxUint64, func(r Record) error { records = append(records, r); return nil })
	wantError(t, err, ClassLengthOutOfRange, &one, u64p(refs[1].Offset), u64p(2))
	if got := refsOf(records); !reflect.DeepEqual(got, refs[:1]) {
		t.Fatalf("records %v", got)
	}
}

// craftedSegment writes a log whose only segment holds the given records
// (encoded by hand, so that their indexes and asqns may break the rules),
// published with commit point at their end, next_index nextIndex and
// last_asqn lastAsqn. It returns the log and the records' offsets.
func craftedSegment(t *testing.T, nextIndex uint64, lastAsqn int64, records ...[]byte) (string, []uint64) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "log")
	writeTestLog(t, dir, []appendSpec{{"x", -1}})
	var offsets []uint64
	patchFile(t, segPath(dir, 1), func(b []byte) []byte {
		b = b[:HeaderSize:HeaderSize]
		for _, r := range records {
			offsets = append(offsets, uint64(len(b)))
			b = append(b, r...)
		}
		end := uint64(len(b))
		publishInto(t, b, 1, func(s *Slot) { s.CommitOffset, s.NextIndex, s.LastAsqn = end, nextIndex, lastAsqn })
		return b
	})
	return dir, offsets
}

// splitAt reads [256, t) then [t, end): the first split's records, the
// second split's records (it must accept) and the first split's error.
func splitAt(t *testing.T, dir string, at uint64) (first, second []Ref, err error) {
	t.Helper()
	var records []Record
	err = ReadSplit(dir, 1, HeaderSize, at, func(r Record) error { records = append(records, r); return nil })
	return refsOf(records), readSplit(t, dir, 1, at, math.MaxUint64), err
}

func TestSplitEndingAtAResurrectedRecordReportsIt(t *testing.T) {
	r2 := AppendRecord(nil, 2, NoAsqn, T0, []byte("two"))
	dir, at := craftedSegment(t, 4, NoAsqn, AppendRecord(nil, 1, NoAsqn, T0, []byte("one")), r2, r2,
		AppendRecord(nil, 3, NoAsqn, T0, []byte("three")))
	one := uint32(1)
	wantError(t, readTestLog(t, dir, ReadOptions{}).err, ClassIndexDiscontinuity, &one, u64p(at[2]), u64p(3))
	first, second, err := splitAt(t, dir, at[2])
	wantError(t, err, ClassIndexDiscontinuity, &one, u64p(at[2]), u64p(3))
	if want := []Ref{{1, at[0], 1}, {1, at[1], 2}}; !reflect.DeepEqual(first, want) {
		t.Fatalf("records before the error %v, want %v", first, want)
	}
	// The next split cannot tell: it starts at the copy with E := 2.
	if want := []Ref{{1, at[2], 2}, {1, at[3], 3}}; !reflect.DeepEqual(second, want) {
		t.Fatalf("the next split returned %v, want %v", second, want)
	}
}

func TestSplitEndingAtAnIndexGapReportsIt(t *testing.T) {
	var recs [][]byte
	for _, i := range []uint64{1, 2, 4, 5} {
		recs = append(recs, AppendRecord(nil, i, NoAsqn, T0, []byte{byte(i), byte(i), byte(i)}))
	}
	dir, at := craftedSegment(t, 6, NoAsqn, recs...)
	one := uint32(1)
	wantError(t, readTestLog(t, dir, ReadOptions{}).err, ClassIndexDiscontinuity, &one, u64p(at[2]), u64p(3))
	first, second, err := splitAt(t, dir, at[2])
	wantError(t, err, ClassIndexDiscontinuity, &one, u64p(at[2]), u64p(3))
	if want := []Ref{{1, at[0], 1}, {1, at[1], 2}}; !reflect.DeepEqual(first, want) {
		t.Fatalf("records before the error %v, want %v", first, want)
	}
	if want := []Ref{{1, at[2], 4}, {1, at[3], 5}}; !reflect.DeepEqual(second, want) {
		t.Fatalf("the next split returned %v, want %v", second, want)
	}
	// A stop inside the record before the gap lands on the same boundary.
	first, _, err = splitAt(t, dir, at[1]+1)
	wantError(t, err, ClassIndexDiscontinuity, &one, u64p(at[2]), u64p(3))
	if want := []Ref{{1, at[0], 1}, {1, at[1], 2}}; !reflect.DeepEqual(first, want) {
		t.Fatalf("records before the error %v, want %v", first, want)
	}
}

func TestSplitEndingAtAnAsqnGoingBackReportsIt(t *testing.T) {
	dir, at := craftedSegment(t, 4, 5, AppendRecord(nil, 1, 10, T0, []byte("a")),
		AppendRecord(nil, 2, 5, T0, []byte("b")), AppendRecord(nil, 3, NoAsqn, T0, []byte("c")))
	one := uint32(1)
	wantError(t, readTestLog(t, dir, ReadOptions{}).err, ClassAsqnNotIncreasing, &one, u64p(at[1]), u64p(2))
	first, second, err := splitAt(t, dir, at[1])
	wantError(t, err, ClassAsqnNotIncreasing, &one, u64p(at[1]), u64p(2))
	if want := []Ref{{1, at[0], 1}}; !reflect.DeepEqual(first, want) {
		t.Fatalf("records before the error %v, want %v", first, want)
	}
	if want := []Ref{{1, at[1], 2}, {1, at[2], 3}}; !reflect.DeepEqual(second, want) {
		t.Fatalf("the next split returned %v, want %v", second, want)
	}
}

// The control: a record at the boundary that continues the walk (its index
// E, its asqn above A, or none) ends the split without a report; damage of
// steps 1 to 6 there is the next split's.
func TestSplitEndingAtAContinuingRecordAccepts(t *testing.T) {
	dir, at := craftedSegment(t, 4, 7, AppendRecord(nil, 1, 5, T0, []byte("a")),
		AppendRecord(nil, 2, 7, T0, []byte("b")), AppendRecord(nil, 3, NoAsqn, T0, []byte("c")))
	for _, stop := range []uint64{at[1], at[1] + 1, at[2]} {
		first, second, err := splitAt(t, dir, stop)
		if err != nil {
			t.Fatalf("stop %d: %v", stop, err)
		}
		if got, want := append(first, second...), []Ref{{1, at[0], 1}, {1, at[1], 2}, {1, at[2], 3}}; !reflect.DeepEqual(got, want) {
			t.Fatalf("stop %d: %v, want %v", stop, got, want)
		}
	}
}

// b(256) = 256 always (section 10.5 step 1), also when the file was cut
// at or just beyond the header: a split over the segment checks the record
// at 256 and reports truncated there, as the sequential reader does,
// instead of finding no boundary and returning nothing without an error.
func TestSplitOfASegmentCutBelowItsFirstRecordReportsTruncated(t *testing.T) {
	one := uint32(1)
	for _, cut := range []int{256, 280, 296} {
		dir := fixture(t)
		patchFile(t, segPath(dir, 1), func(b []byte) []byte { return b[:cut] })
		wantError(t, readTestLog(t, dir, ReadOptions{}).err, ClassTruncated, &one, u64p(rec1), u64p(1))
		for _, start := range []uint64{0, 256} {
			var records []Record
			err := ReadSplit(dir, 1, start, math.MaxUint64, func(r Record) error { records = append(records, r); return nil })
			wantError(t, err, ClassTruncated, &one, u64p(rec1), u64p(1))
			if len(records) != 0 {
				t.Fatalf("cut %d: %d records", cut, len(records))
			}
		}
		// A split that starts beyond 256 finds no boundary: no records, no error.
		if got := readSplit(t, dir, 1, 257, math.MaxUint64); len(got) != 0 {
			t.Fatalf("cut %d: %v", cut, got)
		}
	}
}

// An empty segment (C = 256) whose active slot's next_index is not the
// base index: the walk of a split stands at C at once and makes the check
// of R-39 there (WALK step 2.1), as the sequential reader does.
func TestSplitOfAnEmptySegmentWhoseSlotDisagreesMakesTheCheckOfR39(t *testing.T) {
	dir := fixture(t)
	var at int64
	patchFile(t, segPath(dir, 1), func(b []byte) []byte {
		b = b[:HeaderSize]
		publishInto(t, b, 1, func(s *Slot) {
			s.CommitOffset, s.NextIndex, s.LastAsqn = HeaderSize, 3, 5
			at = SlotOffset(s.Generation)
		})
		return b
	})
	one := uint32(1)
	wantError(t, readTestLog(t, dir, ReadOptions{}).err, ClassBadHeader, &one, u64p(uint64(at)), u64p(1))
	err := ReadSplit(dir, 1, 256, math.MaxUint64, func(Record) error { t.Fatal("a record"); return nil })
	wantError(t, err, ClassBadHeader, &one, u64p(uint64(at)), u64p(1))
	// The control: an empty segment whose slot agrees splits to nothing.
	empty := filepath.Join(t.TempDir(), "log")
	writeTestLog(t, empty, nil)
	if got := readSplit(t, empty, 1, 256, math.MaxUint64); len(got) != 0 {
		t.Fatalf("%v", got)
	}
}
