package binlog

import (
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"syscall"
	"testing"
	"time"
)

// threeRecords is the fixture of the damage tests: one segment holding
// records of 41, 42 and 43 bytes at 256, 297 and 339; the file ends at 382.
var threeRecords = []appendSpec{{"a", -1}, {"bb", 5}, {"ccc", -1}}

const (
	rec1, rec2, rec3, rec3End = 256, 297, 339, 382
)

func fixture(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "log")
	writeTestLog(t, dir, threeRecords)
	return dir
}

// twoSegments: records 1 and 2 in segment 1 (sealed), record 3 in segment 2.
func twoSegments(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "log")
	writeTestLog(t, dir, threeRecords, 3)
	return dir
}

func TestReadRoundTripReturnsEveryRecord(t *testing.T) {
	out := readTestLog(t, twoSegments(t), ReadOptions{})
	if out.err != nil || out.torn != nil || len(out.records) != 3 {
		t.Fatalf("%+v", out)
	}
	want := []Ref{{1, rec1, 1}, {1, rec2, 2}, {2, 256, 3}}
	for i, r := range out.records {
		if r.Ref() != want[i] || string(r.Payload) != threeRecords[i].payload || r.Asqn != threeRecords[i].asqn || !r.Checked {
			t.Fatalf("record %d: %+v", i, r)
		}
	}
}

func TestHeaderDamageIsReportedWithTheFirstFailingCheck(t *testing.T) {
	one := uint32(1)
	cases := []struct {
		name   string
		patch  func(b []byte) []byte
		class  Class
		offset uint64
	}{
		{"file shorter than a header", func(b []byte) []byte { return b[:200] }, ClassTruncated, 0},
		{"version 3", func(b []byte) []byte { b[5] = 3; return b }, ClassUnsupportedVersion, 4},
		{"version 1 with the signature", func(b []byte) []byte { b[5] = 1; return b }, ClassUnsupportedVersion, 4},
		{"all-zero header with a successor", func(b []byte) []byte { clear(b[:256]); return b }, ClassUnsupportedVersion, 4},
		{"signature altered", func(b []byte) []byte { b[29] = 0x0a; return b }, ClassBadSignature, 24},
		{"log id bit flip", func(b []byte) []byte { b[40] ^= 1; return b }, ClassBadHeader, 92},
		{"header length 251", func(b []byte) []byte { b[3] = 251; resealHeader(b); return b }, ClassBadHeader, 0},
		{"log number differs from name", func(b []byte) []byte { b[19] = 9; resealHeader(b); return b }, ClassBadHeader, 16},
		{"reserved byte 70", func(b []byte) []byte { b[70] = 1; resealHeader(b); return b }, ClassBadHeader, 68},
		{"reserved byte 200", func(b []byte) []byte { b[200] = 1; return b }, ClassBadHeader, 68},
		{"unknown flag", func(b []byte) []byte { b[67] = 2; resealHeader(b); return b }, ClassUnsupportedFeature, 64},
		{"PREALLOCATED without capacity", func(b []byte) []byte { b[67] = 1; resealHeader(b); return b }, ClassBadHeader, 72},
		{"capacity without PREALLOCATED", func(b []byte) []byte { b[79] = 1; resealHeader(b); return b }, ClassBadHeader, 72},
		{"no valid slot", func(b []byte) []byte { b[100] ^= 1; b[150] ^= 1; return b }, ClassBadHeader, 96},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := twoSegments(t)
			patchFile(t, segPath(dir, 1), c.patch)
			out := readTestLog(t, dir, ReadOptions{})
			wantError(t, out.err, c.class, &one, u64p(c.offset), nil)
			if len(out.records) != 0 {
				t.Fatalf("records returned from a damaged header: %d", len(out.records))
			}
		})
	}
}

func TestCommitSlotSelectionFailuresAreBadHeader(t *testing.T) {
	one := uint32(1)
	// After three appends segment 1 holds generation 4 (slot 0) and 3 (slot 1).
	cases := []struct {
		name   string
		slot   func(s *Slot)
		at     int64 // where the forged slot is written
		offset uint64
	}{
		{"same generation in both slots", func(s *Slot) { s.Generation = 3 }, slot0Offset, 96},
		{"generation in the wrong slot", func(s *Slot) { s.Generation = 5 }, slot0Offset, 144},
		{"commit offset below 256", func(s *Slot) { s.CommitOffset = 255 }, slot1Offset, 144},
		{"next index below base index", func(s *Slot) { s.NextIndex = 0 }, slot1Offset, 144},
		{"next log number not N+1", func(s *Slot) { s.NextLogNumber = 3 }, slot1Offset, 144},
		{"last asqn below -1", func(s *Slot) { s.LastAsqn = -2 }, slot1Offset, 144},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := fixture(t)
			patchFile(t, segPath(dir, 1), func(b []byte) []byte {
				s := headerOf(t, b, 1).Active
				s.Generation = 5
				c.slot(&s)
				copy(b[c.at:], s.Encode())
				return b
			})
			wantError(t, readTestLog(t, dir, ReadOptions{}).err, ClassBadHeader, &one, u64p(c.offset), nil)
		})
	}
}

