package e2e_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"

	"connectrpc.com/connect"
	"github.com/steward-run/steward/pkg/action"
)

// The checks the crash matrix makes after each restart.

// checkStep: the one action is done, in a running task, and came to
// succeed as settle says; a settlement by status query asked the tool at
// least asks times, after an unknown outcome on the ledger.
func checkStep(t *testing.T, r *crashRun, tk *stewardv1.Task, history []*stewardv1.EventRecord, settle settlement, asks int) {
	t.Helper()
	if tk.Status != stewardv1.TaskStatus_TASK_STATUS_RUNNING {
		t.Errorf("task is %v after recovery, want RUNNING", tk.Status)
	}
	if len(tk.Actions) != 1 {
		t.Fatalf("task has %d actions, want 1:\n%s", len(tk.Actions), describeActions(tk))
	}
	a := tk.Actions[0]
	if settle == eitherWay {
		settle = byAnswer
		if a.SettledBy != "" {
			settle = byStatusQuery
		}
	}
	got := r.tool.Asks(a.OpKey)
	switch settle {
	case byAnswer:
		if a.SettledBy != "" || got != 0 {
			t.Errorf("action settled by %q after %d status queries; want its outcome from the call's answer, with no query", a.SettledBy, got)
		}
	case byStatusQuery:
		if a.SettledBy != statusQuerySettler || got < asks {
			t.Errorf("action settled by %q after %d status queries; want %q after at least %d", a.SettledBy, got, statusQuerySettler, asks)
		}
		if !hasUnknownOutcome(history, a.ActionId) {
			t.Errorf("action %s was settled, but the ledger has no unknown outcome before the settlement", a.ActionId)
		}
	}
}

func hasUnknownOutcome(history []*stewardv1.EventRecord, actionID string) bool {
	for _, rec := range history {
		o := rec.Event.GetActionOutcomeRecorded()
		if o.GetActionId() == actionID && o.GetOutcome().GetStatus() == stewardv1.ActionStatus_ACTION_STATUS_UNKNOWN {
			return true
		}
	}
	return false
}

// checkCompensation: the task failed after both reservations were undone,
// newest first, each once, each compensation proposed once.
func checkCompensation(t *testing.T, r *crashRun, tk *stewardv1.Task, history []*stewardv1.EventRecord) {
	t.Helper()
	r1, r2 := byProposal(tk, "reserve-1"), byProposal(tk, "reserve-2")
	if r1 == nil || r2 == nil {
		t.Fatalf("the reservations are missing:\n%s", describeActions(tk))
	}
	if len(tk.Compensations) != 0 {
		t.Errorf("compensations still to run on a failed task: %v", tk.Compensations)
	}
	if want, undone := []string{r2.ActionId, r1.ActionId}, undone(r.tool); !slices.Equal(undone, want) {
		t.Errorf("the tool undid %v, want %v (newest first, each once)", undone, want)
	}
	var proposed []string
	for _, rec := range history {
		if a := rec.Event.GetActionProposed().GetAction(); a.GetCompensates() != "" {
			proposed = append(proposed, a.Compensates)
		}
	}
	if want := []string{r2.ActionId, r1.ActionId}; !slices.Equal(proposed, want) {
		t.Errorf("compensations proposed for %v, want %v", proposed, want)
	}
	for _, typ := range []string{"task.compensating", "task.failed"} {
		if n := countType(history, typ); n != 1 {
			t.Errorf("%d %s events, want 1", n, typ)
		}
	}
}

func countType(history []*stewardv1.EventRecord, typ string) int {
	n := 0
	for _, rec := range history {
		if rec.Event.GetType() == typ {
			n++
		}
	}
	return n
}

// checkTool checks what the tool saw against the ledger and returns the
// duplicates: effective executions beyond one per action (a second op_key
// for one action), plus requests beyond one per key (a dispatch repeated
// instead of settled by asking). Every action must have succeeded, with
// the op_key derived from its id, worked exactly once.
func checkTool(t *testing.T, r *crashRun, tk *stewardv1.Task) (duplicates int) {
	t.Helper()
	byAction := map[string]int{}
	byKey := map[string]int{}
	for _, w := range r.tool.Worked() {
		byAction[w.ActionID]++
		byKey[w.Key]++
	}
	keys := map[string]bool{}
	for _, a := range tk.Actions {
		keys[a.OpKey] = true
		if a.Status != stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED {
			t.Errorf("action %s (%s) is %v, want SUCCEEDED", a.ActionId, a.Tool, a.Status)
		}
		if want := action.OpKey(r.taskID, a.ActionId); a.OpKey != want {
			t.Errorf("action %s has op_key %s, want %s", a.ActionId, a.OpKey, want)
		}
		if n := byKey[a.OpKey]; n != 1 {
			t.Errorf("the tool worked op_key of action %s %d times, want exactly 1", a.ActionId, n)
		}
		if n := byAction[a.ActionId]; n > 1 {
			t.Errorf("the tool worked action %s %d times (under several keys)", a.ActionId, n)
			duplicates += n - 1
		}
		if n := postsFor(r.tool, a.OpKey); n > 1 {
			t.Errorf("the tool got %d requests for action %s's op_key, want 1", n, a.ActionId)
			duplicates += n - 1
		}
	}
	for key, n := range byKey {
		if !keys[key] {
			t.Errorf("the tool worked op_key %s (%d times), which no action of the task has", key, n)
			duplicates += n
		}
	}
	return duplicates
}

