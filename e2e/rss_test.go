package e2e_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/structpb"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// idleRSSBound is the most an idle `steward dev` may hold in memory
// (issue 13).
const idleRSSBound = 80 << 20

// TestIdleRSS measures the resident memory of an idle `steward dev`: after
// it starts, and after ten tasks have run five actions each. Each is read
// from /proc until it is within the bound, for up to 15 s of idling (the Go
// runtime returns freed memory to the OS in the background).
func TestIdleRSS(t *testing.T) {
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skip("no /proc: cannot read a process's resident memory here")
	}
	tool := startCrashTool(t)
	p := startBinary(t, t.TempDir(), crashFlags(t, tool)...)
	c := newClients(p.url)

	started := idleRSS(t, p)
	t.Logf("idle RSS after start: %d MB", started>>20)

	ctx := context.Background()
	for i := range 10 {
		taskID := crashTask(t, c, fmt.Sprintf("rss-%d", i))
		for j := range 5 {
			params, _ := structpb.NewStruct(map[string]any{"item": fmt.Sprintf("i%d", j)})
			resp, err := c.tasks.ProposeAction(ctx, connect.NewRequest(&stewardv1.ProposeActionRequest{
				TaskId: taskID, ProposalId: fmt.Sprintf("p%d", j), Tool: "put", Target: fmt.Sprintf("shelf:%d", j), Params: params,
			}))
			if err != nil {
				t.Fatal(err)
			}
			waitAction(t, c, taskID, resp.Msg.Action.ActionId, stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED)
		}
	}
	worked := idleRSS(t, p)
	t.Logf("idle RSS after 10 tasks of 5 actions: %d MB", worked>>20)
}

// idleRSS waits, while the binary idles, for its resident memory to be
// within idleRSSBound, and returns it in bytes; it fails the test if the
// memory stays above.
func idleRSS(t *testing.T, p *proc) uint64 {
	t.Helper()
	var rss uint64
	stewardtest.Eventually(t, 15*time.Second, func() (bool, string) {
		rss = readRSS(t, p)
		return rss <= idleRSSBound, fmt.Sprintf("idle RSS %d MB; want at most %d MB", rss>>20, idleRSSBound>>20)
	})
	return rss
}

// readRSS reads the binary's resident memory from /proc, in bytes.
func readRSS(t *testing.T, p *proc) uint64 {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				t.Fatalf("VmRSS %q: %v", rest, err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmRSS in /proc/<pid>/status")
	return 0
}
