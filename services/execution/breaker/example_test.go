package breaker_test

import (
	"fmt"
	"time"

	"github.com/steward-run/steward/services/execution/breaker"
)

func Example() {
	breakers := breaker.New(breaker.Config{MinRequests: 3, CoolDown: 10 * time.Second})
	now := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)

	// Three timeouts in a row from the payments service open its breaker.
	for range 3 {
		if tr := breakers.Record("payments", breaker.Failure, now); tr != nil {
			fmt.Printf("%s: %v → %v after %d/%d failures, until %s\n",
				tr.Key, tr.From, tr.To, tr.Failures, tr.Requests, tr.Until.Format(time.TimeOnly))
		}
	}

	// A bad parameter says nothing about the service and is Neutral.
	breakers.Record("mail", breaker.Neutral, now)

	if ok, retryAt, _ := breakers.Allow("payments", now.Add(time.Second)); !ok {
		fmt.Println("payments refused; ask again at", retryAt.Format(time.TimeOnly))
	}

	// After the cool-down one probe goes out, and its success closes the
	// breaker.
	now = now.Add(10 * time.Second)
	ok, _, tr := breakers.Allow("payments", now)
	fmt.Println("probe allowed:", ok, "-", tr.From, "→", tr.To)
	tr = breakers.Record("payments", breaker.Success, now.Add(200*time.Millisecond))
	fmt.Println(tr.From, "→", tr.To)
	fmt.Println("not closed:", len(breakers.Snapshot(now)))

	// Output:
	// payments: closed → open after 3/3 failures, until 12:00:10
	// payments refused; ask again at 12:00:10
	// probe allowed: true - open → half-open
	// half-open → closed
	// not closed: 0
}
