package main

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"binlog.example/goimpl/binlog"
)

func runCLI(t *testing.T, stdin string, args ...string) (map[string]any, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(args, strings.NewReader(stdin), &out, &errOut)
	var v map[string]any
	if err := json.Unmarshal(out.Bytes(), &v); err != nil {
		t.Fatalf("%v: stdout is not one JSON object: %q (stderr %q)", args, out.String(), errOut.String())
	}
	return v, code
}

const fourRecords = `{"records": [{"payload": "68656c6c6f", "asqn": "-1"}, {"payload": "010203", "asqn": "7"},
	{"payload": "", "asqn": "-1"}, {"payload": "ff", "asqn": "9"}],
	"cutover_before": ["3", "5"], "options": {"durability": "sync"}}`

func TestWriteThenReadPrintsCanonicalRecords(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "log")
	if v, code := runCLI(t, fourRecords, "write", dir); code != 0 || v["ok"] != true {
		t.Fatalf("write: %v %d", v, code)
	}
	v, code := runCLI(t, "", "read", dir)
	if code != 0 || v["outcome"] != "accept" || v["torn"] != nil || v["error"] != nil {
		t.Fatalf("read: %v %d", v, code)
	}
	records := v["records"].([]any)
	if len(records) != 4 {
		t.Fatalf("%d records", len(records))
	}
	r := records[2].(map[string]any)
	want := map[string]any{"log": 2.0, "offset": "256", "index": "3", "asqn": "-1", "payload": "", "checked": true}
	for k, w := range want {
		if r[k] != w {
			t.Fatalf("record 3 field %s = %v, want %v", k, r[k], w)
		}
	}
	if _, ok := r["timestamp_us"].(string); !ok || len(r) != 7 {
		t.Fatalf("record 3: %v", r)
	}
	// cutover_before 5 after the last record leaves an empty segment 3.
	if _, err := os.Stat(filepath.Join(dir, "00000003.dat")); err != nil {
		t.Fatal(err)
	}
	v, code = runCLI(t, "", "read", dir, "--after", "2:256:3")
	if code != 0 || len(v["records"].([]any)) != 1 {
		t.Fatalf("read --after: %v %d", v, code)
	}
}

func TestReadOutcomesAndExitCodes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "log")
	runCLI(t, `{"records": [{"payload": "61", "asqn": "-1"}]}`, "write", dir)
	seg := filepath.Join(dir, "00000001.dat")
	f, err := os.OpenFile(seg, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte{0, 0, 0, 0x29, 1, 2})
	f.Close()
	v, code := runCLI(t, "", "read", dir)
	torn, _ := v["torn"].(map[string]any)
	if code != exitRecovered || v["outcome"] != "recovered" || torn["log"] != 1.0 || torn["offset"] != "297" {
		t.Fatalf("torn tail: %v %d", v, code)
	}
	if v, code := runCLI(t, "", "recover", dir); code != 0 || v["ok"] != true {
		t.Fatalf("recover: %v %d", v, code)
	}
	if v, code := runCLI(t, "", "read", dir); code != exitAccept || v["outcome"] != "accept" {
		t.Fatalf("after recover: %v %d", v, code)
	}
	v, code = runCLI(t, "", "read", dir, "--after", "1:256:2")
	e, _ := v["error"].(map[string]any)
	if code != exitReject || v["outcome"] != "reject" || e["class"] != "invalid_ref" || e["log"] != 1.0 || e["offset"] != "256" || e["index"] != "2" {
		t.Fatalf("bad ref: %v %d", v, code)
	}
	v, code = runCLI(t, "", "read", dir, "--after", "1:x:2")
	e, _ = v["error"].(map[string]any)
	if code != exitReject || e["class"] != "invalid_ref" || e["log"] != nil || e["offset"] != nil {
		t.Fatalf("malformed ref: %v %d", v, code)
	}
	v, code = runCLI(t, "", "read", filepath.Join(dir, "absent"))
	if e, _ := v["error"].(map[string]any); code != exitReject || e["class"] != "io_error" || len(v["records"].([]any)) != 0 {
		t.Fatalf("missing directory: %v %d", v, code)
	}
}

func TestWriteStopsAtARefusedAppend(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "log")
	spec := `{"records": [{"payload": "61", "asqn": "3"}, {"payload": "62", "asqn": "3"}, {"payload": "63", "asqn": "4"}]}`
	v, code := runCLI(t, spec, "write", dir)
	e, _ := v["error"].(map[string]any)
	if code != exitReject || v["ok"] != false || e["class"] != "asqn_not_increasing" || e["index"] != "2" {
		t.Fatalf("%v %d", v, code)
	}
	if v, _ := runCLI(t, "", "read", dir); len(v["records"].([]any)) != 1 {
		t.Fatalf("log after refusal: %v", v)
	}
	v, code = runCLI(t, `{"records": [], "options": {"preallocate": 4096}}`, "write", filepath.Join(dir, "other"))
	if e, _ := v["error"].(map[string]any); code != exitUnsupported || e["class"] != classUnsupportedOperation {
		t.Fatalf("unknown option: %v %d", v, code)
	}
}

