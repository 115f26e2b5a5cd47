package e2e_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"connectrpc.com/connect"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// TestGatewayWatchSurvivesStateReplicaLoss watches one task twice through
// `steward gateway` in front of two state replicas (the real binary on the
// three-node cluster): the gateway sends the two watches to different
// replicas, and one replica is killed (SIGKILL) while the task's events
// come. The watch it served reconnects through the gateway with
// after_sequence, is sent to the live replica, and each watch ends with
// exactly the task's history: no gap, no duplicate.
func TestGatewayWatchSurvivesStateReplicaLoss(t *testing.T) {
	b := startClusterBase(t)
	planes, procs := map[string]string{}, map[string]*proc{}
	for _, p := range clusterServices {
		var args []string
		if p.plane == "execution" {
			args = []string{"--sandbox", t.TempDir()}
		}
		procs[p.plane] = b.startPlane(t, p.plane, p.node, planes["governance"], nil, args...)
		planes[p.plane] = procs[p.plane].url
	}
	second := b.startPlane(t, "state", 2, "", nil)
	replicas := replicasOf(planes)
	replicas["state"] = append(replicas["state"], second.url)
	gw := startGateway(t, replicas)
	c := newClients(gw.url)
	taskID := createTask(t, c, "gateway-failover").Contract.TaskId
	waitStatus(t, c, taskID, stewardv1.TaskStatus_TASK_STATUS_RUNNING)

	// Round robin: two watches in a row go to the two replicas.
	watches := []*eventWatch{watchEvents(t, gw.url, taskID), watchEvents(t, gw.url, taskID)}
	turn := func(i int) {
		t.Helper()
		ctx := context.Background()
		if _, err := c.tasks.PauseTask(ctx, connect.NewRequest(&stewardv1.PauseTaskRequest{TaskId: taskID, RequestId: fmt.Sprintf("pause-%d", i), Reason: "failover"})); err != nil {
			t.Fatal(err)
		}
		if _, err := c.tasks.ResumeTask(ctx, connect.NewRequest(&stewardv1.ResumeTaskRequest{TaskId: taskID, RequestId: fmt.Sprintf("resume-%d", i)})); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 5 {
		turn(i)
	}
	procs["state"].kill()
	for i := 5; i < 10; i++ {
		turn(i)
	}

	// The whole history, read anew through the gateway (the live replica).
	want := watchEvents(t, gw.url, taskID).close()
	if len(want) < 20 {
		t.Fatalf("the task has %d events, want its creation and 10 pauses and resumes", len(want))
	}
	resumed := 0
	for i, w := range watches {
		stewardtest.Eventually(t, 20*time.Second, func() (bool, string) {
			return lastSequence(w.snapshot()) >= lastSequence(want), fmt.Sprintf("watch %d has seen up to %d of %d", i, lastSequence(w.snapshot()), lastSequence(want))
		})
		got := w.close()
		if !slices.EqualFunc(got, want, func(a, b *stewardv1.EventRecord) bool { return a.Sequence == b.Sequence }) {
			t.Errorf("watch %d saw sequences %v, want %v", i, sequences(got), sequences(want))
		}
		if n := w.streams.Load(); n > 1 {
			resumed++
			t.Logf("watch %d resumed (%d streams) and saw %d events, none twice, none missed", i, n, len(got))
		}
	}
	if resumed == 0 {
		t.Fatal("neither watch was cut by the replica's death: the two went to one replica, so the test proved nothing")
	}
}

// sequences is each record's sequence.
func sequences(records []*stewardv1.EventRecord) []uint64 {
	var seqs []uint64
	for _, r := range records {
		seqs = append(seqs, r.Sequence)
	}
	return seqs
}
