package e2e_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/gen/steward/v1/stewardv1connect"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// TestTraceOfGovernedAction follows one governed action through the real
// binary with tracing on: the spans an in-process OTLP receiver gets from
// the RPC that proposed it (control), the policy decision (governance),
// the dispatch and tool call (execution) and the view that took the
// outcome in (state) share one trace id, which is the one the HTTP tool
// saw in its traceparent header, whose parent is the tool-call span.
func TestTraceOfGovernedAction(t *testing.T) {
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "50") // export within the test's patience, not the SDK's 5 s
	collector := stewardtest.StartCollector(t)
	tool := stewardtest.StartTool(t)
	h := startSteward(t, setup{tools: governedTools(tool), flags: []string{"--trace-endpoint", collector.URL}})
	taskID := governedTask(t, h.agent, "req-trace")
	a := propose(t, h.agent, taskID, "p-trace", "search", map[string]any{"q": "traces"})
	waitAction(t, h.agent.clients, taskID, a.ActionId, stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED)

	var parent string
	for _, r := range tool.Requests() {
		if r.Path == "/search" {
			parent = r.Header.Get("Traceparent")
		}
	}
	fields := strings.Split(parent, "-")
	if len(fields) != 4 || len(fields[1]) != 32 {
		t.Fatalf("the tool got traceparent %q; want a W3C traceparent", parent)
	}
	traceID, callSpan := fields[1], fields[2]

	// Every step of the action, by plane: the span that says it.
	want := map[string]func(stewardtest.Span) bool{
		"control: the ProposeAction call": func(s stewardtest.Span) bool {
			return s.Name == stewardv1connect.TaskServiceProposeActionProcedure && s.Attrs["steward.action_id"] == a.ActionId
		},
		"governance: its reaction to the proposal": func(s stewardtest.Span) bool { return s.Name == "governance action.proposed" },
		"governance: the policy decision": func(s stewardtest.Span) bool {
			return s.Name == "governance policy decision" && s.Attrs["steward.decision"] == "POLICY_DECISION_ALLOW" && s.Attrs["steward.action_id"] == a.ActionId
		},
		"execution: its reaction to the permit": func(s stewardtest.Span) bool { return s.Name == "execution action.permitted" },
		"execution: the tool call the tool saw": func(s stewardtest.Span) bool {
			return s.Name == "execution tool call" && s.SpanID == callSpan && s.Attrs["steward.tool"] == "search" && s.Attrs["steward.outcome"] == "ACTION_STATUS_SUCCEEDED"
		},
		"state: the view taking in the outcome": func(s stewardtest.Span) bool { return s.Name == "state action.outcome" },
	}
	missing := func() []string {
		var out []string
		for step, found := range want {
			ok := false
			for _, s := range collector.Trace(traceID) {
				ok = ok || (found(s) && s.Attrs["steward.task_id"] == taskID)
			}
			if !ok {
				out = append(out, step)
			}
		}
		return out
	}
	stewardtest.Eventually(t, 15*time.Second, func() (bool, string) {
		var names []string
		for _, s := range collector.Trace(traceID) {
			names = append(names, s.Name)
		}
		m := missing()
		return len(m) == 0, fmt.Sprintf("trace %s lacks %v; it has %v", traceID, m, names)
	})
	for _, s := range collector.Trace(traceID) {
		if s.Service != "steward" {
			t.Errorf("span %s came from service %q; want steward", s.Name, s.Service)
		}
	}
}