func TestTornSlotFallsBackToThePreviousCommitPoint(t *testing.T) {
	dir := fixture(t)
	patchFile(t, segPath(dir, 1), func(b []byte) []byte {
		b[slot0Offset+10] ^= 0xff // generation 4, the active slot, torn
		return b
	})
	out := readTestLog(t, dir, ReadOptions{})
	if out.err != nil || len(out.records) != 2 || out.torn == nil || *out.torn != (Torn{1, rec3}) {
		t.Fatalf("%+v", out)
	}
}

func TestRecordDamageIsReportedAfterTheRecordsBeforeIt(t *testing.T) {
	one := uint32(1)
	cases := []struct {
		name  string
		patch func(b []byte) []byte
		class Class
		at    uint64
		index uint64
	}{
		{"header bit flip", func(b []byte) []byte { b[rec2+12] ^= 1; return b }, ClassChecksumMismatch, rec2, 2},
		{"payload bit flip", func(b []byte) []byte { b[rec2+41] ^= 1; return b }, ClassChecksumMismatch, rec2, 2},
		{"zeroed record", func(b []byte) []byte { clear(b[rec2:rec3]); return b }, ClassChecksumMismatch, rec2, 2},
		{"must-understand frame 2", func(b []byte) []byte { b[rec2+4] = 2; resealRecord(b[rec2:]); return b }, ClassUnsupportedFeature, rec2, 2},
		{"frame 0 in committed data", func(b []byte) []byte { b[rec2+4] = 0; resealRecord(b[rec2:]); return b }, ClassUnsupportedFeature, rec2, 2},
		{"record flags", func(b []byte) []byte { b[rec2+5] = 1; resealRecord(b[rec2:]); return b }, ClassUnsupportedFeature, rec2, 2},
		{"reserved record bytes", func(b []byte) []byte { b[rec2+7] = 1; resealRecord(b[rec2:]); return b }, ClassUnsupportedFeature, rec2, 2},
		{"length 35", func(b []byte) []byte { b[rec2+3] = 35; resealRecord(b[rec2:]); return b }, ClassLengthOutOfRange, rec2, 2},
		{"length beyond the commit point", func(b []byte) []byte { b[rec3+3] = 44; resealRecord(b[rec3:]); return b }, ClassLengthOutOfRange, rec3, 3},
		{"commit point inside a payload", func(b []byte) []byte {
			publishInto(t, b, 1, func(s *Slot) { s.CommitOffset = rec3 + 41 })
			return b
		}, ClassLengthOutOfRange, rec3, 3},
		{"commit point inside a record header", func(b []byte) []byte {
			publishInto(t, b, 1, func(s *Slot) { s.CommitOffset = rec3 + 39 })
			return b
		}, ClassTruncated, rec3, 3},
		{"file cut inside a payload", func(b []byte) []byte { return b[:rec3End-1] }, ClassTruncated, rec3, 3},
		{"index skips", func(b []byte) []byte { b[rec2+15] = 7; resealRecord(b[rec2:]); return b }, ClassIndexDiscontinuity, rec2, 2},
		{"asqn repeats", func(b []byte) []byte { be.PutUint64(b[rec3+16:], 5); resealRecord(b[rec3:]); return b }, ClassAsqnNotIncreasing, rec3, 3},
		{"asqn below -1", func(b []byte) []byte { b[rec3+23] = 0xfe; resealRecord(b[rec3:]); return b }, ClassAsqnNotIncreasing, rec3, 3},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := fixture(t)
			patchFile(t, segPath(dir, 1), c.patch)
			out := readTestLog(t, dir, ReadOptions{})
			wantError(t, out.err, c.class, &one, u64p(c.at), u64p(c.index))
			if want := int(c.index - 1); len(out.records) != want {
				t.Fatalf("want the %d records before the damage, got %d", want, len(out.records))
			}
		})
	}
}

func TestCommittedFileCutAtEveryByteOfTheLastRecordIsTruncated(t *testing.T) {
	one := uint32(1)
	base := readFile(t, segPath(fixture(t), 1))
	for cut := rec3; cut < rec3End; cut++ {
		dir := t.TempDir()
		writeFile(t, segPath(dir, 1), base[:cut])
		out := readTestLog(t, dir, ReadOptions{})
		wantError(t, out.err, ClassTruncated, &one, u64p(rec3), u64p(3))
		if len(out.records) != 2 {
			t.Fatalf("cut at %d: %d records before the damage", cut, len(out.records))
		}
	}
}

