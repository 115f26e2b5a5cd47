package e2e_test

import (
	"context"
	"strings"
	"testing"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/encoding/protojson"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// TestCLIEscapesTextFromOutside records a task whose intent and
// cancellation reason carry a terminal reset (ESC c), a carriage return
// and a right-to-left override, then prints it with `steward receipt` and
// `steward audit replay`: none of them reaches the terminal raw, each is
// shown as an escape, and the JSON receipt still parses to the same text.
func TestCLIEscapesTextFromOutside(t *testing.T) {
	url := startInProcess(t)
	c := newClients(url)
	ctx := context.Background()
	const intent = "Summarise\x1bc incidents\r"
	const reason = "done \u202eevil\x1b]0;owned\a"
	k := contract()
	k.Intent = intent
	resp, err := c.tasks.CreateTask(ctx, connect.NewRequest(&stewardv1.CreateTaskRequest{RequestId: "escape", Contract: k}))
	if err != nil {
		t.Fatal(err)
	}
	taskID := resp.Msg.Task.Contract.TaskId
	if _, err := c.tasks.CancelTask(ctx, connect.NewRequest(&stewardv1.CancelTaskRequest{TaskId: taskID, Reason: reason})); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, c, taskID, stewardv1.TaskStatus_TASK_STATUS_CANCELLED)

	raw := []string{"\x1b", "\r", "\a", "\u202e"}
	outputs := map[string]string{
		"receipt":      run(t, 0, "receipt", "--task", taskID, "--addr", url),
		"receipt json": run(t, 0, "receipt", "--task", taskID, "--format", "json", "--addr", url),
		"audit replay": run(t, 0, "audit", "replay", "--task", taskID, "--addr", url),
	}
	for name, out := range outputs {
		for _, r := range raw {
			if strings.Contains(out, r) {
				t.Errorf("%s prints %q raw:\n%q", name, r, out)
			}
		}
	}
	if md := outputs["receipt"]; !strings.Contains(md, `Summarise\u001bc incidents`) || !strings.Contains(md, `\u202eevil\u001b`) {
		t.Errorf("the receipt does not show the escapes:\n%s", md)
	}
	var r stewardv1.Receipt
	if err := protojson.Unmarshal([]byte(outputs["receipt json"]), &r); err != nil {
		t.Fatalf("the escaped JSON receipt does not parse: %v\n%s", err, outputs["receipt json"])
	}
	if r.Intent != intent || !strings.Contains(r.StatusReason, reason) {
		t.Errorf("the JSON receipt says intent %q, reason %q; want %q and %q", r.Intent, r.StatusReason, intent, reason)
	}
}
