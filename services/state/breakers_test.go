package state_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/services/state"
)

// TestListBreakersShowsEachWorkersLastChange records breaker changes on a
// service subject, as execution workers do, and reads them back through
// QueryService.ListBreakers.
func TestListBreakersShowsEachWorkersLastChange(t *testing.T) {
	ctx := context.Background()
	env := stewardtest.NewEnv(t)
	log := env.Log
	change := func(worker string, to stewardv1.BreakerState) {
		t.Helper()
		head, _, err := log.ServiceHead(ctx, "", "bank")
		if err != nil {
			t.Fatal(err)
		}
		ev, err := event.New(event.Meta{Actor: &stewardv1.Actor{Principal: worker, Plane: "execution"}}, &stewardv1.BreakerChanged{
			ServiceKey: "bank", Worker: worker, To: to, Requests: 5, Failures: 4, Until: timestamppb.New(time.Now().Add(time.Minute)),
		})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := log.Append(ctx, head, ev); err != nil {
			t.Fatal(err)
		}
	}
	change("w1", stewardv1.BreakerState_BREAKER_STATE_OPEN)
	change("w2", stewardv1.BreakerState_BREAKER_STATE_OPEN)
	change("w2", stewardv1.BreakerState_BREAKER_STATE_CLOSED)

	client, _ := serveState(t, env)

	resp, err := client.ListBreakers(ctx, connect.NewRequest(&stewardv1.ListBreakersRequest{}))
	if err != nil {
		t.Fatal(err)
	}
	got := resp.Msg.Breakers
	if len(got) != 2 || got[0].Worker != "w1" || got[0].State != stewardv1.BreakerState_BREAKER_STATE_OPEN ||
		got[1].Worker != "w2" || got[1].State != stewardv1.BreakerState_BREAKER_STATE_CLOSED {
		t.Fatalf("breakers %v", got)
	}
	resp, err = client.ListBreakers(ctx, connect.NewRequest(&stewardv1.ListBreakersRequest{NotClosed: true}))
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Msg.Breakers) != 1 || resp.Msg.Breakers[0].Worker != "w1" {
		t.Fatalf("not closed: %v", resp.Msg.Breakers)
	}
}

// TestBreakersOfATenantsToolsAreItsOwn: ListBreakers shows a tenant the
// global tools' breakers and its own tools', never another tenant's —
// even of the same service key.
func TestBreakersOfATenantsToolsAreItsOwn(t *testing.T) {
	b := state.NewBreakers()
	for seq, tenant := range []string{"", "acme", "beta"} {
		c := &stewardv1.BreakerChanged{ServiceKey: "bank", Worker: "w1", Tenant: tenant, To: stewardv1.BreakerState_BREAKER_STATE_OPEN}
		if err := b.Apply(&stewardv1.EventRecord{Sequence: uint64(seq + 1), Event: &stewardv1.Event{Payload: &stewardv1.Event_BreakerChanged{BreakerChanged: c}}}); err != nil {
			t.Fatal(err)
		}
	}
	for tenant, want := range map[string][]string{"": {""}, "acme": {"", "acme"}, "beta": {"", "beta"}, "other": {""}} {
		var got []string
		for _, br := range b.List(tenant, true) {
			got = append(got, br.Tenant)
		}
		if !slices.Equal(got, want) {
			t.Errorf("tenant %q sees the breakers of %q, want %q", tenant, got, want)
		}
	}
}