func TestTornTailAtEveryByteOfAnUncommittedRecordIsNotAnError(t *testing.T) {
	base := readFile(t, segPath(fixture(t), 1))
	// Publish only two records: record 3 becomes the tail.
	publishInto(t, base, 1, func(s *Slot) { s.CommitOffset, s.NextIndex, s.LastAsqn = rec3, 3, 5 })
	for cut := rec3; cut <= rec3End; cut++ {
		dir := t.TempDir()
		writeFile(t, segPath(dir, 1), base[:cut])
		out := readTestLog(t, dir, ReadOptions{})
		if out.err != nil || len(out.records) != 2 {
			t.Fatalf("cut at %d: %+v", cut, out)
		}
		// The first bytes of the length field are zeros: no torn tail yet.
		if wantTorn := !allZero(base[rec3:cut]); (out.torn != nil) != wantTorn ||
			(wantTorn && *out.torn != (Torn{1, rec3})) {
			t.Fatalf("cut at %d: torn %+v", cut, out.torn)
		}
	}
}

func TestSkippableFrameIsVerifiedButNotReturned(t *testing.T) {
	seg := NewHeader{LogNumber: 1, LogID: vectorLogID, BaseIndex: 1, CreatedUS: T0, LastAsqn: NoAsqn}.Encode()
	seg = AppendRecord(seg, 1, -1, T0, []byte("a"))
	skip := len(seg)
	seg = AppendRecord(seg, 2, -1, T0, []byte("meta")) // carries the next data index
	seg[skip+4] = 200
	resealRecord(seg[skip:])
	seg = AppendRecord(seg, 2, -1, T0, []byte("b"))
	publishInto(t, seg, 1, func(s *Slot) { s.CommitOffset, s.NextIndex = uint64(len(seg)), 3 })
	dir := t.TempDir()
	writeFile(t, segPath(dir, 1), seg)
	out := readTestLog(t, dir, ReadOptions{})
	if out.err != nil || len(out.records) != 2 || out.records[1].Index != 2 || string(out.records[1].Payload) != "b" {
		t.Fatalf("%+v", out)
	}
	// A damaged skippable record is still damage.
	seg[skip+41] ^= 1
	writeFile(t, segPath(dir, 1), seg)
	one := uint32(1)
	wantError(t, readTestLog(t, dir, ReadOptions{}).err, ClassChecksumMismatch, &one, u64p(uint64(skip)), u64p(2))
}

func TestHostileLengthUsesNoMemoryForItsClaim(t *testing.T) {
	one := uint32(1)
	for _, c := range []struct {
		name   string
		length uint32
		class  Class
	}{
		{"4 GiB length", 0xffffffff, ClassLengthOutOfRange},
		{"2 GiB length", MaxLength, ClassTruncated},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := fixture(t)
			patchFile(t, segPath(dir, 1), func(b []byte) []byte {
				be.PutUint32(b[rec3:], c.length)
				resealRecord(b[rec3:])
				publishInto(t, b, 1, func(s *Slot) { s.CommitOffset = 1 << 40 })
				return b
			})
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			out := readTestLog(t, dir, ReadOptions{})
			runtime.ReadMemStats(&after)
			wantError(t, out.err, c.class, &one, u64p(rec3), u64p(3))
			if grew := after.TotalAlloc - before.TotalAlloc; grew > 1<<20 {
				t.Fatalf("reading allocated %d bytes", grew)
			}
			// In a tail, recovery stops at it without allocating either.
			patchFile(t, segPath(dir, 1), func(b []byte) []byte {
				publishInto(t, b, 1, func(s *Slot) { s.CommitOffset, s.NextIndex = rec3, 3 })
				return b
			})
			runtime.ReadMemStats(&before)
			if err := Recover(dir); err != nil {
				t.Fatal(err)
			}
			runtime.ReadMemStats(&after)
			if grew := after.TotalAlloc - before.TotalAlloc; grew > 1<<20 {
				t.Fatalf("recovery allocated %d bytes", grew)
			}
			if out := readTestLog(t, dir, ReadOptions{}); out.err != nil || out.torn != nil || len(out.records) != 2 {
				t.Fatalf("after recovery: %+v", out)
			}
		})
	}
}

