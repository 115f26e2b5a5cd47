package state_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/protobuf/encoding/protodelim"
	"google.golang.org/protobuf/proto"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/natsperm"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/services/state"
)

// openViews opens the snapshot bucket of env's server as the state
// plane's NATS user (pkg/natsperm): what it may not do fails the test.
func openViews(t testing.TB, env *stewardtest.Env) *state.ViewStore {
	t.Helper()
	refused := make(chan error, 16)
	nc, err := env.ConnectAs(state.PlaneName, nats.CustomInboxPrefix(natsperm.Inbox(state.PlaneName)),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { refused <- err }))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		nc.Close()
		close(refused)
		for err := range refused {
			t.Errorf("NATS refused the state plane: %v", err)
		}
	})
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	v, err := state.OpenViewStore(context.Background(), js, 1)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// caughtUp waits until p's views have applied the whole log.
func caughtUp(t testing.TB, env *stewardtest.Env, p *state.Projection) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	last, err := env.Log.LastTaskSequence(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.WaitFor(ctx, last); err != nil {
		t.Fatal(err)
	}
}

// sameViews fails t unless got holds the views, refusals and task metrics
// (recoveries, spend, answers: what the projection notes beside the
// fold) of want.
func sameViews(t *testing.T, want, got *state.Projection) {
	t.Helper()
	w, g := want.Snapshot(), got.Snapshot()
	if len(g) != len(w) {
		t.Fatalf("%d views, want %d", len(g), len(w))
	}
	for id, v := range w {
		if !proto.Equal(v, g[id]) {
			t.Errorf("task %s:\n want %v\n got  %v", id, v, g[id])
		}
	}
	if got.Rejected() != want.Rejected() {
		t.Errorf("%d events refused, want %d", got.Rejected(), want.Rejected())
	}
	// CollectAndFormat with no metric names collects none: compare
	// every metric's text.
	wm, gm := metricsText(t, state.NewTaskCollector(want)), metricsText(t, state.NewTaskCollector(got))
	if wm != gm {
		t.Errorf("task metrics differ:\n want %s\n got  %s", wm, gm)
	}
}

// TestAStartFromASnapshotEqualsAFoldFromTheStart: a varied history
// (tasks running, stalled, paused, cancelled, failed, compensated,
// reconciling an unknown outcome, accepted, returned, approvals, budgets,
// one broken), a snapshot of it, then more: new tasks and old ones moved
// on. A plane started from the snapshot and the log after it serves the
// views, refusals and metrics of a fold of the whole log.
func TestAStartFromASnapshotEqualsAFoldFromTheStart(t *testing.T) {
	env := stewardtest.NewEnv(t)
	ctx := context.Background()
	views := openViews(t, env)
	writeMetricsHistories(t, env)
	first := startPlane(t, env.Log, env.Logger, state.Config{Views: views})
	covered, err := first.SaveSnapshot(ctx)
	if err != nil || covered == 0 {
		t.Fatalf("SaveSnapshot: %d, %v", covered, err)
	}
	env.Append("allowed", &stewardv1.TaskPaused{Reason: "after the snapshot"})
	env.Append("checksfailed", &stewardv1.TaskCancelled{Reason: "after the snapshot"})
	env.Append("later", append(running(), act("b1", "lookup", "crm", "r1")...)...)
	env.Append("later", succeededOutcome("b1", 1))
	appendUnchecked(t, env.Log, "broken-later", &stewardv1.TaskStarted{})

	second := startPlane(t, env.Log, env.Logger, state.Config{Views: views})
	if got := second.SnapshotCovered(); got != covered {
		t.Fatalf("the second plane started from %d, want the snapshot covering %d", got, covered)
	}
	whole := follow(t, env.Log)
	caughtUp(t, env, whole)
	caughtUp(t, env, second.Views())
	sameViews(t, whole, second.Views())
}

