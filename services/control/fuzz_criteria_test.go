package control

import (
	"context"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"google.golang.org/protobuf/proto"

	"github.com/steward-run/steward/pkg/celvalue"
	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// FuzzCriterion compiles an acceptance criterion as a contract states it
// and evaluates it over a result whose content the fuzzer writes: an
// artifact read as JSON, another read as text, and an action's result. A
// contract accepts exactly the expressions that compile. An accepted one
// evaluates to the same answer twice (criteria promise to), with a detail
// that is short, valid UTF-8, and recorded in a TaskProduced that seals
// and opens.
func FuzzCriterion(f *testing.F) {
	for _, s := range []struct{ expr, content string }{
		{`artifacts.report.size > 0`, `{}`},
		{`artifacts.data.json.count == 3 && artifacts.notes.text.contains("ok")`, `{"count": 3}`},
		{`actions.all(a, a.status == "succeeded") && actions[0].result.items.exists(i, i > 2)`, `{"items": [1, 2, 3]}`},
		{`artifacts.notes.text.matches("^(a+)+$")`, strings.Repeat("a", 64) + "!"},
		{`artifacts.data.json.map(k, artifacts.data.json[k]).size() == 2`, `{"a": 1, "b": [null]}`},
		{`artifacts.data.json.x`, `not json`},
		{`artifacts[artifacts.notes.text] == 1`, "\xff\xfe key"},
		{`[1, 2, 3].filter(x, x > 1).map(y, [y, y].all(z, z == y)) == [true, true]`, `[]`},
		{`size(artifacts.notes.text) * 2`, ``},
		{`"a" + 1`, ``},
	} {
		f.Add(s.expr, []byte(s.content))
	}
	f.Fuzz(func(t *testing.T, expr string, content []byte) {
		cs := []*stewardv1.AcceptanceCriterion{{Id: "c", Expression: expr}}
		checkErr := checkCriteria(cs)
		if expr != "" && utf8.ValidString(expr) && len(expr) <= MaxCriterionBytes {
			if _, err := compileCriterion(expr); (err == nil) != (checkErr == nil) {
				t.Fatalf("%q: a contract says %v, compiling says %v", expr, checkErr, err)
			}
		}
		if checkErr != nil {
			return
		}
		vars := resultOf(content)
		first := evaluate(t, cs, vars)
		second := evaluate(t, cs, vars)
		if !proto.Equal(first, second) && !timedOut(first) && !timedOut(second) {
			t.Fatalf("%q over %q: evaluated to %v, then to %v", expr, content, first, second)
		}
	})
}

// resultOf is a task's result as criteria see it, with content as the
// JSON artifact "data", the text artifact "notes", and the result of a
// succeeded action.
func resultOf(content []byte) map[string]any {
	data := &stewardv1.Artifact{Name: "data", MediaType: "application/json", SizeBytes: int64(len(content)), Version: 1}
	notes := &stewardv1.Artifact{Name: "notes", MediaType: "text/plain", SizeBytes: int64(len(content)), Version: 2}
	report := &stewardv1.Artifact{Name: "report", MediaType: "application/pdf", SizeBytes: 1, Version: 1}
	a := &stewardv1.Action{ActionId: "act-1", Tool: "w", Target: "x", Status: stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED}
	return map[string]any{
		"artifacts": celvalue.Object(map[string]ref.Val{
			"data":   artifactValue(data, parseJSON(content, "artifact data"), nil),
			"notes":  artifactValue(notes, nil, types.String(strings.ToValidUTF8(string(content), "\uFFFD"))),
			"report": artifactValue(report, nil, nil),
		}),
		"actions": types.NewRefValList(types.DefaultTypeAdapter, []ref.Val{actionValue(a, parseJSON(content, "the result of action act-1"))}),
	}
}

// evaluate evaluates cs over vars, checks the result is fit to record,
// and returns it as the TaskProduced that records it.
func evaluate(t *testing.T, cs []*stewardv1.AcceptanceCriterion, vars map[string]any) *stewardv1.TaskProduced {
	t.Helper()
	checks, err := evaluateCriteria(context.Background(), cs, vars)
	if err != nil || len(checks) != len(cs) {
		t.Fatalf("%d checks of %d criteria (%v)", len(checks), len(cs), err)
	}
	for _, c := range checks {
		if !utf8.ValidString(c.Detail) || len(c.Detail) > MaxReasonLen+len("…") {
			t.Fatalf("a detail of %d bytes, valid UTF-8 %t: %q", len(c.Detail), utf8.ValidString(c.Detail), c.Detail)
		}
	}
	produced := &stewardv1.TaskProduced{Round: 1, Checks: checks}
	ev, err := event.New(event.Meta{TaskID: "t1", Time: time.Unix(1, 0)}, produced)
	if err != nil {
		t.Fatal(err)
	}
	data, err := event.Seal(ev, nil)
	if err != nil {
		t.Fatalf("the checks do not seal: %v", err)
	}
	if _, err := event.Open(data); err != nil {
		t.Fatalf("the checks do not open: %v", err)
	}
	return produced
}

// timedOut reports whether a check stopped on the clock rather than on
// its cost: the one answer that may differ between two evaluations.
func timedOut(p *stewardv1.TaskProduced) bool {
	for _, c := range p.Checks {
		if strings.Contains(c.Detail, "took longer than") || strings.HasPrefix(c.Detail, "not evaluated:") {
			return true
		}
	}
	return false
}