func TestChainBreaksAreReported(t *testing.T) {
	two := uint32(2)
	t.Run("missing middle segment", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "log")
		writeTestLog(t, dir, threeRecords, 2, 3)
		if err := os.Remove(segPath(dir, 2)); err != nil {
			t.Fatal(err)
		}
		out := readTestLog(t, dir, ReadOptions{})
		wantError(t, out.err, ClassChainBroken, &two, nil, u64p(2))
		if len(out.records) != 1 {
			t.Fatalf("%d records before the gap", len(out.records))
		}
	})
	t.Run("segment of another log", func(t *testing.T) {
		dir, other := twoSegments(t), twoSegments(t)
		writeFile(t, segPath(dir, 2), readFile(t, segPath(other, 2)))
		wantError(t, readTestLog(t, dir, ReadOptions{}).err, ClassChainBroken, &two, u64p(0), u64p(3))
	})
	t.Run("base index differs", func(t *testing.T) {
		dir := twoSegments(t)
		patchFile(t, segPath(dir, 2), func(b []byte) []byte { b[55] = 2; resealHeader(b); return b })
		// The successor is finished-by-nothing: its own records now start at the wrong index too,
		// but the boundary is checked first.
		wantError(t, readTestLog(t, dir, ReadOptions{}).err, ClassChainBroken, &two, u64p(0), u64p(3))
	})
}

func TestBlankLastSegmentIsAbsent(t *testing.T) {
	for name, blank := range map[string][]byte{"short zeros": make([]byte, 100), "header of zeros": make([]byte, 256), "empty file": nil} {
		t.Run(name, func(t *testing.T) {
			dir := twoSegments(t)
			writeFile(t, segPath(dir, 3), blank)
			out := readTestLog(t, dir, ReadOptions{})
			if out.err != nil || out.torn != nil || len(out.records) != 3 {
				t.Fatalf("%+v", out)
			}
		})
	}
	t.Run("only a blank segment", func(t *testing.T) {
		dir := t.TempDir()
		writeFile(t, segPath(dir, 1), make([]byte, 256))
		if out := readTestLog(t, dir, ReadOptions{}); out.err != nil || len(out.records) != 0 {
			t.Fatalf("%+v", out)
		}
	})
}

// D1: only a segment zero in every byte is blank.
func TestShortLastSegmentWithANonZeroByteIsTruncatedNotBlank(t *testing.T) {
	three := uint32(3)
	for name, short := range map[string][]byte{"one byte": {1}, "100 bytes, the last non-zero": append(make([]byte, 99), 1),
		"255 bytes of a header": readFile(t, segPath(twoSegments(t), 2))[:255]} {
		t.Run(name, func(t *testing.T) {
			dir := twoSegments(t)
			writeFile(t, segPath(dir, 3), short)
			out := readTestLog(t, dir, ReadOptions{})
			wantError(t, out.err, ClassTruncated, &three, u64p(0), nil)
			if len(out.records) != 3 {
				t.Fatalf("%d records before the damaged header", len(out.records))
			}
		})
	}
	t.Run("version 1 last segment cut below 256 bytes", func(t *testing.T) {
		dir := t.TempDir()
		two := uint32(2)
		writeFile(t, segPath(dir, 1), loadVectors(t)["TV-13"].data)
		writeFile(t, segPath(dir, 2), legacySegment(2, false, "x")[:200])
		out := readTestLog(t, dir, ReadOptions{})
		wantError(t, out.err, ClassTruncated, &two, u64p(0), nil)
		if len(out.records) != 3 {
			t.Fatalf("%d records", len(out.records))
		}
	})
}

// D1 as committed: only a file of at most 256 bytes, all zero, is blank. A
// zeroed file longer than a header lost a header that was durable, with
// whatever followed it: reported, never read as an empty segment.
func TestZeroedLastSegmentLongerThanAHeaderIsUnsupportedVersion(t *testing.T) {
	two := uint32(2)
	for _, size := range []int{257, 4096} {
		dir := fixture(t)
		writeFile(t, segPath(dir, 2), make([]byte, size))
		out := readTestLog(t, dir, ReadOptions{})
		wantError(t, out.err, ClassUnsupportedVersion, &two, u64p(4), nil)
		if len(out.records) != 3 {
			t.Fatalf("%d zero bytes: %d records", size, len(out.records))
		}
		wantError(t, ReadSplit(dir, 2, 256, 1<<62, func(Record) error { return nil }), ClassUnsupportedVersion, &two, u64p(4), nil)
		wantError(t, Recover(dir), ClassUnsupportedVersion, &two, u64p(4), nil)
		if b := readFile(t, segPath(dir, 2)); len(b) != size || !allZero(b) {
			t.Fatalf("recovery changed segment 2")
		}
	}
}

// D1: a zeroed header in front of non-zero bytes is not blank, even as the last segment.
func TestZeroedHeaderOfTheLastSegmentInFrontOfRecordsIsUnsupportedVersion(t *testing.T) {
	dir := twoSegments(t)
	patchFile(t, segPath(dir, 2), func(b []byte) []byte { clear(b[:HeaderSize]); return b })
	two := uint32(2)
	out := readTestLog(t, dir, ReadOptions{})
	wantError(t, out.err, ClassUnsupportedVersion, &two, u64p(4), nil)
	if len(out.records) != 2 {
		t.Fatalf("%d records", len(out.records))
	}
}

