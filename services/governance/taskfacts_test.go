package governance

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"

	"google.golang.org/protobuf/proto"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// policyInput is actionInputs.policyInput, with inputs and a buffer of
// its own.
func policyInput(facts taskFacts, t *stewardv1.Task, tool toolFacts, a *stewardv1.Action, request []byte) (ast.Value, inputRecord, error) {
	var in actionInputs
	return in.policyInput(facts, t, tool, a, request, new(bytes.Buffer))
}

// inputOf is policyInput with the task's facts built afresh.
func inputOf(t *stewardv1.Task, tool toolFacts, a *stewardv1.Action, request []byte) (ast.Value, inputRecord, error) {
	facts, err := newTaskFacts(t)
	if err != nil {
		return nil, inputRecord{}, err
	}
	return policyInput(facts, t, tool, a, request)
}

// TestTaskFactsCacheIsTheTaskAsItIs: the cache hands out the facts built
// afresh of the task as it is now — a contract amended, a status changed
// is another entry — and the same facts for a copy of the task.
func TestTaskFactsCacheIsTheTaskAsItIs(t *testing.T) {
	tk, tool, a, request := benchAction(t)
	facts, err := newToolFacts("", tool)
	if err != nil {
		t.Fatal(err)
	}
	var cache taskFactsCache
	hashOf := func(tk *stewardv1.Task) string {
		t.Helper()
		cached, err := cache.of(tk)
		if err != nil {
			t.Fatal(err)
		}
		_, got, err := policyInput(cached, tk, facts, a, request)
		if err != nil {
			t.Fatal(err)
		}
		_, want, err := inputOf(tk, facts, a, request)
		if err != nil {
			t.Fatal(err)
		}
		if got.hash != want.hash || string(got.canonical) != string(want.canonical) {
			t.Fatalf("cached input %s\n%s\nbuilt afresh %s\n%s", got.hash, got.canonical, want.hash, want.canonical)
		}
		return got.hash
	}
	first := hashOf(tk)
	if again := hashOf(proto.CloneOf(tk)); again != first {
		t.Fatalf("a copy of the task hashes as %s, the task as %s", again, first)
	}
	amended := proto.CloneOf(tk)
	amended.Contract.Scopes = append(amended.Contract.Scopes, "mail.read")
	paused := proto.CloneOf(tk)
	paused.Status = stewardv1.TaskStatus_TASK_STATUS_PAUSED
	seen := map[string]string{first: "the task"}
	for name, changed := range map[string]*stewardv1.Task{"amended": amended, "paused": paused} {
		h := hashOf(changed)
		if seen[h] != "" {
			t.Errorf("%s hashes as %s does", name, seen[h])
		}
		seen[h] = name
	}
	if len(cache.byForm) != 3 {
		t.Errorf("%d entries, want 3", len(cache.byForm))
	}
}

// TestTaskFactsCacheIsBounded: past maxCachedTasks tasks, one entry goes
// for each new one.
func TestTaskFactsCacheIsBounded(t *testing.T) {
	tk, _, _, _ := benchAction(t)
	var cache taskFactsCache
	for i := range maxCachedTasks + 10 {
		c := proto.CloneOf(tk)
		c.Contract.TaskId = fmt.Sprint("t", i)
		if _, err := cache.of(c); err != nil {
			t.Fatal(err)
		}
	}
	if len(cache.byForm) != maxCachedTasks {
		t.Fatalf("%d entries, want %d", len(cache.byForm), maxCachedTasks)
	}
}
