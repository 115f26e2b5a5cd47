package e2e_test

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/nats-io/nats.go"

	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/gen/steward/v1/stewardv1connect"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// TestDeadLettersListAndReplay: an event no plane can decode is set aside
// by governance's consumer and by the state plane's reader, each under its
// name; the metric counts them; an operator lists them through the RPC and
// the CLI, and replays governance's record with the CLI: the event comes to
// governance's reactions again, still cannot be decoded, and the record
// shows the failed replay with its reason. A reader's record, or one that
// does not exist, is refused.
func TestDeadLettersListAndReplay(t *testing.T) {
	h := startSteward(t, setup{nats: true})
	ctx := context.Background()
	js, _ := h.events(t)
	subject := "steward.task.dl-e2e.action.proposed"
	ack, err := js.PublishMsg(ctx, &nats.Msg{Subject: subject, Data: []byte("not an event \xff")})
	if err != nil {
		t.Fatal(err)
	}
	seq := ack.Sequence
	dl := stewardv1connect.NewDeadLetterServiceClient(&http.Client{Timeout: 30 * time.Second}, h.url, connect.WithInterceptors(stewardtest.Bearer(operatorToken)))
	find := func(consumer string) *stewardv1.DeadLetter {
		resp, err := dl.ListDeadLetters(ctx, connect.NewRequest(&stewardv1.ListDeadLettersRequest{}))
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range resp.Msg.DeadLetters {
			if d.Sequence == seq && d.Consumer == consumer {
				return d
			}
		}
		return nil
	}
	stewardtest.Eventually(t, 20*time.Second, func() (bool, string) {
		return find("governance") != nil && find(eventlog.ReaderConsumer) != nil, "governance's and the reader's records not listed"
	})
	d := find("governance")
	if d.Subject != subject || d.TaskId != "dl-e2e" || d.EventType != "action.proposed" || d.State != stewardv1.DeadLetterState_DEAD_LETTER_STATE_WAITING ||
		!strings.Contains(d.Reason, "decode") || d.SetAsideAt == nil {
		t.Fatalf("governance's record: %v", d)
	}
	if m := scrape(t, h.url); m[`steward_dead_letters{consumer="governance"}`] < 1 || m[`steward_dead_letters{consumer="reader"}`] < 1 {
		t.Fatalf("steward_dead_letters: governance %v, reader %v", m[`steward_dead_letters{consumer="governance"}`], m[`steward_dead_letters{consumer="reader"}`])
	}

	list := run(t, 0, "dead-letters", "list", "--addr", h.url, "--token", operatorToken)
	want := fmt.Sprintf("%d governance waiting dl-e2e action.proposed", seq)
	found := false
	for _, line := range strings.Split(list, "\n") {
		found = found || strings.HasPrefix(strings.Join(strings.Fields(line), " "), want)
	}
	if !found {
		t.Fatalf("steward dead-letters list has no line %q:\n%s", want, list)
	}
	s := strconv.FormatUint(seq, 10)
	if out := run(t, 0, "dead-letters", "replay", "--seq", s, "--consumer", "governance", "--addr", h.url, "--token", operatorToken); !strings.Contains(out, "governance") {
		t.Fatalf("replay: %s", out)
	}
	stewardtest.Eventually(t, 20*time.Second, func() (bool, string) {
		d = find("governance")
		return d.State == stewardv1.DeadLetterState_DEAD_LETTER_STATE_REPLAY_FAILED, "replay not ended: " + d.State.String()
	})
	if !strings.Contains(d.ReplayError, "decode") {
		t.Fatalf("the failed replay says %q", d.ReplayError)
	}

	_, err = dl.ReplayDeadLetter(ctx, connect.NewRequest(&stewardv1.ReplayDeadLetterRequest{Sequence: seq, Consumer: eventlog.ReaderConsumer}))
	if connect.CodeOf(err) != connect.CodeFailedPrecondition {
		t.Fatalf("replay of a reader's record: %v, want failed_precondition", err)
	}
	if out := run(t, 1, "dead-letters", "replay", "--seq", strconv.FormatUint(seq+1000, 10), "--consumer", "governance", "--addr", h.url, "--token", operatorToken); !strings.Contains(out, "not_found") {
		t.Fatalf("replay of nothing: %s", out)
	}
	run(t, 2, "dead-letters", "replay", "--consumer", "governance")
	// The viewer is no operator: refused at the edge.
	viewer := stewardv1connect.NewDeadLetterServiceClient(&http.Client{Timeout: 30 * time.Second}, h.url, connect.WithInterceptors(stewardtest.Bearer(viewerToken)))
	if _, err := viewer.ListDeadLetters(ctx, connect.NewRequest(&stewardv1.ListDeadLettersRequest{})); connect.CodeOf(err) != connect.CodePermissionDenied {
		t.Fatalf("a viewer lists dead letters: %v", err)
	}
}
