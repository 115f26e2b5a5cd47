package state_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/steward-run/steward/pkg/rpc"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/services/state"
)

// TestAStalledWatchHoldsOneEventOfTheHistory: four WatchTask streams of a
// task whose history weighs about 24 MB, from clients that read the
// first few kilobytes and then stop, each hold the event they are
// sending, not the whole history: the heap grows by far less than four
// histories.
func TestAStalledWatchHoldsOneEventOfTheHistory(t *testing.T) {
	env := stewardtest.NewEnv(t)
	h := running()
	for i := range 40 {
		h = append(h, heavyAction(fmt.Sprint("a", i), 200<<10)...)
	}
	env.Append("t1", h...)
	p := startPlane(t, env.Log, env.Logger, state.Config{})
	services := p.Services(rpc.HandlerOptions(env.Logger, nil, nil))
	budget := rpc.NewResponseBudget(rpc.DefaultServerResponseBytes)
	srv, err := rpc.Listen("127.0.0.1:0", services, rpc.WithResponseBudget(budget))
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve() }()
	t.Cleanup(func() { _ = srv.Shutdown(context.Background()) })

	before := heapInUse()
	req := []byte(`{"taskId":"t1"}`)
	body := binary.BigEndian.AppendUint32([]byte{0}, uint32(len(req)))
	// Four connections: HTTP/2 gives a connection 64 KiB of window for
	// all its streams.
	for range 4 {
		stewardtest.StalledStreams(t, srv.Addr(), "/steward.v1.QueryService/WatchTask", "application/connect+json", append(body, req...), 64<<10, 1)
	}
	// Each stream holds its first heavy event's bytes (about 800 KB
	// reserved) while it waits to send it.
	stewardtest.Eventually(t, 20*time.Second, func() (bool, string) {
		return budget.Held() >= 4*(700<<10), fmt.Sprintf("%d bytes held", budget.Held())
	})
	grown := int64(heapInUse()) - int64(before)
	t.Logf("four stalled watches of a history of about 24 MB: heap %d MB before, grown by %d MB", before>>20, grown>>20)
	if grown > 40<<20 {
		t.Fatalf("four stalled watches grew the heap by %d MB; want each to hold an event, not the history", grown>>20)
	}
}

func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}
