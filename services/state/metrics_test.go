package state_test

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/services/state"
)

// proposalTime is when every action of the metrics tests is proposed.
var proposalTime = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// timedEvent is one event of a history, at a time (now when zero).
type timedEvent struct {
	at time.Time
	by string // the actor's principal, if any
	p  event.Payload
}

// metricsHistory builds one task's history for the metrics tests.
type metricsHistory struct{ events []timedEvent }

// then adds events stamped now.
func (h *metricsHistory) then(ps ...event.Payload) *metricsHistory {
	for _, p := range ps {
		h.events = append(h.events, timedEvent{p: p})
	}
	return h
}

// start creates and starts task i.
func (h *metricsHistory) start(i int) *metricsHistory {
	return h.then(&stewardv1.TaskCreated{Contract: contract(i)}, &stewardv1.TaskStarted{})
}

// propose proposes action id at proposalTime and records policy's decision.
func (h *metricsHistory) propose(id string, d stewardv1.PolicyDecision) *metricsHistory {
	h.events = append(h.events, timedEvent{at: proposalTime, p: &stewardv1.ActionProposed{Action: &stewardv1.Action{
		ActionId: id, Tool: "kv.append", ActionHash: "h-" + id, RequestHash: "r-" + id,
	}}})
	return h.then(&stewardv1.PolicyEvaluated{ActionId: id, Snapshot: &stewardv1.PolicySnapshot{SnapshotId: "s-" + id, Decision: d}})
}

// permit issues id's permit after (since proposalTime), then claims and
// dispatches it.
func (h *metricsHistory) permit(id string, after time.Duration) *metricsHistory {
	return h.then(
		&stewardv1.ActionPermitted{Permit: &stewardv1.ActionPermit{
			PermitId: "p-" + id, ActionId: id, ActionHash: "h-" + id, RequestHash: "r-" + id, IssuedAt: timestamppb.New(proposalTime.Add(after)),
		}},
		&stewardv1.ActionClaimed{ActionId: id, PermitId: "p-" + id, Worker: "w"},
		&stewardv1.ActionDispatched{ActionId: id, Attempt: 1, Worker: "w"},
	)
}

// outcome records how dispatched action id ended.
func (h *metricsHistory) outcome(id string, s stewardv1.ActionStatus, class stewardv1.FailureClass) *metricsHistory {
	return h.then(&stewardv1.ActionOutcomeRecorded{ActionId: id, Outcome: &stewardv1.Outcome{Status: s, FailureClass: class, Attempt: 1}})
}

// at adds an event by principal at a time.
func (h *metricsHistory) at(when time.Time, principal string, p event.Payload) *metricsHistory {
	h.events = append(h.events, timedEvent{at: when, by: principal, p: p})
	return h
}

// recorded returns the history as task taskID's events.
func (h *metricsHistory) recorded(tb testing.TB, taskID string) []*stewardv1.Event {
	tb.Helper()
	out := make([]*stewardv1.Event, len(h.events))
	for i, s := range h.events {
		ev := stewardtest.Event(tb, taskID, s.p)
		if s.by != "" {
			ev.Actor.Principal = s.by
		}
		if !s.at.IsZero() {
			ev.Time = timestamppb.New(s.at)
		}
		out[i] = ev
	}
	return out
}

// appendTo records the history in env as task taskID's.
func (h *metricsHistory) appendTo(t *testing.T, env *stewardtest.Env, taskID string) {
	t.Helper()
	env.AppendEvents(taskID, h.recorded(t, taskID)...)
}

