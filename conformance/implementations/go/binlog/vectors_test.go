package binlog

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// specPath is the normative spec document that holds the test vectors
// (Appendix A), read at test time so that a change of a vector is picked up.
var specPath = filepath.Join("..", "..", "..", "..", "spec", "format.md")

type vector struct {
	start uint64 // offset of the first dumped byte
	data  []byte
}

// loadVectors parses every "```hex TV-n" block of Appendix A.
func loadVectors(t *testing.T) map[string]vector {
	t.Helper()
	f, err := os.Open(specPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	vectors := map[string]vector{}
	var name string
	var cur vector
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case strings.HasPrefix(line, "```hex "):
			name, cur = strings.TrimPrefix(line, "```hex "), vector{}
		case name != "" && line == "```":
			vectors[name], name = cur, ""
		case name != "":
			off, rest, ok := strings.Cut(line, ":")
			o, err := strconv.ParseUint(off, 16, 64)
			if !ok || err != nil {
				t.Fatalf("%s: bad dump line %q", name, line)
			}
			b, err := hex.DecodeString(strings.ReplaceAll(strings.TrimSpace(rest), " ", ""))
			if err != nil {
				t.Fatalf("%s: bad dump line %q", name, line)
			}
			if len(cur.data) == 0 {
				cur.start = o
			} else if o != cur.start+uint64(len(cur.data)) {
				t.Fatalf("%s: dump line at %#x is not contiguous", name, o)
			}
			cur.data = append(cur.data, b...)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 13; i++ {
		if _, ok := vectors["TV-"+strconv.Itoa(i)]; !ok {
			t.Fatalf("spec has no TV-%d", i)
		}
	}
	return vectors
}

var vectorLogID = [16]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}

func TestVectorsMaskedCRC32C(t *testing.T) {
	v := loadVectors(t)
	inputs := map[string][]byte{"TV-1": nil, "TV-2": []byte("123456789"), "TV-3": []byte("hello"), "TV-4": {1, 2, 3}}
	for name, in := range inputs {
		got := be.AppendUint32(nil, MaskedCRC(in))
		if !bytes.Equal(got, v[name].data) {
			t.Errorf("%s: masked CRC32C %x, spec says %x", name, got, v[name].data)
		}
	}
}

func TestVectorNewSegmentHeaderEncodesAndChecks(t *testing.T) {
	tv := loadVectors(t)["TV-5"].data
	got := NewHeader{LogNumber: 1, LogID: vectorLogID, BaseIndex: 1, CreatedUS: T0, LastAsqn: NoAsqn}.Encode()
	if !bytes.Equal(got, tv) {
		t.Fatalf("header differs from TV-5:\n%x\n%x", got, tv)
	}
	h := headerOf(t, tv, 1)
	want := Slot{Generation: 1, CommitOffset: 256, NextIndex: 1, LastAsqn: -1}
	if h.Active != want || h.BaseIndex != 1 || h.LogID != vectorLogID || h.CreatedUS != T0 {
		t.Fatalf("TV-5 parsed as %+v", h)
	}
}

func TestVectorRecordsEncode(t *testing.T) {
	v := loadVectors(t)
	cases := map[string][]byte{
		"TV-6": AppendRecord(nil, 1, -1, T0, []byte("hello")),
		"TV-7": AppendRecord(nil, 2, 7, T0+1000, []byte{1, 2, 3}),
		"TV-8": AppendRecord(nil, 3, -1, T0+2000, nil),
	}
	for name, got := range cases {
		if !bytes.Equal(got, v[name].data) {
			t.Errorf("%s: encoded %x, spec says %x", name, got, v[name].data)
		}
	}
}