// TestASnapshotTheLogDoesNotBearOutIsRefused: a snapshot claiming a chain
// head whose hash differs from the log's, one covering more than the log
// holds, and bytes that are no snapshot are each refused, and the plane
// folds the log from the start (or from an earlier snapshot that checks)
// and serves what that fold serves.
func TestASnapshotTheLogDoesNotBearOutIsRefused(t *testing.T) {
	ctx := context.Background()
	cases := map[string]func(h *stewardv1.ViewsSnapshotHeader, entries []*stewardv1.TaskViewSnapshot) (uint64, []byte){
		"a head's hash differs": func(h *stewardv1.ViewsSnapshotHeader, entries []*stewardv1.TaskViewSnapshot) (uint64, []byte) {
			entries[0].Task.LastHash[0] ^= 1
			return h.CoveredSequence, encode(t, h, entries)
		},
		"it covers more than the log": func(h *stewardv1.ViewsSnapshotHeader, entries []*stewardv1.TaskViewSnapshot) (uint64, []byte) {
			h.CoveredSequence += 100
			return h.CoveredSequence, encode(t, h, entries)
		},
		"a later format": func(h *stewardv1.ViewsSnapshotHeader, entries []*stewardv1.TaskViewSnapshot) (uint64, []byte) {
			h.FormatVersion++
			return h.CoveredSequence, encode(t, h, entries)
		},
		"another build's": func(h *stewardv1.ViewsSnapshotHeader, entries []*stewardv1.TaskViewSnapshot) (uint64, []byte) {
			h.Build = "v0.1.0 0123456789abcdef"
			return h.CoveredSequence, encode(t, h, entries)
		},
		"no snapshot at all": func(h *stewardv1.ViewsSnapshotHeader, _ []*stewardv1.TaskViewSnapshot) (uint64, []byte) {
			return h.CoveredSequence, []byte("not a snapshot")
		},
	}
	for name, spoil := range cases {
		t.Run(name, func(t *testing.T) {
			env := stewardtest.NewEnv(t)
			views := openViews(t, env)
			writeMetricsHistories(t, env)
			first := startPlane(t, env.Log, env.Logger, state.Config{Views: views})
			covered, err := first.SaveSnapshot(ctx)
			if err != nil {
				t.Fatal(err)
			}
			h, entries := readNewest(t, views)
			seq, data := spoil(h, entries)
			if _, err := views.Put(ctx, seq, time.Now(), func(w, _ io.Writer) error { _, err := w.Write(data); return err }); err != nil {
				t.Fatal(err)
			}
			second := startPlane(t, env.Log, env.Logger, state.Config{Views: views})
			// Refused, it leaves the snapshot before it, if any, else
			// the start.
			want := uint64(0)
			if seq != covered {
				want = covered
			}
			if got := second.SnapshotCovered(); got != want {
				t.Fatalf("the plane started from the snapshot covering %d; want %d", got, want)
			}
			whole := follow(t, env.Log)
			caughtUp(t, env, whole)
			sameViews(t, whole, second.Views())
			if seq != covered {
				return // a later sequence than the log's: kept until the log passes it
			}
			// The plane that refused the newest replaces it, though it
			// covers no more: else every start refuses it again.
			if _, err := second.SaveSnapshot(ctx); err != nil {
				t.Fatal(err)
			}
			third := startPlane(t, env.Log, env.Logger, state.Config{Views: views})
			if got := third.SnapshotCovered(); got != covered {
				t.Fatalf("after the refusing plane wrote, a start began from %d; want %d", got, covered)
			}
		})
	}
}

