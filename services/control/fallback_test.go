package control_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/pkg/task"
	"github.com/steward-run/steward/services/control"
)

const (
	toolKind  = stewardv1.FallbackKind_FALLBACK_KIND_TOOL
	modelKind = stewardv1.FallbackKind_FALLBACK_KIND_MODEL
)

// fallbackHarness is newHarness with a primary tool, fetch, and its
// declared stand-in, mirror, whose schema asks for what fetch's does and
// refuses more; and a task whose contract declares fb.
func fallbackHarness(t *testing.T, fb *stewardv1.Fallback, recovery ...*stewardv1.RecoveryPolicy) (*harness, string) {
	t.Helper()
	r := newHarness(t)
	for _, c := range []*stewardv1.ToolContract{
		{Name: "fetch", Version: "1", EffectClass: stewardv1.EffectClass_EFFECT_CLASS_READ, DataSensitivity: stewardv1.DataSensitivity_DATA_SENSITIVITY_INTERNAL,
			ParametersSchema: `{"type":"object","required":["url"]}`, ServiceKey: "fetch-api"},
		{Name: "mirror", Version: "1", EffectClass: stewardv1.EffectClass_EFFECT_CLASS_READ, DataSensitivity: stewardv1.DataSensitivity_DATA_SENSITIVITY_INTERNAL,
			ParametersSchema: `{"type":"object","required":["url"],"properties":{"url":{"type":"string"}},"additionalProperties":false}`},
	} {
		r.register(t, c)
	}
	req := validRequest("fallback")
	req.Contract.AllowedTools = []string{"fetch", "mirror"}
	req.Contract.Fallbacks = []*stewardv1.Fallback{fb}
	for _, rp := range recovery {
		req.Contract.RecoveryPolicy = rp
	}
	tk, _, err := r.ctl.CreateTask(context.Background(), "t", req)
	if err != nil {
		t.Fatal(err)
	}
	r.running(tk.Contract.TaskId)
	return r, tk.Contract.TaskId
}

func fetchFallback(trigger *stewardv1.FallbackTrigger, after time.Duration) *stewardv1.Fallback {
	fb := &stewardv1.Fallback{Id: "fb", Kind: toolKind, Primary: "fetch", Fallback: "mirror", Trigger: trigger}
	if after > 0 {
		fb.RetryPrimaryAfter = dur(after)
	}
	return fb
}

// onFallback checks that a ran on mirror in fetch's place, under fb.
func onFallback(t *testing.T, a *stewardv1.Action) {
	t.Helper()
	if a.Tool != "mirror" || a.FallbackOf != "fetch" || a.FallbackId != "fb" {
		t.Fatalf("action %s on %s (fallback_of %q, fallback_id %q); want mirror standing in for fetch under fb", a.ActionId, a.Tool, a.FallbackOf, a.FallbackId)
	}
}

func onPrimary(t *testing.T, a *stewardv1.Action) {
	t.Helper()
	if a.Tool != "fetch" || a.FallbackOf != "" || a.FallbackId != "" {
		t.Fatalf("action %s on %s (fallback_of %q); want fetch itself", a.ActionId, a.Tool, a.FallbackOf)
	}
}

var url = map[string]any{"url": "https://example.com"}

