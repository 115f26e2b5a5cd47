package control_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/services/control"
)

// TestErrorsEchoLittleOfTheInput: a refusal that names the bad value
// quotes at most errs.MaxEcho bytes of it, however long it is, so an
// answer never grows with the input.
func TestErrorsEchoLittleOfTheInput(t *testing.T) {
	ctx := context.Background()
	ctl := newHarness(t).ctl
	long := strings.Repeat("x", control.MaxRefLen)
	for _, tc := range []struct {
		name, field string
		call        func() error
	}{
		{"a uri that is not one", "uri", func() error {
			_, _, err := ctl.SubmitArtifact(ctx, "agent", &stewardv1.SubmitArtifactRequest{
				TaskId: "t1", Name: "report", MediaType: "text/plain", Uri: strings.Repeat("u", 4000)})
			return err
		}},
		{"a reserved proposal id", "proposal_id", func() error {
			_, _, err := ctl.ProposeAction(ctx, "agent", &stewardv1.ProposeActionRequest{
				TaskId: "t1", ProposalId: "compensate-" + long[:200], Tool: "search"})
			return err
		}},
		{"the requester as the acceptance owner", "contract.acceptance_owner_ref", func() error {
			req := validRequest("echo")
			req.Contract.RequesterRef, req.Contract.AcceptanceOwnerRef, req.Contract.SeparationOfDuties = long, long, true
			_, _, err := ctl.CreateTask(ctx, "t", req)
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			var e *errs.Error
			if !errors.As(err, &e) || e.Field != tc.field {
				t.Fatalf("err = %v, want one naming %s", err, tc.field)
			}
			if len(e.Message) > errs.MaxEcho+100 || !strings.Contains(e.Message, "…") {
				t.Errorf("the message is %d bytes; want the value cut at %d: %s", len(e.Message), errs.MaxEcho, e.Message)
			}
		})
	}
}
