package state

import (
	"strings"

	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// costRow is one row of the breakdown as it is tallied.
type costRow struct{ *stewardv1.ReceiptCostRow }

// touch stretches the row's time to cover ts.
func (r costRow) touch(ts *timestamppb.Timestamp) {
	if ts == nil {
		return
	}
	if r.StartedAt == nil || ts.AsTime().Before(r.StartedAt.AsTime()) {
		r.StartedAt = ts
	}
	if r.EndedAt == nil || ts.AsTime().After(r.EndedAt.AsTime()) {
		r.EndedAt = ts
	}
}

// rowKey names a row: its kind, id and, for step rows, milestone.
type rowKey struct {
	kind          stewardv1.ReceiptCostRowKind
	id, milestone string
}

// costTally gathers the rows in the order they are first met.
type costTally struct {
	t          *stewardv1.Task
	milestones map[string]costRow
	steps      map[rowKey]costRow
	stepOrder  []rowKey
	stepOf     map[string]string // plan step id → its milestone, from the plan in force
	actions    map[string]*stewardv1.Action
}

// breakdown tallies t's history, recs, per milestone and per step: the
// time from each one's first event to its last, its tokens and cost (as
// the fold charged them: outcomes, denials after calls, reported model
// calls, reported usage, reservations net of releases), its retries, its
// failures (as the receipt's errors list them) and people's interventions.
// Each spending event is charged to the milestone it was charged to on
// the task, so the milestone rows add up to the task's totals; so do the
// step rows.
func breakdown(t *stewardv1.Task, recs []*stewardv1.EventRecord) *stewardv1.ReceiptBreakdown {
	x := &costTally{t: t, milestones: map[string]costRow{}, steps: map[rowKey]costRow{}, stepOf: map[string]string{},
		actions: make(map[string]*stewardv1.Action, len(t.Actions))}
	for _, a := range t.Actions {
		x.actions[a.ActionId] = a
	}
	for _, st := range t.Plan.GetPlan().GetSteps() {
		x.stepOf[st.Id] = st.MilestoneId
	}
	for _, m := range t.Contract.GetBudget().GetMilestones() {
		x.milestone(m.MilestoneId)
	}
	dispatches := map[string]uint32{}
	inFlight := map[string]bool{}
	for _, rec := range recs {
		ev := rec.Event
		if id := eventActionID(ev); id != "" {
			x.action(id, ev.Time)
		}
		x.count(ev, dispatches, inFlight)
		x.charge(ev)
		if id := actionOf(ev); id != "" {
			inFlight[id] = false
		}
	}
	return x.result()
}

// milestone returns the row of milestone id ("" for none), making it.
func (x *costTally) milestone(id string) costRow {
	r, ok := x.milestones[id]
	if !ok {
		kind := stewardv1.ReceiptCostRowKind_RECEIPT_COST_ROW_KIND_MILESTONE
		if id == "" {
			kind = stewardv1.ReceiptCostRowKind_RECEIPT_COST_ROW_KIND_NO_MILESTONE
		}
		r = costRow{&stewardv1.ReceiptCostRow{Kind: kind, Id: id}}
		x.milestones[id] = r
	}
	return r
}

// step returns the step row k, making it.
func (x *costTally) step(k rowKey) costRow {
	r, ok := x.steps[k]
	if !ok {
		r = costRow{&stewardv1.ReceiptCostRow{Kind: k.kind, Id: k.id, MilestoneId: k.milestone}}
		x.steps[k] = r
		x.stepOrder = append(x.stepOrder, k)
	}
	return r
}

// ofAction is the step row and the milestone row action id belongs to:
// its plan step's, or its own when no plan step ran it.
func (x *costTally) ofAction(id string) (step, milestone costRow) {
	a := x.actions[id]
	m := a.GetMilestoneId()
	k := rowKey{stewardv1.ReceiptCostRowKind_RECEIPT_COST_ROW_KIND_ACTION, id, m}
	if s := a.GetPlanStepId(); s != "" {
		k = x.planStep(s)
	}
	return x.step(k), x.milestone(m)
}

// planStep is the key of plan step id's row. Its milestone is the plan's
// in force, or, for a step a revision retired, its actions'.
func (x *costTally) planStep(id string) rowKey {
	m, ok := x.stepOf[id]
	if !ok {
		for _, a := range x.t.Actions {
			if a.PlanStepId == id {
				m = a.MilestoneId
				break
			}
		}
		x.stepOf[id] = m
	}
	return rowKey{stewardv1.ReceiptCostRowKind_RECEIPT_COST_ROW_KIND_PLAN_STEP, id, m}
}

// action marks the time of an event about action id.
func (x *costTally) action(id string, ts *timestamppb.Timestamp) {
	if a := x.actions[id]; a == nil || a.Carried {
		return
	}
	s, m := x.ofAction(id)
	s.touch(ts)
	m.touch(ts)
}

// add puts tokens and cost on both rows.
func add(tokens, cost int64, rows ...costRow) {
	for _, r := range rows {
		r.Tokens += tokens
		r.CostMicros += cost
	}
}

// eventActionID is the action an "action." event is about: its action_id,
// or that of the message it carries (a proposal's action, a permit, an
// approval).
func eventActionID(ev *stewardv1.Event) string {
	if !strings.HasPrefix(event.TypeOf(ev), "action.") {
		return ""
	}
	m := ev.ProtoReflect()
	od := m.Descriptor().Oneofs().ByName("payload")
	if od == nil {
		return ""
	}
	fd := m.WhichOneof(od)
	if fd == nil || fd.Message() == nil {
		return ""
	}
	return actionIDField(m.Get(fd).Message(), 1)
}

func actionIDField(m protoreflect.Message, depth int) string {
	if f := m.Descriptor().Fields().ByName("action_id"); f != nil && f.Kind() == protoreflect.StringKind {
		return m.Get(f).String()
	}
	if depth == 0 {
		return ""
	}
	fields := m.Descriptor().Fields()
	for i := 0; i < fields.Len(); i++ {
		if f := fields.Get(i); f.Kind() == protoreflect.MessageKind && !f.IsList() && !f.IsMap() && m.Has(f) {
			if id := actionIDField(m.Get(f).Message(), depth-1); id != "" {
				return id
			}
		}
	}
	return ""
}

// finish sets each row's elapsed time and shares of the totals.
func finish(rows []*stewardv1.ReceiptCostRow, tokens, cost int64) {
	for _, r := range rows {
		if r.StartedAt != nil && r.EndedAt != nil {
			r.Elapsed = durationpb.New(r.EndedAt.AsTime().Sub(r.StartedAt.AsTime()))
		}
		r.TokenShare, r.CostShare = share(r.Tokens, tokens), share(r.CostMicros, cost)
	}
}

func share(part, whole int64) float64 {
	if whole == 0 {
		return 0
	}
	return 100 * float64(part) / float64(whole)
}

// mostFailed is the first row with the most failures, or nil if none
// failed.
func mostFailed(rows []*stewardv1.ReceiptCostRow) *stewardv1.ReceiptCostRow {
	var top *stewardv1.ReceiptCostRow
	for _, r := range rows {
		if r.Failures > 0 && (top == nil || r.Failures > top.Failures) {
			top = r
		}
	}
	return top
}
