package eventlog

import (
	"testing"

	"github.com/steward-run/steward/pkg/event"
)

// TestChainOfKeepsATaskOnOneLane checks that every subject of one chain —
// a task's types, several of which span tokens, a tool's, a service's —
// maps to the same lane key, under the default prefixes and under custom
// multi-token ones, and that different tasks get different keys.
func TestChainOfKeepsATaskOnOneLane(t *testing.T) {
	for _, cfg := range []Config{
		{},
		{SubjectPrefix: "acme.prod.tasks", ToolPrefix: "acme.prod.tools", ServicePrefix: "acme.svc"},
		{SubjectPrefix: "t", ToolPrefix: "tl", ServicePrefix: "s"},
	} {
		l := &Log{cfg: cfg.withDefaults()}
		types := []string{event.TypeTaskCreated, event.TypeActionPermitted, event.TypeApprovalReminded, event.TypeBudgetConsumed, event.TypeTaskStalled}
		for _, id := range []string{"t-1", "task_2", "a", "tool", "task"} {
			want := l.cfg.SubjectPrefix + "." + id
			for _, typ := range types {
				if got := l.chainOf(l.TaskSubject(id, typ)); got != want {
					t.Errorf("%+v: chainOf(%s) = %q, want %q", cfg, l.TaskSubject(id, typ), got, want)
				}
			}
		}
		if a, b := l.chainOf(l.TaskSubject("a", event.TypeTaskCreated)), l.chainOf(l.TaskSubject("b", event.TypeTaskCreated)); a == b {
			t.Errorf("%+v: tasks a and b share the chain %q", cfg, a)
		}
		if got, want := l.chainOf(l.cfg.ToolPrefix+".http_get."+event.TypeToolRegistered), l.cfg.ToolPrefix+".http_get"; got != want {
			t.Errorf("%+v: tool chain %q, want %q", cfg, got, want)
		}
		if got, want := l.chainOf(l.cfg.ServicePrefix+".payments."+event.TypeBreakerChanged), l.cfg.ServicePrefix+".payments"; got != want {
			t.Errorf("%+v: service chain %q, want %q", cfg, got, want)
		}
	}
}
