package state

import (
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
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
		"Tasks whose work is over that reached technical completion (produced or accepted), over tasks whose work is over (produced, accepted, failed, cancelled); 0 when there are none.", nil, nil)
	acceptedOutputDesc = prometheus.NewDesc("steward_accepted_output_ratio",
		"Produced results that were accepted, over produced results decided (accepted, returned, or failing their checks); 0 when none were decided.", nil, nil)
	costPerAcceptedDesc = prometheus.NewDesc("steward_cost_per_accepted_task_micros",
		"Everything tasks in a currency spent, failed and cancelled work included, over the accepted tasks in that currency, in micro-units; currencies are not mixed.", []string{"currency"}, nil)
	tokensPerAcceptedDesc = prometheus.NewDesc("steward_tokens_per_accepted_task",
		"Every token tasks spent, failed and cancelled work included, over accepted tasks; 0 when none is accepted.", nil, nil)
	timeToAcceptedDesc = prometheus.NewDesc("steward_time_to_accepted_seconds",
		"Time from a task's creation to the acceptance of its result, for accepted tasks.", nil, nil)
	interventionDesc = prometheus.NewDesc("steward_human_intervention_ratio",
		"Tasks with an approval decision or an outcome settled by a person, over tasks; 0 when there are none.", nil, nil)
	rollbackDesc = prometheus.NewDesc("steward_rollback_ratio",
		"Succeeded writes that Steward set out to undo (compensated), over succeeded writes; 0 when none succeeded.", nil, nil)
	policyBlockDesc = prometheus.NewDesc("steward_policy_block_ratio",
		"Actions evaluated by policy that were denied or sent to a person for approval, over actions evaluated; 0 when none were evaluated.", nil, nil)
	traceDesc = prometheus.NewDesc("steward_trace_completeness_ratio",
		"Side effects (writes whose calls ended) with their policy snapshot, permit, approval where required, credential and a known outcome, over side effects; 1 when there are none.", nil, nil)
	violationsDesc = prometheus.NewDesc("steward_confirmed_policy_violations",
		"Policy violations auditors confirmed with RecordFinding.", nil, nil)
	flaggedDesc = prometheus.NewDesc("steward_decisions_flagged",
		"Model decisions recorded with a flag on the context they cite, by flag (context_expired, context_egress); a decision with two flags counts under each.", []string{"flag"}, nil)
	modelSwapsDesc = prometheus.NewDesc("steward_undeclared_model_swaps_total",
		"Model changes between consecutive decisions of a task that no declared fallback covers, in the tasks with a current view.", nil, nil)
	recoveryDesc = prometheus.NewDesc("steward_recovery_seconds",
		"Time from an unknown outcome to its settlement, or from a stall mark to the task's next event.", []string{"from"}, nil)
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
// takes its actions out, which rate() reads as a counter reset. Recovery
// times are built the same way, from the times each view noted as its
// events were applied (recovery.go). docs/metrics.md defines every
// metric.
//
// It is safe for concurrent use.
type TaskCollector struct {
	views *Projection
}

// NewTaskCollector returns a collector over views.
func NewTaskCollector(views *Projection) *TaskCollector { return &TaskCollector{views: views} }

// Collector returns a Prometheus collector of the plane's task metrics
// and its snapshots' (viewsnap_metrics.go).
func (p *Plane) Collector() prometheus.Collector {
	return collectors{NewTaskCollector(p.views), snapshotCollector{p}}
}

// Describe implements prometheus.Collector.
func (c *TaskCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{
		tasksDesc, brokenDesc, successDesc, acceptedOutputDesc, interventionDesc, rollbackDesc,
		policyBlockDesc, traceDesc, actionsDesc, failedDesc, permitLatencyDesc,
		costPerAcceptedDesc, tokensPerAcceptedDesc, timeToAcceptedDesc, violationsDesc, recoveryDesc, flaggedDesc, modelSwapsDesc,
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
	gauge(successDesc, ratio(t.completed, t.workEnded, 0))
	gauge(acceptedOutputDesc, ratio(t.roundsAccepted, t.roundsDecided, 0))
	for currency, s := range t.spent {
		if s.accepted > 0 {
			gauge(costPerAcceptedDesc, float64(s.micros)/float64(s.accepted), currency)
		}
	}
	gauge(tokensPerAcceptedDesc, ratio64(t.tokens, t.accepted, 0))
	ch <- prometheus.MustNewConstHistogram(timeToAcceptedDesc, t.toAccepted.count, t.toAccepted.sum, t.toAccepted.cumulative())
	gauge(interventionDesc, ratio(t.intervened, t.views, 0))
	gauge(rollbackDesc, ratio(t.undone, t.writes, 0))
	gauge(policyBlockDesc, ratio(t.blocked, t.evaluated, 0))
	gauge(traceDesc, ratio(t.traced, t.sideEffects, 1))
	gauge(violationsDesc, float64(t.violations))
	for _, k := range decisionFlagKinds {
		gauge(flaggedDesc, float64(t.flagged[k]), enumLabel(k.String(), "DECISION_FLAG_KIND_"))
	}
	// Swaps stay in the views once folded: the count only grows.
	ch <- prometheus.MustNewConstMetric(modelSwapsDesc, prometheus.CounterValue, float64(t.modelSwaps))
	for i, h := range t.recoveries {
		ch <- prometheus.MustNewConstHistogram(recoveryDesc, h.count, h.sum, h.cumulative(), recoveryLabels[i])
	}
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
func ratio(n, d int, empty float64) float64 { return ratio64(int64(n), d, empty) }

func ratio64(n int64, d int, empty float64) float64 {
	if d == 0 {
		return empty
	}
	return float64(n) / float64(d)
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