// TV-9 is TV-5, TV-6 and TV-7 published by generation 2 in slot 0.
func TestVectorSegmentWithTwoRecordsPublishesAndReads(t *testing.T) {
	v := loadVectors(t)
	seg := append(append(append([]byte{}, v["TV-5"].data...), v["TV-6"].data...), v["TV-7"].data...)
	publishInto(t, seg, 1, func(s *Slot) {
		s.CommitOffset, s.NextIndex, s.LastAsqn, s.LastTimestampUS = uint64(len(seg)), 3, 7, T0+1000
	})
	if !bytes.Equal(seg, v["TV-9"].data) {
		t.Fatalf("published segment differs from TV-9:\n%x\n%x", seg, v["TV-9"].data)
	}
	dir := t.TempDir()
	writeFile(t, segPath(dir, 1), v["TV-9"].data)
	out := readTestLog(t, dir, ReadOptions{})
	if out.err != nil || out.torn != nil || len(out.records) != 2 {
		t.Fatalf("TV-9 read as %+v", out)
	}
	r0, r1 := out.records[0], out.records[1]
	if string(r0.Payload) != "hello" || r0.Offset != 256 || r0.Index != 1 || r0.Asqn != -1 || r0.TimestampUS != T0 ||
		!bytes.Equal(r1.Payload, []byte{1, 2, 3}) || r1.Offset != 301 || r1.Index != 2 || r1.Asqn != 7 {
		t.Fatalf("TV-9 records %+v", out.records)
	}
	if SlotOffset(headerOf(t, v["TV-9"].data, 1).Active.Generation) != slot0Offset {
		t.Fatal("TV-9: the active slot is not slot 0")
	}
}

func TestVectorSealSlotAndMirrors(t *testing.T) {
	v := loadVectors(t)
	seal := Slot{Generation: 3, CommitOffset: 344, NextIndex: 3, LastAsqn: 7, LastTimestampUS: T0 + 1000, NextLogNumber: 2}
	if v["TV-10"].start != uint64(SlotOffset(3)) || !bytes.Equal(seal.Encode(), v["TV-10"].data) {
		t.Fatalf("seal slot %x at %d, spec says %x at %d", seal.Encode(), SlotOffset(3), v["TV-10"].data, v["TV-10"].start)
	}
	if v["TV-11"].start != mirrorOffset || !bytes.Equal(Mirrors(seal, 1), v["TV-11"].data) {
		t.Fatalf("mirrors %x, spec says %x", Mirrors(seal, 1), v["TV-11"].data)
	}
	// TV-9 with TV-10 and TV-11 applied is a sealed segment.
	seg := append([]byte{}, v["TV-9"].data...)
	copy(seg[v["TV-10"].start:], v["TV-10"].data)
	copy(seg[v["TV-11"].start:], v["TV-11"].data)
	if h := headerOf(t, seg, 1); h.Active != seal {
		t.Fatalf("sealed TV-9 has active slot %+v", h.Active)
	}
}

func TestVectorBinaryRef(t *testing.T) {
	tv := loadVectors(t)["TV-12"].data
	ref, err := ParseRef("3:1024:77")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(ref.MarshalBinary(), tv) {
		t.Fatalf("binary ref %x, spec says %x", ref.MarshalBinary(), tv)
	}
	back, err := ParseBinaryRef(tv)
	if err != nil || back != ref || back.String() != "3:1024:77" {
		t.Fatalf("TV-12 parsed as %v, %v", back, err)
	}
}

func TestVectorLegacySegmentReadsUnchecked(t *testing.T) {
	tv := loadVectors(t)["TV-13"].data
	dir := t.TempDir()
	writeFile(t, segPath(dir, 1), tv)
	// TV-13 is closed by a cutover: without its successor the chain is broken (B.4).
	out := readTestLog(t, dir, ReadOptions{})
	two := uint32(2)
	wantError(t, out.err, ClassChainBroken, &two, nil, u64p(4))
	if len(out.records) != 3 {
		t.Fatalf("TV-13 alone read as %+v", out)
	}
	writeFile(t, segPath(dir, 2), legacySegment(2, false))
	out = readTestLog(t, dir, ReadOptions{})
	if out.err != nil || out.torn != nil || len(out.records) != 3 {
		t.Fatalf("TV-13 read as %+v", out)
	}
	for i, r := range out.records {
		if r.Checked || r.Index != uint64(i+1) || r.Offset != uint64(248+12*i) || r.Asqn != -1 ||
			string(r.Payload) != "record-"+strconv.Itoa(i) {
			t.Fatalf("TV-13 record %d: %+v", i, r)
		}
	}
}
