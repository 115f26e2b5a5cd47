package governance_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/task"
	"github.com/steward-run/steward/pkg/taskstore"
)

// TestForgedCredentialWithASeenSignature: governance once remembered
// verified credentials by their signature alone, so a CredentialIssued whose
// credential bytes are forged but which carries the signature of a
// credential already verified was taken as verified and its forged bounds
// (a scope, no expiry) used to permit. It must be denied.
func TestForgedCredentialWithASeenSignature(t *testing.T) {
	e := newGovEnv(t)
	e.start(t)
	ctx := context.Background()

	// A genuine task acts once: its credential's signature is now cached.
	e.create(t, "genuine", "user:ana", credContract([]string{"search"}, nil))
	genuine := e.credentialed("genuine")
	e.waitStatus("genuine", e.propose(t, "genuine", "s1", "search"), stewardv1.ActionStatus_ACTION_STATUS_PERMITTED)

	// Someone who can write to the log opens a task and gets a credential in
	// before governance: forged bytes, the genuine signature and key.
	var id string
	for i := 0; ; i++ {
		id = fmt.Sprint("forged-", i)
		c := credContract([]string{"search", "wire"}, nil)
		c.TaskId = id
		ev, _ := event.New(event.Meta{ID: event.ID(id, event.TypeTaskCreated), TaskID: id, Actor: &stewardv1.Actor{Principal: "user:mallory", Plane: event.PlaneControl}}, &stewardv1.TaskCreated{Contract: c})
		if _, err := e.Log.Append(ctx, eventlog.Head{}, ev); err != nil {
			t.Fatal(err)
		}
		fake := proto.CloneOf(genuine.Credential)
		fake.TaskId, fake.CredentialId = id, "cred-forged"
		fake.AllowedTools, fake.Scopes, fake.ExpiresAt = []string{"search", "wire"}, []string{"payments:write"}, nil
		fake.MaxTokens = 0
		data, _ := proto.MarshalOptions{Deterministic: true}.Marshal(fake)
		_, err := taskstore.Update(ctx, e.Log, id, func(*stewardv1.Task) (*stewardv1.Event, error) {
			// Names the plane that owns the type, as a forger would: the
			// signature is what must give it away.
			return event.New(event.Meta{TaskID: id, Actor: &stewardv1.Actor{Principal: "user:mallory", Plane: event.PlaneGovernance}}, &stewardv1.CredentialIssued{Credential: &stewardv1.SignedCredential{
				Credential: data, Signature: genuine.Signed.Signature, PublicKey: genuine.Signed.PublicKey}})
		})
		if err == nil {
			break
		}
		if !errs.Is(err, errs.FailedPrecondition) || i > 20 {
			t.Fatal(err)
		}
	}
	e.Append(id, &stewardv1.TaskStarted{})
	tk, _, _ := taskstore.Load(ctx, e.Log, id)
	t.Logf("task %s holds credential %s, scopes %v, expires %v", id, tk.Credential.Credential.CredentialId, tk.Credential.Credential.Scopes, tk.Credential.Credential.ExpiresAt)

	a := e.propose(t, id, "w1", "wire")
	got := e.WaitTask(id, func(tk *stewardv1.Task) bool {
		s := task.FindAction(tk, a).GetStatus()
		return s != stewardv1.ActionStatus_ACTION_STATUS_PROPOSED && s != stewardv1.ActionStatus_ACTION_STATUS_EVALUATED
	})
	act := task.FindAction(got, a)
	t.Logf("wire under the forged credential: %s %q", act.Status, denialOf(act))
	if act.Status != stewardv1.ActionStatus_ACTION_STATUS_DENIED || !strings.Contains(denialOf(act), "does not verify") {
		t.Fatalf("a forged credential was trusted: the action is %s", act.Status)
	}
}
