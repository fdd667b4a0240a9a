package binlog

import (
	"errors"
	"fmt"
)

// Class is one of the closed list of error classes of section 12.
type Class string

// The error classes of section 12.
const (
	ClassBadSignature       Class = "bad_signature"
	ClassUnsupportedVersion Class = "unsupported_version"
	ClassUnsupportedFeature Class = "unsupported_feature"
	ClassBadHeader          Class = "bad_header"
	ClassTruncated          Class = "truncated"
	ClassChecksumMismatch   Class = "checksum_mismatch"
	ClassLengthOutOfRange   Class = "length_out_of_range"
	ClassIndexDiscontinuity Class = "index_discontinuity"
	ClassAsqnNotIncreasing  Class = "asqn_not_increasing"
	ClassChainBroken        Class = "chain_broken"
	ClassInvalidRef         Class = "invalid_ref"
	ClassIOError            Class = "io_error"
	// ClassAmbiguousSplit: the end of a split cannot be resolved from the
	// bytes, because the boundary found from its stop offset lies inside a
	// record the walk walked over (section 10.5, decision D3). Kind: usage.
	ClassAmbiguousSplit Class = "ambiguous_split"
)

// Error is a typed failure: its class and, where known, the segment's log
// number, the byte offset and the (expected) index it is reported with.
type Error struct {
	Class  Class
	Log    *uint32
	Offset *uint64
	Index  *uint64
	Msg    string
	Err    error // underlying cause, for io_error
}

func (e *Error) Error() string {
	s := string(e.Class)
	if e.Log != nil {
		s += fmt.Sprintf(" log=%d", *e.Log)
	}
	if e.Offset != nil {
		s += fmt.Sprintf(" offset=%d", *e.Offset)
	}
	if e.Index != nil {
		s += fmt.Sprintf(" index=%d", *e.Index)
	}
	if e.Msg != "" {
		s += ": " + e.Msg
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *Error) Unwrap() error { return e.Err }

// ClassOf returns the class of err, or "" when err is not an *Error.
func ClassOf(err error) Class {
	var e *Error
	if errors.As(err, &e) {
		return e.Class
	}
	return ""
}

func u32p(v uint32) *uint32 { return &v }
func u64p(v uint64) *uint64 { return &v }

// segmentError reports damage in segment log at offset off.
func segmentError(c Class, log uint32, off uint64, msg string) *Error {
	return &Error{Class: c, Log: u32p(log), Offset: u64p(off), Msg: msg}
}

// recordError reports damage of the record at off, which should carry index.
func recordError(c Class, log uint32, off, index uint64, msg string) *Error {
	return &Error{Class: c, Log: u32p(log), Offset: u64p(off), Index: u64p(index), Msg: msg}
}

// ioError wraps an operating-system failure.
func ioError(log *uint32, off *uint64, err error) *Error {
	return &Error{Class: ClassIOError, Log: log, Offset: off, Err: err}
}
