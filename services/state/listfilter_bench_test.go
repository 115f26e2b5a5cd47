package state_test

import (
	"fmt"
	"log/slog"
	"testing"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/rpc"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/services/state"
)

// BenchmarkListTasksFiltered measures one ListTasks page over a
// projection of 100,000 tasks of one tenant: unfiltered, filters that
// match every task, and filters that match none, which stop after
// state.MaxScan tasks (and, to compare, one that scans all 100,000). Run:
//
//	go test -run '^$' -bench ListTasksFiltered -benchmem ./services/state/
func BenchmarkListTasksFiltered(b *testing.B) {
	const tasks = 100_000
	p := state.NewProjection(slog.New(slog.DiscardHandler))
	for i := range tasks {
		k := contract(i)
		k.Intent = fmt.Sprintf("Reconcile ledger %d of the quarter's accounts", i)
		k.AllowedTools = []string{"search", "email@1.0.0"}
		rec := stewardtest.History(b, fmt.Sprint("task-", i), &stewardv1.TaskCreated{Contract: k})[0]
		rec.Sequence = uint64(i + 1)
		if err := p.Apply(rec); err != nil {
			b.Fatal(err)
		}
	}
	for _, c := range []struct {
		name string
		f    state.TaskFilter
		scan int
	}{
		{"none/page100", state.TaskFilter{}, state.MaxScan},
		{"text-all/page100", state.TaskFilter{Text: "QUARTER"}, state.MaxScan},
		{"owner-miss/scan10k", state.TaskFilter{Owner: "user:nobody"}, state.MaxScan},
		{"tool-miss/scan10k", state.TaskFilter{Tool: "fetch"}, state.MaxScan},
		{"text-miss/scan10k", state.TaskFilter{Text: "no such words"}, state.MaxScan},
		{"text-miss/scan100k-unbounded", state.TaskFilter{Text: "no such words"}, tasks},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				page, _ := p.List("", c.f, 0, state.DefaultPageSize, c.scan, rpc.MaxPageBytes, rpc.PageItemBytes)
				if (c.f.Text == "no such words" || c.f.Owner != "" || c.f.Tool != "") != (len(page) == 0) {
					b.Fatalf("%s listed %d tasks", c.name, len(page))
				}
			}
		})
	}
}
