package audit_test

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/steward-run/steward/pkg/audit"
	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// history seals a legal three-event history of task t1.
func history(t *testing.T) [][]byte {
	t.Helper()
	return sealed(t, "t1", &stewardv1.TaskCreated{}, &stewardv1.TaskStarted{}, &stewardv1.TaskPaused{})
}

// sealed returns payloads as task taskID's history, recorded as their
// owning planes would (stewardtest.Event), in the bytes the log stores.
func sealed(t testing.TB, taskID string, payloads ...event.Payload) [][]byte {
	t.Helper()
	var out [][]byte
	var prev []byte
	for _, p := range payloads {
		ev := stewardtest.Event(t, taskID, p)
		data, err := event.Seal(ev, prev)
		if err != nil {
			t.Fatal(err)
		}
		prev = ev.Hash
		out = append(out, data)
	}
	return out
}

func TestExportRoundTripVerifies(t *testing.T) {
	events := history(t)
	var file bytes.Buffer
	for _, d := range events {
		if err := audit.WriteEvent(&file, d); err != nil {
			t.Fatal(err)
		}
	}
	read, err := audit.ReadEvents(&file)
	if err != nil {
		t.Fatal(err)
	}
	rep := audit.Verify("t1", read)
	if !rep.OK() || rep.Events != 3 || rep.Task.Status != stewardv1.TaskStatus_TASK_STATUS_PAUSED {
		t.Fatalf("report = %+v", rep)
	}
}

func TestVerifyNamesTheFirstBadEvent(t *testing.T) {
	tests := []struct {
		name   string
		tamper func([][]byte) [][]byte
		index  int
		reason string
	}{
		{"flipped byte", func(e [][]byte) [][]byte { e[1][3] ^= 0x40; return e }, 1, ""},
		{"dropped event", func(e [][]byte) [][]byte { return [][]byte{e[0], e[2]} }, 1, "prev_hash"},
		{"reordered", func(e [][]byte) [][]byte { return [][]byte{e[1], e[0], e[2]} }, 0, ""},
		{"foreign task", func(e [][]byte) [][]byte { return e }, 0, "belongs to task"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			taskID := "t1"
			if tt.name == "foreign task" {
				taskID = "other"
			}
			rep := audit.Verify(taskID, tt.tamper(history(t)))
			if rep.OK() || rep.Break.Index != tt.index || !strings.Contains(rep.Break.Reason, tt.reason) {
				t.Fatalf("break = %+v, want one at %d mentioning %q", rep.Break, tt.index, tt.reason)
			}
		})
	}
}

func TestReadEventsNamesABrokenFrame(t *testing.T) {
	var file bytes.Buffer
	for _, d := range history(t) {
		if err := audit.WriteEvent(&file, d); err != nil {
			t.Fatal(err)
		}
	}
	raw := file.Bytes()
	_, err := audit.ReadEvents(bytes.NewReader(raw[:len(raw)-5]))
	if err == nil || !strings.Contains(err.Error(), "event 2") {
		t.Fatalf("err = %v, want one naming event 2", err)
	}
}

// TestVerifyOfALongHistoryBreaksWhereReplayDoes: Verify opens a long
// history's events ahead of the fold, on another goroutine; it must break
// at the same event, for the same reason, as a replay one event at a time.
func TestVerifyOfALongHistoryBreaksWhereReplayDoes(t *testing.T) {
	payloads := []event.Payload{&stewardv1.TaskCreated{}, &stewardv1.TaskStarted{}}
	for range 400 {
		payloads = append(payloads, &stewardv1.TaskPaused{}, &stewardv1.TaskResumed{})
	}
	tests := []struct {
		name   string
		tamper func([][]byte) [][]byte
		index  int
	}{
		{"intact", func(e [][]byte) [][]byte { return e }, -1},
		{"flipped byte in the second batch", func(e [][]byte) [][]byte { e[300][3] ^= 0x40; return e }, 300},
		{"dropped event in the last batch", func(e [][]byte) [][]byte { return append(e[:700:700], e[701:]...) }, 700},
		{"an event from another history in the first batch", func(e [][]byte) [][]byte {
			return append(e[:5:5], sealed(t, "t1", append(slices.Clone(payloads[:5]), &stewardv1.TaskStarted{})...)[5:]...)
		}, 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			events := tt.tamper(sealed(t, "t1", payloads...))
			rep := audit.Verify("t1", events)
			r := audit.NewReplayer("t1")
			for _, d := range events {
				if r.Check(d, 0) != nil {
					break
				}
			}
			want := r.Report()
			if rep.Events != want.Events || !bytes.Equal(rep.Head, want.Head) || fmt.Sprint(rep.Break) != fmt.Sprint(want.Break) ||
				!proto.Equal(rep.Task, want.Task) {
				t.Fatalf("Verify: %d events, break %v; one at a time: %d events, break %v", rep.Events, rep.Break, want.Events, want.Break)
			}
			switch {
			case tt.index < 0 && !rep.OK():
				t.Fatalf("break %v in an intact history", rep.Break)
			case tt.index >= 0 && (rep.OK() || rep.Break.Index != tt.index):
				t.Fatalf("break %v; want one at event %d", rep.Break, tt.index)
			}
		})
	}
}
