package e2e_test

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/natsperm"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// TestClusterRaiseReplicas deploys Steward on the three-node cluster with
// its streams at one replica (`steward serve --replicas 1`), records a
// task, and raises the streams in place with `steward nats-streams
// --replicas 3` run as the cluster's admin: every stream and bucket the
// planes made is then at three replicas, a plane started with --replicas
// 3 before the raise warns naming the command and one started after does
// not, and the task's chain still verifies.
func TestClusterRaiseReplicas(t *testing.T) {
	b := startClusterBase(t)
	control := b.startPlane(t, "control", 0, "", nil, "--replicas", "1")
	b.startPlane(t, "governance", 2, "", nil, "--replicas", "1")
	state := b.startPlane(t, "state", 1, "", nil, "--replicas", "1")
	resp, err := newClients(control.url).tasks.CreateTask(context.Background(), connect.NewRequest(&stewardv1.CreateTaskRequest{RequestId: "raise-1", Contract: contract()}))
	if err != nil {
		t.Fatal(err)
	}
	taskID := resp.Msg.Task.Contract.TaskId
	waitStarted(t, newClients(state.url), taskID)

	before := b.startPlane(t, "state", 2, "", nil)
	stewardtest.Eventually(t, 5*time.Second, func() (bool, string) {
		return strings.Contains(before.logged(), "steward nats-streams --replicas 3"),
			"a plane at --replicas 3 on streams at one replica does not name the command that raises them:\n" + before.logged()
	})
	before.stop(t)

	admin := strings.Replace(b.cluster.ClientURL(1), "nats://", "nats://"+url.UserPassword(clusterAdmin, clusterPassword).String()+"@", 1)
	out := run(t, 0, "nats-streams", "--nats", admin, "--replicas", "3")
	js := b.cluster.Bus(0).JS
	for _, name := range natsperm.Streams() {
		s, err := js.Stream(context.Background(), name)
		if err != nil {
			continue // a stream no plane here made (execution's)
		}
		if got := s.CachedInfo().Config.Replicas; got != 3 {
			t.Errorf("%s has %d replicas after nats-streams, want 3:\n%s", name, got, out)
		}
	}
	if !strings.Contains(out, "raised from 1 to 3 replicas") {
		t.Errorf("nats-streams did not say what it raised:\n%s", out)
	}

	after := b.startPlane(t, "state", 2, "", nil)
	if strings.Contains(after.logged(), "fewer replicas") {
		t.Errorf("a plane started after the raise warns:\n%s", after.logged())
	}
	if out := run(t, 0, "audit", "verify", "--task", taskID, "--addr", strings.TrimPrefix(after.url, "http://")); !strings.Contains(out, "ok: ") {
		t.Errorf("audit verify after the raise:\n%s", out)
	}
	if out := run(t, 0, "nats-streams", "--nats", admin, "--replicas", "1"); !strings.Contains(out, "never lowers") {
		t.Errorf("nats-streams --replicas 1 on streams at 3:\n%s", out)
	}
}
