package eventlog

import (
	"context"
	"errors"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// CheckServiceKey is the one rule for a circuit breaker's service key:
// 1–64 ASCII letters, digits, '-' or '_', like a task id, because the key
// is one token of the breaker's subject (steward.service.<key>). A tool
// contract is checked with it when registered, so that no key is accepted
// there that recording a breaker change would refuse later. The error
// names field.
func CheckServiceKey(field, key string) error {
	if !ValidTaskID(key) {
		return errs.Field(field, "%s is not a service key: want 1-64 letters, digits, '-' or '_'", errs.Quote(key))
	}
	return nil
}

// ServiceHead returns the head of a service subject's chain — tenant's,
// or the global one for tenant "" — and its last event (nil when the
// subject is empty), so a writer can append the next one without reading
// the whole history.
func (l *Log) ServiceHead(ctx context.Context, tenant, key string) (Head, *stewardv1.Event, error) {
	if err := CheckServiceKey("service_key", key); err != nil {
		return Head{}, nil, err
	}
	subject := l.ServiceSubject(tenant, key)
	msg, err := l.last(ctx, subject)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return Head{}, nil, nil
	}
	if err != nil {
		return Head{}, nil, errs.Wrap(errs.Unavailable, err, "read %s", subject)
	}
	ev, err := l.decode(msg.subject, msg.data)
	if err != nil {
		return Head{}, nil, errs.Wrap(errs.Corrupt, err, "last event on %s", subject)
	}
	return Head{Sequence: msg.seq, Hash: ev.Hash}, ev, nil
}

// ReadService returns every event of a service subject, tenant's or the
// global one, in order, each checked against the subject's hash chain.
func (l *Log) ReadService(ctx context.Context, tenant, key string) ([]*stewardv1.EventRecord, error) {
	if err := CheckServiceKey("service_key", key); err != nil {
		return nil, err
	}
	return l.readChain(ctx, l.ServiceSubject(tenant, key))
}

// LastServiceSequence is LastTaskSequence for service events.
func (l *Log) LastServiceSequence(ctx context.Context) (uint64, error) {
	return l.lastOfAll(ctx, l.cfg.ServicePrefix+".>")
}

// FollowServices is Follow over the service events.
func (l *Log) FollowServices(ctx context.Context, after uint64, fn func(*stewardv1.EventRecord) error, bad func(seq uint64, err error)) error {
	return l.follow(ctx, []string{l.cfg.ServicePrefix + ".>"}, after, fn, bad)
}
