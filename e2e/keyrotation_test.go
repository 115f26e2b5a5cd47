package e2e_test

import (
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"

	"connectrpc.com/connect"

	"github.com/steward-run/steward/pkg/credential"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// rotation is steward dev over one data directory, stopped and started
// again with other key flags, as an operator rotates a key
// (docs/keys.md), with a task whose wire waits for its approval across
// the restart.
type rotation struct {
	t               *testing.T
	dir, data       string
	tool            *stewardtest.Tool
	tools, tokens   string
	flags           []string // the last start's
	p               *proc
	agent, approver authed
	taskID          string
	wire            *stewardv1.Action
}

// rotationWireSchema marks the wire's pin secret (docs/secrets.md).
const rotationWireSchema = `{"type":"object","required":["amount"],"properties":{"amount":{"type":"integer","minimum":1},"pin":{"type":"string","writeOnly":true}}}`

// newRotation writes the tools and tokens files; the wire is called at
// wireURL, the reference tool's /wire when empty.
func newRotation(t *testing.T, wireURL string) *rotation {
	r := &rotation{t: t, dir: t.TempDir(), tool: stewardtest.StartTool(t)}
	if wireURL == "" {
		wireURL = r.tool.URL + "/wire"
	}
	r.data = filepath.Join(r.dir, "data")
	r.tools = writeFile(t, r.dir, "tools.json", fmt.Sprintf(`{"tools": [
	  {"name": "search", "version": "1.0.0", "effectClass": "EFFECT_CLASS_READ", "dataSensitivity": "DATA_SENSITIVITY_INTERNAL", "http": {"url": %q}},
	  {"name": "wire", "version": "1.0.0", "effectClass": "EFFECT_CLASS_IRREVERSIBLE", "dataSensitivity": "DATA_SENSITIVITY_CONFIDENTIAL",
	   "parametersSchema": %q, "http": {"url": %q}}]}`, r.tool.URL+"/search", rotationWireSchema, wireURL))
	r.tokens = writeFile(t, r.dir, "tokens.json", tokensFile)
	return r
}

// start (re)starts the binary with flags.
func (r *rotation) start(flags ...string) {
	if r.p != nil {
		r.p.stop(r.t)
	}
	r.flags = flags
	r.p = startBinary(r.t, r.data, append([]string{"--tools", r.tools, "--auth", r.tokens}, flags...)...)
	r.agent, r.approver = withToken(r.p.url, agentToken), withToken(r.p.url, approverToken)
}

// inFlight creates the task and proposes its wire, which waits for an
// approval.
func (r *rotation) inFlight(params map[string]any) {
	r.taskID = governedTask(r.t, r.agent, "rotation")
	r.wire = propose(r.t, r.agent, r.taskID, "wire-1", "wire", params)
	_, r.wire = waitAction(r.t, r.agent.clients, r.taskID, r.wire.ActionId, stewardv1.ActionStatus_ACTION_STATUS_AWAITING_APPROVAL)
}

// approve approves the wire and waits for it to succeed; it returns what
// the tool received.
func (r *rotation) approve() map[string]any {
	r.t.Helper()
	return r.approveAs(r.approver)
}

// approveAs is approve by approver.
func (r *rotation) approveAs(approver authed) map[string]any {
	r.t.Helper()
	if _, err := approver.governance.DecideApproval(context.Background(), connect.NewRequest(&stewardv1.DecideApprovalRequest{
		ApprovalId: r.wire.Approval.ApprovalId, ActionHash: r.wire.ActionHash, Decision: stewardv1.ApprovalDecision_APPROVAL_DECISION_APPROVE,
	})); err != nil {
		r.t.Fatal(err)
	}
	waitAction(r.t, r.agent.clients, r.taskID, r.wire.ActionId, stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED)
	for _, w := range r.tool.Worked() {
		if w.ActionID == r.wire.ActionId {
			var params map[string]any
			if err := json.Unmarshal(w.Params, &params); err != nil {
				r.t.Fatal(err)
			}
			return params
		}
	}
	r.t.Fatalf("the tool did no work for the wire %s", r.wire.ActionId)
	return nil
}

// rotationKeyFiles makes an Ed25519 key (PEM) and its public half (hex) in dir.
func rotationKeyFiles(t *testing.T, dir, name string) (private, public string, pub ed25519.PublicKey) {
	t.Helper()
	private = filepath.Join(dir, name+".key")
	key, _, err := credential.LoadOrCreateKey(private)
	if err != nil {
		t.Fatal(err)
	}
	pub = key.Public().(ed25519.PublicKey)
	return private, writeFile(t, dir, name+".pub", hex.EncodeToString(pub)+"\n"), pub
}

// TestCredentialKeyRotation: governance restarted with a new credential
// key and the old one's public half as --credential-trust-key keeps the
// task whose credential the old key signed working: its wire, waiting for
// an approval across the restart, runs once approved, and a new proposal
// of the same task is permitted; the key governance publishes is the new
// one.
func TestCredentialKeyRotation(t *testing.T) {
	r := newRotation(t, "")
	oldKey, oldPub, _ := rotationKeyFiles(t, r.dir, "credential-old")
	newKey, _, newPub := rotationKeyFiles(t, r.dir, "credential-new")
	r.start("--credential-key", oldKey)
	r.inFlight(map[string]any{"amount": 5})

	r.start("--credential-key", newKey, "--credential-trust-key", oldPub)
	k, err := r.agent.governance.GetCredentialKey(context.Background(), connect.NewRequest(&stewardv1.GetCredentialKeyRequest{}))
	if err != nil || !ed25519.PublicKey(k.Msg.PublicKey).Equal(newPub) {
		t.Fatalf("GetCredentialKey = %v, %v; want the new key", k, err)
	}
	r.approve()
	read := propose(t, r.agent, r.taskID, "search-after", "search", map[string]any{"q": "x"})
	waitAction(t, r.agent.clients, r.taskID, read.ActionId, stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED)
}

// TestSecretKeyRotation: control and execution restarted with a new
// secret key and the old one as --secret-key-earlier open the secret
// parameter sealed under the old key, so the wire proposed before the
// restart and approved after it reaches the tool with its pin in clear; a
// proposal after the restart commits and seals under the new key (another
// commitment for the same value), and runs too.
func TestSecretKeyRotation(t *testing.T) {
	r := newRotation(t, "")
	oldKey := writeFile(t, r.dir, "secret-old.key", "0101010101010101010101010101010101010101010101010101010101010101\n")
	newKey := writeFile(t, r.dir, "secret-new.key", "0202020202020202020202020202020202020202020202020202020202020202\n")
	r.start("--secret-key", oldKey)
	r.inFlight(map[string]any{"amount": 5, "pin": "pin-4711"})
	before := r.wire

	r.start("--secret-key", newKey, "--secret-key-earlier", oldKey)
	if got := r.approve(); got["pin"] != "pin-4711" {
		t.Fatalf("the tool received %v; want the pin sealed under the old key, in clear", got)
	}
	again := propose(t, r.agent, r.taskID, "wire-2", "wire", map[string]any{"amount": 5, "pin": "pin-4711"})
	if again.RequestHash == before.RequestHash {
		t.Errorf("the same pin after the rotation commits as before it (%s): the new key does not commit", again.RequestHash)
	}
	_, again = waitAction(t, r.agent.clients, r.taskID, again.ActionId, stewardv1.ActionStatus_ACTION_STATUS_AWAITING_APPROVAL)
	r.wire = again
	if got := r.approve(); got["pin"] != "pin-4711" {
		t.Fatalf("after the rotation the tool received %v", got)
	}
}
