package binlog

import (
	"io"
	"testing"
)

// changingFile is a segment file whose bytes change from one read to the
// next, as a writer publishing through a shared mapping can make them: read
// i (counted from 0) sees images[i], the last image from then on.
type changingFile struct {
	images [][]byte
	reads  int
}

func (c *changingFile) ReadAt(b []byte, off int64) (int, error) {
	img := c.images[min(c.reads, len(c.images)-1)]
	c.reads++
	if off >= int64(len(img)) {
		return 0, io.EOF
	}
	n := copy(b, img[off:])
	if n < len(b) {
		return n, io.EOF
	}
	return n, nil
}

// settleImages returns the bytes of segment 1 of the fixture and a copy
// of them in which both commit slots are torn.
func settleImages(t *testing.T) (good, torn []byte) {
	t.Helper()
	good = readFile(t, segPath(fixture(t), 1))
	torn = append([]byte(nil), good...)
	torn[slot0Offset+10] ^= 0xff
	torn[slot1Offset+20] ^= 0xff
	return good, torn
}

func settleSegment(c *changingFile) *segmentFile {
	return &segmentFile{log: 1, src: c, size: uint64(len(c.images[0]))}
}

// a read that finds both slots torn is read again; the next read,
// after the writer's publications, holds the valid slots.
func TestBothSlotsTornInOneReadAreReadAgain(t *testing.T) {
	good, torn := settleImages(t)
	want := headerOf(t, good, 1).Active

	c := &changingFile{images: [][]byte{torn, good}}
	h, err := settleSegment(c).header()
	if err != nil {
		t.Fatalf("header: %v", err)
	}
	if h.Active != want || c.reads != 2 {
		t.Fatalf("header: active %+v after %d reads, want %+v after 2", h.Active, c.reads, want)
	}

	c = &changingFile{images: [][]byte{torn, good}}
	slot, err := settleSegment(c).activeSlot(h.BaseIndex)
	if err != nil {
		t.Fatalf("activeSlot: %v", err)
	}
	if slot != want || c.reads != 2 {
		t.Fatalf("activeSlot: %+v after %d reads, want %+v after 2", slot, c.reads, want)
	}

	// A read that finds a valid slot is not repeated.
	c = &changingFile{images: [][]byte{good, torn}}
	if _, err := settleSegment(c).header(); err != nil || c.reads != 1 {
		t.Fatalf("header of a valid segment: %v after %d reads, want 1", err, c.reads)
	}
}

// slots that stay invalid are bad_header after one extra read, whose
// bytes equal the first's.
func TestPersistentlyInvalidSlotsAreBadHeaderAfterTwoReads(t *testing.T) {
	_, torn := settleImages(t)
	one := uint32(1)

	c := &changingFile{images: [][]byte{torn}}
	_, err := settleSegment(c).header()
	wantError(t, err, ClassBadHeader, &one, u64p(slot0Offset), nil)
	if c.reads != 2 {
		t.Fatalf("header: %d reads, want 2", c.reads)
	}

	c = &changingFile{images: [][]byte{torn}}
	_, err = settleSegment(c).activeSlot(1)
	wantError(t, err, ClassBadHeader, &one, u64p(slot0Offset), nil)
	if c.reads != 2 {
		t.Fatalf("activeSlot: %d reads, want 2", c.reads)
	}
}

// reads that differ each time yet never hold a valid slot end with
// bad_header after 8 reads in all.
func TestSlotsTornDifferentlyOnEveryReadAreBadHeaderAfterEightReads(t *testing.T) {
	_, torn := settleImages(t)
	one := uint32(1)
	var images [][]byte
	for i := 0; i < 20; i++ {
		img := append([]byte(nil), torn...)
		img[slot0Offset+30] ^= byte(i + 1)
		images = append(images, img)
	}

	c := &changingFile{images: images}
	_, err := settleSegment(c).header()
	wantError(t, err, ClassBadHeader, &one, u64p(slot0Offset), nil)
	if c.reads != maxSettleReads || maxSettleReads != 8 {
		t.Fatalf("header: %d reads, want 8", c.reads)
	}

	c = &changingFile{images: images}
	_, err = settleSegment(c).activeSlot(1)
	wantError(t, err, ClassBadHeader, &one, u64p(slot0Offset), nil)
	if c.reads != 8 {
		t.Fatalf("activeSlot: %d reads, want 8", c.reads)
	}
}
