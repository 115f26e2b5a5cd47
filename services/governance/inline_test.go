package governance_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/steward-run/steward/pkg/action"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// TestApprovalShowsParametersInlineOrStored: governance reads a small
// request from the proposal and a large one from the store, and the
// approver sees the parameters either way.
func TestApprovalShowsParametersInlineOrStored(t *testing.T) {
	for _, c := range []struct {
		name   string
		memo   string
		inline bool
	}{
		{"small, inline", "rent", true},
		{"large, stored", strings.Repeat("r", action.MaxInlineRequest), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newHarness(t)
			e.start(t)
			e.create(t, "t", "user:ana", credContract([]string{"wire"}, []string{"payments:write"}))
			e.credentialed("t")
			params := map[string]any{"memo": c.memo}
			wire := e.proposeAction(t, "t", "w1", "wire", "", "agent", params)
			a := e.waitStatus("t", wire, stewardv1.ActionStatus_ACTION_STATUS_AWAITING_APPROVAL)
			if got := len(a.Request) > 0 && a.RequestRef == ""; got != c.inline {
				t.Fatalf("ref %q, %d inline bytes; want inline %v", a.RequestRef, len(a.Request), c.inline)
			}
			want, _ := json.Marshal(params)
			if got := a.Approval.GetParametersJson(); got != string(want) {
				t.Fatalf("approval shows %s, want %s", got, want)
			}
		})
	}
}
