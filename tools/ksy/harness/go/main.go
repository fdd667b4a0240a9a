// Kaitai cross-check harness for Go: parse segment and index files, print canonical JSON.
// Usage: harness strict|tolerant|legacy|index FILE...; one JSON line per file, {"error": ...}
// when the generated parser fails on it. The first three read segment files (.dat),
// `index` reads sparse index files (.idx).
package main

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"os"
	"strconv"

	"github.com/kaitai-io/kaitai_struct_go_runtime/kaitai"

	"openbinlog/ksyharness/binlogksy"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func maskedCrc32c(parts ...[]byte) uint32 {
	var crc uint32
	for _, part := range parts {
		crc = crc32.Update(crc, castagnoli, part)
	}
	return ((crc >> 15) | (crc << 17)) + 0xA282EAD8
}

type entry struct {
	Offset      int64   `json:"offset"`
	Index       string  `json:"index"`
	Asqn        string  `json:"asqn"`
	TimestampUs *string `json:"timestamp_us"`
	PayloadHex  string  `json:"payload_hex"`
}

type summary struct {
	Version        *int    `json:"version"`
	Log            *uint32 `json:"log"`
	BaseIndex      *string `json:"base_index"`
	CommitOffset   *string `json:"commit_offset"`
	Records        []entry `json:"records"`
	ChecksumsOk    *bool   `json:"checksums_ok"`
	TornTailOffset *int64  `json:"torn_tail_offset"`
}

// must turns the (value, error) pairs of generated instance getters into panics,
// which run recovers into an error result.
func must[T any](value T, err error) T {
	if err != nil {
		panic(err)
	}
	return value
}

func ptr[T any](value T) *T { return &value }

func headerOk(header *binlogksy.BinlogV2_SegmentHeader) bool {
	slot := must(header.ActiveSlot())
	return maskedCrc32c(must(header.CrcCoveredLengthVersion()), must(header.CrcCoveredLogNumber()),
		must(header.CrcCoveredSignatureToReserved())) == header.HeaderCrc &&
		maskedCrc32c(must(slot.CrcCovered())) == slot.SlotCrc
}

func recordOk(record *binlogksy.BinlogV2_Record) bool {
	return maskedCrc32c(must(record.CrcCoveredHeader())) == record.HeaderCrc &&
		maskedCrc32c(record.Payload) == record.PayloadCrc
}

func v2Summary(header *binlogksy.BinlogV2_SegmentHeader, records []*binlogksy.BinlogV2_Record, checksumsOk bool, tornTailOffset *int64) summary {
	entries := []entry{}
	for _, r := range records {
		if must(r.IsData()) {
			entries = append(entries, entry{must(r.OfsRecord()), strconv.FormatUint(r.Index, 10),
				strconv.FormatInt(r.Asqn, 10), ptr(strconv.FormatInt(r.TimestampUs, 10)), hex.EncodeToString(r.Payload)})
		}
	}
	return summary{ptr(int(header.Version)), ptr(header.LogNumber), ptr(strconv.FormatUint(header.BaseIndex, 10)),
		ptr(strconv.FormatUint(must(header.ActiveSlot()).OfsCommit, 10)), entries, ptr(checksumsOk), tornTailOffset}
}

func strict(stream *kaitai.Stream) summary {
	segment := binlogksy.NewBinlogV2()
	must(0, segment.Read(stream, nil, segment))
	ok := headerOk(segment.Header)
	for _, r := range segment.Records {
		ok = ok && recordOk(r)
	}
	return v2Summary(segment.Header, segment.Records, ok, nil)
}

func tolerant(stream *kaitai.Stream) summary {
	view := binlogksy.NewBinlogV2Tolerant()
	must(0, view.Read(stream, nil, view))
	if view.Header == nil {
		return summary{Records: []entry{}, TornTailOffset: ptr(must(view.OfsTornTail()))}
	}
	// The valid prefix ends at the first whole record whose checksums fail.
	valid := []*binlogksy.BinlogV2_Record{}
	for _, r := range view.Records {
		if !recordOk(r) {
			break
		}
		valid = append(valid, r)
	}
	tornTailOffset := int64(256)
	if len(valid) > 0 {
		tornTailOffset = must(valid[len(valid)-1].OfsEnd())
	}
	return v2Summary(view.Header, valid, headerOk(view.Header), &tornTailOffset)
}

