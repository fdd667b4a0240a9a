package binlog

import (
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"syscall"
)

// MaxLogNumber is the highest log number eight digits can name (section 2.2).
const MaxLogNumber = 99999999

var (
	segmentNameRE    = regexp.MustCompile(`^[0-9]{8}\.dat$`)
	compressedNameRE = regexp.MustCompile(`^[0-9]{8}\.dat\.(gz|zst)$`)
	tempNameRE       = regexp.MustCompile(`^\.[0-9]{8}\.dat\.[0-9a-f]+\.tmp$`)
)

// compressedSuffixes are the names a compressed sealed segment takes, in
// the order a reader tries them after the plain name (section 2.6).
var compressedSuffixes = []string{".gz", ".zst"}

// SegmentName is the file name of segment n (W-1).
func SegmentName(n uint32) string { return fmt.Sprintf("%08d.dat", n) }

// listSegments returns the log numbers of the directory's plain segments
// in ascending order.
func listSegments(dir string) ([]uint32, error) { return listSegmentNumbers(dir, false) }

// listSegmentNumbers returns the log numbers of the directory's segments in
// ascending order, each once; with compressed, the numbers of compressed
// segments too (NNNNNNNN.dat.gz, NNNNNNNN.dat.zst), which a reader must
// report rather than treat the log as ending before them (section 2.6).
func listSegmentNumbers(dir string, compressed bool) ([]uint32, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, ioError(nil, nil, err)
	}
	seen := map[uint32]bool{}
	var nums []uint32
	for _, e := range entries {
		if segmentNameRE.MatchString(e.Name()) || (compressed && compressedNameRE.MatchString(e.Name())) {
			n, _ := strconv.ParseUint(e.Name()[:8], 10, 32)
			if n == 0 {
				continue // 00000000.dat is not a segment name: log number 0 is never used
			}
			if !seen[uint32(n)] {
				seen[uint32(n)] = true
				nums = append(nums, uint32(n))
			}
		}
	}
	sort.Slice(nums, func(i, j int) bool { return nums[i] < nums[j] })
	return nums, nil
}

// segmentFile is an open segment: reads that fail are io_error.
type segmentFile struct {
	log  uint32
	f    *os.File
	src  io.ReaderAt // what reads read: f, or a test's stand-in for it
	size uint64
}

// openSegment opens segment log by its plain name. It opens without
// blocking (O_NONBLOCK) and refuses anything that is not a regular file
// with io_error: a FIFO, a device or a directory named like a segment
// would otherwise block the open or the reads forever, or read as something
// a segment file is not. O_NONBLOCK has no effect on a regular file's reads.
func openSegment(dir string, log uint32, flag int) (*segmentFile, error) {
	f, err := os.OpenFile(filepath.Join(dir, SegmentName(log)), flag|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, ioError(u32p(log), nil, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, ioError(u32p(log), nil, err)
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, &Error{Class: ClassIOError, Log: u32p(log), Err: errNotRegular,
			Msg: "not a regular file: " + fi.Mode().Type().String()}
	}
	s := &segmentFile{log: log, f: f, src: f, size: uint64(fi.Size())}
	return s, nil
}

// errNotRegular is the cause of the io_error for a segment name that names
// something other than a regular file.
var errNotRegular = errors.New("not a regular file")

func (s *segmentFile) stat() error {
	if s.f == nil { // bytes held in memory: their size does not change
		return nil
	}
	fi, err := s.f.Stat()
	if err != nil {
		return ioError(u32p(s.log), nil, err)
	}
	s.size = uint64(fi.Size())
	return nil
}

func (s *segmentFile) close() { s.f.Close() }

// readAt reads exactly n bytes at off. Callers bound n by the file size
// a short read is a failed read, never a truncation.
func (s *segmentFile) readAt(off, n uint64) ([]byte, error) {
	b := make([]byte, n)
	if _, err := s.src.ReadAt(b, int64(off)); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, ioError(u32p(s.log), u64p(off), err)
	}
	return b, nil
}

// maskedCRCAt returns the masked CRC32C of the n bytes at off. It reads
// them in pieces, so that memory stays bounded whatever n is (a candidate's
// payload in a search is checksummed whatever its length, section 10.4).
func (s *segmentFile) maskedCRCAt(off, n uint64) (uint32, error) {
	const chunk = 1 << 20
	buf := make([]byte, min(n, chunk))
	var crc uint32
	for n > 0 {
		b := buf[:min(n, chunk)]
		if _, err := s.src.ReadAt(b, int64(off)); err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return 0, ioError(u32p(s.log), u64p(off), err)
		}
		crc = crc32.Update(crc, castagnoli, b)
		off += uint64(len(b))
		n -= uint64(len(b))
	}
	return Mask(crc), nil
}