func TestUnknownFilesAreIgnored(t *testing.T) {
	dir := twoSegments(t)
	for _, name := range []string{"00000001.idx", ".00000003.dat.ab12.tmp", "notes.txt", "0000001.dat", "00000003.dat.bak"} {
		writeFile(t, filepath.Join(dir, name), []byte("garbage"))
	}
	if out := readTestLog(t, dir, ReadOptions{}); out.err != nil || len(out.records) != 3 {
		t.Fatalf("%+v", out)
	}
}

// unseal makes segment 1 of dir look like a cutover that crashed after its
// step 3: open, with its commit point moved back to commitAt.
func unseal(t *testing.T, dir string, commitAt, nextIndex uint64, lastAsqn int64) {
	t.Helper()
	patchFile(t, segPath(dir, 1), func(b []byte) []byte {
		publishInto(t, b, 1, func(s *Slot) {
			s.CommitOffset, s.NextIndex, s.LastAsqn, s.NextLogNumber = commitAt, nextIndex, lastAsqn, 0
		})
		return b
	})
}

func TestFinishedSegmentEndExtendsToTheSuccessorsBaseIndex(t *testing.T) {
	dir := twoSegments(t)
	unseal(t, dir, rec2, 2, -1) // record 2 lies beyond the commit point
	out := readTestLog(t, dir, ReadOptions{})
	if out.err != nil || len(out.records) != 3 || out.records[1].Ref() != (Ref{1, rec2, 2}) {
		t.Fatalf("%+v", out)
	}
}

func TestFinishedSegmentThatCannotReachTheSuccessorIsChainBroken(t *testing.T) {
	dir := twoSegments(t)
	unseal(t, dir, rec2, 2, -1)
	patchFile(t, segPath(dir, 1), func(b []byte) []byte { b[rec2+41] ^= 1; return b })
	two := uint32(2)
	out := readTestLog(t, dir, ReadOptions{})
	wantError(t, out.err, ClassChainBroken, &two, u64p(0), u64p(2))
	if len(out.records) != 1 {
		t.Fatalf("%d records", len(out.records))
	}
}

func TestSealedSegmentWithoutSuccessorEndsTheLog(t *testing.T) {
	dir := twoSegments(t)
	if err := os.Remove(segPath(dir, 2)); err != nil {
		t.Fatal(err)
	}
	if out := readTestLog(t, dir, ReadOptions{}); out.err != nil || out.torn != nil || len(out.records) != 2 {
		t.Fatalf("%+v", out)
	}
}

func TestIOFailuresAreIOError(t *testing.T) {
	if err := readTestLog(t, filepath.Join(t.TempDir(), "absent"), ReadOptions{}).err; ClassOf(err) != ClassIOError {
		t.Fatalf("missing directory: %v", err)
	}
	dir := twoSegments(t)
	if err := os.Mkdir(segPath(dir, 3), 0o755); err != nil {
		t.Fatal(err)
	}
	three := uint32(3)
	// Not a regular file: refused at the open, with no offset.
	wantError(t, readTestLog(t, dir, ReadOptions{}).err, ClassIOError, &three, nil, nil)
}

func TestLegacyThenVersion2Chain(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, segPath(dir, 1), loadVectors(t)["TV-13"].data)
	// The version 2 successor's base index sets the expected index (B.4).
	seg := NewHeader{LogNumber: 2, LogID: vectorLogID, BaseIndex: 100, CreatedUS: T0, LastAsqn: NoAsqn}.Encode()
	seg = AppendRecord(seg, 100, -1, T0, []byte("v2"))
	publishInto(t, seg, 2, func(s *Slot) { s.CommitOffset, s.NextIndex = uint64(len(seg)), 101 })
	writeFile(t, segPath(dir, 2), seg)
	out := readTestLog(t, dir, ReadOptions{})
	if out.err != nil || len(out.records) != 4 || out.records[3].Index != 100 || !out.records[3].Checked {
		t.Fatalf("%+v", out)
	}
	after := Ref{1, 272, 3}
	out = readTestLog(t, dir, ReadOptions{After: &after})
	if out.err != nil || len(out.records) != 1 || string(out.records[0].Payload) != "v2" {
		t.Fatalf("after %v: %+v", after, out)
	}
}

