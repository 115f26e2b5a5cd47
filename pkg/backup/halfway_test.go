package backup_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/steward-run/steward/pkg/backup"
)

// TestRestoreThatFailsPartWayLeavesNoStream: a restore that fails after
// it restored some streams (here the second stream does not hold what the
// manifest says) takes back the streams it restored, so the server is as
// it found it and the restore can be run again once the cause is fixed,
// rather than refused for ever with "exists already".
func TestRestoreThatFailsPartWayLeavesNoStream(t *testing.T) {
	ctx := context.Background()
	_, dir, m := twoStreamBackup(t)
	writeManifest := func(m backup.Manifest) {
		t.Helper()
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, backup.ManifestFile), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	wrong := m
	wrong.Streams = append([]backup.Stream(nil), m.Streams...)
	wrong.Streams[1].Messages++
	writeManifest(wrong)

	nc2, js2 := server(t)
	if _, err := backup.Restore(ctx, nc2, dir, ""); err == nil || !strings.Contains(err.Error(), "restore B") {
		t.Fatalf("restore of a stream that does not hold what the manifest says: %v, want refused", err)
	}
	for _, name := range []string{"A", "B"} {
		if _, err := js2.Stream(ctx, name); err == nil {
			t.Errorf("a failed restore left stream %s on the server", name)
		}
	}
	writeManifest(m)
	if _, err := backup.Restore(ctx, nc2, dir, ""); err != nil {
		t.Fatalf("the restore run again: %v", err)
	}
}
