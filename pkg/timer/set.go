package timer

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/steward-run/steward/pkg/errs"
)

// Headers on a fired timer. The server copies a schedule's own headers to
// the message it produces (it strips only Nats-Schedule*, Nats-Expected-*,
// Nats-Msg-Id, Nats-TTL and Nats-Rollup), so they travel from Set to Run.
const (
	HeaderKind = "Steward-Timer-Kind"
	HeaderID   = "Steward-Timer-Id"
	// HeaderAt is the due time asked for, in RFC 3339 with nanoseconds.
	HeaderAt = "Steward-Timer-At"
)

// Limits on Set's arguments, to keep subjects and headers small.
const (
	maxKindLen = 128
	maxIDLen   = 512
)

// Set schedules a one-shot timer of kind (dot-separated tokens such as
// "execution.retry") and id (unique per timer and derived deterministically
// by the caller, e.g. from an action id and attempt) to fire at at with
// payload. A time in the past fires as soon as possible; no timer fires
// before its time.
//
// Setting the same (kind, id) again is harmless: the first Set wins, and
// later ones — a retry, or a second process doing the same work — return
// nil without changing it, until FiredRetention after it fired.
func (t *Timers) Set(ctx context.Context, kind, id string, at time.Time, payload []byte) error {
	if err := checkKind(kind); err != nil {
		return err
	}
	if err := checkID(id); err != nil {
		return err
	}
	if at.IsZero() {
		return errs.Field("at", "is not set")
	}
	if _, err := t.stream(ctx, Owner(kind)); err != nil {
		return err
	}
	return t.set(ctx, kind, id, at, payload)
}

// set publishes the schedule of (kind, id) to the owner's stream, which is
// open.
func (t *Timers) set(ctx context.Context, kind, id string, at time.Time, payload []byte) error {
	_, err := t.store(ctx, kind, id, at, payload)
	return err
}

// store is set, and reports whether the schedule went in: false if (kind,
// id) was set before.
func (t *Timers) store(ctx context.Context, kind, id string, at time.Time, payload []byte) (bool, error) {
	token := idToken(id)
	msg := &nats.Msg{Subject: t.subject("at", kind, token), Data: payload, Header: nats.Header{}}
	msg.Header.Set(HeaderKind, kind)
	msg.Header.Set(HeaderID, id)
	msg.Header.Set(HeaderAt, at.UTC().Format(time.RFC3339Nano))
	ack, err := t.writer(kind).PublishMsg(ctx, msg,
		jetstream.WithScheduleAt(ceilSecond(at)),
		jetstream.WithScheduleTarget(t.subject("fired", kind, token)),
		jetstream.WithScheduleTTL(FiredRetention),
		// The schedule goes in only if neither a schedule nor a fired
		// timer exists for (kind, id): the server checks and stores in
		// one step, so concurrent Sets cannot both win. The message id
		// is the usual guard against a retried publish; only the
		// expectation outlasts the duplicate window.
		jetstream.WithExpectLastSequenceForSubject(0, t.subject("*", kind, token)),
		jetstream.WithMsgID(kind+"/"+token),
	)
	if isWrongLastSequence(err) {
		return false, nil // set before: pending, or fired within FiredRetention
	}
	if err != nil {
		return false, errs.Wrap(errs.Unavailable, err, "set timer %s/%s", kind, id)
	}
	return !ack.Duplicate, nil
}

// writer returns the connection timers of kind are set through.
func (t *Timers) writer(kind string) jetstream.JetStream {
	if js, ok := t.cfg.Writers[Owner(kind)]; ok {
		return js
	}
	return t.js
}

// subject is where (kind, id)'s schedule ("at") or fired timer ("fired")
// is, for the id's token; token may be a wildcard.
func (t *Timers) subject(stage, kind, token string) string {
	return subject(t.cfg.Prefix, stage, kind, token)
}

// Subject returns where, under prefix, the timer (kind, id) is: its
// schedule for stage "at", the timer once fired for "fired".
func Subject(prefix, stage, kind, id string) string {
	return subject(prefix, stage, kind, idToken(id))
}

func subject(prefix, stage, kind, token string) string {
	return prefix + "." + Owner(kind) + "." + stage + "." + kind + "." + token
}

// ceilSecond rounds up to a whole second: a schedule names its time in
// whole seconds, and rounding down would fire the timer early.
func ceilSecond(at time.Time) time.Time {
	s := at.Truncate(time.Second)
	if s.Before(at) {
		s = s.Add(time.Second)
	}
	return s
}

// idToken is one subject token for any id: a 128-bit hash, hex-encoded.
func idToken(id string) string {
	sum := sha256.Sum256([]byte(id))
	return hex.EncodeToString(sum[:16])
}

// checkKind accepts dot-separated tokens that are safe in a subject:
// no wildcards, whitespace or control characters, no empty tokens; and a
// first token, the owner, that is safe in a stream name too and is not
// one of the shared stream's stages.
func checkKind(kind string) error {
	if kind == "" {
		return errs.Field("kind", "is empty")
	}
	if len(kind) > maxKindLen {
		return errs.Field("kind", "is longer than %d bytes", maxKindLen)
	}
	if owner := Owner(kind); owner == "at" || owner == "fired" || strings.ContainsFunc(owner, notOwnerRune) {
		return errs.Field("kind", "%s: its first token names the owner: lower-case letters, digits, - and _, and not at or fired", errs.Quote(kind))
	}
	for tok := range strings.SplitSeq(kind, ".") {
		if tok == "" {
			return errs.Field("kind", "%s has an empty token", errs.Quote(kind))
		}
		if tok == "*" || tok == ">" || strings.ContainsFunc(tok, badSubjectRune) {
			return errs.Field("kind", "%s is not a subject token sequence: no wildcards or spaces", errs.Quote(kind))
		}
	}
	return nil
}

func notOwnerRune(r rune) bool {
	return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_')
}

func badSubjectRune(r rune) bool {
	return r == '*' || r == '>' || r == utf8.RuneError || unicode.IsSpace(r) || unicode.IsControl(r)
}

// checkID accepts any text that survives a header unchanged: headers end
// at line breaks and lose surrounding spaces.
func checkID(id string) error {
	if id == "" {
		return errs.Field("id", "is empty")
	}
	if len(id) > maxIDLen {
		return errs.Field("id", "is longer than %d bytes", maxIDLen)
	}
	if !utf8.ValidString(id) || strings.ContainsFunc(id, unicode.IsControl) {
		return errs.Field("id", "%s has control characters or is not UTF-8", errs.Quote(id))
	}
	if strings.TrimSpace(id) != id {
		return errs.Field("id", "%s has leading or trailing spaces", errs.Quote(id))
	}
	return nil
}

// isWrongLastSequence reports whether err is the server refusing a publish
// whose expected last sequence did not match; replicated streams use a
// second code for it.
func isWrongLastSequence(err error) bool {
	var apiErr *jetstream.APIError
	if !errors.As(err, &apiErr) {
		return false
	}
	return apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
		apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant
}
