package audit_test

import (
	"compress/gzip"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/steward-run/steward/pkg/audit"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/plan"
	"github.com/steward-run/steward/pkg/task"
)

// TestCorpusFoldsAsWritten replays every history of the corpus — task
// histories the real binary wrote at earlier builds (scripts/corpus,
// docs/compatibility.md) — and checks that this build verifies each one
// and folds it to the task that build's GetTask served: a log written
// before an upgrade must read the same after it.
func TestCorpusFoldsAsWritten(t *testing.T) {
	files, err := filepath.Glob("testdata/corpus/*/*.events.gz")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no histories under testdata/corpus: run scripts/corpus")
	}
	for _, f := range files {
		base := strings.TrimSuffix(f, ".events.gz")
		name, _ := filepath.Rel("testdata/corpus", base)
		t.Run(name, func(t *testing.T) { checkHistory(t, base) })
	}
}

func checkHistory(t *testing.T, base string) {
	events := readHistory(t, base+".events.gz")
	js, err := os.ReadFile(base + ".json")
	if err != nil {
		t.Fatal(err)
	}
	var view struct {
		TaskID    string          `json:"task_id"`
		Sequences []uint64        `json:"sequences"`
		Task      json.RawMessage `json:"task"`
		Verify    json.RawMessage `json:"verify"`
	}
	if err := json.Unmarshal(js, &view); err != nil {
		t.Fatal(err)
	}
	var want stewardv1.Task
	var verdict stewardv1.VerifyTaskResponse
	if err := protojson.Unmarshal(view.Task, &want); err != nil {
		t.Fatalf("task view: %v", err)
	}
	if err := protojson.Unmarshal(view.Verify, &verdict); err != nil {
		t.Fatalf("verdict: %v", err)
	}
	if len(view.Sequences) != len(events) {
		t.Fatalf("%d events, %d sequences", len(events), len(view.Sequences))
	}
	r := audit.NewReplayer(view.TaskID)
	for i, d := range events {
		if r.Check(d, view.Sequences[i]) != nil {
			break
		}
	}
	rep := r.Report()
	if rep.OK() != verdict.Ok || uint32(rep.Events) != verdict.EventCount || hex.EncodeToString(rep.Head) != hex.EncodeToString(verdict.HeadHash) {
		t.Fatalf("verified ok=%t, %d events, head %x (break %v); the writing build said ok=%t, %d events, head %x",
			rep.OK(), rep.Events, rep.Head, rep.Break, verdict.Ok, verdict.EventCount, verdict.HeadHash)
	}
	got := rep.Task
	showReady(got)
	if !proto.Equal(got, &want) {
		g, _ := protojson.MarshalOptions{Multiline: true}.Marshal(got)
		w, _ := protojson.MarshalOptions{Multiline: true}.Marshal(&want)
		t.Fatalf("folded task differs from the view its build served:\n%s", lineDiff(string(w), string(g)))
	}
}

// showReady is what GetTask adds to the folded task (services/state): a
// running plan's next steps.
func showReady(t *stewardv1.Task) {
	if p := t.GetPlan(); p != nil && task.PlanRuns(p) && task.Active(t.Status) {
		p.Ready = plan.Ready(p.Plan, task.StepStatuses(p))
	}
}

func readHistory(t *testing.T, path string) [][]byte {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	events, err := audit.ReadEvents(zr)
	if err != nil {
		t.Fatal(err)
	}
	return events
}

// lineDiff names the lines of want and got that differ, enough to see
// which field of which event stopped folding as it did.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var out []string
	for i := 0; i < max(len(w), len(g)) && len(out) < 20; i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			out = append(out, "- "+wl, "+ "+gl)
		}
	}
	return strings.Join(out, "\n")
}
