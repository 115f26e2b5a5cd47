package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/steward-run/steward/cmd/steward/app"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// secretTool is a tools-file entry for a read tool at url whose password
// parameter is secret.
func secretTool(name, url string) string {
	return fmt.Sprintf(`{"name": %q, "version": "1.0.0", "effectClass": "EFFECT_CLASS_READ", "dataSensitivity": "DATA_SENSITIVITY_CONFIDENTIAL",
	  "parametersSchema": "{\"type\":\"object\",\"required\":[\"password\"],\"properties\":{\"password\":{\"type\":\"string\",\"writeOnly\":true}}}",
	  "http": {"url": %q}}`, name, url)
}

// loginTask creates, through control, a task that allows the tool login,
// and returns its id.
func loginTask(t *testing.T, control clients, requestID string) string {
	t.Helper()
	k := contract()
	k.AllowedTools = []string{"login"}
	resp, err := control.tasks.CreateTask(context.Background(), connect.NewRequest(&stewardv1.CreateTaskRequest{RequestId: requestID, Contract: k}))
	if err != nil {
		t.Fatal(err)
	}
	return resp.Msg.Task.Contract.TaskId
}

// TestServicesShareSecretKey runs the planes apart, as compose and
// Kubernetes do, with control and execution given one key that `steward
// secret-key` made: a value control sealed, execution opens, and the tool
// receives it in clear.
func TestServicesShareSecretKey(t *testing.T) {
	key := filepath.Join(t.TempDir(), "keys", "secret.key")
	for _, want := range []string{"created " + key, "kept the key already in " + key} {
		var out bytes.Buffer
		if code := app.Main([]string{"secret-key", "--out", key}, &out, &out); code != 0 || !strings.Contains(out.String(), want) {
			t.Fatalf("steward secret-key exited %d saying %q; want 0 and %q", code, out.String(), want)
		}
	}
	tool := stewardtest.StartTool(t)
	dir := t.TempDir()
	tools := writeFile(t, dir, "tools.json", `{"tools": [`+secretTool("login", tool.URL+"/login")+`]}`)
	urls := startServices(t, map[string][]string{
		"control":   {"--secret-key", key},
		"execution": {"--secret-key", key, "--tools", tools},
	})
	control, state := newClients(urls["control"]), newClients(urls["state"])
	taskID := loginTask(t, control, "services-secret")
	password := "pw-services-hunter2"
	a := propose(t, authed{clients: control}, taskID, "p1", "login", map[string]any{"password": password})
	waitAction(t, state, taskID, a.ActionId, stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED)
	var got []string
	for _, w := range tool.Worked() {
		var p struct{ Password string }
		if err := json.Unmarshal(w.Params, &p); err != nil {
			t.Fatal(err)
		}
		got = append(got, p.Password)
	}
	if len(got) != 1 || got[0] != password {
		t.Errorf("the tool received passwords %q; want the clear value once", got)
	}
}

// secretKeyChecks are the rows of docs/errors.md about the secret key,
// checked against planes run apart: steward dev always has one.
func secretKeyChecks() map[string]tableCheck {
	return map[string]tableCheck{
		"a proposal to a tool whose schema marks parameters secret, to a `steward serve` control plane started without `--secret-key`": func(t *testing.T, _ *harness) []error {
			tool := stewardtest.StartTool(t)
			tools := writeFile(t, t.TempDir(), "tools.json", `{"tools": [`+secretTool("login", tool.URL+"/login")+`]}`)
			urls := startServices(t, map[string][]string{"execution": {"--tools", tools}})
			control, state := newClients(urls["control"]), newClients(urls["state"])
			taskID := loginTask(t, control, "table-no-secret-key")
			running := waitStatus(t, state, taskID, stewardv1.TaskStatus_TASK_STATUS_RUNNING)
			params, _ := structpb.NewStruct(map[string]any{"password": "pw-table-hunter2"})
			_, err := control.tasks.ProposeAction(context.Background(), connect.NewRequest(&stewardv1.ProposeActionRequest{
				TaskId: taskID, ProposalId: "p1", Tool: "login", Target: "acct:42", Params: params,
			}))
			// Nothing appended: no action, once the state plane has caught
			// up with what it served before the refusal.
			served := waitServed(t, state, taskID, 15*time.Second, func(tk *stewardv1.Task) (bool, string) {
				return tk.EventCount >= running.EventCount, fmt.Sprintf("%d events", tk.EventCount)
			})
			if len(served.Actions) != 0 {
				t.Errorf("the refused proposal left actions %v", served.Actions)
			}
			return []error{saying(t, err, "tool login", "--secret-key")}
		},
	}
}
