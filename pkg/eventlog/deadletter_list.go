package eventlog

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/steward-run/steward/pkg/errs"
)

// DeadLetterState is where a record set aside stands.
type DeadLetterState int

const (
	// DeadLetterWaiting: set aside, no replay asked for.
	DeadLetterWaiting DeadLetterState = iota + 1
	// DeadLetterReplaying: a replay was asked for and has not ended.
	DeadLetterReplaying
	// DeadLetterReplayed: the consumer's reactions took the event.
	DeadLetterReplayed
	// DeadLetterReplayFailed: the last replay asked for failed for good.
	DeadLetterReplayFailed
)

// DeadLetterKey names one record: the event's stream sequence and the
// consumer that set it aside ("" for a record of the older shape).
type DeadLetterKey struct {
	Sequence uint64
	Consumer string
}

func (k DeadLetterKey) compare(o DeadLetterKey) int {
	return cmp.Or(cmp.Compare(k.Sequence, o.Sequence), strings.Compare(k.Consumer, o.Consumer))
}

// DeadLetter is one record as an operator sees it, without the event's
// bytes.
type DeadLetter struct {
	DeadLetterKey
	// Subject is where the event is stored on the event stream; TaskID
	// and Type are read from it (TaskID is empty for a tool's or a
	// service's event).
	Subject, TaskID, Type string
	// Reason says why it was set aside, at most MaxReason bytes.
	Reason string
	// At is when it was set aside.
	At    time.Time
	State DeadLetterState
	// ReplayError is why the last replay that failed did, if one did.
	ReplayError string
}

// deadLetterIndex is every subject on the dead-letter stream, taken apart.
type deadLetterIndex struct {
	records  []DeadLetterKey // in key order
	replayed map[DeadLetterKey]bool
	requests map[DeadLetterKey]int
	failures map[DeadLetterKey]int
}

// index reads the subjects of the dead-letter stream — one stream info
// request, no message — and sorts them out.
func (l *Log) index(ctx context.Context) (jetstream.Stream, *deadLetterIndex, error) {
	dl, err := l.js.Stream(ctx, l.cfg.DeadLetterStream)
	if err != nil {
		return nil, nil, errs.Wrap(errs.Unavailable, err, "dead letters")
	}
	info, err := dl.Info(ctx, jetstream.WithSubjectFilter(l.cfg.DeadLetterPrefix+".>"))
	if err != nil {
		return nil, nil, errs.Wrap(errs.Unavailable, err, "dead letters")
	}
	x := &deadLetterIndex{replayed: map[DeadLetterKey]bool{}, requests: map[DeadLetterKey]int{}, failures: map[DeadLetterKey]int{}}
	for subject := range info.State.Subjects {
		d := l.parseDeadLetter(subject)
		k := DeadLetterKey{Sequence: d.seq, Consumer: d.consumer}
		switch d.kind {
		case dlRecord:
			x.records = append(x.records, k)
		case dlDone:
			x.replayed[k] = true
		case dlRequest:
			x.requests[k]++
		case dlFailure:
			x.failures[k]++
		}
	}
	slices.SortFunc(x.records, DeadLetterKey.compare)
	return dl, x, nil
}

// ListDeadLetters returns at most limit records set aside, in the order
// of their keys (sequence, then consumer), those after the key after
// only; more says whether any follow. Records of both shapes are listed.
func (l *Log) ListDeadLetters(ctx context.Context, after DeadLetterKey, limit int) (list []DeadLetter, more bool, err error) {
	dl, x, err := l.index(ctx)
	if err != nil {
		return nil, false, err
	}
	from, _ := slices.BinarySearchFunc(x.records, after, DeadLetterKey.compare)
	if from < len(x.records) && x.records[from] == after {
		from++
	}
	keys := x.records[from:]
	if len(keys) > limit {
		keys, more = keys[:limit], true
	}
	for _, k := range keys {
		d, err := l.deadLetter(ctx, dl, x, k)
		if errNoMsg(err) {
			continue
		}
		if err != nil {
			return nil, false, errs.Wrap(errs.Unavailable, err, "dead letter %d", k.Sequence)
		}
		list = append(list, d)
	}
	return list, more, nil
}

// deadLetter reads record k and where its replays stand.
func (l *Log) deadLetter(ctx context.Context, dl jetstream.Stream, x *deadLetterIndex, k DeadLetterKey) (DeadLetter, error) {
	msg, err := dl.GetLastMsgForSubject(ctx, l.recordSubject(k.Sequence, k.Consumer))
	if err != nil {
		return DeadLetter{}, err
	}
	d := DeadLetter{DeadLetterKey: k, Subject: msg.Header.Get(HeaderOrigSubject), Reason: msg.Header.Get(HeaderError), At: msg.Time, State: DeadLetterWaiting}
	if chain := l.chainOf(d.Subject); chain != d.Subject {
		d.Type = d.Subject[len(chain)+1:]
		d.TaskID, _ = strings.CutPrefix(chain, l.cfg.SubjectPrefix+".")
		if d.TaskID == chain {
			d.TaskID = ""
		}
	}
	if x.failures[k] > 0 {
		f, err := dl.GetLastMsgForSubject(ctx, l.replaySubject(dlFailed, k.Sequence, k.Consumer, "*"))
		if err != nil && !errNoMsg(err) {
			return DeadLetter{}, err
		}
		if err == nil {
			d.ReplayError = f.Header.Get(HeaderError)
		}
	}
	switch {
	case x.replayed[k]:
		d.State = DeadLetterReplayed
	case x.requests[k] > 0:
		req, err := dl.GetLastMsgForSubject(ctx, l.replaySubject(dlReplay, k.Sequence, k.Consumer, "*"))
		if err != nil {
			return DeadLetter{}, err
		}
		d.State = DeadLetterReplaying
		// The failure may be newer than the index: read from it.
		f, err := dl.GetLastMsgForSubject(ctx, l.replaySubject(dlFailed, k.Sequence, k.Consumer, l.parseDeadLetter(req.Subject).nonce))
		if err == nil {
			d.State, d.ReplayError = DeadLetterReplayFailed, f.Header.Get(HeaderError)
		} else if !errNoMsg(err) {
			return DeadLetter{}, err
		}
	}
	return d, nil
}

// DeadLetterCounts returns how many records each consumer has set aside
// that were not replayed, 0 for one whose records all were ("" counts
// those of the older shape, which name no consumer). It reads one stream info and no message.
func (l *Log) DeadLetterCounts(ctx context.Context) (map[string]int, error) {
	_, x, err := l.index(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]int{}
	for _, k := range x.records {
		out[k.Consumer] += 0 // a consumer whose records were all replayed counts 0
		if !x.replayed[k] {
			out[k.Consumer]++
		}
	}
	return out, nil
}
