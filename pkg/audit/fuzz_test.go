package audit_test

import (
	"bytes"
	"reflect"
	"slices"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/steward-run/steward/pkg/audit"
	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// FuzzVerify reads an export file and replays it as an auditor does. The
// file's events are written out and read back unchanged. Verify, which
// opens a long history on another goroutine, reports exactly what a
// Replayer stepping through the same events does, for the events as read
// and repeated past one batch. And the events, taken as envelopes and
// sealed into one proper chain of one task, break only where the fold
// refuses a step, never on a hash or a link: that drives the fold with
// every event the fuzzer can shape, in any order.
func FuzzVerify(f *testing.F) {
	f.Add(export(f, sealed(f, "t1", &stewardv1.TaskCreated{}, &stewardv1.TaskStarted{}, &stewardv1.TaskPaused{})))
	f.Add(export(f, sealed(f, "t1",
		&stewardv1.TaskCreated{Contract: &stewardv1.TaskContract{AllowedTools: []string{"w"}, Budget: &stewardv1.Budget{MaxTokens: 10}}},
		&stewardv1.TaskStarted{},
		&stewardv1.ActionProposed{Action: &stewardv1.Action{ActionId: "act-1", Tool: "w", RequestHash: "h"}},
		&stewardv1.BudgetConsumed{Tokens: 4},
		&stewardv1.TaskCancelled{Reason: "done"})))
	f.Add([]byte{0x80})
	f.Fuzz(func(t *testing.T, file []byte) {
		events, err := audit.ReadEvents(bytes.NewReader(file))
		var out bytes.Buffer
		for _, d := range events {
			if err := audit.WriteEvent(&out, d); err != nil {
				t.Fatal(err)
			}
		}
		if again, aerr := audit.ReadEvents(&out); aerr != nil || !reflect.DeepEqual(again, events) {
			t.Fatalf("%d events read (%v) came back as %d (%v)", len(events), err, len(again), aerr)
		}
		sameAsStepping(t, events, false)
		chain := resealed(t, events)
		rep := sameAsStepping(t, chain, true)
		if rep.Break != nil && !bytes.HasPrefix([]byte(rep.Break.Reason), []byte("not a legal step")) {
			t.Fatalf("a properly sealed chain broke at %d on %q", rep.Break.Index, rep.Break.Reason)
		}
		if _, err := proto.Marshal(rep.Task); err != nil {
			t.Fatalf("the folded task does not encode: %v", err)
		}
	})
}

// sameAsStepping checks that Verify reports over events what a Replayer
// does stepping through them, and returns the report. With long, it
// checks the same over events repeated past the batch Verify opens ahead
// on another goroutine.
func sameAsStepping(t *testing.T, events [][]byte, long bool) *audit.Report {
	t.Helper()
	rep := audit.Verify("", events)
	runs := [][][]byte{events}
	if long && len(events) > 0 {
		repeated := slices.Clone(events)
		for len(repeated) <= 256 {
			repeated = append(repeated, events...)
		}
		runs = append(runs, repeated)
	}
	for _, evs := range runs {
		got := audit.Verify("", evs)
		r := audit.NewReplayer("")
		n := 0
		for _, d := range evs {
			if r.Check(d, 0) != nil {
				break
			}
			n++
		}
		want := r.Report()
		switch {
		case got.Events != n || want.Events != n:
			t.Fatalf("Verify verified %d of %d events, the replayer %d (%d)", got.Events, len(evs), n, want.Events)
		case !reflect.DeepEqual(got.Break, want.Break) || !bytes.Equal(got.Head, want.Head) || !proto.Equal(got.Task, want.Task):
			t.Fatalf("Verify and the replayer disagree over %d events:\n%+v\n%+v", len(evs), got.Break, want.Break)
		case got.OK() != (n == len(evs)) || (!got.OK() && got.Break.Index != n):
			t.Fatalf("verified %d of %d, yet break %+v", n, len(evs), got.Break)
		}
	}
	return rep
}

// resealed takes each of events as an envelope, if it decodes as one with
// a payload, and seals them into one chain of the first one's task, each
// recorded by the plane that owns its type.
func resealed(t *testing.T, events [][]byte) [][]byte {
	t.Helper()
	var out [][]byte
	var prev []byte
	taskID := ""
	for _, d := range events {
		var ev stewardv1.Event
		if proto.Unmarshal(d, &ev) != nil || event.TypeOf(&ev) == "" {
			continue
		}
		if taskID == "" {
			taskID = ev.TaskId
		}
		ev.TaskId, ev.Type = taskID, event.TypeOf(&ev)
		if ev.Actor == nil {
			ev.Actor = &stewardv1.Actor{}
		}
		ev.Actor.Plane = event.Owner(ev.Type) // past the fold's first check, to the steps behind it
		data, err := event.Seal(&ev, prev)
		if err != nil {
			t.Fatalf("a decoded event does not seal: %v", err)
		}
		prev = ev.Hash
		out = append(out, data)
	}
	return out
}

// export writes events as an export file.
func export(tb testing.TB, events [][]byte) []byte {
	tb.Helper()
	var b bytes.Buffer
	for _, d := range events {
		if err := audit.WriteEvent(&b, d); err != nil {
			tb.Fatal(err)
		}
	}
	return b.Bytes()
}
