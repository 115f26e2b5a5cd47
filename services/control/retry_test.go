package control_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// TestRetryPolicyOnlyNarrows proposes actions on a tool whose retry
// policy is 5 attempts, 1s–30s backoff, 5m in all.
func TestRetryPolicyOnlyNarrows(t *testing.T) {
	r := newHarness(t)
	id := r.runningTask(t, "retry", stewardv1.RecoveryMode_RECOVERY_MODE_RETRY, nil)
	tool := &stewardv1.RetryPolicy{MaxAttempts: 5, InitialBackoff: dur(time.Second), MaxBackoff: dur(30 * time.Second), MaxElapsed: dur(5 * time.Minute)}
	tests := []struct {
		name  string
		tool  string
		req   *stewardv1.RetryPolicy
		want  *stewardv1.RetryPolicy // the action's policy
		field string                 // or the field refused
	}{
		{"none asked: the tool's", "net", nil, tool, ""},
		{"lower", "net", &stewardv1.RetryPolicy{MaxAttempts: 2, MaxBackoff: dur(10 * time.Second)},
			&stewardv1.RetryPolicy{MaxAttempts: 2, InitialBackoff: dur(time.Second), MaxBackoff: dur(10 * time.Second), MaxElapsed: dur(5 * time.Minute)}, ""},
		{"equal", "net", tool, tool, ""},
		{"a tool without a policy takes the request's", "search", &stewardv1.RetryPolicy{MaxAttempts: 9}, &stewardv1.RetryPolicy{MaxAttempts: 9}, ""},
		{"no policy anywhere", "search", &stewardv1.RetryPolicy{}, nil, ""},
		{"more attempts", "net", &stewardv1.RetryPolicy{MaxAttempts: 6}, nil, "retry_policy.max_attempts"},
		{"longer initial backoff", "net", &stewardv1.RetryPolicy{InitialBackoff: dur(2 * time.Minute)}, nil, "retry_policy.initial_backoff"},
		{"longer max backoff", "net", &stewardv1.RetryPolicy{MaxBackoff: dur(time.Hour)}, nil, "retry_policy.max_backoff"},
		{"longer elapsed", "net", &stewardv1.RetryPolicy{MaxElapsed: dur(10 * time.Minute)}, nil, "retry_policy.max_elapsed"},
		{"negative", "net", &stewardv1.RetryPolicy{InitialBackoff: dur(-time.Second)}, nil, "retry_policy.initial_backoff"},
		{"invalid duration", "net", &stewardv1.RetryPolicy{MaxElapsed: &durationpb.Duration{Seconds: 1, Nanos: -1}}, nil, "retry_policy.max_elapsed"},
		{"a nanosecond backoff", "search", &stewardv1.RetryPolicy{InitialBackoff: dur(time.Nanosecond)}, nil, "retry_policy.initial_backoff"},
		{"a backoff of 10,000 years", "search", &stewardv1.RetryPolicy{MaxBackoff: &durationpb.Duration{Seconds: 10_000 * 365 * 24 * 3600}}, nil, "retry_policy.max_backoff"},
		{"a nanosecond to retry in", "search", &stewardv1.RetryPolicy{MaxElapsed: dur(time.Nanosecond)}, nil, "retry_policy.max_elapsed"},
		{"max backoff under the initial", "net", &stewardv1.RetryPolicy{MaxBackoff: dur(500 * time.Millisecond)}, nil, "retry_policy.max_backoff"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, _, err := r.ctl.ProposeAction(context.Background(), "agent", &stewardv1.ProposeActionRequest{
				TaskId: id, Tool: tt.tool, RetryPolicy: tt.req})
			if tt.field != "" {
				var e *errs.Error
				if !errors.As(err, &e) || e.Code != errs.Invalid || e.Field != tt.field {
					t.Fatalf("err = %v, want invalid naming %s", err, tt.field)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !proto.Equal(a.RetryPolicy, tt.want) {
				t.Fatalf("retry policy %v, want %v", a.RetryPolicy, tt.want)
			}
		})
	}
}

// TestProposalRepeatWithOtherRetryPolicy: the same proposal id with a
// different retry policy is not the same proposal.
func TestProposalRepeatWithOtherRetryPolicy(t *testing.T) {
	r := newHarness(t)
	id := r.runningTask(t, "retry-repeat", stewardv1.RecoveryMode_RECOVERY_MODE_RETRY, nil)
	ctx := context.Background()
	req := &stewardv1.ProposeActionRequest{TaskId: id, ProposalId: "p", Tool: "net", RetryPolicy: &stewardv1.RetryPolicy{MaxAttempts: 2}}
	if _, _, err := r.ctl.ProposeAction(ctx, "agent", req); err != nil {
		t.Fatal(err)
	}
	if _, created, err := r.ctl.ProposeAction(ctx, "agent", req); err != nil || created {
		t.Fatalf("repeat: created %v, %v", created, err)
	}
	req.RetryPolicy.MaxAttempts = 3
	if _, _, err := r.ctl.ProposeAction(ctx, "agent", req); !errs.Is(err, errs.AlreadyExists) {
		t.Fatalf("repeat with another policy: %v, want already exists", err)
	}
	req.ProposalId = "compensate-x"
	if _, _, err := r.ctl.ProposeAction(ctx, "agent", req); !errs.Is(err, errs.Invalid) {
		t.Fatalf("reserved proposal id: %v, want invalid", err)
	}
}
