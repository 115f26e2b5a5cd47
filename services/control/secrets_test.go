package control_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/services/control"
)

const loginSchema = `{"type":"object","properties":{"user":{"type":"string"},"password":{"type":"string","writeOnly":true,"pattern":"^pw"}}}`

// secretTask registers login, whose password is secret, and returns a
// running task that allows it, retrying failures.
func (r *harness) secretTask(t *testing.T, requestID string) string {
	t.Helper()
	r.register(t, &stewardv1.ToolContract{Name: "login", Version: "1", EffectClass: stewardv1.EffectClass_EFFECT_CLASS_IDEMPOTENT_WRITE,
		DataSensitivity: stewardv1.DataSensitivity_DATA_SENSITIVITY_INTERNAL, ParametersSchema: loginSchema})
	req := validRequest(requestID)
	req.Contract.AllowedTools = []string{"login"}
	req.Contract.RecoveryPolicy = &stewardv1.RecoveryPolicy{Mode: retryMode, MaxAttempts: 2}
	tk, _, err := r.ctl.CreateTask(context.Background(), "t", req)
	if err != nil {
		t.Fatal(err)
	}
	r.running(tk.Contract.TaskId)
	return tk.Contract.TaskId
}

// TestSecretParametersAreCommitted: a value the schema marks secret is a
// commitment in the request, sealed beside it, and opens to the value; the
// same value makes the same request_hash, another value another; a schema
// refusal does not quote it; Steward's retry proposes the same request,
// its value sealed again.
func TestSecretParametersAreCommitted(t *testing.T) {
	r := newHarness(t)
	id := r.secretTask(t, "secret")
	a := r.propose(t, id, "p1", "login", "acct", map[string]any{"user": "bob", "password": "pw-hunter2"})
	if strings.Contains(string(a.Request), "hunter2") || !strings.Contains(string(a.Request), `"password":{"$secret":"hmac-sha256:`) {
		t.Fatalf("request %s: want a commitment in place of the password", a.Request)
	}
	if len(a.SealedSecrets) != 1 {
		t.Fatalf("sealed %v, want one value", a.SealedSecrets)
	}
	s := a.SealedSecrets[0]
	if !strings.Contains(string(a.Request), s.Commitment) {
		t.Errorf("the sealed value's commitment %s is not the request's", s.Commitment)
	}
	if v, err := r.sealer.Open(id, s.Commitment, s.Sealed); err != nil || string(v) != `"pw-hunter2"` {
		t.Errorf("the sealed value opens to %s, %v", v, err)
	}
	if again := r.propose(t, id, "p2", "login", "acct", map[string]any{"user": "bob", "password": "pw-hunter2"}); again.RequestHash != a.RequestHash {
		t.Errorf("the same value made request_hash %s, then %s", a.RequestHash, again.RequestHash)
	}
	if other := r.propose(t, id, "p3", "login", "acct", map[string]any{"user": "bob", "password": "pw-other"}); other.RequestHash == a.RequestHash {
		t.Error("another value made the same request_hash")
	}
	ps, _ := structpb.NewStruct(map[string]any{"password": "no-such-prefix"})
	_, _, err := r.ctl.ProposeAction(context.Background(), "agent", &stewardv1.ProposeActionRequest{TaskId: id, ProposalId: "p4", Tool: "login", Params: ps})
	if !errs.Is(err, errs.Invalid) || strings.Contains(err.Error(), "no-such-prefix") {
		t.Errorf("a password against the pattern: %v; want Invalid, without the value", err)
	}

	r.run(t, id, a.ActionId, failed(transient, "HTTP 503: busy"), nil, time.Now())
	r.settle()
	next := retryOf(r.task(t, id), a.ActionId)
	if next == nil {
		t.Fatal("the failed action was not retried")
	}
	if next.RequestHash != a.RequestHash || len(next.SealedSecrets) != 1 || next.SealedSecrets[0].Commitment != s.Commitment {
		t.Fatalf("the retry is %s with %v; want the same request and commitment", next.RequestHash, next.SealedSecrets)
	}
	if v, err := r.sealer.Open(id, s.Commitment, next.SealedSecrets[0].Sealed); err != nil || string(v) != `"pw-hunter2"` {
		t.Errorf("the retry's sealed value opens to %s, %v", v, err)
	}
}

