package app

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"

	"github.com/steward-run/steward/pkg/archive"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// TestArchiveEraseNeedsATenantNamed: erasure cannot be undone, so an
// erase without --tenant (a forgotten flag) erases nothing, rather than
// the default tenant's content; an empty --tenant names the default tenant.
func TestArchiveEraseNeedsATenantNamed(t *testing.T) {
	dir := t.TempDir()
	store, err := archive.NewDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	b := &stewardv1.AuditBundle{
		Tasks:   []*stewardv1.BundleTask{{TaskId: "t1", Events: []*stewardv1.BundleEvent{{Sequence: 1, Data: []byte("e")}}}},
		Results: []*stewardv1.BundleBlob{{Hash: "h", Data: []byte("secret result")}},
	}
	if err := archive.New(store).Put(context.Background(), "t1", "", b); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	err = runArchive([]string{"erase", "--store", dir, "--reason", "asked"}, &out, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "--tenant") {
		t.Errorf("erase without --tenant: %v; %s", err, out.String())
	}
	if got, _, _ := archive.New(store).Bundle(context.Background(), "t1"); len(got.GetResults()) != 1 {
		t.Fatal("erase without --tenant erased the default tenant's content")
	}
	if err := runArchive([]string{"erase", "--store", dir, "--tenant", "", "--reason", "asked"}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	if got, _, _ := archive.New(store).Bundle(context.Background(), "t1"); len(got.GetResults()) != 0 {
		t.Error("erase --tenant '' left the default tenant's content")
	}
}
