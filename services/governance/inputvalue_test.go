package governance

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
	"google.golang.org/protobuf/proto"

	"github.com/steward-run/steward/services/governance/policy"
)

// TestSharedMembersUnderWith: the members every input of a task shares
// (the task's and the tool's parts, and the empty rationale one
// actionInputs makes once), fresh, are seen whole by evaluations running
// at once whose rules override them (`with`, which copies the input),
// and are left as they were: a part whose keys were left to be sorted on
// first use is copied half sorted (a race under -race).
func TestSharedMembersUnderWith(t *testing.T) {
	dir := t.TempDir()
	const rules = `package steward.policy
import rego.v1
decision := {"decision": "allow", "reasons": [sprintf("%d %d %d", [n, m, o])]} if {
	n := count({k | some k, _ in input.action.rationale}) with input.action.rationale.expected_impact as "x"
	m := count({k | some k, _ in input.task}) with input.action.params as {}
	o := count({k | some k, _ in input.task})
}
`
	if err := os.WriteFile(filepath.Join(dir, "with.rego"), []byte(rules), 0o600); err != nil {
		t.Fatal(err)
	}
	engine, err := policy.Load(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	tk, tool, a, request := benchAction(t)
	facts, err := newToolFacts("", tool)
	if err != nil {
		t.Fatal(err)
	}
	for round := range 50 {
		tk := proto.CloneOf(tk)
		tk.Contract.TaskId = fmt.Sprint("t", round)
		task, err := newTaskFacts(tk)
		if err != nil {
			t.Fatal(err)
		}
		keys := task.value.Term().Value.(ast.Object).Len()
		want := fmt.Sprintf("4 %d %d", keys, keys)
		var inputs actionInputs
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				buf := inputs.buffer()
				defer inputs.release(buf)
				input, _, err := inputs.policyInput(task, tk, facts, a, request, buf)
				if err != nil {
					t.Error(err)
					return
				}
				res, err := engine.EvaluateValue(context.Background(), input)
				if err != nil || len(res.Reasons) != 1 || res.Reasons[0] != want {
					t.Errorf("round %d: policy saw %v (%v), want %q", round, res.Reasons, err, want)
				}
			})
		}
		wg.Wait()
		if t.Failed() {
			return
		}
		again, err := newTaskFacts(tk)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(again.canonical, task.canonical) {
			t.Fatalf("the task's facts changed:\n %s\n %s", task.canonical, again.canonical)
		}
	}
}
