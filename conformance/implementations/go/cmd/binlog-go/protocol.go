package main

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"binlog.example/goimpl/binlog"
)

// The canonical JSON objects of the testee protocol: 64-bit integers as
// decimal strings, bytes as lower-case hex.

type jsonRecord struct {
	Log         uint32  `json:"log"`
	Offset      string  `json:"offset"`
	Index       string  `json:"index"`
	Asqn        string  `json:"asqn"`
	TimestampUS *string `json:"timestamp_us"`
	Payload     string  `json:"payload"`
	Checked     bool    `json:"checked"`
}

type jsonError struct {
	Class  string  `json:"class"`
	Log    *uint32 `json:"log"`
	Offset *string `json:"offset"`
	Index  *string `json:"index"`
}

type jsonTorn struct {
	Log    uint32 `json:"log"`
	Offset string `json:"offset"`
}

// jsonDamage is one damaged region a tolerant read stepped over.
type jsonDamage struct {
	Class        string  `json:"class"`
	Log          uint32  `json:"log"`
	Offset       *string `json:"offset"`
	Index        string  `json:"index"`
	BytesSkipped string  `json:"bytes_skipped"`
	ResumedIndex *string `json:"resumed_index"`
}

type readResult struct {
	Outcome string       `json:"outcome"`
	Records []jsonRecord `json:"records"`
	Torn    *jsonTorn    `json:"torn"`
	Error   *jsonError   `json:"error"`
	// Damage is present, possibly empty, in the answer to a tolerant read only.
	Damage *[]jsonDamage `json:"damage,omitempty"`
}

// readRequest says how to read: from the start, after a ref, tolerantly,
// or one split [Start, Stop) of segment Log.
type readRequest struct {
	After *string
	// AfterBinary is the hexadecimal of a binary ref.
	AfterBinary *string
	Tolerant    bool
	Split       *split
}

type split struct {
	Log         uint32
	Start, Stop uint64
}

// parseSplit parses the command-line form LOG:START:STOP.
func parseSplit(text string) (*split, error) {
	parts := strings.Split(text, ":")
	if len(parts) != 3 {
		return nil, fmt.Errorf("split %q is not LOG:START:STOP", text)
	}
	log, err := strconv.ParseUint(parts[0], 10, 32)
	if err != nil {
		return nil, fmt.Errorf("split log number: %w", err)
	}
	start, err := strconv.ParseUint(parts[1], 10, 64)
	if err != nil {
		return nil, fmt.Errorf("split start: %w", err)
	}
	stop, err := strconv.ParseUint(parts[2], 10, 64)
	if err != nil {
		return nil, fmt.Errorf("split stop: %w", err)
	}
	return &split{Log: uint32(log), Start: start, Stop: stop}, nil
}

// classUnsupportedOperation answers a request this implementation cannot serve.
const classUnsupportedOperation = "unsupported_operation"

func u64s(v uint64) string { return strconv.FormatUint(v, 10) }

func optU64s(v *uint64) *string {
	if v == nil {
		return nil
	}
	s := u64s(*v)
	return &s
}

func toJSONRecord(r binlog.Record) jsonRecord {
	j := jsonRecord{Log: r.Log, Offset: u64s(r.Offset), Index: u64s(r.Index),
		Asqn: strconv.FormatInt(r.Asqn, 10), Payload: hex.EncodeToString(r.Payload), Checked: r.Checked}
	if r.Checked {
		ts := strconv.FormatInt(r.TimestampUS, 10)
		j.TimestampUS = &ts
	}
	return j
}

// toJSONError maps err to the canonical error object. Every failure the
// library reports is an *binlog.Error; anything else came from the system.
func toJSONError(err error) *jsonError {
	var e *binlog.Error
	if !errors.As(err, &e) {
		return &jsonError{Class: string(binlog.ClassIOError)}
	}
	return &jsonError{Class: string(e.Class), Log: e.Log, Offset: optU64s(e.Offset), Index: optU64s(e.Index)}
}

func unsupported() *jsonError { return &jsonError{Class: classUnsupportedOperation} }

// Exit codes of the file-level read command.
const (
	exitAccept      = 0
	exitReject      = 1
	exitRecovered   = 2
	exitUnsupported = 3
	exitUsage       = 4
)

func toJSONDamage(d binlog.Damage) jsonDamage {
	return jsonDamage{Class: string(d.Class), Log: d.Log, Offset: optU64s(d.Offset), Index: u64s(d.Index),
		BytesSkipped: u64s(d.BytesSkipped), ResumedIndex: optU64s(d.ResumedIndex)}
}

