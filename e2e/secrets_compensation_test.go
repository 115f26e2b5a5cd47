package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"connectrpc.com/connect"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// TestCompensationReceivesSecrets compensates an action with a secret
// parameter, against the real binary and a real HTTP tool whose
// compensating tool marks that parameter secret again: the compensating
// tool receives the value the action was called with, in clear, while
// the compensation's request, as served, holds only commitments.
func TestCompensationReceivesSecrets(t *testing.T) {
	tool := stewardtest.StartTool(t)
	password := "pw-compensated-hunter2"
	vault := `{"type":"object","required":["password"],"properties":{"password":{"type":"string","writeOnly":true}}}`
	unvault := `{"type":"object","properties":{"params":{"type":"object","properties":{"password":{"writeOnly":true}}}}}`
	entry := func(name, effect, schema, extra string) string {
		return fmt.Sprintf(`{"name": %q, "version": "1.0.0", "effectClass": %q, "dataSensitivity": "DATA_SENSITIVITY_INTERNAL", %s
		  "parametersSchema": %q, "http": {"url": %q}}`, name, effect, extra, schema, tool.URL+"/"+name)
	}
	h := startSteward(t, setup{tools: []string{
		entry("vault", "EFFECT_CLASS_REVERSIBLE_WRITE", vault, `"compensatingTool": "unvault",`),
		entry("unvault", "EFFECT_CLASS_IDEMPOTENT_WRITE", unvault, ""),
	}})
	k := contract()
	k.AllowedTools = []string{"vault", "unvault"}
	k.RecoveryPolicy = &stewardv1.RecoveryPolicy{Mode: stewardv1.RecoveryMode_RECOVERY_MODE_COMPENSATE}
	taskID := h.create(t, "secret-compensation", k)
	a := propose(t, h.agent, taskID, "v1", "vault", map[string]any{"password": password})
	waitAction(t, h.agent.clients, taskID, a.ActionId, stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED)
	if _, err := h.agent.tasks.FailTask(context.Background(), connect.NewRequest(&stewardv1.FailTaskRequest{TaskId: taskID, Reason: "undo the vault"})); err != nil {
		t.Fatal(err)
	}
	failed := waitStatus(t, h.agent.clients, taskID, stewardv1.TaskStatus_TASK_STATUS_FAILED)
	var undo *stewardv1.Action
	for _, x := range failed.Actions {
		if x.Compensates == a.ActionId {
			undo = x
		}
	}
	if undo == nil || undo.Status != stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED {
		t.Fatalf("the vault was not compensated:\n%s", describeActions(failed))
	}
	if strings.Contains(string(undo.Request), password) || !strings.Contains(string(undo.Request), `{"$secret":"hmac-sha256:`) {
		t.Errorf("the compensation's request %s: want commitments, not the value", undo.Request)
	}
	var got []string
	for _, w := range tool.Worked() {
		if w.Path != "/unvault" {
			continue
		}
		var p struct{ Params struct{ Password string } }
		if err := json.Unmarshal(w.Params, &p); err != nil {
			t.Fatal(err)
		}
		got = append(got, p.Params.Password)
	}
	if len(got) != 1 || got[0] != password {
		t.Errorf("the compensating tool received passwords %q; want the clear value once", got)
	}
}
