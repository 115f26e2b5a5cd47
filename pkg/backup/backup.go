// Package backup takes and restores snapshots of Steward's JetStream
// streams and KV buckets, through JetStream's own snapshot API (the
// $JS.API.STREAM.SNAPSHOT and RESTORE subjects, as the nats CLI uses them;
// nats.go has no call for it). A backup is a directory: one snapshot file
// per stream, as the server wrote it, and a manifest naming them in the
// order they were taken, with each one's digest and state.
//
// The cut is consistent because of that order (Order): the events stream
// is the truth, and every other store is taken after it. What an event in
// the backup names (a stored request or result, the first use of a request
// id) was written before the event, so it is in the backup too; what a
// plane wrote while handling an event (a timer, a dead letter) is in the
// backup if the event was acknowledged when the events were taken, and
// otherwise the event is still pending in the backup's consumers and is
// handled again after a restore. What came later is named by no event in
// the backup and is harmless. The state
// plane's view snapshots are derived from the log and checked against it,
// so they are taken first: each then claims only chain heads the backup
// holds. Take and Restore are safe to call concurrently on different
// directories.
package backup

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// ManifestFile is the name of a backup's manifest in its directory.
const ManifestFile = "manifest.json"

// FormatVersion is the manifest's format; Restore refuses another.
const FormatVersion = 1

// Manifest says what a backup holds: its streams in the order they were
// taken, which is the order they are restored in.
type Manifest struct {
	Format  int       `json:"format"`
	TakenAt time.Time `json:"taken_at"`
	// Build is the version of the steward that took it.
	Build   string   `json:"build,omitempty"`
	Streams []Stream `json:"streams"`
}

// Stream is one stream's snapshot in a backup.
type Stream struct {
	Name string `json:"name"`
	// File is the snapshot as the server streamed it (a tar, s2
	// compressed), in the backup's directory.
	File   string `json:"file"`
	SHA256 string `json:"sha256"`
	Bytes  int64  `json:"bytes"`
	// Config and State are the server's, as it answered the snapshot
	// request: the restore hands them back unchanged.
	Config json.RawMessage `json:"config"`
	State  json.RawMessage `json:"state"`
	// Messages and LastSeq are State's, read out for people and checks.
	Messages uint64 `json:"messages"`
	LastSeq  uint64 `json:"last_seq"`
	// NoConsumers says the stream was taken without its consumers (see
	// Take): its readers start afresh after a restore.
	NoConsumers bool `json:"no_consumers,omitempty"`
}

// Order returns streams in the order a backup takes them: first derived
// (streams whose names are in derived: written after the events they
// reflect, and checked against the log), then truth (the events stream),
// then every other one, which is written before the events that name it.
// Within a group the order of streams is kept. A backup that holds no
// truth stream is refused by Take.
func Order(streams []string, truth string, derived ...string) []string {
	var first, last []string
	for _, s := range streams {
		switch {
		case s == truth:
		case slices.Contains(derived, s):
			first = append(first, s)
		default:
			last = append(last, s)
		}
	}
	if !slices.Contains(streams, truth) {
		return append(first, last...)
	}
	return append(append(first, truth), last...)
}

// ReadManifest reads the manifest of the backup in dir.
func ReadManifest(dir string) (Manifest, error) {
	var m Manifest
	b, err := os.ReadFile(filepath.Join(dir, ManifestFile))
	if err != nil {
		return m, fmt.Errorf("read the backup's manifest: %w", err)
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("%s: %w", filepath.Join(dir, ManifestFile), err)
	}
	if m.Format != FormatVersion {
		return m, fmt.Errorf("%s: format %d, this steward reads %d", filepath.Join(dir, ManifestFile), m.Format, FormatVersion)
	}
	if len(m.Streams) == 0 {
		return m, errors.New("the backup's manifest names no stream")
	}
	return m, nil
}

// writeManifest writes m into dir, last: a directory without a manifest
// is a backup that did not finish.
func writeManifest(dir string, m Manifest) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, ManifestFile+".tmp")
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, ManifestFile))
}