func legacy(stream *kaitai.Stream) summary {
	segment := binlogksy.NewJposBinlogV1()
	must(0, segment.Read(stream, nil, segment))
	entries := []entry{}
	for i, r := range segment.Records {
		entries = append(entries, entry{must(r.OfsRecord()), strconv.Itoa(i + 1), "-1", nil, hex.EncodeToString(r.Data)})
	}
	header := segment.Header
	return summary{Version: ptr(int(header.Version)), Log: ptr(header.LogNumber),
		CommitOffset: ptr(strconv.FormatUint(header.OfsLastElement, 10)), Records: entries}
}

type indexEntry struct {
	Index       string `json:"index"`
	Offset      string `json:"offset"`
	TimestampUs string `json:"timestamp_us"`
	SpanCrc     uint32 `json:"span_crc"`
	EntryCrc    uint32 `json:"entry_crc"`
	EntryCrcOk  bool   `json:"entry_crc_ok"`
}

type indexSummary struct {
	Version        uint16       `json:"version"`
	SegmentVersion uint16       `json:"segment_version"`
	Log            uint32       `json:"log"`
	LogIdHex       string       `json:"log_id_hex"`
	BaseIndex      string       `json:"base_index"`
	SegmentEnd     string       `json:"segment_end"`
	EndIndex       string       `json:"end_index"`
	EntryCount     string       `json:"entry_count"`
	Interval       uint32       `json:"interval"`
	HeaderCrc      uint32       `json:"header_crc"`
	HeaderCrcOk    bool         `json:"header_crc_ok"`
	SizeOk         bool         `json:"size_ok"`
	Entries        []indexEntry `json:"entries"`
	TrailingHex    string       `json:"trailing_hex"`
}

// index reads an index file: every header field, every whole entry, and the checks the
// caller adds (CRCs, size).
func index(stream *kaitai.Stream) any {
	view := binlogksy.NewBinlogIndex()
	must(0, view.Read(stream, nil, view))
	entries := []indexEntry{}
	for _, e := range view.Entries {
		entries = append(entries, indexEntry{strconv.FormatUint(e.Index, 10), strconv.FormatUint(e.OfsRecord, 10),
			strconv.FormatInt(e.TimestampUs, 10), e.SpanCrc, e.EntryCrc, maskedCrc32c(must(e.CrcCovered())) == e.EntryCrc})
	}
	h := view.Header
	return indexSummary{h.Version, h.SegmentVersion, h.LogNumber, hex.EncodeToString(h.LogId),
		strconv.FormatUint(h.BaseIndex, 10), strconv.FormatUint(h.OfsSegmentEnd, 10), strconv.FormatUint(h.EndIndex, 10),
		strconv.FormatUint(h.NumEntries, 10), h.Interval, h.HeaderCrc, maskedCrc32c(must(h.CrcCovered())) == h.HeaderCrc,
		must(view.HasExpectedSize()), entries, hex.EncodeToString(view.Trailing)}
}

// segments adapts a segment view to the mode table.
func segments(parse func(*kaitai.Stream) summary) func(*kaitai.Stream) any {
	return func(stream *kaitai.Stream) any { return parse(stream) }
}

func run(parse func(*kaitai.Stream) any, path string) (result any) {
	defer func() {
		if failure := recover(); failure != nil {
			result = map[string]string{"error": fmt.Sprint(failure)}
		}
	}()
	file, err := os.Open(path)
	if err != nil {
		panic(err)
	}
	defer file.Close()
	return parse(kaitai.NewStream(file))
}

func main() {
	modes := map[string]func(*kaitai.Stream) any{
		"strict": segments(strict), "tolerant": segments(tolerant), "legacy": segments(legacy), "index": index,
	}
	parse, known := modes[os.Args[1]]
	if !known {
		fmt.Fprintln(os.Stderr, "usage: harness strict|tolerant|legacy|index FILE...")
		os.Exit(64)
	}
	out := json.NewEncoder(os.Stdout)
	for _, path := range os.Args[2:] {
		must(0, out.Encode(run(parse, path)))
	}
}
