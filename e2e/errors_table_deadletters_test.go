package e2e_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/nats-io/nats.go"

	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/gen/steward/v1/stewardv1connect"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// deadLetterChecks are the rows of the errors table about replaying dead
// letters (docs/dead-letters.md).
func deadLetterChecks() map[string]tableCheck {
	return map[string]tableCheck{
		"a replay of a dead letter that does not exist; of one set aside by a reader or written by an older Steward without its consumer, or replayed already (`ReplayDeadLetter`)": func(t *testing.T, e *harness) []error {
			ctx := context.Background()
			// A record of the older shape, steward.deadletter.<seq>, at a
			// sequence the event stream does not reach.
			js, _ := e.events(t)
			const seq = "999999"
			old := &nats.Msg{Subject: eventlog.DefaultDeadLetterPrefix + "." + seq, Header: nats.Header{
				eventlog.HeaderOrigSubject: {"steward.task.table-old.task.started"}, eventlog.HeaderOrigSequence: {seq}, eventlog.HeaderError: {"old"},
			}}
			if _, err := js.PublishMsg(ctx, old); err != nil {
				t.Fatal(err)
			}
			dl := stewardv1connect.NewDeadLetterServiceClient(&http.Client{Timeout: 30 * time.Second}, e.url, connect.WithInterceptors(stewardtest.Bearer(operatorToken)))
			replay := func(seq uint64, consumer string) error {
				_, err := dl.ReplayDeadLetter(ctx, connect.NewRequest(&stewardv1.ReplayDeadLetterRequest{Sequence: seq, Consumer: consumer}))
				return err
			}
			return []error{replay(999998, "governance"), replay(999999, "")}
		},
	}
}
