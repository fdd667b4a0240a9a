// Command binlog-go is the testee of the BinLog conformance suite: an
// independent Go reader and writer of format version 2.
//
//	binlog-go read DIR [--after REF | --tolerant | --split LOG:START:STOP]
//	binlog-go write DIR < SPEC.json
//	binlog-go recover DIR
//	binlog-go session
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"

	"binlog.example/goimpl/binlog"
)

const (
	implName    = "binlog-go"
	implVersion = "0.1.0"
	specVersion = "2.1"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	usage := func() int {
		fmt.Fprintln(stderr, "usage: binlog-go read DIR [--after REF | --tolerant | --split LOG:START:STOP] |"+
			" write DIR < SPEC.json | recover DIR | session")
		return exitUsage
	}
	if len(args) == 0 {
		return usage()
	}
	switch {
	case args[0] == "read" && len(args) >= 2:
		req, err := parseReadOptions(args[2:])
		if err != nil {
			fmt.Fprintln(stderr, "binlog-go:", err)
			return usage()
		}
		res, code := readLog(args[1], req)
		if printJSON(stdout, stderr, res) != nil {
			return exitUsage
		}
		return code
	case args[0] == "write" && len(args) == 2:
		var spec writeSpec
		if err := json.NewDecoder(stdin).Decode(&spec); err != nil {
			fmt.Fprintln(stderr, "binlog-go: bad write spec:", err)
			return exitUsage
		}
		return answerFileLevel(stdout, stderr, writeLog(args[1], spec))
	case args[0] == "recover" && len(args) == 2:
		return answerFileLevel(stdout, stderr, binlog.Recover(args[1]))
	case args[0] == "session" && len(args) == 1:
		if err := session(stdin, stdout, stderr); err != nil {
			fmt.Fprintln(stderr, "binlog-go:", err)
			return exitUsage
		}
		return 0
	}
	return usage()
}

// parseReadOptions parses what follows "read DIR": nothing, --after REF
// (a REF may begin with "-"), --after-binary HEX, --tolerant, or --split LOG:START:STOP.
func parseReadOptions(args []string) (readRequest, error) {
	var req readRequest
	switch {
	case len(args) == 0:
	case len(args) == 2 && args[0] == "--after":
		req.After = &args[1]
	case len(args) == 2 && args[0] == "--after-binary":
		req.AfterBinary = &args[1]
	case len(args) == 1 && args[0] == "--tolerant":
		req.Tolerant = true
	case len(args) == 2 && args[0] == "--split":
		sp, err := parseSplit(args[1])
		if err != nil {
			return req, err
		}
		req.Split = sp
	default:
		return req, fmt.Errorf("unexpected read options %q", args)
	}
	return req, nil
}

// answer is the {"ok": ..., "error": ...} reply of write and recover.
type answer struct {
	OK    bool       `json:"ok"`
	Error *jsonError `json:"error,omitempty"`
}

func toAnswer(err error) answer {
	if err == nil {
		return answer{OK: true}
	}
	if errors.Is(err, errUnsupported) {
		return answer{Error: unsupported()}
	}
	return answer{Error: toJSONError(err)}
}

func answerFileLevel(stdout, stderr io.Writer, err error) int {
	if err != nil {
		fmt.Fprintln(stderr, "binlog-go:", err)
	}
	a := toAnswer(err)
	if printJSON(stdout, stderr, a) != nil {
		return exitUsage
	}
	if errors.Is(err, errUnsupported) {
		return exitUnsupported
	}
	if !a.OK {
		return exitReject
	}
	return 0
}

func printJSON(w, stderr io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err == nil {
		_, err = w.Write(append(b, '\n'))
	}
	if err != nil {
		fmt.Fprintln(stderr, "binlog-go:", err)
	}
	return err
}

type request struct {
	Op    string  `json:"op"`
	Path  string  `json:"path"`
	After *string `json:"after"`
	// AfterBinary is the binary form of a ref, in hexadecimal.
	AfterBinary *string   `json:"after_binary"`
	Tolerant    bool      `json:"tolerant"`
	Log         *uint32   `json:"log"`
	Start       *intField `json:"start"`
	Stop        *intField `json:"stop"`
	writeSpec
}

// readRequest is what a session read asks for; nil when it asks for a
// combination the protocol does not have.
func (r request) readRequest() (readRequest, bool) {
	req := readRequest{After: r.After, AfterBinary: r.AfterBinary, Tolerant: r.Tolerant}
	hasRef := r.After != nil || r.AfterBinary != nil
	if r.After != nil && r.AfterBinary != nil {
		return req, false
	}
	if r.Log == nil {
		return req, !(r.Tolerant && hasRef)
	}
	if r.Start == nil || r.Stop == nil || r.Tolerant || hasRef {
		return req, false
	}
	start, err1 := strconv.ParseUint(string(*r.Start), 10, 64)
	stop, err2 := strconv.ParseUint(string(*r.Stop), 10, 64)
	req.Split = &split{Log: *r.Log, Start: start, Stop: stop}
	return req, err1 == nil && err2 == nil
}

type helloReply struct {
	OK           bool              `json:"ok"`
	Name         string            `json:"name"`
	Version      string            `json:"version"`
	SpecVersion  string            `json:"spec_version"`
	Roles        []string          `json:"roles"`
	Capabilities []string          `json:"capabilities"`
	Choices      map[string]string `json:"choices"`
}

type readReply struct {
	OK bool `json:"ok"`
	readResult
}

// session serves JSON-lines requests until "bye" or the end of input.
func session(stdin io.Reader, stdout, stderr io.Writer) error {
	in := bufio.NewReader(stdin)
	out := bufio.NewWriter(stdout)
	reply := func(v any) error {
		if err := printJSON(out, stderr, v); err != nil {
			return err
		}
		return out.Flush()
	}
	for {
		line, err := in.ReadBytes('\n')
		if len(line) == 0 && err == io.EOF {
			return nil
		}
		if err != nil && err != io.EOF {
			return err
		}
		var req request
		if jerr := json.Unmarshal(line, &req); jerr != nil {
			fmt.Fprintln(stderr, "binlog-go: bad request:", jerr)
			if rerr := reply(answer{Error: unsupported()}); rerr != nil {
				return rerr
			}
			continue
		}
		var v any
		switch req.Op {
		case "hello":
			v = helloReply{OK: true, Name: implName, Version: implVersion, SpecVersion: specVersion,
				Roles:        []string{"reader", "writer"},
				Capabilities: []string{"legacy_v1", "refs", "tolerant", "split", "recover", "write"},
				// Section 14: the end of a finished, unsealed segment is
				// computed by the tail walk of section 8.4.
				Choices: map[string]string{"finished_segment_end": "tail_walk"}}
		case "read":
			if rr, ok := req.readRequest(); ok {
				res, _ := readLog(req.Path, rr)
				v = readReply{OK: true, readResult: res}
			} else {
				v = answer{Error: unsupported()}
			}
		case "write":
			err := writeLog(req.Path, req.writeSpec)
			if err != nil {
				fmt.Fprintln(stderr, "binlog-go:", err)
			}
			v = toAnswer(err)
		case "recover":
			err := binlog.Recover(req.Path)
			if err != nil {
				fmt.Fprintln(stderr, "binlog-go:", err)
			}
			v = toAnswer(err)
		case "bye":
			return reply(answer{OK: true})
		default:
			v = answer{Error: unsupported()}
		}
		if err := reply(v); err != nil {
			return err
		}
	}
}
