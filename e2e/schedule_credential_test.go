package e2e_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/durationpb"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// TestScheduleCredentialRevokedStopsIt: a schedule's run acts under a
// credential delegated from the schedule's; revoked by its creator with
// `steward schedules revoke` (a stranger may not), the schedule reads
// revoked, its next firing is recorded REVOKED with no run, and the run
// still going is denied its next action.
func TestScheduleCredentialRevokedStopsIt(t *testing.T) {
	h := startSteward(t, setup{tools: governedTools(stewardtest.StartTool(t))})
	ctx := context.Background()
	id := everyTwoSeconds(t, h, "revoked-later")
	get := func() *stewardv1.Schedule {
		r, err := h.agent.schedules.GetSchedule(ctx, connect.NewRequest(&stewardv1.GetScheduleRequest{ScheduleId: id}))
		if err != nil {
			t.Fatal(err)
		}
		return r.Msg.Schedule
	}
	var s *stewardv1.Schedule
	stewardtest.Eventually(t, 20*time.Second, func() (bool, string) {
		s = get()
		return s.RunsStarted >= 1 && s.Credential != nil, fmt.Sprintf("%d runs, credential %v", s.RunsStarted, s.Credential)
	})
	run := s.LastTaskId
	waitStarted(t, h.agent.clients, run)
	got, err := h.agent.query.GetTask(ctx, connect.NewRequest(&stewardv1.GetTaskRequest{TaskId: run}))
	if err != nil {
		t.Fatal(err)
	}
	if c := got.Msg.Task.GetCredential().GetCredential(); c.GetParentCredentialId() != s.Credential.Credential.CredentialId {
		t.Fatalf("run %s's credential %v is not delegated from schedule credential %s", run, c, s.Credential.Credential.CredentialId)
	}
	a := propose(t, h.agent, run, "search-1", "search", map[string]any{"q": "news"})
	waitAction(t, h.agent.clients, run, a.ActionId, stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED)

	agent, stranger := newPerson(t, h.url, agentToken), newPerson(t, h.url, ownerToken)
	if _, errOut := stranger.run(4, "schedules", "revoke", id, "--reason", "not mine"); !strings.Contains(errOut, "permission_denied") {
		t.Errorf("a stranger's revocation said %q", errOut)
	}
	if out, _ := agent.run(0, "schedules", "revoke", id, "--reason", "the feed was retired"); !strings.Contains(out, "of schedule "+id+" is revoked") {
		t.Errorf("schedules revoke printed %q", out)
	}
	runs := get().RunsStarted
	stewardtest.Eventually(t, 20*time.Second, func() (bool, string) {
		s = get()
		n := len(s.RecentFirings)
		return n > 0 && s.RecentFirings[n-1].Disposition == stewardv1.FiringDisposition_FIRING_DISPOSITION_REVOKED, "no REVOKED firing yet"
	})
	if s.RunsStarted != runs || s.Status != stewardv1.ScheduleStatus_SCHEDULE_STATUS_REVOKED || s.NextFiringTime != nil {
		t.Errorf("after the revocation: %d runs (was %d), %s, next %v", s.RunsStarted, runs, s.Status, s.NextFiringTime)
	}
	if out, _ := agent.run(0, "schedules", "get", id); !strings.Contains(out, "status:") || !strings.Contains(out, "revoked") || !strings.Contains(out, "the feed was retired") {
		t.Errorf("schedules get printed:\n%s", out)
	}
	b := propose(t, h.agent, run, "search-2", "search", map[string]any{"q": "more news"})
	_, denied := waitAction(t, h.agent.clients, run, b.ActionId, stewardv1.ActionStatus_ACTION_STATUS_DENIED)
	if why := denied.GetOutcome().GetReason(); !strings.Contains(why, "schedule "+id) {
		t.Errorf("the run's action after the revocation was denied saying %q", why)
	}
}

// everyTwoSeconds creates, as the agent, a schedule firing every two
// seconds whose runs have contract(), and returns its id.
func everyTwoSeconds(t *testing.T, h *harness, requestID string) string {
	t.Helper()
	resp, err := h.agent.schedules.CreateSchedule(context.Background(), connect.NewRequest(&stewardv1.CreateScheduleRequest{
		RequestId: requestID,
		Spec:      &stewardv1.ScheduleSpec{Every: &stewardv1.ScheduleSpec_Interval{Interval: durationpb.New(2 * time.Second)}},
		Template:  &stewardv1.ScheduleTemplate{Contract: contract()},
	}))
	if err != nil {
		t.Fatal(err)
	}
	return resp.Msg.Schedule.ScheduleId
}
