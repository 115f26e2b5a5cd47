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
	dto "github.com/prometheus/client_model/go"
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
		ActionId: id, Tool: "kv.append", ActionHash: "h-" + id, RequestHash: "r-" + id, EffectClass: stewardv1.EffectClass_EFFECT_CLASS_IDEMPOTENT_WRITE,
	}}})
	return h.then(&stewardv1.PolicyEvaluated{ActionId: id, Snapshot: &stewardv1.PolicySnapshot{SnapshotId: "s-" + id, Decision: d}})
}

// permit issues id's permit after (since proposalTime), then claims and
// dispatches it.
func (h *metricsHistory) permit(id string, after time.Duration) *metricsHistory {
	return h.then(
		&stewardv1.ActionPermitted{Permit: &stewardv1.ActionPermit{
			PermitId: "p-" + id, ActionId: id, ActionHash: "h-" + id, RequestHash: "r-" + id, IssuedAt: timestamppb.New(proposalTime.Add(after)), CredentialRef: "cred-1",
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

// TestTaskCollector builds a projection over nine task histories, one of
// them broken, and checks every metric the state plane reports against its
// definition in docs/metrics.md.
// writeMetricsHistories writes nine task histories, one of them broken,
// between them in every state the metrics count: TestTaskCollector's,
// and the varied history a snapshot must carry (viewsnap_test.go).
func writeMetricsHistories(t *testing.T, env *stewardtest.Env) {
	t.Helper()
	const (
		allow    = stewardv1.PolicyDecision_POLICY_DECISION_ALLOW
		deny     = stewardv1.PolicyDecision_POLICY_DECISION_DENY
		approval = stewardv1.PolicyDecision_POLICY_DECISION_REQUIRE_APPROVAL
		success  = stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED
		failure  = stewardv1.ActionStatus_ACTION_STATUS_FAILED
		noClass  = stewardv1.FailureClass_FAILURE_CLASS_UNSPECIFIED
	)
	violation := func(actionID string) *stewardv1.FindingRecorded {
		return &stewardv1.FindingRecorded{Finding: &stewardv1.Finding{
			FindingId: "f-" + actionID, Kind: stewardv1.FindingKind_FINDING_KIND_POLICY_VIOLATION, ActionId: actionID, Description: "against policy",
		}}
	}
	// Running: one action policy allowed, permitted in 1/64 s. (Latencies
	// are binary fractions of a second so that their sum is exact.) Then
	// it stalled for two minutes, until a person paused it; an auditor's
	// finding meanwhile did not end the stall.
	new(metricsHistory).start(1).propose("a1", allow).permit("a1", time.Second/64).outcome("a1", success, noClass).
		at(proposalTime.Add(10*time.Minute), "", &stewardv1.TaskStalled{Reason: "quiet"}).
		at(proposalTime.Add(11*time.Minute), "user:audrey", violation("a1")). // a note, not progress
		at(proposalTime.Add(12*time.Minute), "user:al", &stewardv1.TaskPaused{}).
		then(&stewardv1.TaskResumed{}).
		appendTo(t, env, "allowed")
	// Cancelled, having spent 2000 micro-euros and 200 tokens: one action
	// policy denied. An auditor found a violation after it ended.
	cancelled := contract(2)
	cancelled.Budget = &stewardv1.Budget{Currency: "EUR"}
	new(metricsHistory).then(&stewardv1.TaskCreated{Contract: cancelled}, &stewardv1.TaskStarted{}).propose("a2", deny).
		then(&stewardv1.ActionDenied{ActionId: "a2", SnapshotId: "s-a2"}, &stewardv1.BudgetConsumed{Tokens: 200, CostMicros: 2000}, &stewardv1.TaskCancelled{}).
		then(violation("")).
		appendTo(t, env, "denied")
	// Failed: a person approved an action, permitted two hours after it
	// was proposed; it failed.
	new(metricsHistory).start(3).propose("a3", approval).
		then(
			&stewardv1.ApprovalRequested{Approval: &stewardv1.Approval{ApprovalId: "ap3", TaskId: "approved", ActionId: "a3", ActionHash: "h-a3"}},
			&stewardv1.ApprovalDecided{ApprovalId: "ap3", ActionId: "a3", ActionHash: "h-a3", Decision: stewardv1.ApprovalDecision_APPROVAL_DECISION_APPROVE, DecidedBy: "user:bo"},
		).
		permit("a3", 2*time.Hour).outcome("a3", failure, stewardv1.FailureClass_FAILURE_CLASS_TRANSIENT).
		then(&stewardv1.TaskFailed{Reason: "gave up"}, violation("a3")).
		appendTo(t, env, "approved")
	// Failed after compensating what it had done.
	new(metricsHistory).start(4).propose("a4", allow).permit("a4", time.Second/32).outcome("a4", success, noClass).
		then(
			&stewardv1.TaskCompensating{FinalStatus: stewardv1.TaskStatus_TASK_STATUS_FAILED, ActionIds: []string{"a4"}},
			&stewardv1.TaskFailed{Reason: "compensated"},
		).
		appendTo(t, env, "rolledback")
	// Reconciling: an unknown outcome that a person settled half an hour
	// later, and another not settled yet.
	new(metricsHistory).start(5).propose("a5", allow).permit("a5", time.Second/256).
		at(proposalTime.Add(time.Second), "", &stewardv1.ActionOutcomeRecorded{ActionId: "a5", Outcome: &stewardv1.Outcome{
			Status: stewardv1.ActionStatus_ACTION_STATUS_UNKNOWN, FailureClass: stewardv1.FailureClass_FAILURE_CLASS_UNKNOWN, Attempt: 1,
		}}).
		at(proposalTime.Add(time.Second+30*time.Minute), "", &stewardv1.ActionSettled{ActionId: "a5", State: stewardv1.SettleState_SETTLE_STATE_SUCCEEDED, SettledBy: "user:al"}).
		propose("a6", allow).permit("a6", time.Second/64).
		outcome("a6", stewardv1.ActionStatus_ACTION_STATUS_UNKNOWN, stewardv1.FailureClass_FAILURE_CLASS_UNKNOWN).
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
	// Broken: a start after a cancel, which the fold refuses, after a
	// write that succeeded.
	broken := []event.Payload{&stewardv1.TaskCreated{Contract: contract(6)}, &stewardv1.TaskStarted{}}
	for _, e := range new(metricsHistory).propose("a7", allow).permit("a7", time.Second).outcome("a7", success, noClass).events {
		broken = append(broken, e.p)
	}
	appendUnchecked(t, env.Log, "broken", append(broken, &stewardv1.TaskCancelled{}, &stewardv1.TaskStarted{})...)
}

func TestTaskCollector(t *testing.T) {
	env := stewardtest.NewEnv(t)
	writeMetricsHistories(t, env)

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
steward_tasks{status="reconciling"} 1
steward_tasks{status="running"} 2
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
steward_permit_latency_seconds_bucket{approval="none",le="0.025"} 3
steward_permit_latency_seconds_bucket{approval="none",le="0.05"} 4
steward_permit_latency_seconds_bucket{approval="none",le="0.1"} 4
steward_permit_latency_seconds_bucket{approval="none",le="0.25"} 4
steward_permit_latency_seconds_bucket{approval="none",le="0.5"} 4
steward_permit_latency_seconds_bucket{approval="none",le="1"} 4
steward_permit_latency_seconds_bucket{approval="none",le="2.5"} 4
steward_permit_latency_seconds_bucket{approval="none",le="5"} 4
steward_permit_latency_seconds_bucket{approval="none",le="10"} 4
steward_permit_latency_seconds_bucket{approval="none",le="30"} 4
steward_permit_latency_seconds_bucket{approval="none",le="60"} 4
steward_permit_latency_seconds_bucket{approval="none",le="300"} 4
steward_permit_latency_seconds_bucket{approval="none",le="900"} 4
steward_permit_latency_seconds_bucket{approval="none",le="3600"} 4
steward_permit_latency_seconds_bucket{approval="none",le="14400"} 4
steward_permit_latency_seconds_bucket{approval="none",le="86400"} 4
steward_permit_latency_seconds_bucket{approval="none",le="604800"} 4
steward_permit_latency_seconds_bucket{approval="none",le="+Inf"} 4
steward_permit_latency_seconds_sum{approval="none"} 0.06640625
steward_permit_latency_seconds_count{approval="none"} 4
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
# HELP steward_cost_per_accepted_task_micros Everything tasks in a currency spent, failed and cancelled work included, over the accepted tasks in that currency, in micro-units; currencies are not mixed.
# TYPE steward_cost_per_accepted_task_micros gauge
steward_cost_per_accepted_task_micros{currency="EUR"} 3000
# HELP steward_confirmed_policy_violations Policy violations auditors confirmed with RecordFinding.
# TYPE steward_confirmed_policy_violations gauge
steward_confirmed_policy_violations 3
# HELP steward_recovery_seconds Time from an unknown outcome to its settlement, or from a stall mark to the task's next event.
# TYPE steward_recovery_seconds histogram
steward_recovery_seconds_bucket{from="stall",le="1"} 0
steward_recovery_seconds_bucket{from="stall",le="10"} 0
steward_recovery_seconds_bucket{from="stall",le="60"} 0
steward_recovery_seconds_bucket{from="stall",le="300"} 1
steward_recovery_seconds_bucket{from="stall",le="900"} 1
steward_recovery_seconds_bucket{from="stall",le="3600"} 1
steward_recovery_seconds_bucket{from="stall",le="14400"} 1
steward_recovery_seconds_bucket{from="stall",le="86400"} 1
steward_recovery_seconds_bucket{from="stall",le="259200"} 1
steward_recovery_seconds_bucket{from="stall",le="604800"} 1
steward_recovery_seconds_bucket{from="stall",le="+Inf"} 1
steward_recovery_seconds_sum{from="stall"} 120
steward_recovery_seconds_count{from="stall"} 1
steward_recovery_seconds_bucket{from="unknown_outcome",le="1"} 0
steward_recovery_seconds_bucket{from="unknown_outcome",le="10"} 0
steward_recovery_seconds_bucket{from="unknown_outcome",le="60"} 0
steward_recovery_seconds_bucket{from="unknown_outcome",le="300"} 0
steward_recovery_seconds_bucket{from="unknown_outcome",le="900"} 0
steward_recovery_seconds_bucket{from="unknown_outcome",le="3600"} 1
steward_recovery_seconds_bucket{from="unknown_outcome",le="14400"} 1
steward_recovery_seconds_bucket{from="unknown_outcome",le="86400"} 1
steward_recovery_seconds_bucket{from="unknown_outcome",le="259200"} 1
steward_recovery_seconds_bucket{from="unknown_outcome",le="604800"} 1
steward_recovery_seconds_bucket{from="unknown_outcome",le="+Inf"} 1
steward_recovery_seconds_sum{from="unknown_outcome"} 1800
steward_recovery_seconds_count{from="unknown_outcome"} 1
`
	names := []string{"steward_tasks", "steward_tasks_broken", "steward_actions_failed", "steward_permit_latency_seconds",
		"steward_time_to_accepted_seconds", "steward_cost_per_accepted_task_micros", "steward_confirmed_policy_violations", "steward_recovery_seconds"}
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), names...); err != nil {
		t.Error(err)
	}

	ratios := map[string]float64{
		// accepted and reviewed, of the five whose work is over (none is
		// produced and waiting).
		"steward_task_success_ratio": 0.4,
		// two rounds accepted, of four decided (one returned, one failed
		// its checks).
		"steward_accepted_output_ratio": 0.5,
		// (200 cancelled + 100 + 300) / 2 accepted
		"steward_tokens_per_accepted_task": 300,
		// approved (a decision) and settled (by a person), of eight.
		"steward_human_intervention_ratio": 0.25,
		// a4 compensated, of the succeeded writes a1, a4 and a5.
		"steward_rollback_ratio": 1.0 / 3,
		// a2 denied and a3 sent for approval, of a1 to a6.
		"steward_policy_block_ratio": 2.0 / 6,
		// a1, a3, a4 and a5 of six side effects: a6's outcome is still
		// unknown, and a7 is in a broken history.
		"steward_trace_completeness_ratio": 4.0 / 6,
	}
	for name, want := range ratios {
		if got := gatherMetric(t, c, name); len(got) != 1 || !nearlyEqual(got[""], want) {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	actions := gatherMetric(t, c, "steward_actions")
	for status, n := range map[string]float64{"succeeded": 3, "failed": 1, "denied": 1, "unknown": 1, "proposed": 0} {
		if actions[status] != n {
			t.Errorf("steward_actions{status=%q} = %v, want %v", status, actions[status], n)
		}
	}
	if len(actions) != 16 {
		t.Errorf("steward_actions has %d statuses, want all 16: %v", len(actions), actions)
	}

	// Metrics are projections: a projection rebuilt from the log reports
	// the same values, recovery times included.
	rebuilt := follow(t, env.Log)
	if err := rebuilt.WaitFor(ctx, last); err != nil {
		t.Fatal(err)
	}
	// (CollectAndFormat with no metric names collects none.)
	live, again := metricsText(t, c), metricsText(t, state.NewTaskCollector(rebuilt))
	if live != again {
		t.Errorf("a rebuilt projection reports other metrics:\n%s\nlive:\n%s", again, live)
	}
}

// TestTaskCollectorEmpty checks the values before any task exists: no
// division by zero, and a complete trace.
func TestTaskCollectorEmpty(t *testing.T) {
	c := state.NewTaskCollector(state.NewProjection(slog.New(slog.DiscardHandler)))
	for name, want := range map[string]float64{
		"steward_task_success_ratio":          0,
		"steward_human_intervention_ratio":    0,
		"steward_policy_block_ratio":          0,
		"steward_trace_completeness_ratio":    1,
		"steward_tasks_broken":                0,
		"steward_confirmed_policy_violations": 0,
		"steward_rollback_ratio":              0,
	} {
		if got := gatherMetric(t, c, name); !nearlyEqual(got[""], want) {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	if n := testutil.CollectAndCount(c, "steward_permit_latency_seconds"); n != 2 {
		t.Errorf("permit latency has %d series, want 2 (with and without approval)", n)
	}
	if n := testutil.CollectAndCount(c, "steward_recovery_seconds"); n != 2 {
		t.Errorf("recovery time has %d series, want 2 (from an unknown outcome, from a stall)", n)
	}
	if problems, err := testutil.CollectAndLint(c); err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %v", problems, err)
	}
}

// gather collects c through a pedantic registry, which also checks that
// Collect matches Describe.
func gather(t *testing.T, c prometheus.Collector) []*dto.MetricFamily {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	return families
}

// gatherMetric collects c through a pedantic registry (which also checks that
// Collect matches Describe) and returns metric name's values by their one
// label's value, "" for a metric without labels.
func gatherMetric(t *testing.T, c prometheus.Collector, name string) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	for _, f := range gather(t, c) {
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

// TestAnAnswerIsAnIntervention: a person who answers a task's question
// stepped in, as one who approves does; a question left open is not.
func TestAnAnswerIsAnIntervention(t *testing.T) {
	asked := &stewardv1.TaskNeedsInput{Cause: stewardv1.NeedsInputCause_NEEDS_INPUT_CAUSE_ASKED, Question: "Which region?"}
	p := state.NewProjection(slog.New(slog.DiscardHandler))
	for _, h := range [][]*stewardv1.EventRecord{
		stewardtest.History(t, "answered", append(running(), asked, &stewardv1.InputProvided{Answer: "eu"})...),
		stewardtest.History(t, "open", append(running(), asked)...),
	} {
		for _, r := range h {
			if err := p.Apply(r); err != nil {
				t.Fatal(err)
			}
		}
	}
	if got := gatherMetric(t, state.NewTaskCollector(p), "steward_human_intervention_ratio")[""]; !nearlyEqual(got, 0.5) {
		t.Errorf("steward_human_intervention_ratio = %v, want 0.5 (the answered task of two)", got)
	}
}
