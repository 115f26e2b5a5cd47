package auditbundle

import (
	"strings"
	"testing"

	"github.com/steward-run/steward/pkg/action"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// TestInputIsAboutWhatItDecided: a snapshot's recorded input must name
// the task, and the action's id, tool, version and target, with
// parameters that re-make the action's request; an input about anything
// else fails, naming what differs.
func TestInputIsAboutWhatItDecided(t *testing.T) {
	request, err := action.Canonical(action.Request{TaskID: "t1", Tool: "search", ToolVersion: "1.0.0", Target: "acct:42", Params: []byte(`{"q":"incident","n":1.5}`)})
	if err != nil {
		t.Fatal(err)
	}
	a := &stewardv1.Action{ActionId: "a1", Tool: "search", ToolVersion: "1.0.0", Target: "acct:42", RequestHash: action.RequestHash(request)}
	bt := &bundleTask{id: "t1", task: &stewardv1.Task{Actions: []*stewardv1.Action{a}}}
	s := snapshotAt{item: "task t1 event 3", snap: &stewardv1.PolicySnapshot{SnapshotId: "s1"}, actionID: "a1"}
	input := func(edit func(task, act map[string]any)) []byte {
		task := map[string]any{"task_id": "t1"}
		act := map[string]any{"action_id": "a1", "tool": "search", "tool_version": "1.0.0", "target": "acct:42", "params": map[string]any{"q": "incident", "n": 1.5}}
		edit(task, act)
		data, err := action.CanonicalJSON(map[string]any{"task": task, "action": act})
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	if why := inputFault(bt, s, input(func(_, _ map[string]any) {})); why != "" {
		t.Fatalf("the action's own input: %s", why)
	}
	for _, tc := range []struct {
		name string
		edit func(task, act map[string]any)
		want string
	}{
		{"another task", func(task, _ map[string]any) { task["task_id"] = "t2" }, `about task "t2"`},
		{"another action", func(_, act map[string]any) { act["action_id"] = "a2" }, `about action "a2"`},
		{"another tool", func(_, act map[string]any) { act["tool"] = "wire" }, "search@1.0.0"},
		{"another version", func(_, act map[string]any) { act["tool_version"] = "2.0.0" }, "search@2.0.0"},
		{"another target", func(_, act map[string]any) { act["target"] = "acct:43" }, `"acct:43"`},
		{"other parameters", func(_, act map[string]any) { act["params"] = map[string]any{"q": "FORGED"} }, "parameters make a request hashing to"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if why := inputFault(bt, s, input(tc.edit)); !strings.Contains(why, tc.want) {
				t.Errorf("inputFault: %q, want %q", why, tc.want)
			}
		})
	}
}
