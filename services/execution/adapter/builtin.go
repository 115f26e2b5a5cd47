package adapter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"sync"

	"github.com/nats-io/nats.go/jetstream"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// The builtin tool kinds, as named in a BuiltinEndpoint.
const (
	KindNoop      = "noop"
	KindFileWrite = "file.write"
	KindKVAppend  = "kv.append"
)

// BuiltinConfig configures the builtin tools.
type BuiltinConfig struct {
	// SandboxDir is the root for file.write, and where builtins keep their
	// op records; created if missing. Required.
	SandboxDir string
	// KV is the bucket for kv.append; may be nil, and then kv.append fails
	// deterministically.
	KV jetstream.KeyValue
	// JS is the connection KV is on: a replica's miss is asked of the
	// bucket's leader (bucket.Get). Without it a miss is final.
	JS jetstream.JetStream
}

// builtinAdapter runs tools inside the process. Each honours the op_key
// itself: the same key twice does the work once and returns the first
// result, across restarts, because the record of a key is durable (a file
// under the sandbox, or the KV entry itself for kv.append).
type builtinAdapter struct {
	sandbox sandbox
	ops     opStore
	kv      jetstream.KeyValue
	js      jetstream.JetStream
	// locks serialise calls that share an op_key, so a concurrent repeat
	// waits for the first and then finds its record. Striped, because a
	// lock per key would need forgetting.
	locks [64]sync.Mutex
}

// NewBuiltin returns an Adapter for builtin tools, safe for concurrent use.
// Calls sharing an op_key are serialised within one adapter; adapters over
// the same SandboxDir (a restart, say) see each other's op records but do
// not wait for each other, which is enough because the execution plane
// dispatches a claimed permit from one place at a time.
func NewBuiltin(cfg BuiltinConfig) (Adapter, error) {
	if cfg.SandboxDir == "" {
		return nil, errors.New("adapter: builtin: no sandbox dir")
	}
	if err := os.MkdirAll(cfg.SandboxDir, 0o755); err != nil {
		return nil, fmt.Errorf("adapter: builtin: sandbox dir: %w", err)
	}
	sb := sandbox{dir: cfg.SandboxDir}
	b := &builtinAdapter{sandbox: sb, ops: opStore{sandbox: sb}, kv: cfg.KV, js: cfg.JS}
	if err := b.ops.init(); err != nil {
		return nil, fmt.Errorf("adapter: builtin: op records: %w", err)
	}
	return b, nil
}

// Call implements Adapter.
func (b *builtinAdapter) Call(ctx context.Context, req Request) Result {
	if req.OpKey == "" {
		return deterministic("no op_key: a tool is never called without one")
	}
	if err := ctx.Err(); err != nil {
		return transient("not started: %v", err)
	}
	switch kind := req.Tool.GetBuiltin().GetKind(); kind {
	case KindNoop:
		// Nothing to do twice, so nothing to remember: no op record, no
		// fsync on the way.
		return succeeded(noopResult)
	case KindFileWrite:
		var p fileWriteParams
		if err := readParams(req.Body, &p); err != nil {
			return deterministic("file.write: %v", err)
		}
		return b.once(req.OpKey, kind, func() Result { return b.writeFile(p) })
	case KindKVAppend:
		return b.appendKV(ctx, req)
	default:
		return deterministic("unknown builtin kind %q", kind)
	}
}

// Status implements Adapter: a builtin answers from its own op records, so
// the answer is succeeded with the first result, or not_accepted. Failures
// are not recorded, because a failed builtin changed nothing.
func (b *builtinAdapter) Status(ctx context.Context, req Request) (StatusAnswer, error) {
	if req.OpKey == "" {
		return StatusAnswer{}, errors.New("adapter: status query without an op_key")
	}
	switch kind := req.Tool.GetBuiltin().GetKind(); kind {
	case KindNoop:
		// A no-op has no effect to be unsure about: it always succeeded.
		return StatusAnswer{State: StateSucceeded, Result: noopResult}, nil
	case KindFileWrite:
		// Holding the key's lock makes a call in progress finish first, so
		// it is not reported as not accepted half-way through.
		unlock := b.lock(req.OpKey)
		defer unlock()
		rec, ok, err := b.ops.load(req.OpKey)
		if err != nil {
			return StatusAnswer{}, fmt.Errorf("adapter: %s status: %w", kind, err)
		}
		if !ok {
			return StatusAnswer{State: StateNotAccepted}, nil
		}
		return StatusAnswer{State: StateSucceeded, Result: rec.Result}, nil
	case KindKVAppend:
		return b.appendKVStatus(ctx, req)
	default:
		return StatusAnswer{}, fmt.Errorf("adapter: unknown builtin kind %q", kind)
	}
}

var noopResult = []byte(`{"ok":true}`)

// once does the work for opKey unless its record says it is done, and
// records a success. A failure is not recorded: it changed nothing, and the
// same request fails the same way again.
func (b *builtinAdapter) once(opKey, kind string, work func() Result) Result {
	unlock := b.lock(opKey)
	defer unlock()
	rec, ok, err := b.ops.load(opKey)
	if err != nil {
		return transient("%s: read op record: %v", kind, err)
	}
	if ok {
		return succeeded(rec.Result)
	}
	r := work()
	if r.Status != stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED {
		return r
	}
	if err := b.ops.save(opRecord{OpKey: opKey, Kind: kind, Result: r.Body}); err != nil {
		// The work is done but a repeat would not know it. Unknown makes
		// the caller ask; the answer, not_accepted, allows the repeat, which
		// is harmless for these kinds: the same write again.
		return unknown("%s: done, but the op record was not saved: %v", kind, err)
	}
	return r
}

func (b *builtinAdapter) lock(opKey string) (unlock func()) {
	h := fnv.New32a()
	_, _ = h.Write([]byte(opKey))
	mu := &b.locks[h.Sum32()%uint32(len(b.locks))]
	mu.Lock()
	return mu.Unlock
}

// readParams decodes the "params" field of a canonical request into dst.
func readParams(body []byte, dst any) error {
	var req struct {
		Params json.RawMessage `json:"params"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return fmt.Errorf("request is not JSON: %w", err)
	}
	if len(req.Params) == 0 || string(req.Params) == "null" {
		return errors.New("request has no params")
	}
	if err := json.Unmarshal(req.Params, dst); err != nil {
		return fmt.Errorf("params: %w", err)
	}
	return nil
}
