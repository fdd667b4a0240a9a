// Command binlog-go is the testee of the BinLog conformance suite: an
// independent Go reader and writer of format version 2.
//
//	binlog-go read DIR [--after REF]
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

	"binlog.example/goimpl/binlog"
)

const (
	implName    = "binlog-go"
	implVersion = "0.1.0"
	specVersion = "2.0"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	usage := func() int {
		fmt.Fprintln(stderr, "usage: binlog-go read DIR [--after REF] | write DIR < SPEC.json | recover DIR | session")
		return exitUsage
	}
	if len(args) == 0 {
		return usage()
	}
	switch {
	case args[0] == "read" && (len(args) == 2 || len(args) == 4 && args[2] == "--after"):
		var after *string
		if len(args) == 4 {
			after = &args[3]
		}
		res, code := readLog(args[1], after)
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
	writeSpec
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
				Capabilities: []string{"legacy_v1", "refs", "recover", "write"},
				// Section 14: the end of a finished, unsealed segment is
				// computed by the tail walk of section 8.4.
				Choices: map[string]string{"finished_segment_end": "tail_walk"}}
		case "read":
			res, _ := readLog(req.Path, req.After)
			v = readReply{OK: true, readResult: res}
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