// settledHistory replays the task's events until the projection has them
// all (same event count and last sequence), and returns both.
func settledHistory(t *testing.T, c clients, taskID string) ([]*stewardv1.EventRecord, *stewardv1.Task) {
	t.Helper()
	var history []*stewardv1.EventRecord
	var tk *stewardv1.Task
	stewardtest.Eventually(t, 5*time.Second, func() (bool, string) {
		history = replayTask(t, c, taskID)
		tk = getTask(t, c, taskID)
		return int(tk.EventCount) == len(history) && tk.LastSequence == lastSequence(history),
			fmt.Sprintf("the projection says %d events up to sequence %d; the log has %d up to %d",
				tk.EventCount, tk.LastSequence, len(history), lastSequence(history))
	})
	return history, tk
}

func replayTask(t *testing.T, c clients, taskID string) []*stewardv1.EventRecord {
	t.Helper()
	stream, err := c.audit.ReplayTask(context.Background(), connect.NewRequest(&stewardv1.ReplayTaskRequest{TaskId: taskID}))
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	var history []*stewardv1.EventRecord
	for stream.Receive() {
		rec := stream.Msg().Record
		if rec.GetEvent() == nil {
			t.Fatalf("replay: the event at sequence %d does not verify", rec.GetSequence())
		}
		history = append(history, rec)
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	return history
}

// checkHistory checks the log after the restart and returns how many
// events seen before the crash are missing from it: event ids are unique,
// sequences rise, each ledger step is on the log once, each done action
// has every step, and every event seen before the crash is still there at
// its sequence.
func checkHistory(t *testing.T, r *crashRun, tk *stewardv1.Task, history, seen []*stewardv1.EventRecord) (lost int) {
	t.Helper()
	at := map[string]uint64{}
	steps := map[string]int{}
	var prev uint64
	for _, rec := range history {
		id := rec.Event.EventId
		if _, dup := at[id]; dup {
			t.Errorf("event %s (%s) is on the log twice", id, rec.Event.Type)
		}
		at[id] = rec.Sequence
		if rec.Sequence <= prev {
			t.Errorf("sequence %d follows %d", rec.Sequence, prev)
		}
		prev = rec.Sequence
		// Each plane emits only what it owns; the real binary's log, not
		// only the fold's check, shows it.
		if plane, owner := rec.Event.GetActor().GetPlane(), event.Owner(rec.Event.Type); plane != owner {
			t.Errorf("event %s (%s) is recorded by the %q plane; it is the %s plane's", id, rec.Event.Type, plane, owner)
		}
		for _, k := range stepKeys(rec.Event) {
			steps[k]++
		}
	}
	for k, n := range steps {
		if n != 1 {
			t.Errorf("ledger step %s is on the log %d times", k, n)
		}
	}
	// One claim per permit: an ActionClaimed, or the first dispatch under
	// the permit, which carries it; never a claim of a permit claimed
	// before in either form.
	claimed := map[string]string{}
	for _, rec := range history {
		if c := rec.Event.GetActionClaimed(); c != nil {
			if by, ok := claimed[c.PermitId]; ok {
				t.Errorf("permit %s of action %s is claimed by %s after %s claimed it", c.PermitId, c.ActionId, c.Worker, by)
			}
			claimed[c.PermitId] = c.Worker
		}
		if d := rec.Event.GetActionDispatched(); d.GetPermitId() != "" {
			if _, ok := claimed[d.PermitId]; !ok {
				claimed[d.PermitId] = d.Worker
			}
		}
	}
	for _, a := range tk.Actions {
		for _, typ := range []string{"action.proposed", "action.policy_evaluated", "action.permitted"} {
			if !hasStep(steps, typ+" "+a.ActionId) {
				t.Errorf("action %s has no %s on the log", a.ActionId, typ)
			}
		}
		// The claim: an action.claimed step, or the first dispatch under a
		// permit, which carries it.
		if len(claimsOf(history, a.ActionId)) == 0 {
			t.Errorf("action %s has no claim on the log: no action.claimed, and no dispatch carrying one", a.ActionId)
		}
		if steps[fmt.Sprintf("action.dispatched %s #%d", a.ActionId, a.Attempt)] != 1 || steps[fmt.Sprintf("action.outcome %s #%d", a.ActionId, a.Attempt)] != 1 {
			t.Errorf("action %s has no dispatch and outcome of attempt %d on the log", a.ActionId, a.Attempt)
		}
	}
	for _, rec := range seen {
		if seq, ok := at[rec.Event.EventId]; !ok || seq != rec.Sequence {
			t.Errorf("event %s (%s, sequence %d) was seen before the crash and is not on the log after it", rec.Event.EventId, rec.Event.Type, rec.Sequence)
			lost++
		}
	}
	return lost
}

// hasStep reports whether steps has key, alone or with a permit or
// snapshot after it.
func hasStep(steps map[string]int, key string) bool {
	for k := range steps {
		if k == key || strings.HasPrefix(k, key+" ") {
			return true
		}
	}
	return false
}

// stepKeys names the ledger steps an event records: none for heartbeats
// and task events, two for a permit that carries its snapshot (the
// snapshot is named as PolicyEvaluated names it, so that a snapshot
// recorded both alone and with a permit counts twice), one otherwise.
func stepKeys(ev *stewardv1.Event) []string {
	k := stepKey(ev)
	if k == "" {
		return nil
	}
	if snap := ev.GetActionPermitted().GetSnapshot(); snap != nil {
		return []string{k, event.TypePolicyEvaluated + " " + ev.GetActionPermitted().GetPermit().GetActionId() + " " + snap.GetSnapshotId()}
	}
	return []string{k}
}

// stepKey names the ledger step an event records, or "" if it records
// none (heartbeats, task events). A revalidated action has a snapshot, a
// permit and a claim per permit: those steps are named with theirs.
func stepKey(ev *stewardv1.Event) string {
	var id string
	var attempt uint32
	switch {
	case ev.GetActionProposed() != nil:
		id = ev.GetActionProposed().GetAction().GetActionId()
	case ev.GetPolicyEvaluated() != nil:
		id = ev.GetPolicyEvaluated().GetActionId() + " " + ev.GetPolicyEvaluated().GetSnapshot().GetSnapshotId()
	case ev.GetActionPermitted() != nil:
		id = ev.GetActionPermitted().GetPermit().GetActionId() + " " + ev.GetActionPermitted().GetPermit().GetPermitId()
	case ev.GetActionClaimed() != nil:
		id = ev.GetActionClaimed().GetActionId() + " " + ev.GetActionClaimed().GetPermitId()
	case ev.GetActionRevalidating() != nil:
		id = ev.GetActionRevalidating().GetActionId() + " " + ev.GetActionRevalidating().GetPermitId()
	case ev.GetActionDispatched() != nil:
		id, attempt = ev.GetActionDispatched().GetActionId(), ev.GetActionDispatched().GetAttempt()
	case ev.GetActionOutcomeRecorded() != nil:
		id, attempt = ev.GetActionOutcomeRecorded().GetActionId(), ev.GetActionOutcomeRecorded().GetOutcome().GetAttempt()
	case ev.GetActionSettled() != nil:
		id = ev.GetActionSettled().GetActionId()
	default:
		return ""
	}
	if attempt > 0 {
		return fmt.Sprintf("%s %s #%d", ev.Type, id, attempt)
	}
	return ev.Type + " " + id
}

// verifyChain checks the task's hash chain over all n events.
func verifyChain(t *testing.T, c clients, taskID string, n int) {
	t.Helper()
	v, err := c.audit.VerifyTask(context.Background(), connect.NewRequest(&stewardv1.VerifyTaskRequest{TaskId: taskID}))
	if err != nil {
		t.Fatal(err)
	}
	if !v.Msg.Ok || int(v.Msg.EventCount) != n {
		t.Errorf("VerifyTask: ok=%v over %d events (want %d), break %v", v.Msg.Ok, v.Msg.EventCount, n, v.Msg.Break)
	}
}

// firstProgress is how long after the restart the task's next event was
// appended; false if none was.
func firstProgress(history []*stewardv1.EventRecord, restart time.Time) (time.Duration, bool) {
	for _, rec := range history {
		if at := rec.Event.Time.AsTime(); !at.Before(restart) {
			return at.Sub(restart), true
		}
	}
	return 0, false
}

func lastSequence(history []*stewardv1.EventRecord) uint64 {
	if len(history) == 0 {
		return 0
	}
	return history[len(history)-1].Sequence
}
