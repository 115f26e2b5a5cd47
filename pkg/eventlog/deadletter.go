package eventlog

import (
	"context"
	"fmt"
	"strconv"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Headers on a dead-letter message, naming where it came from and why.
const (
	HeaderOrigSubject  = "Steward-Orig-Subject"
	HeaderOrigSequence = "Steward-Orig-Sequence"
	HeaderError        = "Steward-Error"
)

// setAside copies a message that cannot be decoded or processed to the
// dead-letter stream, under a subject named for its original sequence, and
// logs it. Every reader of the log may meet the same bad message; the
// per-sequence subject (one message each) makes setting it aside idempotent
// across readers and restarts.
func (l *Log) setAside(ctx context.Context, subject string, seq uint64, data []byte, cause error) error {
	l.cfg.Logger.Error("event set aside", logAttrs(subject, seq, cause)...)
	dl := l.deadLetterSubject(seq)
	stream, err := l.js.Stream(ctx, l.cfg.DeadLetterStream)
	if err != nil {
		return err
	}
	if _, err := stream.GetLastMsgForSubject(ctx, dl); err == nil {
		return nil // already set aside
	}
	_, err = l.js.PublishMsg(ctx, &nats.Msg{
		Subject: dl,
		Data:    data,
		Header: nats.Header{
			jetstream.MsgIDHeader:               []string{dl},
			jetstream.ExpectedLastSubjSeqHeader: []string{"0"},
			HeaderOrigSubject:                   []string{subject},
			HeaderOrigSequence:                  []string{strconv.FormatUint(seq, 10)},
			HeaderError:                         []string{cause.Error()},
		},
	})
	if err != nil {
		if _, gerr := stream.GetLastMsgForSubject(ctx, dl); gerr == nil {
			return nil // another reader set it aside first
		}
		return fmt.Errorf("publish to dead letter: %w", err)
	}
	return nil
}

func (l *Log) deadLetterSubject(seq uint64) string {
	return l.cfg.DeadLetterPrefix + "." + strconv.FormatUint(seq, 10)
}

// SetAside is a message that was moved to the dead-letter stream.
type SetAside struct {
	Subject  string
	Sequence uint64
	Reason   string
	Data     []byte
}

// DeadLetters returns the messages set aside so far, oldest first.
func (l *Log) DeadLetters(ctx context.Context) ([]SetAside, error) {
	var out []SetAside
	cons, err := l.js.OrderedConsumer(ctx, l.cfg.DeadLetterStream, jetstream.OrderedConsumerConfig{})
	if err != nil {
		return nil, err
	}
	info, err := cons.Info(ctx)
	if err != nil {
		return nil, err
	}
	pending := info.NumPending
	for pending > 0 {
		batch, err := cons.Fetch(int(min(pending, 256)))
		if err != nil {
			return nil, err
		}
		for msg := range batch.Messages() {
			pending--
			seq, _ := strconv.ParseUint(msg.Headers().Get(HeaderOrigSequence), 10, 64)
			out = append(out, SetAside{
				Subject:  msg.Headers().Get(HeaderOrigSubject),
				Sequence: seq,
				Reason:   msg.Headers().Get(HeaderError),
				Data:     msg.Data(),
			})
		}
		if batch.Error() != nil {
			return nil, batch.Error()
		}
	}
	return out, nil
}
