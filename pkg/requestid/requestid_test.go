package requestid_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/requestid"
	"github.com/steward-run/steward/pkg/stewardtest"
)

func pause(taskID, reason string) requestid.Use {
	return requestid.UseOf("PauseTask", taskID, &stewardv1.PauseTaskRequest{TaskId: taskID, Reason: reason, RequestId: "ignored"})
}

// TestClaim: the first use of a request id wins; the same use again is a
// retry; anything else is AlreadyExists naming the first use; another
// caller's id of the same name is its own.
func TestClaim(t *testing.T) {
	log, _ := stewardtest.OpenLog(t)
	ctx := context.Background()
	ana := requestid.ForPrincipal("user:ana")
	if _, err := requestid.Claim(ctx, log, ana, "r1", pause("t1", "hold")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		scope requestid.Scope
		use   requestid.Use
		want  string // "" for nil
	}{
		{"the same use", ana, pause("t1", "hold"), ""},
		{"the same use, its request id aside", ana, requestid.UseOf("PauseTask", "t1", &stewardv1.PauseTaskRequest{TaskId: "t1", Reason: "hold", RequestId: "other"}), ""},
		{"another body", ana, pause("t1", "wait"), `request id "r1" was first used for PauseTask on task t1 with another body`},
		{"another task", ana, pause("t2", "hold"), `request id "r1" was first used for PauseTask on task t1;`},
		{"another command", ana, requestid.UseOf("CancelTask", "t1", &stewardv1.CancelTaskRequest{TaskId: "t1", Reason: "hold"}), `request id "r1" was first used for PauseTask on task t1;`},
		{"another caller", requestid.ForPrincipal("user:bo"), pause("t2", "other"), ""},
		{"another tenant", requestid.Scope{Tenant: "acme", Principal: "user:ana"}, pause("t2", "other"), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := requestid.Claim(ctx, log, tc.scope, "r1", tc.use)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("got %v, want nil", err)
			case tc.want != "" && (!errs.Is(err, errs.AlreadyExists) || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("got %v, want already exists: %s", err, tc.want)
			}
		})
	}
	if _, err := requestid.Claim(ctx, log, ana, "", pause("t9", "x")); err != nil {
		t.Errorf("no request id claims nothing: %v", err)
	}
}

// TestClaimRace: of many different uses of one id at once exactly one
// wins; many identical uses all do.
func TestClaimRace(t *testing.T) {
	log, _ := stewardtest.OpenLog(t)
	ctx := context.Background()
	s := requestid.ForPrincipal("agent")
	var wg sync.WaitGroup
	var mu sync.Mutex
	won := 0
	for i := range 16 {
		wg.Go(func() {
			_, err := requestid.Claim(ctx, log, s, "race", pause("t1", fmt.Sprint(i)))
			mu.Lock()
			defer mu.Unlock()
			if err == nil {
				won++
			} else if !errs.Is(err, errs.AlreadyExists) {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if won != 1 {
		t.Errorf("%d different uses won, want 1", won)
	}
	for range 16 {
		wg.Go(func() {
			if _, err := requestid.Claim(ctx, log, s, "same", pause("t1", "x")); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
}

// TestScopeDerivesPerCaller: ids derived from one request id differ per
// principal and per tenant, and are valid task ids.
func TestScopeDerivesPerCaller(t *testing.T) {
	scopes := []requestid.Scope{{Principal: "user:ana"}, {Principal: "user:bo"}, {Tenant: "acme", Principal: "user:ana"}}
	tasks, events := map[string]bool{}, map[string]bool{}
	for _, s := range scopes {
		tasks[s.TaskID("demo-1")] = true
		events[s.EventID("t1", "PauseTask", "demo-1")] = true
	}
	if len(tasks) != len(scopes) || len(events) != len(scopes) {
		t.Fatalf("task ids %v, event ids %v: want one per scope", tasks, events)
	}
}

func ExampleScope_TaskID() {
	ana, bo := requestid.ForPrincipal("user:ana"), requestid.ForPrincipal("user:bo")
	fmt.Println(ana.TaskID("demo-1") == bo.TaskID("demo-1"))
	fmt.Println(ana.TaskID("demo-1") == ana.TaskID("demo-1"))
	// Output:
	// false
	// true
}

// TestRelease: a first use released is forgotten, so the id is free for
// another use; a retry's hold releases nothing.
func TestRelease(t *testing.T) {
	log, _ := stewardtest.OpenLog(t)
	ctx := context.Background()
	ana := requestid.ForPrincipal("user:ana")
	first, err := requestid.Claim(ctx, log, ana, "r1", pause("t1", "hold"))
	if err != nil {
		t.Fatal(err)
	}
	retry, err := requestid.Claim(ctx, log, ana, "r1", pause("t1", "hold"))
	if err != nil {
		t.Fatal(err)
	}
	if err := retry.Release(ctx, log); err != nil {
		t.Fatal(err)
	}
	if _, err := requestid.Claim(ctx, log, ana, "r1", pause("t1", "fixed")); !errs.Is(err, errs.AlreadyExists) {
		t.Fatalf("after a retry's release: %v, want the first use still held", err)
	}
	if err := first.Release(ctx, log); err != nil {
		t.Fatal(err)
	}
	if _, err := requestid.Claim(ctx, log, ana, "r1", pause("t1", "fixed")); err != nil {
		t.Fatalf("after the first use's release: %v, want the id free", err)
	}
	// A stale release does not forget the use that came after it.
	if err := first.Release(ctx, log); err == nil {
		t.Error("a second release of the same hold: nil, want refused by its revision")
	}
	if _, err := requestid.Claim(ctx, log, ana, "r1", pause("t1", "other")); !errs.Is(err, errs.AlreadyExists) {
		t.Fatalf("after a stale release: %v, want the later use held", err)
	}
}
