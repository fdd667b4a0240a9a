package binlog

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// Durability is one of the modes of section 6.5.
type Durability string

// The durability modes of section 6.5.
const (
	DurabilitySync   Durability = "sync"
	DurabilityGroup  Durability = "group"
	DurabilityOS     Durability = "os"
	DurabilityStrict Durability = "strict"
)

// WriterOptions configure a Writer.
type WriterOptions struct {
	Durability Durability // "" means sync
	// MaxSegmentBytes cuts over after a batch that leaves the segment at
	// least this long; 0 means no limit.
	MaxSegmentBytes uint64
	// Clock returns microseconds since the epoch; nil means the system clock.
	Clock func() int64
}

// Append is one append of a batch: a payload and an asqn (-1 for none).
type Append struct {
	Payload []byte
	Asqn    int64
}

// Ack is the outcome of one append: its ref, or the error that refused it.
type Ack struct {
	Ref Ref
	Err error
}

// ErrLogNumberLimit is returned by a cutover past log number 99 999 999
// (section 2.2); the format gives this refusal no error class.
var ErrLogNumberLimit = errors.New("binlog: no log number left for a cutover")

// ErrWriterFailed is returned after an I/O failure until the writer is
// reopened (W-19).
var ErrWriterFailed = errors.New("binlog: writer failed earlier; reopen it")

// Writer appends to a log by the write, recovery and cutover protocols,
// taking the lock on LOCK for every batch.
type Writer struct {
	mu        sync.Mutex // serialises this writer's own calls
	dir       string
	opts      WriterOptions
	lockFile  *os.File
	create    bool         // create segment 1 when the directory holds none
	cur       *writeTarget // last segment from an earlier batch
	validated bool         // W-26 done
	probed    map[uint32]bool
	failed    error
}

// writeTarget is the open last segment and its checked header.
type writeTarget struct {
	*segmentFile
	h *Header
}

// OpenWriter opens the log in dir for appending, creating it (section 2.4)
// when the directory does not exist or holds no segment.
func OpenWriter(dir string, opts WriterOptions) (*Writer, error) {
	if err := mkdirAllSynced(dir); err != nil {
		return nil, ioError(nil, nil, err)
	}
	w, err := openWriter(dir, opts, true)
	if err != nil {
		return nil, err
	}
	err = w.locked(func() error {
		nums, err := listSegments(dir)
		if err != nil || len(nums) > 0 {
			return err
		}
		t, err := w.createSegment(newNextSegment(1, newLogID(), 1, NoAsqn, 0, w.now()))
		if err == nil {
			t.close()
		}
		return err
	})
	if err != nil {
		w.Close()
		return nil, err
	}
	return w, nil
}

// Recover runs writer recovery on the existing log in dir: everything a
// writer does before its first append (sections 6.2 steps 2 to 5, 7, 8.5).
func Recover(dir string) error {
	fi, err := os.Stat(dir)
	if err != nil {
		return ioError(nil, nil, err)
	}
	if !fi.IsDir() {
		return ioError(nil, nil, &fs.PathError{Op: "open", Path: dir, Err: syscall.ENOTDIR})
	}
	w, err := openWriter(dir, WriterOptions{}, false)
	if err != nil {
		return err
	}
	defer w.Close()
	return w.locked(func() error {
		_, err := w.prepare()
		return err
	})
}

func openWriter(dir string, opts WriterOptions, create bool) (*Writer, error) {
	if opts.Durability == "" {
		opts.Durability = DurabilitySync
	}
	switch opts.Durability {
	case DurabilitySync, DurabilityGroup, DurabilityOS, DurabilityStrict:
	default:
		return nil, fmt.Errorf("binlog: unknown durability mode %q", opts.Durability)
	}
	// W-34: created when absent, zero length, never written or truncated.
	lf, err := os.OpenFile(filepath.Join(dir, "LOCK"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, ioError(nil, nil, err)
	}
	return &Writer{dir: dir, opts: opts, lockFile: lf, create: create, probed: map[uint32]bool{}}, nil
}

// Close releases the writer's files.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.cur != nil {
		w.cur.close()
		w.cur = nil
	}
	if w.lockFile == nil {
		return nil
	}
	err := w.lockFile.Close()
	w.lockFile = nil
	return err
}

func (w *Writer) now() int64 {
	if w.opts.Clock != nil {
		return w.opts.Clock()
	}
	return time.Now().UnixMicro()
}

