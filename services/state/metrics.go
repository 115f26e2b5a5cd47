package state

import (
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/task"
)

// statusQuerySettler is who an unknown outcome was settled by when the
// tool's own status query answered; anyone else is a person. It is the
// execution plane's StatusQuerySettler, repeated because planes do not
// import each other; the words are on the log, so they do not change.
const statusQuerySettler = "status query"

// PermitLatencyBuckets are the upper bounds, in seconds, of the permit
// latency histogram. An action policy allows is permitted in milliseconds;
// one that waits for a person takes minutes to days, so the buckets reach
// a week.
var PermitLatencyBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600, 4 * 3600, 24 * 3600, 7 * 24 * 3600}

// TimeToAcceptedBuckets are the upper bounds, in seconds, of the time to
// accepted result histogram: from a minute (a task accepted by its checks
// alone) to a month (one that waited on reviews and approvals).
var TimeToAcceptedBuckets = []float64{1, 10, 60, 300, 900, 3600, 4 * 3600, 24 * 3600, 3 * 24 * 3600, 7 * 24 * 3600, 30 * 24 * 3600}

var (
	tasksDesc = prometheus.NewDesc("steward_tasks",
		"Tasks with a current view, by status.", []string{"status"}, nil)
	brokenDesc = prometheus.NewDesc("steward_tasks_broken",
		"Tasks whose history holds an event the fold refused: they have no current view.", nil, nil)
	successDesc = prometheus.NewDesc("steward_task_success_ratio",
		"Ended tasks (accepted, failed, cancelled) that were accepted, over ended tasks; 0 when none ended.", nil, nil)
	acceptedOutputDesc = prometheus.NewDesc("steward_accepted_output_ratio",
		"Produced results that were accepted, over produced results decided (accepted, returned, or failing their checks); 0 when none were decided.", nil, nil)
	costPerAcceptedDesc = prometheus.NewDesc("steward_cost_per_accepted_task_micros",
		"Mean cost of an accepted task, in micro-units of the currency its contract names; tasks in other currencies are not mixed in.", []string{"currency"}, nil)
	tokensPerAcceptedDesc = prometheus.NewDesc("steward_tokens_per_accepted_task",
		"Mean tokens spent by an accepted task; 0 when none is accepted.", nil, nil)
	timeToAcceptedDesc = prometheus.NewDesc("steward_time_to_accepted_seconds",
		"Time from a task's creation to the acceptance of its result, for accepted tasks.", nil, nil)
	interventionDesc = prometheus.NewDesc("steward_human_intervention_ratio",
		"Tasks with an approval decision or an outcome settled by a person, over tasks; 0 when there are none.", nil, nil)
	rollbackDesc = prometheus.NewDesc("steward_rollback_ratio",
		"Ended tasks that compensated, over ended tasks; 0 when none ended.", nil, nil)
	policyBlockDesc = prometheus.NewDesc("steward_policy_block_ratio",
		"Actions denied, over actions evaluated by policy; 0 when none were evaluated.", nil, nil)
	traceDesc = prometheus.NewDesc("steward_trace_completeness_ratio",
		"Tasks whose history folds, over all tasks on the log; 1 when there are none.", nil, nil)
	actionsDesc = prometheus.NewDesc("steward_actions",
		"Actions in the ledgers of tasks with a current view, by status.", []string{"status"}, nil)
	failedDesc = prometheus.NewDesc("steward_actions_failed",
		"Failed actions by failure class.", []string{"class"}, nil)
	permitLatencyDesc = prometheus.NewDesc("steward_permit_latency_seconds",
		"Time from an action's proposal to its permit, for permitted actions; approval says whether a person had to approve it.",
		[]string{"approval"}, nil)
)

// TaskCollector is a Prometheus collector of task and action metrics,
// computed from a projection's views at every scrape: no log I/O, one walk
// over the tasks and their actions under the projection's read lock. So the
// numbers are always those of the views, are the same on every state-plane
// replica, and come back identical after a restart.
//
// Permit latency is a histogram built at scrape time as well, rather than
// observed as events are applied: an observed histogram would lose its
// counts on a restart (the rebuild would have to observe them again, and
// skipping that would be easy to get wrong), while one built from the views
// is right by construction. A ledger only grows, so the counts only grow,
// which is what Prometheus' rate() needs; only a task whose history breaks
// takes its actions out, which rate() reads as a counter reset.
//
// It is safe for concurrent use.
type TaskCollector struct {
	views *Projection
}

// NewTaskCollector returns a collector over views.
func NewTaskCollector(views *Projection) *TaskCollector { return &TaskCollector{views: views} }

// Collector returns a Prometheus collector of the plane's task metrics.
func (p *Plane) Collector() prometheus.Collector { return NewTaskCollector(p.views) }