func TestSessionServesRequestsLineByLine(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "log")
	reqs := []string{
		`{"op": "hello", "suite_version": "1.0.0"}`,
		`{"op": "write", "path": "` + dir + `", "records": [{"payload": "6869", "asqn": "1"}], "cutover_before": [], "options": {"durability": "strict"}}`,
		`{"op": "read", "path": "` + dir + `"}`,
		`{"op": "read", "path": "` + dir + `", "after": "1:256:1"}`,
		`{"op": "recover", "path": "` + dir + `"}`,
		`{"op": "follow", "path": "` + dir + `"}`,
		`not json`,
		`{"op": "bye"}`,
		`{"op": "hello"}`,
	}
	var out, errOut bytes.Buffer
	if code := run([]string{"session"}, strings.NewReader(strings.Join(reqs, "\n")+"\n"), &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	var replies []map[string]any
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		var v map[string]any
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			t.Fatalf("reply %q: %v", sc.Text(), err)
		}
		replies = append(replies, v)
	}
	if len(replies) != 8 {
		t.Fatalf("%d replies to 8 requests before bye: %v", len(replies), replies)
	}
	hello := replies[0]
	if hello["spec_version"] != "2.1" || len(hello["capabilities"].([]any)) != 6 ||
		hello["choices"].(map[string]any)["finished_segment_end"] != "tail_walk" {
		t.Fatalf("hello: %v", hello)
	}
	if replies[1]["ok"] != true || replies[2]["outcome"] != "accept" || len(replies[2]["records"].([]any)) != 1 ||
		len(replies[3]["records"].([]any)) != 0 || replies[4]["ok"] != true || replies[7]["ok"] != true {
		t.Fatalf("replies: %v", replies)
	}
	for _, i := range []int{5, 6} {
		if e, _ := replies[i]["error"].(map[string]any); replies[i]["ok"] != false || e["class"] != classUnsupportedOperation {
			t.Fatalf("reply %d: %v", i, replies[i])
		}
	}
}

func TestTolerantAndSplitReadsOnTheCommandLineAndInASession(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "log")
	runCLI(t, `{"records": [{"payload": "61", "asqn": "-1"}, {"payload": "6262", "asqn": "-1"}, {"payload": "63", "asqn": "-1"}]}`, "write", dir)
	seg := filepath.Join(dir, "00000001.dat")
	b, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	b[297+41] ^= 1 // record 2's payload
	if err := os.WriteFile(seg, b, 0o644); err != nil {
		t.Fatal(err)
	}
	v, code := runCLI(t, "", "read", dir, "--tolerant")
	damage, _ := v["damage"].([]any)
	if code != exitAccept || len(v["records"].([]any)) != 2 || len(damage) != 1 {
		t.Fatalf("tolerant: %v %d", v, code)
	}
	want := map[string]any{"class": "checksum_mismatch", "log": 1.0, "offset": "297", "index": "2", "bytes_skipped": "42", "resumed_index": "3"}
	if got := damage[0].(map[string]any); !reflect.DeepEqual(got, want) {
		t.Fatalf("damage %v, want %v", got, want)
	}
	if v, code := runCLI(t, "", "read", dir); code != exitReject || v["damage"] != nil {
		t.Fatalf("an ordinary read has no damage list: %v %d", v, code)
	}
	v, code = runCLI(t, "", "read", dir, "--split", "1:257:400")
	if records := v["records"].([]any); code != exitAccept || len(records) != 1 || records[0].(map[string]any)["offset"] != "339" {
		t.Fatalf("split: %v %d", v, code)
	}
	var stdout, stderr bytes.Buffer
	if code := run([]string{"read", dir, "--split", "1:257"}, strings.NewReader(""), &stdout, &stderr); code != exitUsage || stdout.Len() != 0 {
		t.Fatalf("a malformed split: exit %d, stdout %q", code, stdout.String())
	}
	reqs := `{"op": "read", "path": "` + dir + `", "tolerant": true}
{"op": "read", "path": "` + dir + `", "log": 1, "start": "256", "stop": "297"}
{"op": "read", "path": "` + dir + `", "tolerant": true, "after": "1:256:1"}
`
	var out, errOut bytes.Buffer
	if code := run([]string{"session"}, strings.NewReader(reqs), &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 || !strings.Contains(lines[0], `"bytes_skipped":"42"`) || !strings.Contains(lines[1], `"records":[{"log":1,"offset":"256"`) ||
		!strings.Contains(lines[2], classUnsupportedOperation) {
		t.Fatalf("session replies: %q", lines)
	}
}

// D3: a split whose stop boundary lies inside a record it walked over is a
// reject with ambiguous_split and the records returned before it.
func TestAmbiguousSplitIsARejectWithTheRecordsBeforeIt(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "log")
	inner := binlog.AppendRecord(nil, 3, binlog.NoAsqn, 0, []byte("inner")) // record 3's own index
	spec := `{"records": [{"payload": "61"}, {"payload": "6262"}, {"payload": "` +
		hex.EncodeToString(append([]byte("log of logs"), inner...)) + `"}, {"payload": "64"}]}`
	if v, code := runCLI(t, spec, "write", dir); code != 0 {
		t.Fatalf("write: %v %d", v, code)
	}
	v, code := runCLI(t, "", "read", dir, "--split", "1:256:340")
	want := map[string]any{"class": "ambiguous_split", "log": 1.0, "offset": "390", "index": "3"}
	if got, _ := v["error"].(map[string]any); code != exitReject || v["outcome"] != "reject" || !reflect.DeepEqual(got, want) {
		t.Fatalf("split: %v %d, want error %v", v, code, want)
	}
	var offsets []any
	for _, r := range v["records"].([]any) {
		offsets = append(offsets, r.(map[string]any)["offset"])
	}
	if !reflect.DeepEqual(offsets, []any{"256", "297", "339"}) {
		t.Fatalf("records before the error at %v", offsets)
	}
}
