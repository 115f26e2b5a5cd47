package archive_test

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/steward-run/steward/pkg/archive"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// tree is a bundle of two tasks, parent and child, with a stored request,
// result and policy input each.
func tree() *stewardv1.AuditBundle {
	blob := func(h string) []*stewardv1.BundleBlob {
		return []*stewardv1.BundleBlob{{Hash: h, Data: []byte("content of " + h)}}
	}
	return &stewardv1.AuditBundle{
		Tasks: []*stewardv1.BundleTask{
			{TaskId: "parent", Events: []*stewardv1.BundleEvent{{Sequence: 1, Data: []byte("p1")}, {Sequence: 5, Data: []byte("p2")}}},
			{TaskId: "child", Events: []*stewardv1.BundleEvent{{Sequence: 3, Data: []byte("c1")}}},
		},
		Requests: blob("r1"), Results: blob("s1"), Inputs: blob("i1"),
	}
}

// TestArchiveReadsATaskByIdAndErasesATenant: every task of a tree is found
// by its own id, its events as stored; a tenant's trees are listed under
// it only; erasure keeps the events and only the hashes of the content,
// with the reason, and a second erasure finds nothing left to erase.
func TestArchiveReadsATaskByIdAndErasesATenant(t *testing.T) {
	ctx := context.Background()
	a := archive.New(startS3(t, "archive"))
	if err := a.Put(ctx, "parent", "acme", tree()); err != nil {
		t.Fatal(err)
	}
	other := tree()
	other.Tasks = other.Tasks[:1]
	other.Tasks[0].TaskId = "solo"
	if err := a.Put(ctx, "solo", "", other); err != nil {
		t.Fatal(err)
	}
	raws, err := a.Events(ctx, "child")
	if err != nil || len(raws) != 1 || string(raws[0].Data) != "c1" || raws[0].Sequence != 3 {
		t.Fatalf("Events(child): %v, %v", raws, err)
	}
	if _, root, err := a.Bundle(ctx, "child"); err != nil || root != "parent" {
		t.Errorf("child's tree: %q, %v", root, err)
	}
	if _, err := a.Events(ctx, "nobody"); !errors.Is(err, archive.ErrNotFound) {
		t.Errorf("Events of a task never archived: %v", err)
	}
	if roots, err := a.Trees(ctx, "acme"); err != nil || len(roots) != 1 || roots[0] != "parent" {
		t.Errorf("acme's trees: %v, %v", roots, err)
	}

	trees, pieces, err := a.EraseTenant(ctx, "acme", "the tenant left")
	if err != nil || trees != 1 || pieces != 3 {
		t.Fatalf("EraseTenant: %d trees, %d pieces, %v; want 1, 3", trees, pieces, err)
	}
	b, _, err := a.Bundle(ctx, "parent")
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Requests)+len(b.Results)+len(b.Inputs) != 0 || len(b.Erased) != 3 || b.Erased[0].Reason != "the tenant left" {
		t.Errorf("erased bundle: requests %d results %d inputs %d erased %v", len(b.Requests), len(b.Results), len(b.Inputs), b.Erased)
	}
	if len(b.Tasks) != 2 || string(b.Tasks[1].Events[1].Data) != "p2" {
		t.Errorf("erasure changed the events: %v", b.Tasks)
	}
	if solo, _, _ := a.Bundle(ctx, "solo"); len(solo.Requests) != 1 {
		t.Error("erasing acme erased the default tenant's content")
	}
	if trees, pieces, err := a.EraseTenant(ctx, "acme", "again"); err != nil || trees+pieces != 0 {
		t.Errorf("a second erasure: %d trees, %d pieces, %v", trees, pieces, err)
	}
}

