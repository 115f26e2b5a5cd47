package timer_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/steward-run/steward/pkg/embedded"
	"github.com/steward-run/steward/pkg/timer"
)

// Set a retry timer for an action and handle it when it fires. The
// timer's id is derived from the action and attempt, so setting it again
// (after a crash, say) cannot make it fire twice.
func Example() {
	dir, err := os.MkdirTemp("", "timer-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	srv, err := embedded.Start(embedded.Config{StoreDir: dir})
	if err != nil {
		panic(err)
	}
	defer srv.Shutdown()
	nc, err := srv.Connect()
	if err != nil {
		panic(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx := context.Background()

	timers, err := timer.Open(ctx, js, timer.Config{})
	if err != nil {
		panic(err)
	}
	fired := make(chan timer.Fired, 1)
	sub, err := timers.Run(ctx, "execution", []string{"execution.retry"}, func(_ context.Context, f timer.Fired) error {
		fired <- f // a real handler retries the action, idempotently
		return nil
	})
	if err != nil {
		panic(err)
	}
	defer sub.Stop()

	at := time.Now().Add(time.Second)
	for range 2 { // the second Set is a no-op
		if err := timers.Set(ctx, "execution.retry", "act-42/attempt-2", at, []byte(`{"action":"act-42"}`)); err != nil {
			panic(err)
		}
	}

	f := <-fired
	fmt.Println(f.Kind, f.ID, string(f.Payload), !time.Now().Before(at))
	// Output:
	// execution.retry act-42/attempt-2 {"action":"act-42"} true
}