// Describe implements prometheus.Collector.
func (c *TaskCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{
		tasksDesc, brokenDesc, successDesc, acceptedOutputDesc, interventionDesc, rollbackDesc,
		policyBlockDesc, traceDesc, actionsDesc, failedDesc, permitLatencyDesc,
		costPerAcceptedDesc, tokensPerAcceptedDesc, timeToAcceptedDesc,
	} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *TaskCollector) Collect(ch chan<- prometheus.Metric) {
	t := c.views.tally()
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	for _, s := range taskStatuses {
		gauge(tasksDesc, float64(t.tasks[s]), enumLabel(s.String(), "TASK_STATUS_"))
	}
	gauge(brokenDesc, float64(t.broken))
	gauge(successDesc, ratio(t.accepted, t.ended, 0))
	gauge(acceptedOutputDesc, ratio(t.roundsAccepted, t.roundsDecided, 0))
	for currency, cost := range t.acceptedCost {
		gauge(costPerAcceptedDesc, float64(cost.micros)/float64(cost.tasks), currency)
	}
	gauge(tokensPerAcceptedDesc, ratio(int(t.acceptedTokens), t.accepted, 0))
	ch <- prometheus.MustNewConstHistogram(timeToAcceptedDesc, t.toAccepted.count, t.toAccepted.sum, t.toAccepted.cumulative())
	gauge(interventionDesc, ratio(t.intervened, t.views, 0))
	gauge(rollbackDesc, ratio(t.rolledBack, t.ended, 0))
	gauge(policyBlockDesc, ratio(t.denied, t.evaluated, 0))
	gauge(traceDesc, ratio(t.views, t.views+t.broken, 1))
	for _, s := range actionStatuses {
		gauge(actionsDesc, float64(t.actions[s]), enumLabel(s.String(), "ACTION_STATUS_"))
	}
	// The classes a failure has are always there; "unspecified" only when
	// some failed action lacks one.
	for class, n := range t.failed {
		gauge(failedDesc, float64(n), enumLabel(class.String(), "FAILURE_CLASS_"))
	}
	for i, h := range t.permits {
		ch <- prometheus.MustNewConstHistogram(permitLatencyDesc, h.count, h.sum, h.cumulative(), approvalLabels[i])
	}
}

// approvalLabels are the values of the permit latency's approval label:
// index 0 for actions policy allowed outright, 1 for those a person
// approved.
var approvalLabels = [2]string{"none", "required"}

var (
	taskStatuses   = enumValues[stewardv1.TaskStatus](stewardv1.TaskStatus_name)
	actionStatuses = enumValues[stewardv1.ActionStatus](stewardv1.ActionStatus_name)
)

// enumValues lists an enum's values but UNSPECIFIED (0), in order: every
// one is reported, at 0 when nothing has it, so series exist from the start.
func enumValues[E ~int32](names map[int32]string) []E {
	var out []E
	for v := range names {
		if v != 0 {
			out = append(out, E(v))
		}
	}
	slices.Sort(out)
	return out
}

// enumLabel turns an enum name into a label value: TASK_STATUS_WAITING_FOR_INPUT
// becomes waiting_for_input.
func enumLabel(name, prefix string) string { return strings.ToLower(strings.TrimPrefix(name, prefix)) }

// ratio is n/d, or empty when d is 0.
func ratio(n, d int, empty float64) float64 {
	if d == 0 {
		return empty
	}
	return float64(n) / float64(d)
}

// tally is what one walk over the views counts.
type tally struct {
	// views are tasks with a current view; broken, tasks without one.
	views, broken int
	tasks         map[stewardv1.TaskStatus]int
	// ended tasks, and of them those accepted and those that compensated.
	ended, accepted, rolledBack int
	// acceptance rounds decided, and of them those accepted.
	roundsDecided, roundsAccepted int
	// what accepted tasks spent, by currency, and how long they took.
	acceptedCost   map[string]*spending
	acceptedTokens int64
	toAccepted     histogram
	// intervened counts tasks a person stepped into.
	intervened int
	actions    map[stewardv1.ActionStatus]int
	failed     map[stewardv1.FailureClass]int
	// evaluated counts actions with a policy snapshot; denied, those of
	// them denied.
	evaluated, denied int
	permits           [2]histogram
}

