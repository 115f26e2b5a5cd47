package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"connectrpc.com/connect"

	"github.com/steward-run/steward/pkg/action"
	"github.com/steward-run/steward/pkg/auditbundle"
	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/services/state"
)

// TestAuditBundleForgeriesFail: the forgeries an adversarial review made
// of a real task's bundle, each of which `verify --bundle --trust-key`
// once passed, now fail, naming section and event or item: a permit's
// snapshot pointed at a forged input (the chain resealed, the receipt
// rebuilt) breaks at the permit, whose signature names the snapshot's
// hash; every input dropped fails under inputs, and every source too
// under policies, for snapshots that say in signed bytes that they were
// kept.
func TestAuditBundleForgeriesFail(t *testing.T) {
	tool := stewardtest.StartTool(t)
	dir := t.TempDir()
	flags, _ := bundleSetup(t, tool, dir)
	p := startBinary(t, filepath.Join(dir, "data"), flags...)
	agent := withToken(p.url, agentToken)
	k := contract()
	k.AllowedTools = []string{"search"}
	resp, err := agent.tasks.CreateTask(context.Background(), connect.NewRequest(&stewardv1.CreateTaskRequest{RequestId: "forged", Contract: k}))
	if err != nil {
		t.Fatal(err)
	}
	taskID := resp.Msg.Task.Contract.TaskId
	waitStatus(t, agent.clients, taskID, stewardv1.TaskStatus_TASK_STATUS_RUNNING)
	read := propose(t, agent, taskID, "read", "search", map[string]any{"q": "incident"})
	waitAction(t, agent.clients, taskID, read.ActionId, stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED)
	file, keyFile := filepath.Join(dir, "task.bundle"), filepath.Join(dir, "key.pem")
	run(t, 0, "audit", "export", "--bundle", "--task", taskID, "--out", file, "--addr", p.url, "--token", auditorToken)
	run(t, 0, "audit", "key", "--addr", p.url, "--token", auditorToken, "--out", keyFile)
	run(t, 0, "audit", "verify", "--bundle", file, "--trust-key", keyFile)
	b := readBundle(t, file)
	permitAt, snap := carriedSnapshot(t, taskOf(b, taskID))
	if !snap.InputKept {
		t.Fatalf("snapshot %s does not say its input was kept", snap.SnapshotId)
	}

	for _, tc := range []struct {
		name  string
		forge func(b *stewardv1.AuditBundle)
		want  []string
	}{
		{"a permit's snapshot on a forged input", func(b *stewardv1.AuditBundle) { forgeInput(t, b, taskOf(b, taskID), permitAt) },
			[]string{fmt.Sprintf("FAIL events: task %s event %d", taskID, permitAt), "was signed for a snapshot hashing to"}},
		{"every input dropped", func(b *stewardv1.AuditBundle) { b.Inputs = nil },
			[]string{fmt.Sprintf("FAIL inputs: task %s event %d", taskID, permitAt), "is not in the bundle"}},
		{"every input and source dropped", func(b *stewardv1.AuditBundle) { b.Inputs, b.Policies = nil, nil },
			[]string{fmt.Sprintf("FAIL inputs: task %s event %d", taskID, permitAt), fmt.Sprintf("FAIL policies: task %s event %d", taskID, permitAt)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			forged := readBundle(t, file)
			tc.forge(forged)
			data, err := auditbundle.Marshal(forged)
			if err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(t.TempDir(), "forged.bundle")
			if err := os.WriteFile(out, data, 0o600); err != nil {
				t.Fatal(err)
			}
			got := run(t, 3, "audit", "verify", "--bundle", out, "--trust-key", keyFile)
			for _, want := range tc.want {
				if !strings.Contains(got, want) {
					t.Errorf("want %q in\n%s", want, got)
				}
			}
		})
	}
}

// carriedSnapshot is the first event of bt that carries a snapshot with
// its permit, and that snapshot.
func carriedSnapshot(t *testing.T, bt *stewardv1.BundleTask) (int, *stewardv1.PolicySnapshot) {
	for i, e := range bt.Events {
		if ev, err := event.Open(e.Data); err == nil && ev.GetActionPermitted().GetSnapshot() != nil {
			return i, ev.GetActionPermitted().Snapshot
		}
	}
	t.Fatalf("task %s has no permit carrying its snapshot", bt.TaskId)
	return 0, nil
}

// forgeInput points the snapshot carried by event at of bt at a forged
// input added to b (other parameters and target), reseals the chain from
// there and rebuilds the receipt: what a forger without governance's key
// can do.
func forgeInput(t *testing.T, b *stewardv1.AuditBundle, bt *stewardv1.BundleTask, at int) {
	ev, _ := event.Open(bt.Events[at].Data)
	var doc map[string]any
	dec := json.NewDecoder(bytes.NewReader(blobOf(b.Inputs, ev.GetActionPermitted().Snapshot.InputHash)))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		t.Fatal(err)
	}
	act := doc["action"].(map[string]any)
	act["params"], act["target"] = map[string]any{"q": "FORGED"}, "forged-target"
	forged, err := action.CanonicalJSON(doc)
	if err != nil {
		t.Fatal(err)
	}
	hash := action.RequestHash(forged)
	b.Inputs = append(b.Inputs, &stewardv1.BundleBlob{Hash: hash, Data: forged})
	var prev []byte
	var recs []*stewardv1.EventRecord
	for i, e := range bt.Events {
		ev, err := event.Open(e.Data)
		if err != nil {
			t.Fatal(err)
		}
		if i == at {
			ev.GetActionPermitted().Snapshot.InputHash = hash
		}
		if i >= at {
			if e.Data, err = event.Seal(ev, prev); err != nil {
				t.Fatal(err)
			}
		}
		prev = ev.Hash
		recs = append(recs, &stewardv1.EventRecord{Sequence: e.Sequence, Event: ev})
	}
	if bt.Receipt, err = state.BuildReceipt(recs); err != nil {
		t.Fatal(err)
	}
}

// blobOf is the blob named hash.
func blobOf(blobs []*stewardv1.BundleBlob, hash string) []byte {
	for _, b := range blobs {
		if b.Hash == hash {
			return b.Data
		}
	}
	return nil
}