// headBytes returns the first min(256, size) bytes.
func (s *segmentFile) headBytes() ([]byte, error) {
	n := uint64(HeaderSize)
	if s.size < n {
		n = s.size
	}
	return s.readAt(0, n)
}

// blank reports whether the segment is blank (section 3.5): at most 256
// bytes, all zero, a file of length 0 included. A short file holding a
// non-zero byte is not blank (truncated at 0), nor is a file longer than a
// header (unsupported_version at 4 when its first 256 bytes are zero): what
// they hold, or held, must be reported, not dropped.
func (s *segmentFile) blank() (bool, error) {
	if s.size > HeaderSize {
		return false, nil
	}
	b, err := s.headBytes()
	if err != nil {
		return false, err
	}
	return IsBlank(b), nil
}

// header reads and checks the header (section 3.4), reading it again while
// a read of a version 2 header finds neither commit slot valid.
func (s *segmentFile) header() (*Header, error) {
	b, err := readSettled(s.headBytes, headerSlots)
	if err != nil {
		return nil, err
	}
	// The size once the slots are read: a writer writes records before the
	// slot that publishes them, so they lie within it (a size taken at open
	// would make a live log's newer records look truncated).
	if err := s.stat(); err != nil {
		return nil, err
	}
	return CheckHeader(b, int64(s.size), s.log)
}

// activeSlot re-reads both commit slots and chooses the active one,
// reading them again while neither is valid.
func (s *segmentFile) activeSlot(baseIndex uint64) (Slot, error) {
	b, err := readSettled(func() ([]byte, error) { return s.readAt(slot0Offset, 2*SlotSize) },
		func(b []byte) []byte { return b })
	if err != nil {
		return Slot{}, err
	}
	if err := s.stat(); err != nil { // as in header: the records a slot publishes lie within the size after it
		return Slot{}, err
	}
	return SelectSlot(b, s.log, baseIndex)
}

// maxSettleReads bounds the reads of readSettled.
const maxSettleReads = 8

// readSettled returns the bytes of read(), the header or the commit slots
// of a segment, re-read while neither commit slot in them is valid:
// a writer that publishes through a shared memory mapping can publish twice
// during one read, tearing both slots in what that read saw. It stops at
// the first read whose slots hold a valid one, at a read that returns
// exactly the bytes of the read before it (damage that stays: one extra
// read), or after maxSettleReads reads in all, and returns that read's
// bytes for the caller to check, which reports bad_header when neither slot
// is valid in them. slots returns the 96 slot bytes of a read, or nil when
// the read holds no commit slots to settle (a short file, a version 1
// header). A failed read is returned as it is.
func readSettled(read func() ([]byte, error), slots func(b []byte) []byte) ([]byte, error) {
	b, err := read()
	for n := 1; err == nil && n < maxSettleReads; n++ {
		sb := slots(b)
		if sb == nil || anySlotValid(sb) {
			break
		}
		prev := b
		if b, err = read(); err == nil && bytes.Equal(b, prev) {
			break
		}
	}
	return b, err
}

// headerSlots returns the commit slots (offsets 96..191) of b, the first
// bytes of a segment, when b holds a whole version 2 header; nil otherwise.
func headerSlots(b []byte) []byte {
	if len(b) < HeaderSize || be.Uint16(b[4:]) != Version2 {
		return nil
	}
	return b[slot0Offset : slot1Offset+SlotSize]
}

// anySlotValid reports whether either of the two slots in the 96 bytes b
// passes its checks of generation and checksum (section 3.2).
func anySlotValid(b []byte) bool {
	_, ok0 := decodeSlot(b[:SlotSize])
	_, ok1 := decodeSlot(b[SlotSize : 2*SlotSize])
	return ok0 || ok1
}

// firstNonZero returns the offset of the first non-zero byte in [from, size),
// or size when there is none. It reads in bounded chunks.
func (s *segmentFile) firstNonZero(from uint64) (uint64, error) {
	const chunk = 1 << 16
	for off := from; off < s.size; off += chunk {
		n := s.size - off
		if n > chunk {
			n = chunk
		}
		b, err := s.readAt(off, n)
		if err != nil {
			return 0, err
		}
		for i, c := range b {
			if c != 0 {
				return off + uint64(i), nil
			}
		}
	}
	return s.size, nil
}
