package e2e_test

import (
	"context"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/encoding/protojson"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// TestReceiptCLI runs an action through the real binary and a real HTTP
// tool, then asks `steward receipt` for the task's receipt: the Markdown
// shows the call and where its result is, the JSON parses as a Receipt
// whose last event is the head that VerifyTask and `steward audit verify`
// report, and bad flags exit 2 naming the flag.
func TestReceiptCLI(t *testing.T) {
	tool := stewardtest.StartTool(t)
	// The CLI presents no bearer token (neither does `steward audit`), so
	// this server runs without the tokens file: callers are trusted by
	// header, and a read needs no approver.
	h := startSteward(t, setup{tools: governedTools(tool), open: true})
	c := authed{clients: newClients(h.url)}
	ctx := context.Background()
	taskID := governedTask(t, c, "receipt-1")
	read := propose(t, c, taskID, "read-1", "search", map[string]any{"q": "incidents last week"})
	_, done := waitAction(t, c.clients, taskID, read.ActionId, stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED)

	out := run(t, 0, "receipt", "--task", taskID, "--format", "json", "--addr", h.url)
	var r stewardv1.Receipt
	if err := protojson.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("--format json is not a Receipt: %v\n%s", err, out)
	}
	v, err := c.audit.VerifyTask(ctx, connect.NewRequest(&stewardv1.VerifyTaskRequest{TaskId: taskID}))
	if err != nil || !v.Msg.Ok {
		t.Fatalf("verify: %v %v", v, err)
	}
	if r.LastEventHash != hex.EncodeToString(v.Msg.HeadHash) || r.EventCount != v.Msg.EventCount {
		t.Fatalf("the receipt covers %d events up to %s; VerifyTask says %d up to %x", r.EventCount, r.LastEventHash, v.Msg.EventCount, v.Msg.HeadHash)
	}
	if r.TaskId != taskID || r.Partial || len(r.Calls) != 1 || r.Calls[0].ActionId != read.ActionId || r.Calls[0].Attempts != 1 ||
		r.Calls[0].ResultHash != done.Outcome.ResultHash || r.Calls[0].PolicyRevision == "" || len(r.PolicyRevisions) != 1 {
		t.Fatalf("receipt: %v", &r)
	}
	if verify := run(t, 0, "audit", "verify", "--task", taskID, "--addr", h.url); !strings.Contains(verify, "head "+r.LastEventHash) {
		t.Fatalf("audit verify prints another head than the receipt's %s:\n%s", r.LastEventHash, verify)
	}

	md := run(t, 0, "receipt", "--task", taskID, "--addr", h.url)
	for _, want := range []string{
		"# Receipt: task `" + taskID + "` — Summarise last week's incidents",
		fmt.Sprintf("| `%s` | `search@1.0.0` | `acct:42` | succeeded | 1 | inline hash `%s` |", read.ActionId, done.Outcome.ResultHash),
		"- **Partial:** no",
		"- `" + r.PolicyRevisions[0] + "`",
		fmt.Sprintf("Covers events 1..%d of the task, last event at stream sequence %d, hash %s.", r.EventCount, r.LastSequence, r.LastEventHash),
	} {
		if !strings.Contains(md, want) {
			t.Errorf("the Markdown receipt does not say %q:\n%s", want, md)
		}
	}

	for _, tt := range []struct {
		code int
		args []string
		want string
	}{
		{2, []string{"receipt"}, "--task is required"},
		{2, []string{"receipt", "--task", taskID, "--format", "yaml"}, "--format must be markdown or json"},
		{2, []string{"receipt", "--task", "not.a.task"}, "--task"},
		{2, []string{"receipt", "--task", taskID, "--colour"}, "-colour"},
		{1, []string{"receipt", "--task", "no-such-task", "--addr", h.url}, "not found"},
	} {
		if out := run(t, tt.code, tt.args...); !strings.Contains(out, tt.want) {
			t.Errorf("steward %v: output does not say %q:\n%s", tt.args, tt.want, out)
		}
	}
}