func newLogID() [16]byte {
	var id [16]byte
	if _, err := rand.Read(id[:]); err != nil {
		panic("binlog: no secure random source: " + err.Error())
	}
	return id
}

// locked runs fn holding the writers' lock (W-31). An I/O failure inside
// fails the writer until it is reopened (W-19).
func (w *Writer) locked(fn func() error) error {
	if w.failed != nil {
		return w.failed
	}
	if w.lockFile == nil {
		return ErrWriterFailed
	}
	if err := ofdLock(w.lockFile, syscall.F_WRLCK); err != nil {
		return ioError(nil, nil, err)
	}
	err := fn()
	if uerr := ofdLock(w.lockFile, syscall.F_UNLCK); uerr != nil && err == nil {
		err = ioError(nil, nil, uerr)
	}
	if ClassOf(err) == ClassIOError {
		w.failed = fmt.Errorf("%w: %v", ErrWriterFailed, err)
		if w.cur != nil {
			w.cur.close()
			w.cur = nil
		}
	}
	return err
}

// Append commits one record as its own batch.
func (w *Writer) Append(payload []byte, asqn int64) (Ref, error) {
	acks, err := w.AppendBatch([]Append{{Payload: payload, Asqn: asqn}})
	if err != nil {
		return Ref{}, err
	}
	return acks[0].Ref, acks[0].Err
}

