package binlog

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
)

// Ref names one record: (log number, offset, index) (section 10.6).
type Ref struct {
	Log    uint32
	Offset uint64
	Index  uint64
}

// RefSize is the length of the binary form of a ref.
const RefSize = 20

var refTextRE = regexp.MustCompile(`^[0-9]{1,10}:[0-9]{1,20}:[0-9]{1,20}$`)

// refWhiteSpace is what a reader strips around a text ref.
const refWhiteSpace = " \t\r\n"

func malformedRef(msg string) *Error { return &Error{Class: ClassInvalidRef, Msg: msg} }

// String is the text form, without leading zeros.
func (r Ref) String() string { return fmt.Sprintf("%d:%d:%d", r.Log, r.Offset, r.Index) }

// MarshalBinary returns the 20-byte binary form.
func (r Ref) MarshalBinary() []byte {
	b := make([]byte, RefSize)
	be.PutUint32(b[0:], r.Log)
	be.PutUint64(b[4:], r.Offset)
	be.PutUint64(b[12:], r.Index)
	return b
}

// ParseRef parses the text form.
func ParseRef(text string) (Ref, error) {
	t := strings.Trim(text, refWhiteSpace)
	if !refTextRE.MatchString(t) {
		return Ref{}, malformedRef("not LOG:OFFSET:INDEX")
	}
	parts := strings.Split(t, ":")
	log, err1 := strconv.ParseUint(parts[0], 10, 64)
	off, err2 := strconv.ParseUint(parts[1], 10, 64)
	idx, err3 := strconv.ParseUint(parts[2], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil || log < 1 || log > math.MaxUint32 {
		return Ref{}, malformedRef("number out of range")
	}
	return Ref{Log: uint32(log), Offset: off, Index: idx}, nil
}

// ParseBinaryRef parses the 20-byte binary form.
func ParseBinaryRef(b []byte) (Ref, error) {
	if len(b) != RefSize {
		return Ref{}, malformedRef("binary ref is not 20 bytes")
	}
	r := Ref{Log: be.Uint32(b[0:]), Offset: be.Uint64(b[4:]), Index: be.Uint64(b[12:])}
	if r.Log == 0 {
		return Ref{}, malformedRef("log number 0")
	}
	return r, nil
}

// invalid reports that r does not name a valid committed record.
func (r Ref) invalid(msg string) *Error {
	return &Error{Class: ClassInvalidRef, Log: u32p(r.Log), Offset: u64p(r.Offset), Index: u64p(r.Index), Msg: msg}
}
