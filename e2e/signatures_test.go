package e2e_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/steward-run/steward/cmd/steward/app"
	"github.com/steward-run/steward/pkg/credential"
	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/pkg/stores"
)

// forge appends payload to the task as one who can write to NATS would:
// naming governance, conditional on the task's last sequence like any
// writer, with no key.
func forge(t *testing.T, st *stores.Set, taskID string, payload event.Payload) {
	t.Helper()
	if _, err := st.Tasks.Update(context.Background(), taskID, func(*stewardv1.Task) (*stewardv1.Event, error) {
		return event.New(event.Meta{TaskID: taskID, Actor: &stewardv1.Actor{Principal: "user:mallory", Plane: event.PlaneGovernance}}, payload)
	}); err != nil {
		t.Fatalf("forge %T: %v", payload, err)
	}
}

// openStores opens the stores on js, as a writer of its own.
func openStores(t *testing.T, js jetstream.JetStream) *stores.Set {
	t.Helper()
	st, err := stores.Open(context.Background(), js, stores.Config{Logger: stewardtest.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	return st
}

// TestSignedApprovalsAndPermitsVerifyOffline runs the real binary: an
// approved wire and a plain search leave two signed permits and one
// signed decision, which `steward audit verify --trust-key` checks; an
// approval decision appended to the log by another hand gets no permit,
// nor does an expired permit forged after it, and the audit fails on the
// decision, naming it.
func TestSignedApprovalsAndPermitsVerifyOffline(t *testing.T) {
	tool := stewardtest.StartTool(t)
	h := startSteward(t, setup{tools: governedTools(tool), nats: true})
	id := governedTask(t, h.agent, "signed-1")
	approvedWire(t, h, id)
	search := propose(t, h.agent, id, "search-1", "search", map[string]any{"q": "x"})
	waitAction(t, h.agent.clients, id, search.ActionId, stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED)

	dir := t.TempDir()
	keyFile := filepath.Join(dir, "governance.pem")
	run(t, 0, "audit", "key", "--addr", h.url, "--token", agentToken, "--out", keyFile)
	export := func(name string) string {
		f := filepath.Join(dir, name)
		run(t, 0, "audit", "export", "--task", id, "--out", f, "--addr", h.url, "--token", agentToken)
		return f
	}
	good := export("good.events")
	if out := run(t, 0, "audit", "verify", "--file", good, "--trust-key", keyFile); !strings.Contains(out, "signatures: 2 permits, 1 approval decisions, 2 policy snapshots and 1 approval requests verified (trusted)") {
		t.Errorf("verify with the governance key:\n%s", out)
	}
	if out := run(t, 0, "audit", "verify", "--file", good); !strings.Contains(out, "signatures of permits, approval decisions, policy snapshots and approval requests not checked") {
		t.Errorf("verify without a key:\n%s", out)
	}
	pub, _, _ := ed25519.GenerateKey(rand.Reader)
	otherKey := filepath.Join(dir, "other.pem")
	writePublicKey(t, otherKey, pub)
	if out := run(t, 0, "audit", "verify", "--file", good, "--trust-key", otherKey, "--trust-key", keyFile); strings.Contains(out, "FAIL") {
		t.Errorf("verify with the governance key among others:\n%s", out)
	}

	// Someone who can write to NATS approves the next wire themselves.
	js, _ := h.events(t)
	st := openStores(t, js)
	wire2 := propose(t, h.agent, id, "wire-2", "wire", map[string]any{"amount": 6})
	_, a := waitAction(t, h.agent.clients, id, wire2.ActionId, stewardv1.ActionStatus_ACTION_STATUS_AWAITING_APPROVAL)
	forge(t, st, id, &stewardv1.ApprovalDecided{ApprovalId: a.Approval.ApprovalId, ActionId: wire2.ActionId, ActionHash: a.ActionHash,
		Decision: stewardv1.ApprovalDecision_APPROVAL_DECISION_APPROVE, DecidedBy: "user:mallory"})
	waitAction(t, h.agent.clients, id, wire2.ActionId, stewardv1.ActionStatus_ACTION_STATUS_APPROVED)
	(&stewardtest.Bus{JS: js}).Settle(t, "STEWARD_EVENTS", "governance")
	if _, a := waitAction(t, h.agent.clients, id, wire2.ActionId, stewardv1.ActionStatus_ACTION_STATUS_APPROVED); a.Permit != nil {
		t.Errorf("a forged approval was given permit %v", a.Permit)
	}
	// And then permits it, unsigned and expired, so that execution sends
	// the permit back to governance: which counts only votes that hold,
	// and asks for the approval again.
	snap := &stewardv1.PolicySnapshot{SnapshotId: "forged-snap", Decision: stewardv1.PolicyDecision_POLICY_DECISION_ALLOW}
	forge(t, st, id, &stewardv1.ActionPermitted{Snapshot: snap, Permit: &stewardv1.ActionPermit{
		PermitId: "forged-permit", ActionId: wire2.ActionId, ActionHash: a.ActionHash, RequestHash: a.RequestHash, SnapshotId: snap.SnapshotId,
		IssuedAt: timestamppb.New(time.Now().Add(-time.Hour)), ExpiresAt: timestamppb.New(time.Now().Add(-time.Minute)),
	}})
	if _, a := waitAction(t, h.agent.clients, id, wire2.ActionId, stewardv1.ActionStatus_ACTION_STATUS_AWAITING_APPROVAL); len(a.Approval.GetVotes()) != 0 {
		t.Errorf("after a forged vote and a forged permit, the approval asked again has votes %v", a.Approval.Votes)
	}
	if n := tool.Calls(); n != 2 {
		t.Errorf("the tool was called %d times; want 2, none for the forged approval or permit", n)
	}
	out := run(t, 3, "audit", "verify", "--file", export("forged.events"), "--trust-key", keyFile)
	if !strings.Contains(out, "approval decision on action "+wire2.ActionId+" does not hold") || !strings.Contains(out, "user:mallory") || !strings.Contains(out, "is not signed") {
		t.Errorf("verify a history with a forged approval:\n%s", out)
	}
}

// approvedWire proposes a wire in task id, has the approver approve it
// and waits for it to succeed; it returns the action as it awaited the
// approval.
func approvedWire(t *testing.T, h *harness, id string) *stewardv1.Action {
	t.Helper()
	wire := propose(t, h.agent, id, "wire-1", "wire", map[string]any{"amount": 5})
	_, a := waitAction(t, h.agent.clients, id, wire.ActionId, stewardv1.ActionStatus_ACTION_STATUS_AWAITING_APPROVAL)
	if _, err := h.approver.governance.DecideApproval(context.Background(), connect.NewRequest(&stewardv1.DecideApprovalRequest{
		ApprovalId: a.Approval.ApprovalId, ActionHash: a.ActionHash, Decision: stewardv1.ApprovalDecision_APPROVAL_DECISION_APPROVE,
	})); err != nil {
		t.Fatal(err)
	}
	waitAction(t, h.agent.clients, id, wire.ActionId, stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED)
	return a
}

// lockedLog is a process's log, kept for the test to read and shown in
// the test's log.
type lockedLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
	tw  *testWriter
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	l.buf.Write(p)
	l.mu.Unlock()
	return l.tw.Write(p)
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func writePublicKey(t *testing.T, path string, pub ed25519.PublicKey) {
	t.Helper()
	data, err := credential.MarshalPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Dir(path), filepath.Base(path), string(data))
}

// TestForgedPermitsAreNotExecuted runs the control, execution and state
// planes as `steward serve` does, with no governance plane, and the
// execution plane given governance's public key (--permit-key): permits
// appended to the log directly — unsigned, signed by another key, or a
// genuinely signed permit copied onto another action — are not executed,
// and each is logged; a genuinely signed one runs. The audit fails on the
// first forged permit of a history, naming it.
func TestForgedPermitsAreNotExecuted(t *testing.T) {
	tool := stewardtest.StartTool(t)
	bus := stewardtest.StartBus(t)
	dir := t.TempDir()
	_, govKey, _ := ed25519.GenerateKey(rand.Reader)
	governance := credential.NewSigner(govKey)
	keyFile := filepath.Join(dir, "governance.pem")
	writePublicKey(t, keyFile, governance.PublicKey())
	_, otherKey, _ := ed25519.GenerateKey(rand.Reader)
	forger := credential.NewSigner(otherKey)
	tools := writeFile(t, dir, "tools.json", `{"tools": [`+governedTools(tool)[0]+`]}`)

	urls := map[string]string{}
	execLog := &lockedLog{tw: &testWriter{tb: t}}
	for _, plane := range []string{"control", "execution", "state"} {
		var stderr io.Writer = &testWriter{tb: t}
		flags := []string{"--plane", plane, "--nats", bus.Server.ClientURL(), "--addr", "127.0.0.1:0", "--log-level", "warn", "--sandbox", t.TempDir(), "--insecure"}
		if plane == "execution" {
			stderr = execLog
			flags = append(flags, "--permit-key", keyFile, "--tools", tools)
		}
		m := app.NewServer(io.Discard, stderr)
		if err := m.ParseFlags("serve", flags); err != nil {
			t.Fatal(err)
		}
		if err := m.Run(context.Background()); err != nil {
			t.Fatalf("%s: %v", plane, err)
		}
		t.Cleanup(m.Close)
		urls[plane] = m.URL()
	}
	control, state := newClients(urls["control"]), newClients(urls["state"])
	st := openStores(t, bus.JS)

	// proposed opens a task with one search proposed, which no governance
	// decides, and returns it.
	proposed := func(requestID string) (string, *stewardv1.Action) {
		t.Helper()
		k := contract()
		k.AllowedTools = []string{"search"}
		resp, err := control.tasks.CreateTask(context.Background(), connect.NewRequest(&stewardv1.CreateTaskRequest{RequestId: requestID, Contract: k}))
		if err != nil {
			t.Fatal(err)
		}
		id := resp.Msg.Task.Contract.TaskId
		waitStatus(t, state, id, stewardv1.TaskStatus_TASK_STATUS_RUNNING)
		params, _ := structpb.NewStruct(map[string]any{"q": "x"})
		var a *stewardv1.Action
		stewardtest.Eventually(t, 10*time.Second, func() (bool, string) {
			p, err := control.tasks.ProposeAction(context.Background(), connect.NewRequest(&stewardv1.ProposeActionRequest{
				TaskId: id, ProposalId: requestID + "-search", Tool: "search", Target: "acct:42", Params: params,
			}))
			if err != nil {
				return false, err.Error() // the tool's registration may not be read yet
			}
			a = p.Msg.Action
			return true, ""
		})
		return id, a
	}
	// permit is the permit governance would issue for a, with its snapshot.
	permit := func(a *stewardv1.Action) *stewardv1.ActionPermitted {
		snap := &stewardv1.PolicySnapshot{SnapshotId: "snap-" + a.ActionId, Decision: stewardv1.PolicyDecision_POLICY_DECISION_ALLOW, EvaluatedAt: timestamppb.Now()}
		return &stewardv1.ActionPermitted{Snapshot: snap, Permit: &stewardv1.ActionPermit{
			PermitId: "permit-" + a.ActionId, ActionId: a.ActionId, ActionHash: a.ActionHash, RequestHash: a.RequestHash,
			SnapshotId: snap.SnapshotId, IssuedAt: timestamppb.Now(), ExpiresAt: timestamppb.New(time.Now().Add(time.Hour)),
		}}
	}
	sign := func(s *credential.Signer, pm *stewardv1.ActionPermit) *stewardv1.SignedPermit {
		sp, err := s.SignPermit(pm)
		if err != nil {
			t.Fatal(err)
		}
		return sp
	}

	// A permit signed with governance's key runs.
	goodTask, good := proposed("genuine")
	goodPermit := permit(good)
	goodPermit.Signed = sign(governance, goodPermit.Permit)
	forge(t, st, goodTask, goodPermit)
	waitAction(t, state, goodTask, good.ActionId, stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED)

	for _, tc := range []struct {
		name string
		sign func(*stewardv1.ActionPermitted)
		want string
	}{
		{"unsigned", func(*stewardv1.ActionPermitted) {}, "is not signed"},
		{"another key", func(pm *stewardv1.ActionPermitted) { pm.Signed = sign(forger, pm.Permit) }, "not trusted"},
		{"replayed", func(pm *stewardv1.ActionPermitted) { pm.Signed = goodPermit.Signed }, "was signed for action " + good.ActionId},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id, a := proposed("forged-" + strings.ReplaceAll(tc.name, " ", "-"))
			pm := permit(a)
			tc.sign(pm)
			forge(t, st, id, pm)
			stewardtest.Eventually(t, 10*time.Second, func() (bool, string) {
				logged := execLog.String()
				return strings.Contains(logged, "permit refused") && strings.Contains(logged, a.ActionId) && strings.Contains(logged, tc.want), logged
			})
			// The refused permit's event is held unacknowledged until the
			// permit expires (permitsig.go), so wait for delivery, not acks.
			bus.Delivered(t, "STEWARD_EVENTS", "execution")
			if _, got := waitAction(t, state, id, a.ActionId, stewardv1.ActionStatus_ACTION_STATUS_PERMITTED); got.ClaimedBy != "" || got.Attempt != 0 {
				t.Errorf("the forged permit was claimed by %q, attempt %d", got.ClaimedBy, got.Attempt)
			}
			f := filepath.Join(t.TempDir(), "forged.events")
			run(t, 0, "audit", "export", "--task", id, "--out", f, "--addr", urls["state"])
			out := run(t, 3, "audit", "verify", "--file", f, "--trust-key", keyFile)
			if !strings.Contains(out, "permit of action "+a.ActionId+" does not hold") || !strings.Contains(out, tc.want) {
				t.Errorf("verify:\n%s", out)
			}
		})
	}
	if n := tool.Calls(); n != 1 {
		t.Errorf("the tool was called %d times; want once, under the signed permit", n)
	}
}
