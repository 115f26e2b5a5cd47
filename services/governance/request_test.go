package governance_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/steward-run/steward/pkg/access"
	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/rpc"
)

// TestRenewalRequestIDRenewsOnce: ten identical renewals with one request
// id, at once, make one renewal and all answer with the credential it
// issued; the id with another reason or on another task is
// already_exists naming its first use, and appends nothing. Before, ten
// calls made ten renewals.
func TestRenewalRequestIDRenewsOnce(t *testing.T) {
	e := newHarness(t)
	e.start(t, credentialTTL(time.Hour))
	ctx := context.Background()
	operator := rpc.Identity{Principal: "user:op", Roles: []string{access.Operator}, Verified: true}
	renew := func(taskID, reason string) (*stewardv1.CredentialState, error) {
		return e.plane.RenewCredential(ctx, operator, &stewardv1.RenewCredentialRequest{TaskId: taskID, Reason: reason, RequestId: "renew-1"})
	}
	e.create(t, "long", "user:ana", credContract([]string{"search"}, nil))
	e.create(t, "other", "user:ana", credContract([]string{"search"}, nil))
	e.credentialed("long")
	e.credentialed("other")

	answers := make([]*stewardv1.CredentialState, 10)
	var wg sync.WaitGroup
	for i := range answers {
		wg.Go(func() {
			var err error
			if answers[i], err = renew("long", "still working"); err != nil {
				t.Errorf("renewal %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	for i, a := range answers {
		if a.GetRenewals() != 1 || !proto.Equal(a, answers[0]) {
			t.Errorf("answer %d: %d renewals, equal to the first %v; want the one renewal", i, a.GetRenewals(), proto.Equal(a, answers[0]))
		}
	}
	tk := e.WaitTask("long", func(*stewardv1.Task) bool { return true })
	if tk.Credential.Renewals != 1 {
		t.Fatalf("the task's credential was renewed %d times, want 1", tk.Credential.Renewals)
	}
	last, err := e.Log.LastTaskSequence(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if again, err := renew("long", "still working"); err != nil || !proto.Equal(again, answers[0]) {
		t.Errorf("a later repeat: %v, %v; want the first answer", err, again)
	}
	firstUse := fmt.Sprintf("request id %q was first used for RenewCredential on task long", "renew-1")
	for what, taskID := range map[string]string{"another reason": "long", "another task": "other"} {
		reason := "still working"
		if what == "another reason" {
			reason = "something else"
		}
		if _, err := renew(taskID, reason); !errs.Is(err, errs.AlreadyExists) || !strings.Contains(err.Error(), firstUse) {
			t.Errorf("%s: %v; want already exists: %s", what, err, firstUse)
		}
	}
	if seq, err := e.Log.LastTaskSequence(ctx); err != nil || seq != last {
		t.Errorf("repeats and refusals appended events (last sequence %d, was %d): %v", seq, last, err)
	}
}

// TestARefusedRenewalLeavesItsRequestIDFree: a renewal refused before it
// recorded anything (the task has ended) spends nothing. Found by an
// independent review: the release read a shadowed error and never ran.
func TestARefusedRenewalLeavesItsRequestIDFree(t *testing.T) {
	e := newHarness(t)
	e.start(t, credentialTTL(time.Hour))
	ctx := context.Background()
	operator := rpc.Identity{Principal: "user:op", Roles: []string{access.Operator}, Verified: true}
	e.create(t, "ended", "user:ana", credContract([]string{"search"}, nil))
	e.create(t, "live", "user:ana", credContract([]string{"search"}, nil))
	e.credentialed("ended")
	e.credentialed("live")
	e.Append("ended", &stewardv1.TaskCancelled{Reason: "done"})
	if _, err := e.plane.RenewCredential(ctx, operator, &stewardv1.RenewCredentialRequest{TaskId: "ended", Reason: "more", RequestId: "r"}); !errs.Is(err, errs.FailedPrecondition) {
		t.Fatalf("renewing an ended task: %v, want failed precondition", err)
	}
	if _, err := e.plane.RenewCredential(ctx, operator, &stewardv1.RenewCredentialRequest{TaskId: "live", Reason: "more", RequestId: "r"}); err != nil {
		t.Fatalf("the id on a task it may renew: %v", err)
	}
}