func TestLegacyRecordDamage(t *testing.T) {
	one := uint32(1)
	tv := loadVectors(t)["TV-13"].data
	cases := []struct {
		name  string
		patch func(b []byte) []byte
		class Class
		at    uint64
		index uint64
	}{
		{"negative length", func(b []byte) []byte { b[260] = 0xff; return b }, ClassLengthOutOfRange, 260, 2},
		{"length beyond the end", func(b []byte) []byte { b[263] = 0x20; return b }, ClassLengthOutOfRange, 260, 2},
		{"file cut short", func(b []byte) []byte { return b[:280] }, ClassTruncated, 272, 3},
		{"end inside a length field", func(b []byte) []byte { b[15] = 0x12; return b }, ClassTruncated, 272, 3},
		{"status 2", func(b []byte) []byte { b[7] = 2; return b }, ClassBadHeader, 6, 0},
		{"end below 248", func(b []byte) []byte { b[14], b[15] = 0, 0xf7; return b }, ClassBadHeader, 8, 0},
		{"log number", func(b []byte) []byte { b[19] = 2; return b }, ClassBadHeader, 16, 0},
		// D4: the magic 252 at offset 0 is checked right after the size.
		{"magic 251", func(b []byte) []byte { b[3] = 251; return b }, ClassBadSignature, 0, 0},
		{"zero magic", func(b []byte) []byte { clear(b[:4]); return b }, ClassBadSignature, 0, 0},
		{"magic before log number, status and end", func(b []byte) []byte {
			b[3], b[19], b[7], b[14], b[15] = 0, 9, 2, 0, 0
			return b
		}, ClassBadSignature, 0, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, segPath(dir, 1), c.patch(append([]byte{}, tv...)))
			var index *uint64
			if c.index != 0 {
				index = u64p(c.index)
			}
			wantError(t, readTestLog(t, dir, ReadOptions{}).err, c.class, &one, u64p(c.at), index)
		})
	}
}

// D4: a version 1 segment is finished only when it is closed.
func TestLegacyOpenSegmentIsNotFinishedByASuccessor(t *testing.T) {
	two := uint32(2)
	open1 := legacySegment(1, false, "r1", "r2")
	cases := []struct {
		name  string
		files map[uint32][]byte
	}{
		{"successor holding records", map[uint32][]byte{2: legacySegment(2, false, "r3")}},
		{"closed, empty successor", map[uint32][]byte{2: legacySegment(2, true)}},
		{"empty, open successor and another segment", map[uint32][]byte{2: legacySegment(2, false), 3: legacySegment(3, false)}},
		{"version 2 successor", map[uint32][]byte{2: func() []byte {
			seg := NewHeader{LogNumber: 2, LogID: vectorLogID, BaseIndex: 3, CreatedUS: T0, LastAsqn: NoAsqn}.Encode()
			seg = AppendRecord(seg, 3, NoAsqn, T0, []byte("v2"))
			publishInto(t, seg, 2, func(s *Slot) { s.CommitOffset, s.NextIndex = uint64(len(seg)), 4 })
			return seg
		}()}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, segPath(dir, 1), open1)
			for n, b := range c.files {
				writeFile(t, segPath(dir, n), b)
			}
			out := readTestLog(t, dir, ReadOptions{})
			wantError(t, out.err, ClassChainBroken, &two, u64p(0), u64p(3))
			if len(out.records) != 2 {
				t.Fatalf("%d records", len(out.records))
			}
		})
	}
	t.Run("tolerant: the successor's records follow", func(t *testing.T) {
		dir := t.TempDir()
		writeFile(t, segPath(dir, 1), open1)
		writeFile(t, segPath(dir, 2), legacySegment(2, false, "r3"))
		out, damage := readTolerantly(t, dir)
		if got, want := refsOf(out.records), []Ref{{1, 248, 1}, {1, 254, 2}, {2, 248, 3}}; out.err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("records %v (%v), want %v", got, out.err, want)
		}
		wantDamage(t, damage, Damage{ClassChainBroken, 2, u64p(0), 3, 0, nil})
	})
	t.Run("successor missing, a higher segment present", func(t *testing.T) {
		dir := t.TempDir()
		writeFile(t, segPath(dir, 1), open1)
		writeFile(t, segPath(dir, 3), legacySegment(3, false))
		wantError(t, readTestLog(t, dir, ReadOptions{}).err, ClassChainBroken, &two, nil, u64p(3))
	})
}

// D4: the leftover of a jPOS-EE cutover that died: the log ends at the open
// segment for now.
func TestLegacyOpenSegmentFollowedOnlyByAnEmptyOpenSegmentEndsTheLog(t *testing.T) {
	for name, succ := range map[string][]byte{"empty, open version 1": legacySegment(2, false), "blank": make([]byte, 256)} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, segPath(dir, 1), legacySegment(1, false, "r1", "r2"))
			writeFile(t, segPath(dir, 2), succ)
			out := readTestLog(t, dir, ReadOptions{})
			if got, want := refsOf(out.records), []Ref{{1, 248, 1}, {1, 254, 2}}; out.err != nil || out.torn != nil || !reflect.DeepEqual(got, want) {
				t.Fatalf("records %v (%+v), want %v", got, out, want)
			}
		})
	}
}

