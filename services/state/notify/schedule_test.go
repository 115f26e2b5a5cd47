package notify_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/steward-run/steward/pkg/event"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/services/state/notify"
)

// scheduleSinks runs a notifier over a real log whose sinks ops (every
// tenant's) and other (globex's) take kind, and returns a recorder of
// events on a schedule's chain (the id of the last it appends).
func scheduleSinks(t *testing.T, kind string) (ops, other *sink, record func(id string, ps ...event.Payload) string) {
	env := stewardtest.NewEnv(t)
	ops, other = newSink(t, "ops"), newSink(t, "other")
	file := filepath.Join(t.TempDir(), "sinks.json")
	entry := func(s *sink, tenant string) string {
		b, _ := json.Marshal(map[string]any{"name": s.name, "url": s.srv.URL, "tenant": tenant, "kinds": []string{kind}, "secrets": []string{oldSecret}})
		return string(b)
	}
	if err := os.WriteFile(file, []byte(fmt.Sprintf(`{"sinks": [%s, %s]}`, entry(ops, ""), entry(other, "globex"))), 0o600); err != nil {
		t.Fatal(err)
	}
	n, err := notify.New(notify.Config{Log: env.Log, Tasks: env.Tasks, File: file, Reload: 20 * time.Millisecond, Logger: env.Logger})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go n.Run(ctx)
	for _, s := range []*sink{ops, other} {
		stewardtest.Eventually(t, 30*time.Second, func() (bool, string) {
			_, err := env.JS.Consumer(context.Background(), env.Log.Config().Stream, notify.Consumer(s.name))
			return err == nil, fmt.Sprintf("no consumer of sink %s: %v", s.name, err)
		})
	}
	record = func(id string, ps ...event.Payload) (last string) {
		t.Helper()
		recs, err := env.Log.ReadSchedule(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		var head eventlog.Head
		if len(recs) > 0 {
			last := recs[len(recs)-1]
			head = eventlog.Head{Sequence: last.Sequence, Hash: last.Event.Hash}
		}
		for _, p := range ps {
			rec, err := env.Log.Append(ctx, head, stewardtest.Event(t, id, p))
			if err != nil {
				t.Fatal(err)
			}
			head, last = eventlog.Head{Sequence: rec.Sequence, Hash: rec.Event.Hash}, rec.Event.EventId
		}
		return last
	}
	return ops, other, record
}

// TestScheduleFiringNotRunIsAnnounced: a schedule's firings recorded
// OVER_BUDGET, MISSED, REFUSED and REVOKED reach a sink that takes
// schedule.not_run, once each, under the schedule's id; STARTED and
// SKIPPED do not; a sink of another tenant hears nothing of them.
func TestScheduleFiringNotRunIsAnnounced(t *testing.T) {
	ops, other, record := scheduleSinks(t, "schedule.not_run")
	at := time.Now().Truncate(time.Second)
	fired := func(d stewardv1.FiringDisposition, h int) event.Payload {
		return &stewardv1.ScheduleFired{Firing: &stewardv1.ScheduleFiring{FiringTime: timestamppb.New(at.Add(time.Duration(h) * time.Hour)), Disposition: d, Reason: "r"}}
	}
	cred, err := proto.Marshal(&stewardv1.TaskCredential{CredentialId: "cred-acme", TaskId: "sch-acme"})
	if err != nil {
		t.Fatal(err)
	}
	revoked := record("sch-acme", &stewardv1.ScheduleCreated{Tenant: "acme"},
		fired(stewardv1.FiringDisposition_FIRING_DISPOSITION_STARTED, 1),
		fired(stewardv1.FiringDisposition_FIRING_DISPOSITION_OVER_BUDGET, 2),
		fired(stewardv1.FiringDisposition_FIRING_DISPOSITION_SKIPPED, 3),
		fired(stewardv1.FiringDisposition_FIRING_DISPOSITION_MISSED, 4),
		fired(stewardv1.FiringDisposition_FIRING_DISPOSITION_REFUSED, 5),
		// REVOKED only once the schedule's credential is (the fold).
		&stewardv1.ScheduleCredentialIssued{Credential: &stewardv1.SignedCredential{Credential: cred}},
		&stewardv1.ScheduleCredentialRevoked{CredentialId: "cred-acme", Reason: "leaked"},
		fired(stewardv1.FiringDisposition_FIRING_DISPOSITION_REVOKED, 6))
	// A sink's consumer delivers one chain in order: once the last is
	// sent, the ones before it were.
	stewardtest.Eventually(t, 30*time.Second, func() (bool, string) {
		h, _ := ops.has("sch-acme")
		return h.Get(notify.HeaderID) == revoked, "the revoked firing not yet sent"
	})
	if got, _ := ops.waitKinds(t, "sch-acme", 0); fmt.Sprint(got) != "[schedule.not_run schedule.not_run schedule.not_run schedule.not_run]" {
		t.Fatalf("the operator's sink heard %v of acme's firings, want the over-budget, missed, refused and revoked ones once each", got)
	}
	// globex's sink hears its own schedule; acme's it reads and drops.
	record("sch-globex", &stewardv1.ScheduleCreated{Tenant: "globex"}, fired(stewardv1.FiringDisposition_FIRING_DISPOSITION_OVER_BUDGET, 1))
	other.waitKinds(t, "sch-globex", 1)
	if _, ok := other.has("sch-acme"); ok {
		t.Fatal("globex's sink heard of acme's schedule")
	}
}

// TestScheduleRunFailedIsAnnounced: of a schedule's runs' ends, the
// failed one and the one a person cancelled reach a sink that takes
// schedule.run_failed, once each, under the schedule's id, saying what to
// run; an accepted run and one cancelled by a later firing
// (cancel_previous) do not; another tenant's sink hears nothing.
func TestScheduleRunFailedIsAnnounced(t *testing.T) {
	ops, other, record := scheduleSinks(t, "schedule.run_failed")
	ended := func(run string, o stewardv1.RunOutcome, superseded bool) event.Payload {
		return &stewardv1.ScheduleRunEnded{End: &stewardv1.ScheduleRunEnd{TaskId: run, FiringTime: timestamppb.Now(), Outcome: o, Superseded: superseded, Reason: "r"}}
	}
	// The last one sent last: once it is, the ones before were read.
	last := record("sch-acme", &stewardv1.ScheduleCreated{Tenant: "acme"},
		ended("run-1", stewardv1.RunOutcome_RUN_OUTCOME_ACCEPTED, false),
		ended("run-2", stewardv1.RunOutcome_RUN_OUTCOME_FAILED, false),
		ended("run-3", stewardv1.RunOutcome_RUN_OUTCOME_CANCELLED, true),
		ended("run-4", stewardv1.RunOutcome_RUN_OUTCOME_CANCELLED, false))
	stewardtest.Eventually(t, 30*time.Second, func() (bool, string) {
		h, _ := ops.has("sch-acme")
		return h.Get(notify.HeaderID) == last, "the cancelled run's end not yet sent"
	})
	got, _ := ops.waitKinds(t, "sch-acme", 0)
	if fmt.Sprint(got) != "[schedule.run_failed schedule.run_failed]" {
		t.Fatalf("the operator's sink heard %v of acme's runs, want the failed and the cancelled one once each", got)
	}
	ops.mu.Lock()
	acts := ops.acts["sch-acme"]
	ops.mu.Unlock()
	if want := "steward tasks get run-2; steward schedules get sch-acme"; len(acts) != 2 || acts[0] != want {
		t.Fatalf("the failed run's notification says to run %q, want %q first", acts, want)
	}
	record("sch-globex", &stewardv1.ScheduleCreated{Tenant: "globex"}, ended("run-g", stewardv1.RunOutcome_RUN_OUTCOME_FAILED, false))
	other.waitKinds(t, "sch-globex", 1)
	if _, ok := other.has("sch-acme"); ok {
		t.Fatal("globex's sink heard of acme's schedule")
	}
}
