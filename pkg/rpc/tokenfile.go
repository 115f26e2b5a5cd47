package rpc

import (
	"bytes"
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/steward-run/steward/pkg/keyfile"
)

// DefaultTokenReload is how often a token file is read again for a change.
const DefaultTokenReload = 2 * time.Second

// MaxTokenFileBytes bounds a token file: tens of thousands of tokens. The
// file is read every DefaultTokenReload; one pointed at something huge by
// mistake must not be read whole every 2 s.
const MaxTokenFileBytes = 4 << 20

// TokenFile is a token file (LoadTokens) read again when it changes, so
// that a token is added or withdrawn without a restart: a rotation lists
// the new token beside the old, moves callers to it, then drops the old
// (docs/keys.md). It is safe for concurrent use.
type TokenFile struct {
	path    string
	cur     atomic.Pointer[Tokens]
	data    []byte // what the tokens were read from; Reload's caller only
	refused []byte // the last file refused, so that it is reported once
	failed  string // the last read that failed, so that it is reported once
}

// OpenTokenFile reads the token file at path.
func OpenTokenFile(path string) (*TokenFile, error) {
	f := &TokenFile{path: path}
	if _, err := f.Reload(); err != nil {
		return nil, err
	}
	return f, nil
}

// Tokens returns the tokens as last read.
func (f *TokenFile) Tokens() Tokens { return *f.cur.Load() }

// Reload reads the file again and, when it changed and parses, serves its
// tokens from now on; changed says so. A file that does not parse leaves
// the tokens as they were: a half-written or mistyped file must neither
// lock everyone out nor let anyone in. The same refused file again is no
// change and no error: it was reported once, and so is a file that cannot
// be read (removed, or past MaxTokenFileBytes) until it can. Reload is
// not safe for concurrent use with itself (Watch calls it from one
// goroutine).
func (f *TokenFile) Reload() (changed bool, err error) {
	data, err := keyfile.ReadAtMost(f.path, MaxTokenFileBytes)
	if err != nil {
		if err.Error() == f.failed {
			return false, nil
		}
		f.failed = err.Error()
		return false, err
	}
	f.failed = ""
	if f.data != nil && bytes.Equal(data, f.data) || f.refused != nil && bytes.Equal(data, f.refused) {
		return false, nil
	}
	tokens, err := parseTokens(f.path, data)
	if err != nil {
		f.refused = data
		return false, err
	}
	f.data, f.refused = data, nil
	f.cur.Store(&tokens)
	return true, nil
}

// Watch reloads the file every interval until ctx ends, logging each
// change (how many tokens) and each file it refuses.
func (f *TokenFile) Watch(ctx context.Context, interval time.Duration, log *slog.Logger) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		switch changed, err := f.Reload(); {
		case err != nil:
			log.ErrorContext(ctx, "token file not reloaded; the tokens stay as they were", "file", f.path, "err", err)
		case changed:
			log.InfoContext(ctx, "token file reloaded", "file", f.path, "tokens", len(f.Tokens()))
		}
	}
}

// WithTokenFile has the edge look bearer tokens up in f as it is now,
// rather than in the tokens it was built with.
func WithTokenFile(f *TokenFile) EdgeOption {
	return func(i *edgeInterceptor) { i.file = f }
}