// D4: jPOS-EE creates the successor before it seals a segment, so a closed
// version 1 segment without one is a broken chain, even as the last segment.
func TestLegacyClosedSegmentWithoutSuccessorIsChainBroken(t *testing.T) {
	two := uint32(2)
	for name, closed := range map[string]func(b []byte){
		"status 1":          func(b []byte) { b[20], b[21], b[22], b[23] = 0, 0, 0, 0 },
		"next log number":   func(b []byte) { b[7] = 0 },
		"status 1 and next": func(b []byte) {},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			b := legacySegment(1, true, "r1", "r2")
			closed(b)
			writeFile(t, segPath(dir, 1), b)
			out := readTestLog(t, dir, ReadOptions{})
			wantError(t, out.err, ClassChainBroken, &two, nil, u64p(3))
			if len(out.records) != 2 {
				t.Fatalf("%d records", len(out.records))
			}
			out, damage := readTolerantly(t, dir)
			if out.err != nil || len(out.records) != 2 {
				t.Fatalf("%+v", out)
			}
			wantDamage(t, damage, Damage{ClassChainBroken, 2, nil, 3, 0, nil})
		})
	}
	t.Run("with its successor", func(t *testing.T) {
		dir := t.TempDir()
		writeFile(t, segPath(dir, 1), legacySegment(1, true, "r1", "r2"))
		writeFile(t, segPath(dir, 2), legacySegment(2, false, "r3"))
		if out := readTestLog(t, dir, ReadOptions{}); out.err != nil || len(out.records) != 3 {
			t.Fatalf("%+v", out)
		}
	})
}

// D5: a segment removed between the listing and its opening is absent by a
// fresh listing.
func TestReaderListsAgainWhenASegmentWentAwaySinceTheListing(t *testing.T) {
	three := func(t *testing.T) string {
		dir := filepath.Join(t.TempDir(), "log")
		writeTestLog(t, dir, threeRecords, 2, 3)
		return dir
	}
	t.Run("the lowest segment, by retention", func(t *testing.T) {
		dir := three(t)
		v, err := newLogView(dir)
		if err != nil {
			t.Fatal(err)
		}
		defer v.close()
		if err := os.Remove(segPath(dir, 1)); err != nil {
			t.Fatal(err)
		}
		n, h, ok, err := v.start()
		if err != nil || !ok || n != 2 || h.BaseIndex != 2 {
			t.Fatalf("started at %d (%v, %v)", n, ok, err)
		}
	})
	t.Run("a successor below a present segment", func(t *testing.T) {
		dir := three(t)
		v, err := newLogView(dir)
		if err != nil {
			t.Fatal(err)
		}
		defer v.close()
		if err := os.Remove(segPath(dir, 2)); err != nil {
			t.Fatal(err)
		}
		_, h, err := v.header(1)
		if err != nil {
			t.Fatal(err)
		}
		st := walkState{E: 2, A: NoAsqn}
		_, _, _, err = v.step(1, h, &st, nil)
		two := uint32(2)
		wantError(t, err, ClassChainBroken, &two, nil, u64p(2))
	})
	t.Run("a segment compressed since the listing", func(t *testing.T) {
		dir := three(t)
		v, err := newLogView(dir)
		if err != nil {
			t.Fatal(err)
		}
		defer v.close()
		// Compression links the compressed name, then removes the plain one.
		if err := os.Link(segPath(dir, 2), segPath(dir, 2)+".zst"); err != nil {
			t.Fatal(err)
		}
		if err := os.Remove(segPath(dir, 2)); err != nil {
			t.Fatal(err)
		}
		_, h, err := v.header(1)
		if err != nil {
			t.Fatal(err)
		}
		st := walkState{E: 2, A: NoAsqn}
		_, _, _, err = v.step(1, h, &st, nil)
		two := uint32(2)
		wantError(t, err, ClassUnsupportedFeature, &two, u64p(0), nil)
	})
	t.Run("every segment", func(t *testing.T) {
		dir := three(t)
		v, err := newLogView(dir)
		if err != nil {
			t.Fatal(err)
		}
		defer v.close()
		for n := uint32(1); n <= 3; n++ {
			if err := os.Remove(segPath(dir, n)); err != nil {
				t.Fatal(err)
			}
		}
		if _, _, ok, err := v.start(); ok || err != nil {
			t.Fatalf("%v %v", ok, err)
		}
	})
}