func TestParseRetention(t *testing.T) {
	r, err := archive.ParseRetention("720h,acme=24h,-=1h,keep=0")
	if err != nil {
		t.Fatal(err)
	}
	for tenant, want := range map[string]time.Duration{"": time.Hour, "acme": 24 * time.Hour, "keep": 0, "other": 720 * time.Hour} {
		if got := r.Age(tenant); got != want {
			t.Errorf("Age(%q) = %s, want %s", tenant, got, want)
		}
	}
	if again, err := archive.ParseRetention(r.String()); err != nil || again.String() != r.String() {
		t.Errorf("String %q does not read back: %v", r.String(), err)
	}
	for _, bad := range []string{"", "soon", "1h,2h", "acme=-1h"} {
		if _, err := archive.ParseRetention(bad); err == nil {
			t.Errorf("ParseRetention(%q) took it", bad)
		}
	}
}

// TestDue: a tree is archived whole, only when every task of it has
// ended longer ago than its tenant's age and none was left out.
func TestDue(t *testing.T) {
	now := time.Date(2026, 1, 10, 0, 0, 0, 0, time.UTC)
	ended := func(tenant string, ago time.Duration) *stewardv1.Task {
		return &stewardv1.Task{Status: stewardv1.TaskStatus_TASK_STATUS_ACCEPTED, Tenant: tenant, UpdatedAt: timestamppb.New(now.Add(-ago))}
	}
	running := ended("", 100*time.Hour)
	running.Status = stewardv1.TaskStatus_TASK_STATUS_RUNNING
	r, _ := archive.ParseRetention("48h,acme=1h,keep=0")
	for _, tc := range []struct {
		name     string
		tasks    map[string]*stewardv1.Task
		withheld []*stewardv1.WithheldTask
		want     string // in the reason; "" for due
	}{
		{"old enough", map[string]*stewardv1.Task{"a": ended("", 49*time.Hour)}, nil, ""},
		{"too young", map[string]*stewardv1.Task{"a": ended("", 47*time.Hour)}, nil, "less than 48h0m0s ago"},
		{"its tenant's own age", map[string]*stewardv1.Task{"a": ended("acme", 2*time.Hour)}, nil, ""},
		{"a tenant kept for ever", map[string]*stewardv1.Task{"a": ended("keep", 1000*time.Hour)}, nil, "for ever"},
		{"a live task in the tree", map[string]*stewardv1.Task{"a": ended("", 49*time.Hour), "b": running}, nil, "task b of the tree is TASK_STATUS_RUNNING"},
		{"a task left out", map[string]*stewardv1.Task{"a": ended("", 49*time.Hour)}, []*stewardv1.WithheldTask{{TaskId: "b", Reason: "unread"}}, "task b of the tree is not in the bundle"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := archive.Due(tc.tasks, tc.withheld, now, r)
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Errorf("Due: %q, want %q", got, tc.want)
			}
		})
	}
}

// TestTenantsDoNotShareAnIndex: the default tenant and tenants named
// "-", "." or ".." each list (and so erase) their own trees only, and
// each can be archived.
func TestTenantsDoNotShareAnIndex(t *testing.T) {
	ctx := context.Background()
	dir, err := archive.NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	a := archive.New(dir)
	tenants := map[string]string{"": "plain", "-": "dash", ".": "dot", "..": "dots"}
	for tenant, root := range tenants {
		b := tree()
		b.Tasks = b.Tasks[:1]
		b.Tasks[0].TaskId = root
		if err := a.Put(ctx, root, tenant, b); err != nil {
			t.Fatalf("archive a tree of tenant %q: %v", tenant, err)
		}
	}
	for tenant, root := range tenants {
		if roots, err := a.Trees(ctx, tenant); err != nil || len(roots) != 1 || roots[0] != root {
			t.Errorf("tenant %q's trees: %v, %v; want [%s]", tenant, roots, err, root)
		}
	}
}

// TestErasureLeavesNoContentInTheStore: after a tenant's erasure no byte
// of its erased content is in any file of a directory store.
func TestErasureLeavesNoContentInTheStore(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	dir, err := archive.NewDir(root)
	if err != nil {
		t.Fatal(err)
	}
	a := archive.New(dir)
	if err := a.Put(ctx, "parent", "acme", tree()); err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.EraseTenant(ctx, "acme", "asked"); err != nil {
		t.Fatal(err)
	}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if bytes.Contains(data, []byte("content of")) {
			t.Errorf("%s still holds erased content", path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}
