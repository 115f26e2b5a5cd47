package backup

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// chunkSize is how much of a snapshot one restore message carries: well
// under NATS's default 1 MiB payload.
const chunkSize = 128 << 10

// restoreAnswer is the server's answer to a restore request, and (with
// Config and State) to its last chunk.
type restoreAnswer struct {
	Error          *apiError       `json:"error"`
	DeliverSubject string          `json:"deliver_subject"`
	State          json.RawMessage `json:"state"`
}

// Restore restores every stream of the backup in dir, in the order it was
// taken, into a server that holds none of them: it checks every file's
// digest and that no stream exists before it restores any, so that a
// refused restore leaves the server as it found it. Each restored stream
// must then hold what the manifest says it held. With truth, the events
// stream, the cut it ends at is recorded last (RecordCut): a Steward that
// starts on the restored streams reads it. A restore that fails part way,
// the cut's record included, deletes the streams it restored (undo).
func Restore(ctx context.Context, nc *nats.Conn, dir, truth string) (Manifest, error) {
	m, err := ReadManifest(dir)
	if err != nil {
		return m, err
	}
	for _, s := range m.Streams {
		if err := checkFile(dir, s); err != nil {
			return m, err
		}
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return m, err
	}
	for _, s := range m.Streams {
		_, err := js.Stream(ctx, s.Name)
		switch {
		case err == nil:
			return m, fmt.Errorf("stream %s exists already: restore into a server that holds none of Steward's streams, before any plane starts", s.Name)
		case !errors.Is(err, jetstream.ErrStreamNotFound):
			return m, fmt.Errorf("look for stream %s: %w", s.Name, err)
		}
	}
	for i, s := range m.Streams {
		if err := restore(ctx, nc, dir, s); err != nil {
			err = fmt.Errorf("restore %s: %w", s.Name, err)
			return m, errors.Join(err, undo(js, m.Streams[:i+1]))
		}
	}
	if truth == "" {
		return m, nil
	}
	if _, err := RecordCut(ctx, js, truth); err != nil {
		return m, errors.Join(err, undo(js, append(m.Streams, Stream{Name: "KV_" + CutBucket})))
	}
	return m, nil
}

// undo deletes the streams a failed restore restored, the failing one
// included (it may be there, whole or not): none existed before it began,
// so the server is left as it was found and the restore can be run again.
// It uses a context of its own, as the restore's may be what ended it.
func undo(js jetstream.JetStream, streams []Stream) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var failed []error
	for _, s := range streams {
		if err := js.DeleteStream(ctx, s.Name); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
			failed = append(failed, fmt.Errorf("stream %s is left restored (delete it before restoring again): %w", s.Name, err))
		}
	}
	return errors.Join(failed...)
}

// checkFile checks that s's file is whole: its size and digest.
func checkFile(dir string, s Stream) error {
	f, err := os.Open(filepath.Join(dir, s.File))
	if err != nil {
		return err
	}
	defer f.Close()
	sum := sha256.New()
	n, err := io.Copy(sum, f)
	if err != nil {
		return err
	}
	if got := hex.EncodeToString(sum.Sum(nil)); n != s.Bytes || got != s.SHA256 {
		return fmt.Errorf("%s: %d bytes of digest %s, the manifest says %d of %s: the backup is damaged", s.File, n, got, s.Bytes, s.SHA256)
	}
	return nil
}

// restore sends one stream's snapshot: the request hands back the config
// and state the snapshot was taken with, and the server names a subject
// that takes the chunks, each answered (its flow control), then an empty
// message, answered once the stream is restored.
func restore(ctx context.Context, nc *nats.Conn, dir string, s Stream) error {
	req, err := json.Marshal(map[string]json.RawMessage{"config": s.Config, "state": s.State})
	if err != nil {
		return err
	}
	var a restoreAnswer
	if err := call(ctx, nc, apiPrefix+"STREAM.RESTORE."+s.Name, req, &a); err != nil {
		return err
	}
	if a.Error != nil {
		return a.Error
	}
	f, err := os.Open(filepath.Join(dir, s.File))
	if err != nil {
		return err
	}
	defer f.Close()
	buf := make([]byte, chunkSize)
	for {
		n, err := io.ReadFull(f, buf)
		if n > 0 {
			if err := sendChunk(ctx, nc, a.DeliverSubject, buf[:n]); err != nil {
				return err
			}
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			break
		}
		if err != nil {
			return err
		}
	}
	return finish(ctx, nc, a.DeliverSubject, s)
}

// sendChunk sends one chunk and waits for the server to take it.
func sendChunk(ctx context.Context, nc *nats.Conn, subject string, chunk []byte) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	msg, err := nc.RequestWithContext(ctx, subject, chunk)
	if err != nil {
		return err
	}
	if len(msg.Data) > 0 {
		var a restoreAnswer
		if json.Unmarshal(msg.Data, &a) == nil && a.Error != nil {
			return a.Error
		}
	}
	return nil
}

// finish sends the empty message that ends a restore and checks that the
// stream holds what it held when it was taken.
func finish(ctx context.Context, nc *nats.Conn, subject string, s Stream) error {
	// The server answers once it has unpacked the whole stream: allow for
	// a large one.
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	msg, err := nc.RequestWithContext(ctx, subject, nil)
	if err != nil {
		return err
	}
	var a restoreAnswer
	if err := json.Unmarshal(msg.Data, &a); err != nil {
		return fmt.Errorf("the answer to the restore is not JSON: %w", err)
	}
	if a.Error != nil {
		return a.Error
	}
	var st streamState
	if err := json.Unmarshal(a.State, &st); err != nil {
		return fmt.Errorf("the restored stream's state: %w", err)
	}
	if st.Messages != s.Messages || st.LastSeq != s.LastSeq {
		return fmt.Errorf("restored %d messages up to sequence %d, the backup held %d up to %d", st.Messages, st.LastSeq, s.Messages, s.LastSeq)
	}
	return nil
}