// readLog runs a read and returns its canonical result and exit code.
func readLog(dir string, req readRequest) (readResult, int) {
	res := readResult{Records: []jsonRecord{}}
	collect := func(r binlog.Record) error {
		res.Records = append(res.Records, toJSONRecord(r))
		return nil
	}
	if req.Split != nil {
		if err := binlog.ReadSplit(dir, req.Split.Log, req.Split.Start, req.Split.Stop, collect); err != nil {
			res.Outcome, res.Error = "reject", toJSONError(err)
			return res, exitReject
		}
		res.Outcome = "accept"
		return res, exitAccept
	}
	var opts binlog.ReadOptions
	if req.After != nil || req.AfterBinary != nil {
		ref, err := parseRequestRef(req)
		if err != nil {
			res.Outcome, res.Error = "reject", toJSONError(err)
			return res, exitReject
		}
		opts.After = &ref
	}
	if req.Tolerant {
		damage := []jsonDamage{}
		res.Damage = &damage
		opts.OnDamage = func(d binlog.Damage) { damage = append(damage, toJSONDamage(d)) }
	}
	torn, err := binlog.ReadLog(dir, opts, collect)
	switch {
	case err != nil:
		res.Outcome, res.Error = "reject", toJSONError(err)
		return res, exitReject
	case torn != nil:
		res.Outcome, res.Torn = "recovered", &jsonTorn{Log: torn.Log, Offset: u64s(torn.Offset)}
		return res, exitRecovered
	}
	res.Outcome = "accept"
	return res, exitAccept
}

// intField accepts a 64-bit integer written as a decimal string or a number.
type intField string

func (f *intField) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*f = intField(s)
		return nil
	}
	var n json.Number
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("not an integer: %s", b)
	}
	*f = intField(n.String())
	return nil
}

type writeRecord struct {
	Payload string    `json:"payload"`
	Asqn    *intField `json:"asqn"`
}

type writeSpec struct {
	Records       []writeRecord              `json:"records"`
	CutoverBefore []intField                 `json:"cutover_before"`
	Options       map[string]json.RawMessage `json:"options"`
}

// errUnsupported marks a write request outside what this implementation serves.
var errUnsupported = errors.New("unsupported request")

// writeLog appends the spec's records to a new log in dir, one batch per
// record, cutting over before each listed index.
func writeLog(dir string, spec writeSpec) error {
	opts := binlog.WriterOptions{}
	for key, raw := range spec.Options {
		if key != "durability" {
			return fmt.Errorf("%w: option %q", errUnsupported, key)
		}
		var mode string
		if err := json.Unmarshal(raw, &mode); err != nil {
			return fmt.Errorf("%w: durability %s", errUnsupported, raw)
		}
		switch d := binlog.Durability(mode); d {
		case binlog.DurabilitySync, binlog.DurabilityGroup, binlog.DurabilityOS, binlog.DurabilityStrict:
			opts.Durability = d
		default:
			return fmt.Errorf("%w: durability %q", errUnsupported, mode)
		}
	}
	cut := map[uint64]bool{}
	for _, c := range spec.CutoverBefore {
		v, err := strconv.ParseUint(string(c), 10, 64)
		if err != nil {
			return fmt.Errorf("%w: cutover index %q", errUnsupported, c)
		}
		cut[v] = true
	}
	type entry struct {
		payload []byte
		asqn    int64
	}
	entries := make([]entry, len(spec.Records))
	for i, r := range spec.Records {
		p, err := hex.DecodeString(r.Payload)
		if err != nil {
			return fmt.Errorf("%w: payload of record %d", errUnsupported, i)
		}
		entries[i] = entry{payload: p, asqn: binlog.NoAsqn}
		if r.Asqn != nil {
			if entries[i].asqn, err = strconv.ParseInt(string(*r.Asqn), 10, 64); err != nil {
				return fmt.Errorf("%w: asqn of record %d", errUnsupported, i)
			}
		}
	}
	w, err := binlog.OpenWriter(dir, opts)
	if err != nil {
		return err
	}
	defer w.Close()
	next, err := w.NextIndex()
	if err != nil {
		return err
	}
	for _, e := range entries {
		if cut[next] {
			if err := w.Cutover(); err != nil {
				return err
			}
		}
		ref, err := w.Append(e.payload, e.asqn)
		if err != nil {
			return err
		}
		next = ref.Index + 1
	}
	if cut[next] {
		return w.Cutover()
	}
	return nil
}

// parseRequestRef parses the ref of a read, in its text or binary form.
func parseRequestRef(req readRequest) (binlog.Ref, error) {
	if req.After != nil {
		return binlog.ParseRef(*req.After)
	}
	raw, err := hex.DecodeString(*req.AfterBinary)
	if err != nil {
		return binlog.Ref{}, fmt.Errorf("after_binary is not hexadecimal: %w", err)
	}
	return binlog.ParseBinaryRef(raw)
}
