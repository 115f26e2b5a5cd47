package e2e_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/steward-run/steward/pkg/audit"
	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// TestSignedSnapshotsAndRequestsVerifyOffline runs the real binary: an
// approved wire leaves two signed policy snapshots (on proposal, after
// the approval) and one signed approval request, which `steward audit
// verify --file --trust-key` checks. A history rewritten by one who holds
// no key — the approval request showing a harmless search, or a snapshot
// saying allow, each with governance's signature kept and the hash chain
// sealed again after it — fails, naming the event, its place and what
// does not hold.
func TestSignedSnapshotsAndRequestsVerifyOffline(t *testing.T) {
	tool := stewardtest.StartTool(t)
	h := startSteward(t, setup{tools: governedTools(tool)})
	id := governedTask(t, h.agent, "signed-terms-1")
	a := approvedWire(t, h, id)

	dir := t.TempDir()
	keyFile := filepath.Join(dir, "governance.pem")
	run(t, 0, "audit", "key", "--addr", h.url, "--token", agentToken, "--out", keyFile)
	good := filepath.Join(dir, "good.events")
	run(t, 0, "audit", "export", "--task", id, "--out", good, "--addr", h.url, "--token", agentToken)
	if out := run(t, 0, "audit", "verify", "--file", good, "--trust-key", keyFile); !strings.Contains(out, "2 policy snapshots and 1 approval requests verified (trusted)") {
		t.Errorf("verify with the governance key:\n%s", out)
	}
	if out := run(t, 0, "audit", "verify", "--file", good); !strings.Contains(out, "policy snapshots and approval requests not checked") {
		t.Errorf("verify without a key:\n%s", out)
	}

	for _, tc := range []struct {
		name, want string
		is         func(*stewardv1.Event) bool
		forge      func(*stewardv1.Event)
	}{
		{"false terms shown", "approval request " + a.Approval.ApprovalId + " does not hold",
			func(ev *stewardv1.Event) bool { return ev.GetApprovalRequested() != nil },
			func(ev *stewardv1.Event) {
				ap := ev.GetApprovalRequested().Approval
				ap.Tool, ap.Target, ap.ParametersJson = "search", "acct:own", `{"q":"balance"}`
			}},
		{"snapshot says allow", "policy snapshot of action " + a.ActionId + " does not hold",
			func(ev *stewardv1.Event) bool { return ev.GetPolicyEvaluated() != nil },
			func(ev *stewardv1.Event) {
				ev.GetPolicyEvaluated().Snapshot.Decision = stewardv1.PolicyDecision_POLICY_DECISION_ALLOW
			}},
		{"a signature byte flipped", "policy snapshot of action " + a.ActionId + " does not hold",
			func(ev *stewardv1.Event) bool { return ev.GetPolicyEvaluated() != nil },
			func(ev *stewardv1.Event) {
				ev.GetPolicyEvaluated().Signed.Signature[0] ^= 1
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			forged, index, eventID := rewrite(t, good, tc.is, tc.forge)
			f := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-")+".events")
			if err := os.WriteFile(f, forged, 0o600); err != nil {
				t.Fatal(err)
			}
			out := run(t, 3, "audit", "verify", "--file", f, "--trust-key", keyFile)
			where := fmt.Sprintf("event %d (%s)", index, eventID)
			if !strings.Contains(out, where) || !strings.Contains(out, tc.want) {
				t.Errorf("verify a history with %s: want %q at %q:\n%s", tc.name, tc.want, where, out)
			}
			// Without a key only the chain is checked, and it was sealed again.
			run(t, 0, "audit", "verify", "--file", f)
		})
	}
}

// rewrite is the export file at path with the first event that is
// changed by forge and the hash chain sealed again from there, as one
// holding no key can; it returns the bytes, the event's index and id.
func rewrite(t *testing.T, path string, is func(*stewardv1.Event) bool, forge func(*stewardv1.Event)) ([]byte, int, string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	events, err := audit.ReadEvents(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	var prev []byte
	index, eventID := -1, ""
	for i, raw := range events {
		ev := &stewardv1.Event{}
		if err := proto.Unmarshal(raw, ev); err != nil {
			t.Fatal(err)
		}
		if index < 0 && is(ev) {
			forge(ev)
			index, eventID = i, ev.EventId
		}
		sealed, err := event.Seal(ev, prev)
		if err != nil {
			t.Fatal(err)
		}
		prev = ev.Hash
		if err := audit.WriteEvent(&out, sealed); err != nil {
			t.Fatal(err)
		}
	}
	if index < 0 {
		t.Fatal("no event to forge in the export")
	}
	return out.Bytes(), index, eventID
}