// TestTaskCollector builds a projection over six task histories, one of
// them broken, and checks every metric the state plane reports.
func TestTaskCollector(t *testing.T) {
	const (
		allow    = stewardv1.PolicyDecision_POLICY_DECISION_ALLOW
		deny     = stewardv1.PolicyDecision_POLICY_DECISION_DENY
		approval = stewardv1.PolicyDecision_POLICY_DECISION_REQUIRE_APPROVAL
		success  = stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED
		failure  = stewardv1.ActionStatus_ACTION_STATUS_FAILED
		noClass  = stewardv1.FailureClass_FAILURE_CLASS_UNSPECIFIED
	)
	env := stewardtest.NewEnv(t)
	// Running: one action policy allowed, permitted in 1/64 s. (Latencies
	// are binary fractions of a second so that their sum is exact.)
	new(metricsHistory).start(1).propose("a1", allow).permit("a1", time.Second/64).outcome("a1", success, noClass).
		appendTo(t, env, "allowed")
	// Cancelled: one action policy denied.
	new(metricsHistory).start(2).propose("a2", deny).
		then(&stewardv1.ActionDenied{ActionId: "a2", SnapshotId: "s-a2"}, &stewardv1.TaskCancelled{}).
		appendTo(t, env, "denied")
	// Failed: a person approved an action, permitted two hours after it
	// was proposed; it failed.
	new(metricsHistory).start(3).propose("a3", approval).
		then(
			&stewardv1.ApprovalRequested{Approval: &stewardv1.Approval{ApprovalId: "ap3", TaskId: "approved", ActionId: "a3", ActionHash: "h-a3"}},
			&stewardv1.ApprovalDecided{ApprovalId: "ap3", ActionId: "a3", ActionHash: "h-a3", Decision: stewardv1.ApprovalDecision_APPROVAL_DECISION_APPROVE, DecidedBy: "user:bo"},
		).
		permit("a3", 2*time.Hour).outcome("a3", failure, stewardv1.FailureClass_FAILURE_CLASS_TRANSIENT).
		then(&stewardv1.TaskFailed{Reason: "gave up"}).
		appendTo(t, env, "approved")
	// Failed after compensating what it had done.
	new(metricsHistory).start(4).propose("a4", allow).permit("a4", time.Second/32).outcome("a4", success, noClass).
		then(
			&stewardv1.TaskCompensating{FinalStatus: stewardv1.TaskStatus_TASK_STATUS_FAILED, ActionIds: []string{"a4"}},
			&stewardv1.TaskFailed{Reason: "compensated"},
		).
		appendTo(t, env, "rolledback")
	// Running: an unknown outcome that a person settled.
	new(metricsHistory).start(5).propose("a5", allow).permit("a5", time.Second/256).
		outcome("a5", stewardv1.ActionStatus_ACTION_STATUS_UNKNOWN, stewardv1.FailureClass_FAILURE_CLASS_UNKNOWN).
		then(&stewardv1.ActionSettled{ActionId: "a5", State: stewardv1.SettleState_SETTLE_STATE_SUCCEEDED, SettledBy: "user:al"}).
		appendTo(t, env, "settled")
	// Accepted by its checks alone, 90 s after it was created, having
	// spent 3000 micro-euros and 100 tokens.
	euros := contract(7)
	euros.Budget = &stewardv1.Budget{Currency: "EUR"}
	euros.AcceptanceCriteria = []*stewardv1.AcceptanceCriterion{{Id: "c", Expression: "true"}}
	passed := []*stewardv1.CriterionResult{{CriterionId: "c", Passed: true}}
	new(metricsHistory).at(proposalTime, "agent", &stewardv1.TaskCreated{Contract: euros}).then(&stewardv1.TaskStarted{}).
		then(&stewardv1.BudgetConsumed{Tokens: 100, CostMicros: 3000}).
		at(proposalTime.Add(90*time.Second), "agent", &stewardv1.TaskProduced{Round: 1, Checks: passed}).
		appendTo(t, env, "accepted")
	// Returned once by its acceptance owner, then accepted two hours after
	// it was created, having spent 1000 micro-euros and 300 tokens.
	reviewed := contract(8)
	reviewed.Budget, reviewed.AcceptanceOwnerRef = &stewardv1.Budget{Currency: "EUR"}, "user:owner"
	reviewed.AcceptanceCriteria = euros.AcceptanceCriteria
	new(metricsHistory).at(proposalTime, "agent", &stewardv1.TaskCreated{Contract: reviewed}).then(&stewardv1.TaskStarted{}).
		then(&stewardv1.BudgetConsumed{Tokens: 300, CostMicros: 1000}).
		at(proposalTime.Add(time.Hour), "agent", &stewardv1.TaskProduced{Round: 1, Checks: passed, ReviewRequired: true}).
		at(proposalTime.Add(time.Hour), "user:owner", &stewardv1.TaskReturned{Round: 1, Reasons: []string{"more"}}).
		at(proposalTime.Add(time.Hour), "agent", &stewardv1.TaskProduced{Round: 2, Checks: passed, ReviewRequired: true}).
		at(proposalTime.Add(2*time.Hour), "user:owner", &stewardv1.TaskAccepted{Round: 2}).
		appendTo(t, env, "reviewed")
	// Running again: its checks failed.
	failing := contract(9)
	failing.AcceptanceCriteria = euros.AcceptanceCriteria
	new(metricsHistory).then(&stewardv1.TaskCreated{Contract: failing}, &stewardv1.TaskStarted{}).
		then(&stewardv1.TaskProduced{Round: 1, Checks: []*stewardv1.CriterionResult{{CriterionId: "c", Passed: false}}}).
		appendTo(t, env, "checksfailed")
	// Broken: a start after a cancel, which the fold refuses.
	appendUnchecked(t, env.Log, "broken", &stewardv1.TaskCreated{Contract: contract(6)}, &stewardv1.TaskCancelled{}, &stewardv1.TaskStarted{})

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	last, err := env.Log.LastTaskSequence(ctx)
	if err != nil {
		t.Fatal(err)
	}
	views := follow(t, env.Log)
	if err := views.WaitFor(ctx, last); err != nil {
		t.Fatal(err)
	}

	c := state.NewTaskCollector(views)
	want := `
# HELP steward_tasks Tasks with a current view, by status.
# TYPE steward_tasks gauge
steward_tasks{status="accepted"} 2
steward_tasks{status="cancelled"} 1
steward_tasks{status="compensating"} 0
steward_tasks{status="failed"} 2
steward_tasks{status="paused"} 0
steward_tasks{status="pending"} 0
steward_tasks{status="produced"} 0
steward_tasks{status="reconciling"} 0
steward_tasks{status="running"} 3
steward_tasks{status="suspended"} 0
steward_tasks{status="waiting_for_approval"} 0
steward_tasks{status="waiting_for_input"} 0
# HELP steward_tasks_broken Tasks whose history holds an event the fold refused: they have no current view.
# TYPE steward_tasks_broken gauge
steward_tasks_broken 1
# HELP steward_actions_failed Failed actions by failure class.
# TYPE steward_actions_failed gauge
steward_actions_failed{class="deterministic"} 0
steward_actions_failed{class="transient"} 1
steward_actions_failed{class="validation"} 0
# HELP steward_permit_latency_seconds Time from an action's proposal to its permit, for permitted actions; approval says whether a person had to approve it.
# TYPE steward_permit_latency_seconds histogram
steward_permit_latency_seconds_bucket{approval="none",le="0.005"} 1
steward_permit_latency_seconds_bucket{approval="none",le="0.01"} 1
steward_permit_latency_seconds_bucket{approval="none",le="0.025"} 2
steward_permit_latency_seconds_bucket{approval="none",le="0.05"} 3
steward_permit_latency_seconds_bucket{approval="none",le="0.1"} 3
steward_permit_latency_seconds_bucket{approval="none",le="0.25"} 3
steward_permit_latency_seconds_bucket{approval="none",le="0.5"} 3
steward_permit_latency_seconds_bucket{approval="none",le="1"} 3
steward_permit_latency_seconds_bucket{approval="none",le="2.5"} 3
steward_permit_latency_seconds_bucket{approval="none",le="5"} 3
steward_permit_latency_seconds_bucket{approval="none",le="10"} 3
steward_permit_latency_seconds_bucket{approval="none",le="30"} 3
steward_permit_latency_seconds_bucket{approval="none",le="60"} 3
steward_permit_latency_seconds_bucket{approval="none",le="300"} 3
steward_permit_latency_seconds_bucket{approval="none",le="900"} 3
steward_permit_latency_seconds_bucket{approval="none",le="3600"} 3
steward_permit_latency_seconds_bucket{approval="none",le="14400"} 3
steward_permit_latency_seconds_bucket{approval="none",le="86400"} 3
steward_permit_latency_seconds_bucket{approval="none",le="604800"} 3
steward_permit_latency_seconds_bucket{approval="none",le="+Inf"} 3
steward_permit_latency_seconds_sum{approval="none"} 0.05078125
steward_permit_latency_seconds_count{approval="none"} 3
steward_permit_latency_seconds_bucket{approval="required",le="0.005"} 0
steward_permit_latency_seconds_bucket{approval="required",le="0.01"} 0
steward_permit_latency_seconds_bucket{approval="required",le="0.025"} 0
steward_permit_latency_seconds_bucket{approval="required",le="0.05"} 0
steward_permit_latency_seconds_bucket{approval="required",le="0.1"} 0
steward_permit_latency_seconds_bucket{approval="required",le="0.25"} 0
steward_permit_latency_seconds_bucket{approval="required",le="0.5"} 0
steward_permit_latency_seconds_bucket{approval="required",le="1"} 0
steward_permit_latency_seconds_bucket{approval="required",le="2.5"} 0
steward_permit_latency_seconds_bucket{approval="required",le="5"} 0
steward_permit_latency_seconds_bucket{approval="required",le="10"} 0
steward_permit_latency_seconds_bucket{approval="required",le="30"} 0
steward_permit_latency_seconds_bucket{approval="required",le="60"} 0
steward_permit_latency_seconds_bucket{approval="required",le="300"} 0
steward_permit_latency_seconds_bucket{approval="required",le="900"} 0
steward_permit_latency_seconds_bucket{approval="required",le="3600"} 0
steward_permit_latency_seconds_bucket{approval="required",le="14400"} 1
steward_permit_latency_seconds_bucket{approval="required",le="86400"} 1
steward_permit_latency_seconds_bucket{approval="required",le="604800"} 1
steward_permit_latency_seconds_bucket{approval="required",le="+Inf"} 1
steward_permit_latency_seconds_sum{approval="required"} 7200
steward_permit_latency_seconds_count{approval="required"} 1
`
	want += `# HELP steward_time_to_accepted_seconds Time from a task's creation to the acceptance of its result, for accepted tasks.
# TYPE steward_time_to_accepted_seconds histogram
steward_time_to_accepted_seconds_bucket{le="1"} 0
steward_time_to_accepted_seconds_bucket{le="10"} 0
steward_time_to_accepted_seconds_bucket{le="60"} 0
steward_time_to_accepted_seconds_bucket{le="300"} 1
steward_time_to_accepted_seconds_bucket{le="900"} 1
steward_time_to_accepted_seconds_bucket{le="3600"} 1
steward_time_to_accepted_seconds_bucket{le="14400"} 2
steward_time_to_accepted_seconds_bucket{le="86400"} 2
steward_time_to_accepted_seconds_bucket{le="259200"} 2
steward_time_to_accepted_seconds_bucket{le="604800"} 2
steward_time_to_accepted_seconds_bucket{le="2.592e+06"} 2
steward_time_to_accepted_seconds_bucket{le="+Inf"} 2
steward_time_to_accepted_seconds_sum 7290
steward_time_to_accepted_seconds_count 2
# HELP steward_cost_per_accepted_task_micros Mean cost of an accepted task, in micro-units of the currency its contract names; tasks in other currencies are not mixed in.
# TYPE steward_cost_per_accepted_task_micros gauge
steward_cost_per_accepted_task_micros{currency="EUR"} 2000
`
	names := []string{"steward_tasks", "steward_tasks_broken", "steward_actions_failed", "steward_permit_latency_seconds",
		"steward_time_to_accepted_seconds", "steward_cost_per_accepted_task_micros"}
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), names...); err != nil {
		t.Error(err)
	}

	ratios := map[string]float64{
		// accepted and reviewed, of the five ended tasks.
		"steward_task_success_ratio": 0.4,
		// two rounds accepted, of four decided (one returned, one failed
		// its checks).
		"steward_accepted_output_ratio": 0.5,
		// (100 + 300) / 2
		"steward_tokens_per_accepted_task": 200,
		// approved (a decision) and settled (by a person), of eight.
		"steward_human_intervention_ratio": 0.25,
		// rolledback, of the five ended tasks.
		"steward_rollback_ratio": 0.2,
		// a2, of the five evaluated actions.
		"steward_policy_block_ratio": 0.2,
		// eight of nine histories fold.
		"steward_trace_completeness_ratio": 8.0 / 9,
	}
	for name, want := range ratios {
		if got := gatherMetric(t, c, name); len(got) != 1 || !nearlyEqual(got[""], want) {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	actions := gatherMetric(t, c, "steward_actions")
	for status, n := range map[string]float64{"succeeded": 3, "failed": 1, "denied": 1, "unknown": 0, "proposed": 0} {
		if actions[status] != n {
			t.Errorf("steward_actions{status=%q} = %v, want %v", status, actions[status], n)
		}
	}
	if len(actions) != 15 {
		t.Errorf("steward_actions has %d statuses, want all 15: %v", len(actions), actions)
	}
}

// TestTaskCollectorEmpty checks the values before any task exists: no
// division by zero, and a complete trace.
func TestTaskCollectorEmpty(t *testing.T) {
	c := state.NewTaskCollector(state.NewProjection(slog.New(slog.DiscardHandler)))
	for name, want := range map[string]float64{
		"steward_task_success_ratio":       0,
		"steward_human_intervention_ratio": 0,
		"steward_policy_block_ratio":       0,
		"steward_trace_completeness_ratio": 1,
		"steward_tasks_broken":             0,
	} {
		if got := gatherMetric(t, c, name); !nearlyEqual(got[""], want) {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	if n := testutil.CollectAndCount(c, "steward_permit_latency_seconds"); n != 2 {
		t.Errorf("permit latency has %d series, want 2 (with and without approval)", n)
	}
	if problems, err := testutil.CollectAndLint(c); err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %v", problems, err)
	}
}

// gatherMetric collects c through a pedantic registry (which also checks that
// Collect matches Describe) and returns metric name's values by their one
// label's value, "" for a metric without labels.
func gatherMetric(t *testing.T, c prometheus.Collector, name string) map[string]float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.Metric {
			label := ""
			if len(m.Label) > 0 {
				label = m.Label[0].GetValue()
			}
			out[label] = m.GetGauge().GetValue()
		}
	}
	return out
}