// AppendBatch commits appends as one batch (section 6.2): one lock, one
// write, one sync and one slot update per segment it lands in. Each append
// is acknowledged with its ref or refused with its own error; an error
// returned for the whole batch means none was acknowledged.
func (w *Writer) AppendBatch(appends []Append) ([]Ack, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	acks := make([]Ack, len(appends))
	err := w.locked(func() error {
		t, err := w.prepare()
		if err != nil {
			return err
		}
		pending := make([]int, len(appends))
		for i := range pending {
			pending[i] = i
		}
		for len(pending) > 0 {
			leftover, err := w.commit(t, appends, pending, acks)
			if err != nil {
				return err
			}
			full := w.opts.MaxSegmentBytes != 0 && t.h.Active.CommitOffset >= w.opts.MaxSegmentBytes
			if len(leftover) > 0 || full {
				if t, err = w.cutover(t); err != nil {
					return err
				}
			}
			pending = leftover
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return acks, nil
}

// Cutover starts the next segment and seals the current one (section 8.2).
func (w *Writer) Cutover() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.locked(func() error {
		t, err := w.prepare()
		if err != nil {
			return err
		}
		_, err = w.cutover(t)
		return err
	})
}

// NextIndex returns the index the next append will carry, after the
// clean-up and recovery a batch runs first.
func (w *Writer) NextIndex() (uint64, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var next uint64
	err := w.locked(func() error {
		t, err := w.prepare()
		if err == nil {
			next = t.h.Active.NextIndex
		}
		return err
	})
	return next, err
}

// commit runs steps 6 to 10 of the write protocol for the pending appends
// and returns those that did not fit a preallocated segment.
func (w *Writer) commit(t *writeTarget, appends []Append, pending []int, acks []Ack) ([]int, error) {
	slot := t.h.Active
	ts := max(w.now(), slot.LastTimestampUS) // W-9
	e, a := slot.NextIndex, slot.LastAsqn
	var buf []byte
	var leftover []int
	for k, i := range pending {
		ap := appends[i]
		off := slot.CommitOffset + uint64(len(buf))
		if ap.Asqn != NoAsqn && (ap.Asqn < 0 || ap.Asqn <= a) { // W-8
			acks[i].Err = recordError(ClassAsqnNotIncreasing, t.log, off, e, "append refused")
			continue
		}
		if len(ap.Payload) > MaxPayload { // W-10
			acks[i].Err = recordError(ClassLengthOutOfRange, t.log, off, e, "payload too large")
			continue
		}
		size := uint64(RecordHeaderSize + len(ap.Payload))
		if t.h.Preallocated() && off+size > t.h.Capacity { // W-18
			leftover = pending[k:]
			break
		}
		buf = AppendRecord(buf, e, ap.Asqn, ts, ap.Payload)
		acks[i].Ref = Ref{Log: t.log, Offset: off, Index: e}
		e++
		if ap.Asqn != NoAsqn {
			a = ap.Asqn
		}
	}
	if len(buf) == 0 {
		return leftover, nil
	}
	if _, err := t.f.WriteAt(buf, int64(slot.CommitOffset)); err != nil {
		return nil, ioError(u32p(t.log), u64p(slot.CommitOffset), err)
	}
	if w.opts.Durability != DurabilityOS {
		if err := fdatasync(t.f); err != nil {
			return nil, ioError(u32p(t.log), nil, err)
		}
	}
	next := Slot{Generation: slot.Generation + 1, CommitOffset: slot.CommitOffset + uint64(len(buf)),
		NextIndex: e, LastAsqn: a, LastTimestampUS: ts}
	if err := w.publish(t, next); err != nil {
		return nil, err
	}
	if w.opts.Durability == DurabilityStrict {
		if err := fdatasync(t.f); err != nil {
			return nil, ioError(u32p(t.log), nil, err)
		}
	}
	return leftover, nil
}

// publish writes slot s into the slot its generation belongs to, then the
// mirrors (W-5, W-14).
func (w *Writer) publish(t *writeTarget, s Slot) error {
	at := SlotOffset(s.Generation)
	if _, err := t.f.WriteAt(s.Encode(), at); err != nil {
		return ioError(u32p(t.log), u64p(uint64(at)), err)
	}
	if _, err := t.f.WriteAt(Mirrors(s, t.log), mirrorOffset); err != nil {
		return ioError(u32p(t.log), u64p(mirrorOffset), err)
	}
	t.h.Active = s
	return nil
}

func (w *Writer) sync(t *writeTarget) error {
	if err := fdatasync(t.f); err != nil {
		return ioError(u32p(t.log), nil, err)
	}
	return nil
}

// cutover runs steps 0 to 4 of section 8.2 on the open, recovered last
// segment t and returns the new last segment.
func (w *Writer) cutover(t *writeTarget) (*writeTarget, error) {
	if t.log >= MaxLogNumber {
		return nil, ErrLogNumberLimit
	}
	if err := w.sync(t); err != nil {
		return nil, err
	}
	s := t.h.Active
	next, err := w.createSegment(newNextSegment(t.log+1, t.h.LogID, s.NextIndex, s.LastAsqn, s.LastTimestampUS, w.now()))
	if err != nil {
		return nil, err
	}
	s.Generation++
	s.NextLogNumber = t.log + 1
	if err := w.publish(t, s); err != nil {
		next.close()
		return nil, err
	}
	if err := w.sync(t); err != nil {
		next.close()
		return nil, err
	}
	t.close()
	w.cur = next
	return next, nil
}

func newNextSegment(log uint32, id [16]byte, base uint64, lastAsqn, lastTS, now int64) NewHeader {
	return NewHeader{LogNumber: log, LogID: id, BaseIndex: base, CreatedUS: now, LastAsqn: lastAsqn, LastTimestampUS: lastTS}
}

// createSegment runs steps 1 to 3 of section 8.2: the header in a temporary
// file, synced, linked into place, the directory synced (W-28).
func (w *Writer) createSegment(nh NewHeader) (*writeTarget, error) {
	if nh.LogNumber < 1 || nh.LogNumber > MaxLogNumber {
		return nil, ErrLogNumberLimit
	}
	var rnd [8]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return nil, ioError(nil, nil, err)
	}
	tmp := filepath.Join(w.dir, fmt.Sprintf(".%s.%s.tmp", SegmentName(nh.LogNumber), hex.EncodeToString(rnd[:])))
	final := filepath.Join(w.dir, SegmentName(nh.LogNumber))
	fail := func(err error) (*writeTarget, error) { return nil, ioError(u32p(nh.LogNumber), nil, err) }
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fail(err)
	}
	_, err = f.WriteAt(nh.Encode(), 0)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Link(tmp, final)
	}
	if rerr := os.Remove(tmp); err == nil {
		err = rerr
	}
	if err == nil {
		err = syncDir(w.dir)
	}
	if err != nil {
		return fail(err)
	}
	return w.openTarget(nh.LogNumber)
}

func (w *Writer) openTarget(n uint32) (*writeTarget, error) {
	s, err := openSegment(w.dir, n, os.O_RDWR)
	if err != nil {
		return nil, err
	}
	h, err := s.header()
	if err != nil {
		s.close()
		return nil, err
	}
	return &writeTarget{segmentFile: s, h: h}, nil
}
