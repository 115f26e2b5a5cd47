package e2e_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// AuditBundle's field numbers, as the file's bytes are walked.
const (
	fTasks, fRequests, fResults, fTools, fInputs, fPolicies, fKeys = 2, 3, 4, 5, 6, 7, 8
	fTaskID, fTaskEvents, fTaskReceipt                             = 1, 2, 3 // BundleTask
	fSequence, fData                                               = 1, 2    // BundleEvent, BundleBlob.data
	fHash                                                          = 1       // BundleBlob
	fRevision, fOPAVersion, fFiles                                 = 1, 2, 3 // PolicySources
	fPath, fContent                                                = 1, 2    // PolicyFile
	fKeyID, fPublicKey                                             = 1, 2    // BundleKey
	fIntent                                                        = 2       // Receipt
)

// wireSpan is where one field lies in a file: the whole field (tag and
// length included) and its content.
type wireSpan struct{ field, value [2]int }

// locate walks the protobuf wire format of data down path — pairs of a
// field number and which occurrence of it (from 0) — and returns where the
// last one lies: each section's bytes are found in the file itself.
func locate(t *testing.T, data []byte, path ...int) wireSpan {
	t.Helper()
	lo, hi := 0, len(data)
	var s wireSpan
	for i := 0; i+1 < len(path); i += 2 {
		num, want, found := protowire.Number(path[i]), path[i+1], false
		for off := lo; off < hi && !found; {
			n, typ, tl := protowire.ConsumeTag(data[off:hi])
			vl := protowire.ConsumeFieldValue(n, typ, data[off+max(tl, 0):hi])
			if tl < 0 || vl < 0 {
				t.Fatalf("the bundle's bytes at %d do not parse (path %v)", off, path[:i+2])
			}
			if n == num && want == 0 {
				s = wireSpan{field: [2]int{off, off + tl + vl}, value: [2]int{off + tl, off + tl + vl}}
				if typ == protowire.BytesType {
					_, ll := protowire.ConsumeVarint(data[off+tl:])
					s.value[0] += ll
				}
				found = true
			} else if n == num {
				want--
			}
			off += tl + vl
		}
		if !found {
			t.Fatalf("no field at path %v in the bundle", path[:i+2])
		}
		lo, hi = s.value[0], s.value[1]
	}
	return s
}

// fileCase is one change to a bundle's file and the failure verify must
// report: "FAIL section: item".
type fileCase struct {
	name, section, item string
	change              func(data []byte) []byte
	// waits names the branch whose fix it needs, when it fails until that
	// merges.
	waits string
}

// flipAt changes one byte at off of a copy of data.
func flipAt(off int) func([]byte) []byte {
	return func(data []byte) []byte {
		out := bytes.Clone(data)
		out[off] ^= 0x01
		return out
	}
}

// flipMiddle flips the middle byte of a wireSpan's content.
func flipMiddle(s wireSpan) func([]byte) []byte { return flipAt((s.value[0] + s.value[1]) / 2) }

// cut removes a wireSpan's whole field from a copy of data.
func cut(s wireSpan) func([]byte) []byte {
	return func(data []byte) []byte { return append(bytes.Clone(data[:s.field[0]]), data[s.field[1]:]...) }
}

// cutIn removes inner's whole field from inside outer, a bytes field
// number num of the file's top level, whose length it rewrites.
func cutIn(num protowire.Number, outer, inner wireSpan) func([]byte) []byte {
	return func(data []byte) []byte {
		content := append(bytes.Clone(data[outer.value[0]:inner.field[0]]), data[inner.field[1]:outer.value[1]]...)
		field := protowire.AppendBytes(protowire.AppendTag(nil, num, protowire.BytesType), content)
		return append(append(bytes.Clone(data[:outer.field[0]]), field...), data[outer.field[1]:]...)
	}
}

// flipped is s with its middle byte flipped, as flipMiddle changes it.
func flipped(s string) string {
	b := []byte(s)
	b[len(b)/2] ^= 0x01
	return string(b)
}