// TestFailureClassFallbackEngagesAndClears: a transient failure of the
// primary engages the declared fallback at the next proposal, which is
// drafted against the fallback's tool (its schema: params it refuses are
// refused saying the fallback is engaged) and succeeds there; once the
// plane's clock passes retry_primary_after, the next proposal runs on the
// primary again and FallbackCleared is on the log. A replay of the log
// folds the same view, and the old failure does not engage it again.
func TestFailureClassFallbackEngagesAndClears(t *testing.T) {
	r, id := fallbackHarness(t, fetchFallback(&stewardv1.FallbackTrigger{FailureClasses: []stewardv1.FailureClass{transient}}, 10*time.Minute))
	a1 := r.propose(t, id, "p1", "fetch", "x", url)
	onPrimary(t, a1)
	r.run(t, id, a1.ActionId, failed(transient, "503"), nil, time.Now())

	a2 := r.propose(t, id, "p2", "fetch", "x", url)
	onFallback(t, a2)
	r.run(t, id, a2.ActionId, succeeded(), []byte(`{"ok":true}`), time.Now())
	if got := task.FindAction(r.task(t, id), a2.ActionId).Status; got != stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED {
		t.Fatalf("the fallback's action is %s, want succeeded", got)
	}
	if n := r.Count(id, event.TypeFallbackEngaged); n != 1 {
		t.Fatalf("%d FallbackEngaged, want 1", n)
	}
	_, _, err := r.ctl.ProposeAction(context.Background(), "agent", &stewardv1.ProposeActionRequest{TaskId: id, ProposalId: "p-extra", Tool: "fetch",
		Params: mustStruct(t, map[string]any{"url": "u", "depth": 2})})
	if fieldOf(err) != "params" || !strings.Contains(err.Error(), "fallback") {
		t.Fatalf("params mirror refuses: %v; want them refused naming params and the engaged fallback", err)
	}

	r.clock.Advance(11 * time.Minute)
	a3 := r.propose(t, id, "p3", "fetch", "x", url)
	onPrimary(t, a3)
	if n := r.Count(id, event.TypeFallbackCleared); n != 1 {
		t.Fatalf("%d FallbackCleared, want 1", n)
	}
	a4 := r.propose(t, id, "p4", "fetch", "x", url)
	onPrimary(t, a4) // a1's failure engaged it once; it is no new evidence

	tk := r.task(t, id)
	e := tk.FallbackEngagements
	if len(e) != 1 || e[0].EngagedBy.GetActionId() != a1.ActionId || e[0].EngagedBy.GetFailureClass() != transient ||
		e[0].ClearedBy.GetTrigger() != "retry_after" || len(e[0].ActionIds) != 1 || e[0].ActionIds[0] != a2.ActionId {
		t.Fatalf("engagements = %v; want one, engaged by %s failing transiently, with %s under it, cleared after its time", e, a1.ActionId, a2.ActionId)
	}
	recs, err := r.Log.Read(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	replayed, err := task.Fold(recs)
	if err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(replayed, tk) {
		t.Fatal("a replay of the log folds another view")
	}
}

// TestRetryOfThePrimaryStaysOnIt: Steward's retry of the primary's failed
// action (RECOVERY_MODE_RETRY) is the same request again, on the primary,
// even while the fallback is engaged; the client's next proposal runs on
// the fallback.
func TestRetryOfThePrimaryStaysOnIt(t *testing.T) {
	r, id := fallbackHarness(t, fetchFallback(&stewardv1.FallbackTrigger{FailureClasses: []stewardv1.FailureClass{transient}}, time.Hour),
		&stewardv1.RecoveryPolicy{Mode: retryMode, MaxAttempts: 3})
	a1 := r.propose(t, id, "p1", "fetch", "x", url)
	r.run(t, id, a1.ActionId, failed(transient, "503"), nil, time.Now())
	retry := retryOf(r.WaitTask(id, func(tk *stewardv1.Task) bool { return retryOf(tk, a1.ActionId) != nil }), a1.ActionId)
	onFallback(t, r.propose(t, id, "p2", "fetch", "x", url))
	// The retry fails too: its own retry is proposed while fb is engaged.
	r.run(t, id, retry.ActionId, failed(transient, "503"), nil, time.Now())
	again := retryOf(r.WaitTask(id, func(tk *stewardv1.Task) bool { return retryOf(tk, retry.ActionId) != nil }), retry.ActionId)
	onPrimary(t, again)
}

// TestBreakerFallbackFollowsTheBreaker: the breaker of the primary's
// service opening — recorded as the execution plane records it, a
// BreakerChanged on the service's subject — engages the fallback at the
// next proposal; its closing clears it at the one after.
func TestBreakerFallbackFollowsTheBreaker(t *testing.T) {
	r, id := fallbackHarness(t, fetchFallback(&stewardv1.FallbackTrigger{BreakerOpen: true}, 0))
	onPrimary(t, r.propose(t, id, "p1", "fetch", "x", url))
	r.breaker(t, "fetch-api", stewardv1.BreakerState_BREAKER_STATE_CLOSED, stewardv1.BreakerState_BREAKER_STATE_OPEN)
	onFallback(t, r.propose(t, id, "p2", "fetch", "x", url))
	onFallback(t, r.propose(t, id, "p3", "fetch", "x", url))
	r.breaker(t, "fetch-api", stewardv1.BreakerState_BREAKER_STATE_OPEN, stewardv1.BreakerState_BREAKER_STATE_CLOSED)
	onPrimary(t, r.propose(t, id, "p4", "fetch", "x", url))
	e := r.task(t, id).FallbackEngagements
	if len(e) != 1 || e[0].EngagedBy.GetServiceKey() != "fetch-api" || e[0].ClearedBy.GetTrigger() != "breaker_closed" || len(e[0].ActionIds) != 2 {
		t.Fatalf("engagements = %v; want one, by fetch-api's breaker, cleared when it closed, two actions under it", e)
	}
}

// breaker appends a change of service key's breaker as the execution
// plane does (services/execution/breakers.go).
func (r *harness) breaker(t *testing.T, key string, from, to stewardv1.BreakerState) {
	t.Helper()
	ev, err := event.New(event.Meta{ID: event.ID("breaker", key, to.String(), event.RandomID()), Actor: &stewardv1.Actor{Principal: "w", Plane: "execution"}},
		&stewardv1.BreakerChanged{ServiceKey: key, From: from, To: to, Worker: "w"})
	if err != nil {
		t.Fatal(err)
	}
	head, _, err := r.Log.ServiceHead(context.Background(), "", key)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Log.Append(context.Background(), head, ev); err != nil {
		t.Fatal(err)
	}
}

// TestLatencyFallbackEngages: a primary call that took longer than
// latency_over, from its first dispatch to its outcome, engages the
// fallback; a quick one does not.
func TestLatencyFallbackEngages(t *testing.T) {
	r, id := fallbackHarness(t, fetchFallback(&stewardv1.FallbackTrigger{LatencyOver: dur(2 * time.Second)}, time.Minute))
	a1 := r.propose(t, id, "p1", "fetch", "x", url)
	r.run(t, id, a1.ActionId, succeeded(), nil, time.Now())
	a2 := r.propose(t, id, "p2", "fetch", "x", url)
	onPrimary(t, a2) // a1 was quick
	r.run(t, id, a2.ActionId, succeeded(), nil, time.Now().Add(5*time.Second))
	onFallback(t, r.propose(t, id, "p3", "fetch", "x", url))
	e := r.task(t, id).FallbackEngagements
	if len(e) != 1 || e[0].EngagedBy.GetTrigger() != "latency" || e[0].EngagedBy.GetLatency().AsDuration() < 4*time.Second {
		t.Fatalf("engagements = %v; want one, by a2's latency of about 5s", e)
	}
}

// TestFoldRefusesFallbacksOutOfState: engaging an engaged fallback, or
// clearing one not engaged, or one the contract does not declare, is not
// a legal step of the task.
func TestFoldRefusesFallbacksOutOfState(t *testing.T) {
	r, id := fallbackHarness(t, fetchFallback(&stewardv1.FallbackTrigger{BreakerOpen: true}, 0))
	ev := func(p event.Payload) *stewardv1.Event { return stewardtest.Event(t, id, p) }
	tk := r.task(t, id)
	if err := task.Check(tk, ev(&stewardv1.FallbackCleared{FallbackId: "fb"})); !errs.Is(err, errs.FailedPrecondition) {
		t.Errorf("clearing a fallback not engaged: %v; want FailedPrecondition", err)
	}
	if err := task.Check(tk, ev(&stewardv1.FallbackEngaged{FallbackId: "other"})); fieldOf(err) != "fallback_id" {
		t.Errorf("engaging an undeclared fallback: %v; want fallback_id named", err)
	}
	tk = r.Append(id, &stewardv1.FallbackEngaged{FallbackId: "fb", Evidence: &stewardv1.FallbackEvidence{Trigger: "breaker"}})
	if err := task.Check(tk, ev(&stewardv1.FallbackEngaged{FallbackId: "fb"})); !errs.Is(err, errs.FailedPrecondition) {
		t.Errorf("engaging an engaged fallback: %v; want FailedPrecondition", err)
	}
}

// TestModelFallbackAndUndeclaredSwaps: a decision by the declared fallback
// model after ones by the primary engages it, a later one by the primary
// clears it; a change to a model no fallback declares is an undeclared
// swap on the task view (and so on the receipt and the metric).
func TestModelFallbackAndUndeclaredSwaps(t *testing.T) {
	r := newHarness(t)
	req := validRequest("models")
	req.Contract.Fallbacks = []*stewardv1.Fallback{{Id: "m", Kind: modelKind, Primary: "gpt-a", Fallback: "gpt-b"}}
	tk, _, err := r.ctl.CreateTask(context.Background(), "t", req)
	if err != nil {
		t.Fatal(err)
	}
	id := tk.Contract.TaskId
	r.running(id)
	for i, model := range []string{"gpt-a", "gpt-b", "gpt-b", "gpt-a", "claude-x"} {
		d := aDecision("d" + string(rune('1'+i)))
		d.Call.ModelId = model
		if _, _, err := r.ctl.RecordDecision(context.Background(), "agent", &stewardv1.RecordDecisionRequest{TaskId: id, Decision: d}); err != nil {
			t.Fatal(err)
		}
	}
	tk = r.task(t, id)
	e := tk.FallbackEngagements
	if len(e) != 1 || e[0].EngagedBy.GetDecisionId() != "d2" || e[0].ClearedBy.GetDecisionId() != "d4" || strings.Join(e[0].DecisionIds, ",") != "d2,d3" {
		t.Fatalf("engagements = %v; want m engaged by d2, cleared by d4, d2 and d3 under it", e)
	}
	s := tk.UndeclaredModelSwaps
	if len(s) != 1 || s[0].FromModel != "gpt-a" || s[0].ToModel != "claude-x" || s[0].FromDecisionId != "d4" || s[0].ToDecisionId != "d5" {
		t.Fatalf("undeclared swaps = %v; want gpt-a (d4) → claude-x (d5) alone", s)
	}
}

// TestBadFallbacksRefused: each contract fault is refused naming its field.
func TestBadFallbacksRefused(t *testing.T) {
	r := idleHarness(t)
	ok := func() *stewardv1.Fallback {
		return fetchFallback(&stewardv1.FallbackTrigger{FailureClasses: []stewardv1.FailureClass{transient}}, time.Minute)
	}
	for _, tt := range []struct {
		name  string
		edit  func(c *stewardv1.TaskContract)
		field string
	}{
		{"to itself", func(c *stewardv1.TaskContract) { c.Fallbacks[0].Fallback = "fetch" }, "contract.fallbacks[0].fallback"},
		{"duplicate id", func(c *stewardv1.TaskContract) {
			c.Fallbacks = append(c.Fallbacks, ok())
			c.Fallbacks[1].Primary = "other"
		}, "contract.fallbacks[1].id"},
		{"two for one primary", func(c *stewardv1.TaskContract) {
			c.Fallbacks = append(c.Fallbacks, ok())
			c.Fallbacks[1].Id = "fb2"
		}, "contract.fallbacks[1].primary"},
		{"fallback not allowed", func(c *stewardv1.TaskContract) { c.AllowedTools = []string{"fetch"} }, "contract.fallbacks[0].fallback"},
		{"no trigger", func(c *stewardv1.TaskContract) { c.Fallbacks[0].Trigger = nil }, "contract.fallbacks[0].trigger"},
		{"two triggers", func(c *stewardv1.TaskContract) { c.Fallbacks[0].Trigger.BreakerOpen = true }, "contract.fallbacks[0].trigger"},
		{"no way back", func(c *stewardv1.TaskContract) { c.Fallbacks[0].RetryPrimaryAfter = nil }, "contract.fallbacks[0].retry_primary_after"},
		{"no kind", func(c *stewardv1.TaskContract) { c.Fallbacks[0].Kind = 0 }, "contract.fallbacks[0].kind"},
		{"unknown class", func(c *stewardv1.TaskContract) {
			c.Fallbacks[0].Trigger.FailureClasses = []stewardv1.FailureClass{stewardv1.FailureClass_FAILURE_CLASS_UNKNOWN}
		}, "contract.fallbacks[0].trigger.failure_classes[0]"},
		{"model with a tool trigger", func(c *stewardv1.TaskContract) { c.Fallbacks[0].Kind = modelKind }, "contract.fallbacks[0].trigger"},
	} {
		req := validRequest("bad-" + strings.ReplaceAll(tt.name, " ", "-"))
		req.Contract.AllowedTools = []string{"fetch", "mirror"}
		req.Contract.Fallbacks = []*stewardv1.Fallback{ok()}
		tt.edit(req.Contract)
		if _, _, err := r.ctl.CreateTask(context.Background(), "t", req); fieldOf(err) != tt.field {
			t.Errorf("%s: %v; want %s named", tt.name, err, tt.field)
		}
	}
}

func mustStruct(t *testing.T, m map[string]any) *structpb.Struct {
	t.Helper()
	s, err := structpb.NewStruct(m)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestTwoReplicasEngageOnce: two control planes over one log, proposing
// at once after the primary failed, append one FallbackEngaged between
// them (the append is conditional on the task's head, its id names the
// engagement), and both proposals run on the fallback.
func TestTwoReplicasEngageOnce(t *testing.T) {
	r, id := fallbackHarness(t, fetchFallback(&stewardv1.FallbackTrigger{FailureClasses: []stewardv1.FailureClass{transient}}, time.Hour))
	a1 := r.propose(t, id, "p1", "fetch", "x", url)
	r.run(t, id, a1.ActionId, failed(transient, "503"), nil, time.Now())
	other := control.New(r.Log, r.Logger, r.config())
	var wg sync.WaitGroup
	got := make([]*stewardv1.Action, 8)
	failures := make([]error, len(got))
	params := mustStruct(t, url)
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctl := r.ctl
			if i%2 == 1 {
				ctl = other
			}
			got[i], _, failures[i] = ctl.ProposeAction(context.Background(), "agent", &stewardv1.ProposeActionRequest{TaskId: id, ProposalId: fmt.Sprintf("race-%d", i), Tool: "fetch",
				Params: params})
		}()
	}
	wg.Wait()
	for i, a := range got {
		if failures[i] != nil {
			t.Fatal(failures[i])
		}
		onFallback(t, a)
	}
	if n := r.Count(id, event.TypeFallbackEngaged); n != 1 {
		t.Fatalf("%d FallbackEngaged, want 1", n)
	}
}