// TestSnapshotsNeverGoBack: two replicas write; the stored snapshots
// only move forward, a replica with nothing newer writes none, and a
// start takes the newest.
func TestSnapshotsNeverGoBack(t *testing.T) {
	ctx := context.Background()
	env := stewardtest.NewEnv(t)
	views := openViews(t, env)
	env.Append("t1", running()...)
	a := startPlane(t, env.Log, env.Logger, state.Config{Views: views})
	b := startPlane(t, env.Log, env.Logger, state.Config{Views: views})
	x, err := a.SaveSnapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	env.Append("t2", running()...)
	caughtUp(t, env, a.Views())
	y, err := a.SaveSnapshot(ctx)
	if err != nil || y <= x {
		t.Fatalf("the second snapshot covers %d (%v); want more than %d", y, err, x)
	}
	caughtUp(t, env, b.Views())
	if got, err := b.SaveSnapshot(ctx); err != nil || got != y {
		t.Fatalf("the other replica: %d, %v; want the stored %d", got, err, y)
	}
	newest, err := views.Newest(ctx)
	if err != nil || newest.CoveredSequence != y || newest.Previous != x {
		t.Fatalf("the newest stored: %v (%v); want %d after %d", newest, err, y, x)
	}
	// A write of an older snapshot leaves the newer the newest.
	if _, err := views.Put(ctx, x, time.Now(), func(_, _ io.Writer) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if newest, err := views.Newest(ctx); err != nil || newest.CoveredSequence != y {
		t.Fatalf("after an older write the newest is %v (%v); want %d", newest, err, y)
	}
	c := startPlane(t, env.Log, env.Logger, state.Config{Views: views})
	if got := c.SnapshotCovered(); got != y {
		t.Fatalf("started from %d; want the newest, %d", got, y)
	}
}

func readNewest(t *testing.T, views *state.ViewStore) (*stewardv1.ViewsSnapshotHeader, []*stewardv1.TaskViewSnapshot) {
	t.Helper()
	m, err := views.Newest(context.Background())
	if err != nil || m == nil {
		t.Fatalf("the newest snapshot: %v, %v", m, err)
	}
	h, entries, err := state.ReadSnapshot(views.Open(context.Background(), m))
	if err != nil {
		t.Fatal(err)
	}
	return h, entries
}

func encode(t *testing.T, h *stewardv1.ViewsSnapshotHeader, entries []*stewardv1.TaskViewSnapshot) []byte {
	t.Helper()
	var buf bytes.Buffer
	for _, m := range append([]proto.Message{h}, protoMessages(entries)...) {
		if _, err := protodelim.MarshalTo(&buf, m); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

func protoMessages(entries []*stewardv1.TaskViewSnapshot) []proto.Message {
	out := make([]proto.Message, len(entries))
	for i, e := range entries {
		out[i] = e
	}
	return out
}

// TestSnapshotMetrics: a plane that wrote a snapshot reports its size,
// age and write time; one that started from it, its load time.
func TestSnapshotMetrics(t *testing.T) {
	env := stewardtest.NewEnv(t)
	views := openViews(t, env)
	env.Append("t1", running()...)
	now := time.Now()
	clock := func() time.Time { return now }
	first := startPlane(t, env.Log, env.Logger, state.Config{Views: views, Now: clock})
	if _, err := first.SaveSnapshot(context.Background()); err != nil {
		t.Fatal(err)
	}
	now = now.Add(90 * time.Second)
	const names = "steward_views_snapshot_age_seconds"
	if err := testutil.CollectAndCompare(first.Collector(), strings.NewReader(`
# HELP steward_views_snapshot_age_seconds Age of the newest snapshot of the task views this state plane wrote or started from.
# TYPE steward_views_snapshot_age_seconds gauge
steward_views_snapshot_age_seconds 90
`), names); err != nil {
		t.Error(err)
	}
	if n := testutil.ToFloat64(metricOf(t, first.Collector(), "steward_views_snapshot_bytes")); n <= 0 {
		t.Errorf("steward_views_snapshot_bytes %v; want the snapshot's size", n)
	}
	second := startPlane(t, env.Log, env.Logger, state.Config{Views: views, Now: clock})
	if n := testutil.ToFloat64(metricOf(t, second.Collector(), "steward_views_snapshot_load_seconds")); n <= 0 {
		t.Errorf("steward_views_snapshot_load_seconds %v; want the load's time", n)
	}
}

// metricOf is the collector of c's one series named name.
func metricOf(t *testing.T, c prometheus.Collector, name string) prometheus.Collector {
	t.Helper()
	ch := make(chan prometheus.Metric, 64)
	c.Collect(ch)
	close(ch)
	for m := range ch {
		if strings.Contains(m.Desc().String(), `"`+name+`"`) {
			return constCollector{m}
		}
	}
	t.Fatalf("no %s", name)
	return nil
}

type constCollector struct{ m prometheus.Metric }

func (c constCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.m.Desc() }
func (c constCollector) Collect(ch chan<- prometheus.Metric) { ch <- c.m }

// TestTwoWritesOfOneSequenceDoNotMix: two replicas that have applied
// the same sequence write their snapshots of it at once (or one replica
// refreshes the newest); the chunks of one never land under the other's
// manifest, so the newest stays readable.
func TestTwoWritesOfOneSequenceDoNotMix(t *testing.T) {
	ctx := context.Background()
	env := stewardtest.NewEnv(t)
	views := openViews(t, env)
	chunk := bytes.Repeat([]byte("a"), 256<<10)
	other := bytes.Repeat([]byte("b"), 2*len(chunk))
	at := time.Unix(1_800_000_000, 0)
	_, err := views.Put(ctx, 7, at, func(w, _ io.Writer) error {
		if _, err := w.Write(chunk); err != nil {
			return err
		}
		// The other writer puts all of its snapshot of 7 meanwhile.
		if _, err := views.Put(ctx, 7, at.Add(time.Millisecond), func(w, _ io.Writer) error { _, err := w.Write(other); return err }); err != nil {
			return err
		}
		_, err := w.Write(chunk)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	m, err := views.Newest(ctx)
	if err != nil || m == nil {
		t.Fatalf("the newest: %v, %v", m, err)
	}
	got, err := io.ReadAll(views.Open(ctx, m))
	if err != nil {
		t.Fatalf("the newest snapshot of 7 does not read: %v", err)
	}
	if !bytes.Equal(got, bytes.Repeat([]byte("a"), 2*len(chunk))) && !bytes.Equal(got, other) {
		t.Fatalf("the newest snapshot of 7 mixes the two writes")
	}
}

// TestADamagedLengthAllocatesWhatIsThere: a snapshot whose entry claims
// 200 MiB but holds a few bytes (damaged, or written to be so) is refused
// without the 200 MiB being allocated first: its bytes are checked against
// the manifest's hash only at the end.
func TestADamagedLengthAllocatesWhatIsThere(t *testing.T) {
	var buf bytes.Buffer
	if _, err := protodelim.MarshalTo(&buf, &stewardv1.ViewsSnapshotHeader{FormatVersion: state.ViewsFormat}); err != nil {
		t.Fatal(err)
	}
	buf.Write(binary.AppendUvarint(nil, 200<<20))
	buf.WriteString("abc")
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, _, err := state.ReadSnapshot(&buf)
	runtime.ReadMemStats(&after)
	if err == nil {
		t.Fatal("a snapshot cut short was read")
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 16<<20 {
		t.Fatalf("reading it allocated %d MiB", got>>20)
	}
}