// tally walks every view once under the read lock. Tasks in the broken set
// are counted only as broken: their views stopped at a refused event and
// are not current (Get refuses them too).
func (p *Projection) tally() tally {
	t := tally{
		tasks:   map[stewardv1.TaskStatus]int{},
		actions: map[stewardv1.ActionStatus]int{},
		failed: map[stewardv1.FailureClass]int{
			stewardv1.FailureClass_FAILURE_CLASS_TRANSIENT:     0,
			stewardv1.FailureClass_FAILURE_CLASS_DETERMINISTIC: 0,
			stewardv1.FailureClass_FAILURE_CLASS_VALIDATION:    0,
		},
		permits:      [2]histogram{newHistogram(PermitLatencyBuckets), newHistogram(PermitLatencyBuckets)},
		acceptedCost: map[string]*spending{},
		toAccepted:   newHistogram(TimeToAcceptedBuckets),
	}
	p.mu.RLock()
	defer p.mu.RUnlock()
	t.broken = len(p.broken)
	for id, v := range p.tasks {
		if _, bad := p.broken[id]; bad {
			continue
		}
		t.count(v.task)
	}
	return t
}

// count adds one task and its actions to t.
func (t *tally) count(v *stewardv1.Task) {
	t.views++
	t.tasks[v.Status]++
	for _, r := range v.Acceptance {
		switch r.Decision {
		case stewardv1.AcceptanceDecision_ACCEPTANCE_DECISION_ACCEPTED:
			t.roundsAccepted++
			t.roundsDecided++
		case stewardv1.AcceptanceDecision_ACCEPTANCE_DECISION_RETURNED, stewardv1.AcceptanceDecision_ACCEPTANCE_DECISION_CHECKS_FAILED:
			t.roundsDecided++
		}
	}
	if v.Status == stewardv1.TaskStatus_TASK_STATUS_ACCEPTED {
		t.countAccepted(v)
	}
	ended := task.Terminal(v.Status)
	if ended {
		t.ended++
	}
	compensated := v.FinalStatus != stewardv1.TaskStatus_TASK_STATUS_UNSPECIFIED
	intervened := false
	for _, a := range v.Actions {
		t.actions[a.Status]++
		if a.Status == stewardv1.ActionStatus_ACTION_STATUS_FAILED {
			t.failed[a.GetOutcome().GetFailureClass()]++
		}
		if a.Snapshot != nil {
			t.evaluated++
			if a.Status == stewardv1.ActionStatus_ACTION_STATUS_DENIED {
				t.denied++
			}
		}
		compensated = compensated || a.Compensates != ""
		intervened = intervened || a.GetApproval().GetDecision() != stewardv1.ApprovalDecision_APPROVAL_DECISION_UNSPECIFIED ||
			a.SettledBy != "" && a.SettledBy != statusQuerySettler
		if a.GetPermit().GetIssuedAt() != nil && a.ProposedAt != nil {
			// Permits are stamped by governance and proposals by control,
			// maybe on different hosts: a little clock skew must not make
			// a negative latency.
			d := max(a.Permit.IssuedAt.AsTime().Sub(a.ProposedAt.AsTime()), 0)
			i := 0
			if a.Approval != nil {
				i = 1
			}
			t.permits[i].observe(d)
		}
	}
	if ended && compensated {
		t.rolledBack++
	}
	if intervened {
		t.intervened++
	}
}

// spending is what the accepted tasks of one currency spent.
type spending struct {
	tasks  int
	micros int64
}

// countAccepted adds an accepted task's spending and its time to
// acceptance: from its creation to the decision on its last round.
func (t *tally) countAccepted(v *stewardv1.Task) {
	t.accepted++
	currency := v.Contract.GetBudget().GetCurrency()
	s := t.acceptedCost[currency]
	if s == nil {
		s = &spending{}
		t.acceptedCost[currency] = s
	}
	s.tasks++
	s.micros += v.BudgetUsed.GetCostMicros()
	t.acceptedTokens += v.BudgetUsed.GetTokens()
	if n := len(v.Acceptance); n > 0 && v.CreatedAt != nil && v.Acceptance[n-1].DecidedAt != nil {
		t.toAccepted.observe(max(v.Acceptance[n-1].DecidedAt.AsTime().Sub(v.CreatedAt.AsTime()), 0))
	}
}

// histogram is a plain histogram to build a const Prometheus one from.
type histogram struct {
	bounds []float64
	counts []uint64 // counts[i]: observations in (bounds[i-1], bounds[i]]
	count  uint64
	sum    float64
}

func newHistogram(bounds []float64) histogram {
	return histogram{bounds: bounds, counts: make([]uint64, len(bounds))}
}

func (h *histogram) observe(d time.Duration) {
	s := d.Seconds()
	h.count++
	h.sum += s
	for i, b := range h.bounds {
		if s <= b {
			h.counts[i]++
			return
		}
	}
}

// cumulative returns the bucket counts as Prometheus wants them: each
// bound's count includes every observation at or below it.
func (h *histogram) cumulative() map[float64]uint64 {
	out := make(map[float64]uint64, len(h.bounds))
	var n uint64
	for i, b := range h.bounds {
		n += h.counts[i]
		out[b] = n
	}
	return out
}