// TestSecretParametersNeedAKey: a control plane without a secret key
// refuses a proposal to a tool that marks parameters secret.
func TestSecretParametersNeedAKey(t *testing.T) {
	r := newHarness(t)
	id := r.secretTask(t, "no-key")
	cfg := r.config()
	cfg.Secrets = nil
	ctl := control.New(r.Log, r.Logger, cfg)
	ps, _ := structpb.NewStruct(map[string]any{"password": "pw-x"})
	_, _, err := ctl.ProposeAction(context.Background(), "agent", &stewardv1.ProposeActionRequest{TaskId: id, ProposalId: "p", Tool: "login", Params: ps})
	if !errs.Is(err, errs.FailedPrecondition) {
		t.Errorf("ProposeAction = %v, want FailedPrecondition", err)
	}
}

// TestCompensationCarriesSealedSecrets: the compensation of an action with
// secret parameters quotes them as the same commitments, never in clear,
// and carries the action's sealed values, so that they open for the
// compensating tool.
func TestCompensationCarriesSealedSecrets(t *testing.T) {
	r := newHarness(t)
	r.register(t, &stewardv1.ToolContract{Name: "vault", Version: "1", EffectClass: stewardv1.EffectClass_EFFECT_CLASS_REVERSIBLE_WRITE,
		DataSensitivity: stewardv1.DataSensitivity_DATA_SENSITIVITY_INTERNAL, CompensatingTool: "undo", ParametersSchema: loginSchema})
	req := validRequest("secret-undo")
	req.Contract.AllowedTools = []string{"vault", "undo"}
	tk, _, err := r.ctl.CreateTask(context.Background(), "t", req)
	if err != nil {
		t.Fatal(err)
	}
	id := tk.Contract.TaskId
	r.running(id)
	a := r.propose(t, id, "p1", "vault", "acct", map[string]any{"user": "bob", "password": "pw-hunter2"})
	r.run(t, id, a.ActionId, succeeded(), nil, time.Now())
	if _, err := r.ctl.FailTask(context.Background(), "ops", &stewardv1.FailTaskRequest{TaskId: id, Reason: "undo it", Compensate: true}); err != nil {
		t.Fatal(err)
	}
	c := compensationOf(r.WaitTask(id, func(tk *stewardv1.Task) bool { return compensationOf(tk, a.ActionId) != nil }), a.ActionId)
	s := a.SealedSecrets[0]
	if strings.Contains(string(c.Request), "hunter2") || !strings.Contains(string(c.Request), s.Commitment) {
		t.Fatalf("compensation request %s: want the action's commitment %s, not the value", c.Request, s.Commitment)
	}
	if len(c.SealedSecrets) != 1 || c.SealedSecrets[0].Commitment != s.Commitment {
		t.Fatalf("the compensation carries %v; want the action's sealed value", c.SealedSecrets)
	}
	if v, err := r.sealer.Open(id, s.Commitment, c.SealedSecrets[0].Sealed); err != nil || string(v) != `"pw-hunter2"` {
		t.Errorf("the carried value opens to %s, %v", v, err)
	}
}

// TestSecretObjectIsNotQuoted: a value marked secret as a whole (an
// object) is not quoted by a schema refusal of a string inside it.
func TestSecretObjectIsNotQuoted(t *testing.T) {
	r := newHarness(t)
	r.register(t, &stewardv1.ToolContract{Name: "vault", Version: "1", EffectClass: stewardv1.EffectClass_EFFECT_CLASS_IDEMPOTENT_WRITE,
		DataSensitivity:  stewardv1.DataSensitivity_DATA_SENSITIVITY_INTERNAL,
		ParametersSchema: `{"type":"object","properties":{"creds":{"type":"object","writeOnly":true,"properties":{"pin":{"type":"string","pattern":"^[0-9]+$"}}}}}`})
	req := validRequest("secret-object")
	req.Contract.AllowedTools = []string{"vault"}
	tk, _, err := r.ctl.CreateTask(context.Background(), "t", req)
	if err != nil {
		t.Fatal(err)
	}
	id := tk.Contract.TaskId
	r.running(id)
	ps, _ := structpb.NewStruct(map[string]any{"creds": map[string]any{"pin": "pw-inner-secret"}})
	_, _, err = r.ctl.ProposeAction(context.Background(), "agent", &stewardv1.ProposeActionRequest{TaskId: id, ProposalId: "p", Tool: "vault", Params: ps})
	if !errs.Is(err, errs.Invalid) || strings.Contains(err.Error(), "pw-inner-secret") {
		t.Errorf("a pin against the pattern: %v; want Invalid, without the value", err)
	}
}
