package adapter

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/steward-run/steward/pkg/bucket"
)

// kvAppendParams are kv.append's parameters.
type kvAppendParams struct {
	Key    string          `json:"key"`
	Record json.RawMessage `json:"record"`
}

// kvAppendResult is kv.append's result.
type kvAppendResult struct {
	Key      string `json:"key"`
	Revision uint64 `json:"revision"`
}

// kvKeyRe is what a NATS KV key may hold.
var kvKeyRe = regexp.MustCompile(`^[-/_=.a-zA-Z0-9]+$`)

// entryKey is where the record of one op_key goes: under the request's key,
// one entry per op_key, so the entries under "key." are the appended
// records in revision order, and creating the entry is the op_key's
// "first one wins".
func entryKey(p kvAppendParams, opKey string) (string, error) {
	if p.Key == "" || !kvKeyRe.MatchString(p.Key) ||
		strings.HasPrefix(p.Key, ".") || strings.HasSuffix(p.Key, ".") || strings.Contains(p.Key, "..") {
		return "", fmt.Errorf("key %q is not a valid KV key (letters, digits, - / _ = and dots between tokens)", p.Key)
	}
	sum := sha256.Sum256([]byte(opKey))
	return p.Key + "." + hex.EncodeToString(sum[:]), nil
}

// appendKV appends the record with kv.Create, which fails with ErrKeyExists
// when the op_key's entry is there: a repeat reads it back instead of
// writing. The KV entry is the op record, so nothing is kept on disk; if
// someone deletes the entry, the op_key is forgotten with it.
func (b *builtinAdapter) appendKV(ctx context.Context, req Request) Result {
	if b.kv == nil {
		return deterministic("kv.append: no KV bucket configured")
	}
	var p kvAppendParams
	if err := readParams(req.Body, &p); err != nil {
		return deterministic("kv.append: %v", err)
	}
	if len(p.Record) == 0 {
		return deterministic("kv.append: params need \"record\"")
	}
	key, err := entryKey(p, req.OpKey)
	if err != nil {
		return deterministic("kv.append: %v", err)
	}
	ctx, cancel := context.WithTimeout(ctx, toolTimeout(req.Tool))
	defer cancel()
	rev, err := b.kv.Create(ctx, key, p.Record)
	switch {
	case errors.Is(err, jetstream.ErrKeyExists):
		entry, gerr := bucket.Get(ctx, b.js, b.kv, key)
		if gerr != nil {
			// Appended before, but the first result could not be read.
			return unknown("kv.append: %s exists but could not be read: %v", key, gerr)
		}
		rev = entry.Revision
	case errors.Is(err, jetstream.ErrInvalidKey):
		return deterministic("kv.append: %v", err)
	case err != nil:
		// The create may have been stored before the error (a timeout
		// waiting for the ack): the status query settles it.
		return unknown("kv.append: create %s: %v", key, err)
	}
	return succeeded(kvResult(key, rev))
}

// appendKVStatus answers from the KV entry of the op_key: there means
// succeeded, with the revision of the entry; absent means not_accepted.
func (b *builtinAdapter) appendKVStatus(ctx context.Context, req Request) (StatusAnswer, error) {
	if b.kv == nil {
		return StatusAnswer{}, errors.New("adapter: kv.append status: no KV bucket configured")
	}
	var p kvAppendParams
	if err := readParams(req.Body, &p); err != nil {
		return StatusAnswer{}, fmt.Errorf("adapter: kv.append status: %w", err)
	}
	key, err := entryKey(p, req.OpKey)
	if err != nil {
		return StatusAnswer{}, fmt.Errorf("adapter: kv.append status: %w", err)
	}
	// Not accepted is final, so a replica's miss is asked of the leader.
	entry, err := bucket.Get(ctx, b.js, b.kv, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return StatusAnswer{State: StateNotAccepted}, nil
	}
	if err != nil {
		return StatusAnswer{}, fmt.Errorf("adapter: kv.append status: %w", err)
	}
	return StatusAnswer{State: StateSucceeded, Result: kvResult(key, entry.Revision)}, nil
}

func kvResult(key string, rev uint64) []byte {
	// Marshalling a struct of a string and a number cannot fail.
	body, _ := json.Marshal(kvAppendResult{Key: key, Revision: rev})
	return body
}