func nearlyEqual(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

// BenchmarkTaskCollector measures one scrape of the task metrics over
// 10,000 tasks with three actions each, folded in memory (unsealed events
// need no log). Run:
//
//	go test -run '^$' -bench TaskCollector ./services/state/
func BenchmarkTaskCollector(b *testing.B) {
	const tasks, actions = 10_000, 3
	views := state.NewProjection(slog.New(slog.DiscardHandler))
	var seq uint64
	for i := range tasks {
		h := new(metricsHistory).start(i)
		for j := range actions {
			id := fmt.Sprint("a", j)
			h.propose(id, stewardv1.PolicyDecision_POLICY_DECISION_ALLOW).permit(id, time.Second/64)
		}
		for _, ev := range h.recorded(b, fmt.Sprint("t", i)) {
			seq++
			if err := views.Apply(&stewardv1.EventRecord{Sequence: seq, Event: ev}); err != nil {
				b.Fatal(err)
			}
		}
	}
	if n := len(views.Snapshot()); n != tasks {
		b.Fatalf("%d views, want %d", n, tasks)
	}
	c := state.NewTaskCollector(views)
	ch := make(chan prometheus.Metric, 128)
	go func() {
		for range ch {
		}
	}()
	defer close(ch)
	for b.Loop() {
		c.Collect(ch)
	}
}