// D5 (OPEN, section 2.6): a segment of which only a compressed form exists
// is reported, not skipped: this reader does not decompress.
func TestCompressedSegmentIsUnsupportedFeatureNotAGap(t *testing.T) {
	for _, n := range []uint32{1, 2} {
		dir := filepath.Join(t.TempDir(), "log")
		writeTestLog(t, dir, threeRecords, 2, 3)
		if err := os.Rename(segPath(dir, n), segPath(dir, n)+".gz"); err != nil {
			t.Fatal(err)
		}
		out := readTestLog(t, dir, ReadOptions{})
		wantError(t, out.err, ClassUnsupportedFeature, &n, u64p(0), nil) // offset 0
		if len(out.records) != int(n-1) {
			t.Fatalf("segment %d compressed: %d records", n, len(out.records))
		}
	}
}

// A blank last segment counts as a listed segment above a missing one: the
// protocol created it only after the one before it had a durable header.
func TestMissingSegmentBelowABlankLastSegmentIsChainBroken(t *testing.T) {
	two := uint32(2)
	t.Run("version 2", func(t *testing.T) {
		dir := twoSegments(t)
		if err := os.Rename(segPath(dir, 2), filepath.Join(dir, "moved")); err != nil {
			t.Fatal(err)
		}
		writeFile(t, segPath(dir, 3), make([]byte, 256))
		wantError(t, readTestLog(t, dir, ReadOptions{}).err, ClassChainBroken, &two, nil, u64p(3))
	})
	t.Run("version 1, open, with the leftover of a cutover", func(t *testing.T) {
		dir := t.TempDir()
		writeFile(t, segPath(dir, 1), legacySegment(1, false, "r1", "r2"))
		writeFile(t, segPath(dir, 2), legacySegment(2, false))
		writeFile(t, segPath(dir, 3), nil)
		wantError(t, readTestLog(t, dir, ReadOptions{}).err, ClassChainBroken, &two, u64p(0), u64p(3))
	})
}

// NEXT step 3: the successor's header is checked before the chain is
// judged, so its damage is what is reported.
func TestLegacyOpenSegmentWithADamagedSuccessorReportsTheSuccessorsHeader(t *testing.T) {
	dir := t.TempDir()
	two := uint32(2)
	writeFile(t, segPath(dir, 1), legacySegment(1, false, "r1"))
	bad := legacySegment(2, false, "r2")
	bad[7] = 2 // status 2
	writeFile(t, segPath(dir, 2), bad)
	writeFile(t, segPath(dir, 3), legacySegment(3, false))
	out := readTestLog(t, dir, ReadOptions{})
	wantError(t, out.err, ClassBadHeader, &two, u64p(6), nil)
	if len(out.records) != 1 {
		t.Fatalf("%d records", len(out.records))
	}
}

// A segment name that names no regular file (a FIFO blocked the open
// forever; a directory) is a failed open, io_error: the segment is
// opened without blocking and anything but a regular file is refused.
func TestSegmentThatIsAFIFOOrADirectoryIsIOError(t *testing.T) {
	one := uint32(1)
	for name, create := range map[string]func(string) error{
		"fifo":      func(p string) error { return syscall.Mkfifo(p, 0o644) },
		"directory": func(p string) error { return os.Mkdir(p, 0o755) },
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			if err := create(segPath(dir, 1)); err != nil {
				t.Fatal(err)
			}
			done := make(chan [2]error, 1)
			go func() {
				_, err := ReadLog(dir, ReadOptions{}, func(Record) error { return nil })
				serr := ReadSplit(dir, 1, 256, 1<<40, func(Record) error { return nil })
				done <- [2]error{err, serr}
			}()
			select {
			case errs := <-done:
				wantError(t, errs[0], ClassIOError, &one, nil, nil)
				wantError(t, errs[1], ClassIOError, &one, nil, nil)
			case <-time.After(10 * time.Second):
				t.Fatal("the read blocks")
			}
			w, err := OpenWriter(dir, WriterOptions{})
			if err == nil {
				_, err = w.Append([]byte("x"), NoAsqn)
				w.Close()
			}
			if ClassOf(err) != ClassIOError {
				t.Fatalf("writer: %v", err)
			}
		})
	}
}

// a directory with neither a segment nor LOCK is not a log; a blank
// segment name alone makes it one (an empty log).
func TestDirectoryWithoutSegmentOrLockIsNotALog(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("not a log\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := readTestLog(t, dir, ReadOptions{})
	if ClassOf(out.err) != ClassIOError {
		t.Fatalf("want io_error, got %v", out.err)
	}
	if err := os.WriteFile(segPath(dir, 1), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	out = readTestLog(t, dir, ReadOptions{})
	if out.err != nil || len(out.records) != 0 {
		t.Fatalf("a blank segment without LOCK: want an empty log, got %d records, %v", len(out.records), out.err)
	}
}
