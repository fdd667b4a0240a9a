package binlog

import (
	"os"
	"path/filepath"
	"testing"
)

// T0 is the timestamp of the test vectors.
const T0 = 1_700_000_000_000_000

// fixedClock returns T0, T0+1000, T0+2000, ... on successive calls.
func fixedClock() func() int64 {
	t := int64(T0 - 1000)
	return func() int64 { t += 1000; return t }
}

type appendSpec struct {
	payload string
	asqn    int64
}

// writeTestLog writes one batch per append with the library's writer,
// cutting over before each index in cutBefore, and returns the refs.
func writeTestLog(t *testing.T, dir string, appends []appendSpec, cutBefore ...uint64) []Ref {
	t.Helper()
	w, err := OpenWriter(dir, WriterOptions{Clock: fixedClock()})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	cut := map[uint64]bool{}
	for _, c := range cutBefore {
		cut[c] = true
	}
	var refs []Ref
	for i, a := range appends {
		if cut[uint64(i+1)] {
			if err := w.Cutover(); err != nil {
				t.Fatal(err)
			}
		}
		ref, err := w.Append([]byte(a.payload), a.asqn)
		if err != nil {
			t.Fatal(err)
		}
		refs = append(refs, ref)
	}
	return refs
}

type readOutcome struct {
	records []Record
	torn    *Torn
	err     error
}

func readTestLog(t *testing.T, dir string, opts ReadOptions) readOutcome {
	t.Helper()
	var out readOutcome
	out.torn, out.err = ReadLog(dir, opts, func(r Record) error {
		out.records = append(out.records, r)
		return nil
	})
	return out
}

func segPath(dir string, n uint32) string { return filepath.Join(dir, SegmentName(n)) }

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func writeFile(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// patchFile applies fn to the bytes of path.
func patchFile(t *testing.T, path string, fn func(b []byte) []byte) {
	t.Helper()
	writeFile(t, path, fn(readFile(t, path)))
}

// resealHeader recomputes the header checksum after an immutable field was changed.
func resealHeader(b []byte) { be.PutUint32(b[headerCRCOffset:], headerCRC(b)) }

// resealRecord recomputes the header checksum of the record starting at b[0].
func resealRecord(b []byte) { be.PutUint32(b[36:], MaskedCRC(b[:36])) }

// activeSlotOf parses the header of a segment file image.
func headerOf(t *testing.T, b []byte, n uint32) *Header {
	t.Helper()
	h, err := CheckHeader(b, int64(len(b)), n)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// publishInto writes slot s (generation = active + 1) and mirrors into b.
func publishInto(t *testing.T, b []byte, n uint32, mutate func(s *Slot)) {
	t.Helper()
	s := headerOf(t, b, n).Active
	s.Generation++
	mutate(&s)
	copy(b[SlotOffset(s.Generation):], s.Encode())
	copy(b[mirrorOffset:], Mirrors(s, n))
}

// wantError checks the class and report fields of err (nil pointers: not reported).
func wantError(t *testing.T, err error, class Class, log *uint32, off, index *uint64) {
	t.Helper()
	e, ok := err.(*Error)
	if !ok {
		t.Fatalf("want %s error, got %v", class, err)
	}
	if e.Class != class {
		t.Fatalf("want class %s, got %v", class, err)
	}
	eq := func(name string, a, b *uint64) {
		if (a == nil) != (b == nil) || (a != nil && *a != *b) {
			t.Fatalf("%s: want %v, got %v", name, fmtp(b), fmtp(a))
		}
	}
	if log == nil {
		if e.Log != nil {
			t.Fatalf("log: want none, got %d", *e.Log)
		}
	} else {
		if e.Log == nil || *e.Log != *log {
			t.Fatalf("log: want %d, got %v", *log, err)
		}
	}
	eq("offset", e.Offset, off)
	eq("index", e.Index, index)
}

func fmtp(p *uint64) any {
	if p == nil {
		return "none"
	}
	return *p
}

// legacySegment returns a version 1 segment n (Appendix B.1) holding
// records with the given data, open (status 0, next log number 0) or
// closed by a cutover (status 1, next log number n+1).
func legacySegment(n uint32, closed bool, data ...string) []byte {
	b := make([]byte, HeaderSize)
	be.PutUint32(b[0:], LegacyMagic)
	be.PutUint16(b[4:], Version1)
	be.PutUint32(b[16:], n)
	b = b[:LegacyFirstRecord]
	for _, d := range data {
		b = be.AppendUint32(b, uint32(len(d)))
		b = append(b, d...)
	}
	if len(b) < HeaderSize {
		b = b[:HeaderSize]
	}
	end := uint64(LegacyFirstRecord)
	for _, d := range data {
		end += 4 + uint64(len(d))
	}
	be.PutUint64(b[8:], end)
	if closed {
		be.PutUint16(b[6:], 1)
		be.PutUint32(b[20:], n+1)
	}
	return b
}
