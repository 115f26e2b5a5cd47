// Package leader reads messages of a JetStream stream from the stream's
// leader, for the reads whose answer must include every append the stream
// has acknowledged.
//
// A direct get (the stream option allow_direct, which Steward's streams and
// every KV bucket have) is answered by any replica. On a replicated stream a
// follower may not yet have applied an append the leader acknowledged a
// moment ago, so a direct get can say "not found", or give an older last
// message, for something a client already holds an acknowledgement of. The
// stream's message-get API ($JS.API.STREAM.MSG.GET) is answered by the
// leader alone, which acknowledges an append only once it has applied it.
// It costs a trip through the server's API queue, so callers use it where
// staleness would be taken as a fact: the head of a chain, and a miss.
//
// The functions are safe for concurrent use.
package leader

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Msg is a message as the leader has it.
type Msg struct {
	Subject  string
	Sequence uint64
	Header   nats.Header
	Data     []byte
	Time     time.Time
}

// Last returns the last message stored on subject (a wildcard is allowed),
// or jetstream.ErrMsgNotFound when there is none.
func Last(ctx context.Context, js jetstream.JetStream, stream, subject string) (*Msg, error) {
	return get(ctx, js, stream, request{LastFor: subject})
}

// Next returns the first message stored on subject at or after sequence
// from, or jetstream.ErrMsgNotFound when there is none.
func Next(ctx context.Context, js jetstream.JetStream, stream string, from uint64, subject string) (*Msg, error) {
	return get(ctx, js, stream, request{Seq: from, NextFor: subject})
}

// At returns the message stored at sequence seq, or
// jetstream.ErrMsgNotFound.
func At(ctx context.Context, js jetstream.JetStream, stream string, seq uint64) (*Msg, error) {
	return get(ctx, js, stream, request{Seq: seq})
}

// request and response are the server's JSApiMsgGetRequest and
// JSApiMsgGetResponse, as much of them as is asked and read here.
type request struct {
	Seq     uint64 `json:"seq,omitempty"`
	LastFor string `json:"last_by_subj,omitempty"`
	NextFor string `json:"next_by_subj,omitempty"`
}

type response struct {
	Error   *jetstream.APIError `json:"error,omitempty"`
	Message *struct {
		Subject  string    `json:"subject"`
		Sequence uint64    `json:"seq"`
		Header   []byte    `json:"hdrs,omitempty"`
		Data     []byte    `json:"data,omitempty"`
		Time     time.Time `json:"time"`
	} `json:"message,omitempty"`
}

// defaultTimeout bounds a get whose ctx has no deadline, as the jetstream
// package bounds its own API requests.
const defaultTimeout = 5 * time.Second

func get(ctx context.Context, js jetstream.JetStream, stream string, req request) (*Msg, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, defaultTimeout)
		defer cancel()
	}
	body, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	reply, err := js.Conn().RequestWithContext(ctx, apiPrefix(js)+"STREAM.MSG.GET."+stream, body)
	if err != nil {
		return nil, fmt.Errorf("get from the leader of %s: %w", stream, err)
	}
	var resp response
	if err := json.Unmarshal(reply.Data, &resp); err != nil {
		return nil, fmt.Errorf("get from the leader of %s: %w", stream, err)
	}
	if resp.Error != nil {
		if resp.Error.ErrorCode == jetstream.JSErrCodeMessageNotFound {
			return nil, jetstream.ErrMsgNotFound
		}
		return nil, fmt.Errorf("get from the leader of %s: %w", stream, resp.Error)
	}
	m := resp.Message
	if m == nil {
		return nil, fmt.Errorf("get from the leader of %s: %w", stream, jetstream.ErrInvalidJetStreamResponse)
	}
	out := &Msg{Subject: m.Subject, Sequence: m.Sequence, Data: m.Data, Time: m.Time}
	if len(m.Header) > 0 {
		if out.Header, err = nats.DecodeHeadersMsg(m.Header); err != nil {
			return nil, fmt.Errorf("get from the leader of %s: %w", stream, err)
		}
	}
	return out, nil
}

// apiPrefix is where js sends JetStream API requests: its domain's, its
// own prefix, or the default.
func apiPrefix(js jetstream.JetStream) string {
	opts := js.Options()
	switch {
	case opts.Domain != "":
		return "$JS." + opts.Domain + ".API."
	case opts.APIPrefix != "":
		return strings.TrimSuffix(opts.APIPrefix, ".") + "."
	}
	return jetstream.DefaultAPIPrefix
}

// IsNotFound reports whether err says there is no such message.
func IsNotFound(err error) bool { return errors.Is(err, jetstream.ErrMsgNotFound) }