// flipEverySection flips one byte of the file inside each section's
// content in turn (and removes a task, an input, a policy revision and a
// tail), runs the real `steward audit verify --bundle FILE --trust-key
// KEY`, and checks that it exits 3 with a FAIL line naming the section
// and the event or item. An approval's vote is an event of the chain: a
// byte flipped in it is found there, under events (the approvals section
// judges who approved, which a forger cannot change without the key).
func flipEverySection(t *testing.T, file, taskID, childID, dir, keyFile string) {
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	b := readBundle(t, file)
	ti, ci := taskIndex(t, b, taskID), taskIndex(t, b, childID)
	root := b.Tasks[ti]
	eventOf := func(typ string) int {
		for i, e := range root.Events {
			if ev, err := event.Open(e.Data); err == nil && ev.Type == typ && i > 0 {
				return i
			}
		}
		t.Fatalf("task %s has no %s event", taskID, typ)
		return 0
	}
	ev := func(i int) string { return fmt.Sprintf("task %s event %d", taskID, i) }
	proposed, issued, voted := eventOf(event.TypeActionProposed), eventOf(event.TypeCredentialIssued), eventOf(event.TypeApprovalDecided)
	seqAt, seqItem := sequenceToClash(t, root)
	last := len(root.Events) - 1
	cases := []fileCase{
		{"an event", "events", ev(proposed), flipMiddle(locate(t, data, fTasks, ti, fTaskEvents, proposed, fData, 0)), ""},
		{"a sequence", "events", ev(seqItem), flipAt(locate(t, data, fTasks, ti, fTaskEvents, seqAt, fSequence, 0).value[0]), ""},
		{"a task id", "events", "task " + flipped(childID), flipMiddle(locate(t, data, fTasks, ci, fTaskID, 0)), ""},
		{"a credential", "credentials", ev(issued), flipMiddle(locate(t, data, fTasks, ti, fTaskEvents, issued, fData, 0)), ""},
		{"an approval's vote", "events", ev(voted), flipMiddle(locate(t, data, fTasks, ti, fTaskEvents, voted, fData, 0)), ""},
		{"a request", "requests", b.Requests[0].Hash, flipMiddle(locate(t, data, fRequests, 0, fData, 0)), ""},
		{"a request's hash", "requests", flipped(b.Requests[0].Hash), flipMiddle(locate(t, data, fRequests, 0, fHash, 0)), ""},
		{"a result", "results", b.Results[0].Hash, flipMiddle(locate(t, data, fResults, 0, fData, 0)), ""},
		{"a tool registration", "tools", "tool registration 0", flipMiddle(locate(t, data, fTools, 0)), ""},
		{"an input", "inputs", b.Inputs[0].Hash, flipMiddle(locate(t, data, fInputs, 0, fData, 0)), ""},
		{"an input's hash", "inputs", flipped(b.Inputs[0].Hash), flipMiddle(locate(t, data, fInputs, 0, fHash, 0)), ""},
		{"a policy file", "policies", "revision " + b.Policies[1].Revision, flipMiddle(locate(t, data, fPolicies, 1, fFiles, 0, fContent, 0)), ""},
		{"a policy file's path", "policies", "revision " + b.Policies[1].Revision, flipMiddle(locate(t, data, fPolicies, 1, fFiles, 0, fPath, 0)), ""},
		{"a revision", "policies", "revision " + flipped(b.Policies[0].Revision), flipMiddle(locate(t, data, fPolicies, 0, fRevision, 0)), ""},
		{"an OPA version", "policies", "revision " + b.Policies[0].Revision, flipMiddle(locate(t, data, fPolicies, 0, fOPAVersion, 0)), ""},
		{"a key", "keys", fmt.Sprintf("key 0 (%s)", b.Keys[0].KeyId), flipMiddle(locate(t, data, fKeys, 0, fPublicKey, 0)), ""},
		{"a key id", "keys", fmt.Sprintf("key 0 (%s)", flipped(b.Keys[0].KeyId)), flipMiddle(locate(t, data, fKeys, 0, fKeyID, 0)), ""},
		{"a receipt", "receipt", "task " + taskID, flipMiddle(locate(t, data, fTasks, ti, fTaskReceipt, 0, fIntent, 0)), ""},
		{"the sub-task removed", "events", "task " + childID, cut(locate(t, data, fTasks, ci)), ""},
		{"the last event removed", "receipt", "task " + taskID, cutIn(fTasks, locate(t, data, fTasks, ti), locate(t, data, fTasks, ti, fTaskEvents, last)), ""},
		{"an input removed", "inputs", "", cut(locate(t, data, fInputs, 0)), ""},
		{"a policy revision removed", "policies", "", cut(locate(t, data, fPolicies, 0)), ""},
	}
	for _, tc := range cases {
		t.Run(strings.ReplaceAll(tc.name, " ", "_"), func(t *testing.T) {
			bad := filepath.Join(dir, "changed.bundle")
			if err := os.WriteFile(bad, tc.change(data), 0o600); err != nil {
				t.Fatal(err)
			}
			code, out := runCode(t, "audit", "verify", "--bundle", bad, "--trust-key", keyFile)
			if code != 3 || !failLine(out, tc.section, tc.item) {
				t.Errorf("%s: exit %d, want 3 and a line %q (waits for: %s):\n%s", tc.name, code, "FAIL "+tc.section+": "+tc.item, orNothing(tc.waits), out)
			}
		})
	}
}

// failLine reports whether out has a line "FAIL section: item" followed
// by ":" or " ", item whole ("" for any).
func failLine(out, section, item string) bool {
	for _, line := range strings.Split(out, "\n") {
		rest, ok := strings.CutPrefix(line, "FAIL "+section+": "+item)
		if ok && (item == "" || strings.HasPrefix(rest, ":") || strings.HasPrefix(rest, " ")) {
			return true
		}
	}
	return false
}

func orNothing(s string) string {
	if s == "" {
		return "nothing"
	}
	return s
}

// sequenceToClash finds an event whose sequence, its lowest bit flipped,
// no longer strictly increases: it returns the event flipped and the one
// verify names.
func sequenceToClash(t *testing.T, bt *stewardv1.BundleTask) (at, named int) {
	ev := bt.Events
	for j := 1; j+1 < len(ev); j++ {
		switch s := ev[j].Sequence; {
		case s%2 == 1 && ev[j-1].Sequence == s-1:
			return j, j
		case s%2 == 0 && ev[j+1].Sequence == s+1:
			return j, j + 1
		}
	}
	t.Fatalf("task %s has no two events in a row in the stream", bt.TaskId)
	return 0, 0
}

func taskIndex(t *testing.T, b *stewardv1.AuditBundle, taskID string) int {
	for i, bt := range b.Tasks {
		if bt.TaskId == taskID {
			return i
		}
	}
	t.Fatalf("the bundle does not hold task %s", taskID)
	return 0
}

// runCode runs the binary and returns its exit code and output.
func runCode(t *testing.T, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	return exitCode(t, cmd), out.String()
}
