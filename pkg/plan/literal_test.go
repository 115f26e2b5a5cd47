package plan_test

import (
	"testing"

	"github.com/steward-run/steward/pkg/plan"
)

func TestQuotesLiteral(t *testing.T) {
	for expr, want := range map[string]bool{
		"steps.a.result.token":        false,
		"item.password":               false,
		"steps.a.result['pass-word']": false,
		"steps.a.status == 'succeeded' ? steps.a.result.pw : null":                  false,
		"steps.a.result.pw.startsWith('x') ? steps.a.result.pw : steps.b.result.pw": false,
		"has(item.pw) && item.pw != '' ? item.pw : item.other":                      false,
		"'hunter2'":                               true,
		"steps.a.result.token + 'suffix'":         true,
		"{'user': 'bob', 'password': item.pw}":    true,
		"[item.pw, 1234]":                         true,
		"b'\\x00'":                                true,
		"item.ok ? 'fallback' : item.pw":          true,
		"steps.a.result.list.map(x, x + 'salt')":  true,
		"steps.a.result.list.exists(x, x == 'y')": false,
		"size(item.pw) > 0 ? item.pw : 7":         true,
	} {
		got, err := plan.QuotesLiteral(expr)
		if err != nil {
			t.Fatalf("%s: %v", expr, err)
		}
		if got != want {
			t.Errorf("QuotesLiteral(%s) = %v, want %v", expr, got, want)
		}
	}
}
