package e2e_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/structpb"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// TestAToolsCapHoldsAcrossAKill runs the binary with a tool capped at 2
// calls in flight (its contract's limits.maxConcurrent) and makes 50
// proposals at once. The tool holds every call until released: it has
// exactly 2, and the other 48 actions wait for its limits, on the log. Then the binary is killed (-9) and started again: the
// waiting calls survive, the two cut off are settled by the status query
// and their slots come back with their lease (seconds, not the tool's
// 10-minute timeout), and once the tool answers every call is made — the
// tool never sees more than 2 at once, and each op key's work is done
// once.
func TestAToolsCapHoldsAcrossAKill(t *testing.T) {
	const n, cap = 50, 2
	tool := stewardtest.StartTool(t).Always("/capped", stewardtest.Answer{Work: true, Hold: stewardtest.HoldUntilRelease})
	h := startSteward(t, setup{open: true, nats: true, tools: []string{fmt.Sprintf(`{"name": "capped", "version": "1", "effectClass": "EFFECT_CLASS_READ",
	  "dataSensitivity": "DATA_SENSITIVITY_INTERNAL", "timeout": "600s", "statusQuery": true, "idempotency": {"honoursKey": true},
	  "limits": {"maxConcurrent": %d}, "http": {"url": %q, "statusUrl": %q}}`, cap, tool.URL+"/capped", tool.URL+"/status")}})
	c := newClients(h.url)
	ctx := context.Background()
	k := contract()
	k.AllowedTools = []string{"capped"}
	resp, err := c.tasks.CreateTask(ctx, connect.NewRequest(&stewardv1.CreateTaskRequest{RequestId: "capped", Contract: k}))
	if err != nil {
		t.Fatal(err)
	}
	taskID := resp.Msg.Task.Contract.TaskId
	waitStarted(t, c, taskID)

	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			params, _ := structpb.NewStruct(map[string]any{"q": fmt.Sprint(i)})
			if _, err := c.tasks.ProposeAction(ctx, connect.NewRequest(&stewardv1.ProposeActionRequest{
				TaskId: taskID, ProposalId: fmt.Sprintf("p%02d", i), Tool: "capped", Target: "index", Params: params,
			})); err != nil {
				t.Errorf("propose %d: %v", i, err)
			}
		})
	}
	wg.Wait()

	// Held back is what the task shows: actions waiting for the tool's
	// limits. Without the cap they were all called.
	waitServed(t, c, taskID, 30*time.Second, func(tk *stewardv1.Task) (bool, string) {
		held := 0
		for _, a := range tk.Actions {
			if a.WaitKind == stewardv1.WaitKind_WAIT_KIND_LIMIT {
				held++
			}
		}
		return tool.Calls() > cap || held >= n-cap, fmt.Sprintf("%d calls, %d actions waiting for the limits", tool.Calls(), held)
	})
	if got := tool.Calls(); got != cap {
		t.Fatalf("with %d permits held back the tool had %d calls; its cap is %d", n-cap, got, cap)
	}

	h.proc.kill()
	p := startBinary(t, filepath.Join(h.dir, "data"), "--tools", filepath.Join(h.dir, "tools.json"), "--nats-listen", strings.TrimPrefix(h.natsURL, "nats://"))
	tool.Release()
	c = newClients(p.url)
	tk := waitServed(t, c, taskID, 90*time.Second, func(tk *stewardv1.Task) (bool, string) {
		done := 0
		for _, a := range tk.Actions {
			if a.Status == stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED {
				done++
			}
		}
		return done == n, fmt.Sprintf("%d of %d actions succeeded; the tool got %d calls", done, n, tool.Calls())
	})
	for _, a := range tk.Actions {
		if got := tool.Executions(a.OpKey); got != 1 {
			t.Errorf("%s: the work was done %d times; want once", a.OpKey, got)
		}
	}
	if got := tool.Together("/capped"); got > cap {
		t.Errorf("the tool had %d calls in flight at once; its cap is %d", got, cap)
	}
	t.Logf("%d calls for %d actions (%d cut off by the kill); at most %d in flight", tool.Calls(), n, cap, tool.Together("/capped"))
}
