package control

import (
	"context"
	"strings"
	"testing"
	"time"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// widestComprehensions is the widest NestedComprehensions of depth that
// fits in MaxCriterionBytes and MaxCriterionNodes: as much work as an
// expression at the limits can ask for.
func widestComprehensions(depth int) string {
	expr := stewardtest.NestedComprehensions(depth, 1)
	for w := 2; ; w++ {
		next := stewardtest.NestedComprehensions(depth, w)
		if len(next) > MaxCriterionBytes {
			return expr
		}
		if _, err := compileCriterion(next); err != nil {
			return expr
		}
		expr = next
	}
}

// TestCriterionLimits: an expression past a limit is refused on creation,
// quickly; one at the limits compiles, and its evaluation stops at the
// cost limit instead of running width^depth steps.
func TestCriterionLimits(t *testing.T) {
	for _, tc := range []struct {
		name, expr, want string
	}{
		{"nesting past the limit", strings.Repeat("(", MaxCriterionNesting+1) + "true" + strings.Repeat(")", MaxCriterionNesting+1), "recursion"},
		{"comprehensions past the limit", stewardtest.NestedComprehensions(MaxCriterionComprehensions+1, 2), "exceeds nesting limit"},
		{"size past the limit", stewardtest.NestedComprehensions(MaxCriterionComprehensions, MaxCriterionBytes), "the limit is 1024"},
		{"nesting of lists past the limit", strings.Repeat("[", MaxCriterionNesting+1) + strings.Repeat("]", MaxCriterionNesting+1) + " == []", "recursion"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			err := checkCriteria([]*stewardv1.AcceptanceCriterion{{Id: "c", Expression: tc.expr}})
			if d := time.Since(start); d > 250*time.Millisecond {
				t.Errorf("took %s", d)
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one saying %q", err, tc.want)
			}
		})
	}
	t.Run("comprehensions at the limits", func(t *testing.T) {
		expr := widestComprehensions(MaxCriterionComprehensions)
		if err := checkCriteria([]*stewardv1.AcceptanceCriterion{{Id: "c", Expression: expr}}); err != nil {
			t.Fatal(err)
		}
		res, err := evaluateCriteria(context.Background(), []*stewardv1.AcceptanceCriterion{{Id: "c", Expression: expr}}, map[string]any{"artifacts": map[string]any{}, "actions": []any{}})
		if err != nil {
			t.Fatal(err)
		}
		// Under the race detector on a busy machine the deadline may come
		// first; either limit stops it.
		if res[0].Passed || !(strings.Contains(res[0].Detail, "cost limit") || strings.Contains(res[0].Detail, "took longer")) {
			t.Fatalf("result %v, want a failure at the cost limit", res[0])
		}
	})
}

// BenchmarkCriterionLimits measures compiling (uncached) and evaluating a
// criterion at the size limit with nested comprehensions, and refusing
// one past the comprehension limit. Run:
//
//	go test -run '^$' -bench CriterionLimits -benchmem ./services/control/
func BenchmarkCriterionLimits(b *testing.B) {
	at := widestComprehensions(MaxCriterionComprehensions)
	past := stewardtest.NestedComprehensions(MaxCriterionComprehensions+1, 2)
	vars := map[string]any{"artifacts": map[string]any{}, "actions": []any{}}
	b.Run("compile_at_limit", func(b *testing.B) {
		for b.Loop() {
			if _, err := compileCriterion(at); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("evaluate_at_limit", func(b *testing.B) {
		cs := []*stewardv1.AcceptanceCriterion{{Id: "c", Expression: at}}
		for b.Loop() {
			if _, err := evaluateCriteria(context.Background(), cs, vars); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("refuse_past_limit", func(b *testing.B) {
		for b.Loop() {
			if _, err := compileCriterion(past); err == nil {
				b.Fatal("compiled")
			}
		}
	})
}

// TestMatchesIsBounded: CEL's own matches ran to the end before its cost
// counted (16 s on one 512 KiB artifact); the criteria's matches measures
// first. Found by an independent review.
func TestMatchesIsBounded(t *testing.T) {
	vars := map[string]any{"artifacts": map[string]any{"r": map[string]any{"text": strings.Repeat("a", 512<<10)}, "s": map[string]any{"text": strings.Repeat("a", 10_000)}}, "actions": []any{}}
	for _, tc := range []struct {
		expr   string
		passed bool
		detail string
	}{
		{`artifacts.r.text.matches('^a+$')`, true, ""},
		{`matches(artifacts.r.text, 'b')`, false, ""},
		{`artifacts.r.text.matches('[a-z]{900}X')`, false, ""},
		{`artifacts.s.text.matches('[a-z]{900}X')`, false, ""},
		{`'abc'.matches('[a-z]{1000}[a-z]{1000}')`, false, "instructions"},
	} {
		start := time.Now()
		res, err := evaluateCriteria(context.Background(), []*stewardv1.AcceptanceCriterion{{Id: "c", Expression: tc.expr}}, vars)
		if err != nil {
			t.Fatalf("%s: %v", tc.expr, err)
		}
		if d := time.Since(start); d > time.Second {
			t.Errorf("%s took %s", tc.expr, d)
		}
		if res[0].Passed != tc.passed || !strings.Contains(res[0].Detail, tc.detail) {
			t.Errorf("%s: passed %v (%s), want %v saying %q", tc.expr, res[0].Passed, res[0].Detail, tc.passed, tc.detail)
		}
	}
}

// TestAScanIsBounded: in on a list is one step to CEL and a scan to the
// machine; its cost counts the list, and a deadline holds the rest. Found
// by an independent review (73 s before).
func TestAScanIsBounded(t *testing.T) {
	nums := make([]any, 100_000)
	for i := range nums {
		nums[i] = float64(i)
	}
	vars := map[string]any{"artifacts": map[string]any{"a": map[string]any{"json": nums}, "b": map[string]any{"json": nums}}, "actions": []any{}}
	start := time.Now()
	res, err := evaluateCriteria(context.Background(), []*stewardv1.AcceptanceCriterion{
		{Id: "c1", Expression: `artifacts.a.json.all(x, x >= 0.0 && !(-1.0 in artifacts.b.json))`},
		{Id: "c2", Expression: `artifacts.a.json.exists(x, x in artifacts.b.json && x < 0.0)`},
	}, vars)
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 2*MaxCriteriaTime {
		t.Errorf("took %s", d)
	}
	for _, r := range res {
		if r.Passed {
			t.Errorf("%s passed; want it stopped at a limit", r.CriterionId)
		}
	}
}
