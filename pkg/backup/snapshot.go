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
	"slices"
	"time"

	"github.com/nats-io/nats.go"
)

// apiPrefix is JetStream's API in the default domain.
const apiPrefix = "$JS.API."

// apiError is the error part of every JetStream API answer.
type apiError struct {
	Code        int    `json:"code"`
	ErrCode     int    `json:"err_code"`
	Description string `json:"description"`
}

// snapshotAnswer is the server's answer to a snapshot request.
type snapshotAnswer struct {
	Error  *apiError       `json:"error"`
	Config json.RawMessage `json:"config"`
	State  json.RawMessage `json:"state"`
}

// streamState is the part of a stream's state a backup reads.
type streamState struct {
	Messages uint64 `json:"messages"`
	LastSeq  uint64 `json:"last_seq"`
}

// Take snapshots each of streams, in that order (see Order), into dir,
// which must not exist or be empty, and writes the manifest last. Each
// stream's consumers go with it, so that each plane's durable consumer
// takes up where it was at the cut, except for the streams named in bare:
// those are taken without their consumers, for streams taken after the
// truth whose consumers may have moved past the cut (the timers: one fired
// and handled after the events were taken would be restored as handled,
// what its handler appended lost with the cut), and whose readers start
// afresh from all the stream keeps. build names the steward taking it.
func Take(ctx context.Context, nc *nats.Conn, streams []string, dir, build string, bare ...string) (Manifest, error) {
	m := Manifest{Format: FormatVersion, TakenAt: time.Now().UTC(), Build: build}
	if err := emptyDir(dir); err != nil {
		return m, err
	}
	for i, name := range streams {
		s, err := snapshot(ctx, nc, name, dir, fmt.Sprintf("%02d-%s.tar.s2", i+1, name), slices.Contains(bare, name))
		if err != nil {
			return m, fmt.Errorf("snapshot %s: %w", name, err)
		}
		m.Streams = append(m.Streams, s)
	}
	return m, writeManifest(dir, m)
}

// emptyDir makes dir, or checks that it is empty: a backup never mixes
// with another's files.
func emptyDir(dir string) error {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return os.MkdirAll(dir, 0o700)
	case err != nil:
		return err
	case len(entries) > 0:
		return fmt.Errorf("%s is not empty: a backup goes into a new directory", dir)
	}
	return nil
}

// snapshot streams one stream's snapshot into dir/file: the server sends
// chunks to an inbox, each with a subject to acknowledge it on (its flow
// control), and ends with an empty message whose status says how it went.
func snapshot(ctx context.Context, nc *nats.Conn, name, dir, file string, bare bool) (Stream, error) {
	s := Stream{Name: name, File: file, NoConsumers: bare}
	inbox := nc.NewInbox()
	sub, err := nc.SubscribeSync(inbox)
	if err != nil {
		return s, err
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := sub.SetPendingLimits(-1, -1); err != nil {
		return s, err
	}
	req, _ := json.Marshal(map[string]any{"deliver_subject": inbox, "no_consumers": bare})
	var a snapshotAnswer
	if err := call(ctx, nc, apiPrefix+"STREAM.SNAPSHOT."+name, req, &a); err != nil {
		return s, err
	}
	if a.Error != nil {
		return s, a.Error
	}
	s.Config, s.State = a.Config, a.State
	var st streamState
	if err := json.Unmarshal(a.State, &st); err != nil {
		return s, fmt.Errorf("the server's state of the stream: %w", err)
	}
	s.Messages, s.LastSeq = st.Messages, st.LastSeq
	f, err := os.OpenFile(filepath.Join(dir, file), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return s, err
	}
	sum := sha256.New()
	n, err := receive(ctx, sub, io.MultiWriter(f, sum))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	s.Bytes, s.SHA256 = n, hex.EncodeToString(sum.Sum(nil))
	return s, err
}

// receive writes the chunks sub brings to w until the last one.
func receive(ctx context.Context, sub *nats.Subscription, w io.Writer) (int64, error) {
	var n int64
	for {
		msg, err := sub.NextMsgWithContext(ctx)
		if err != nil {
			return n, err
		}
		if len(msg.Data) == 0 && msg.Reply == "" {
			switch status := msg.Header.Get("Status"); status {
			case "", "204":
				return n, nil
			default:
				return n, fmt.Errorf("the server ended the snapshot: %s %s", status, msg.Header.Get("Description"))
			}
		}
		k, err := w.Write(msg.Data)
		n += int64(k)
		if err != nil {
			return n, err
		}
		if msg.Reply != "" {
			if err := msg.Respond(nil); err != nil {
				return n, err
			}
		}
	}
}

// call makes one JetStream API request and decodes its answer into v.
func call(ctx context.Context, nc *nats.Conn, subject string, req []byte, v any) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	msg, err := nc.RequestWithContext(ctx, subject, req)
	if err != nil {
		return fmt.Errorf("%s: %w", subject, err)
	}
	if err := json.Unmarshal(msg.Data, v); err != nil {
		return fmt.Errorf("%s: the answer is not JSON: %w", subject, err)
	}
	return nil
}

func (e *apiError) Error() string {
	return fmt.Sprintf("%s (JetStream error %d)", e.Description, e.ErrCode)
}
