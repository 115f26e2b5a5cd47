package archive

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/steward-run/steward/pkg/keyfile"
)

// Dir is a Store in a directory: one file per key, written to a
// temporary file, synced and renamed (keyfile.Replace), so a reader never
// sees half of one.
type Dir struct {
	root string
	max  int64 // bytes of one object read, at most (MaxObjectBytes)
}

// NewDir returns a Store in dir, creating it (0700) if missing.
func NewDir(dir string) (*Dir, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("archive directory: %w", err)
	}
	return &Dir{root: dir, max: MaxObjectBytes}, nil
}

// checkKey refuses a key that could name a file outside the store.
func checkKey(key string) error {
	if key == "" || strings.HasPrefix(key, "/") || strings.Contains(key, "\\") || slices.Contains(strings.Split(key, "/"), "..") {
		return fmt.Errorf("archive: %q is not a key", key)
	}
	return nil
}

func (d *Dir) path(key string) (string, error) {
	if err := checkKey(key); err != nil {
		return "", err
	}
	return filepath.Join(d.root, filepath.FromSlash(key)), nil
}

// Put writes data under key.
func (d *Dir) Put(_ context.Context, key string, data []byte) error {
	p, err := d.path(key)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return err
	}
	return keyfile.Replace(p, data, 0o600)
}

// Get reads key.
func (d *Dir) Get(_ context.Context, key string) ([]byte, error) {
	p, err := d.path(key)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readBounded(f, key, d.max)
}

// MaxObjectBytes bounds one object a store reads: a bundle past it (a
// hostile or damaged store's) is refused before it is held in memory.
// It is the bound of the bundles `steward archive run` writes by default.
const MaxObjectBytes = 1 << 30

// readBounded reads r whole, or fails once it holds more than max bytes.
func readBounded(r io.Reader, key string, max int64) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("archive: %s holds more than %d bytes, the most one read takes", key, max)
	}
	return data, nil
}

// List returns the keys under prefix, sorted.
func (d *Dir) List(_ context.Context, prefix string) ([]string, error) {
	p, err := d.path(strings.TrimSuffix(prefix, "/"))
	if err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var keys []string
	for _, e := range entries {
		if !e.IsDir() && !strings.HasPrefix(e.Name(), ".") { // a Put under way
			keys = append(keys, prefix+e.Name())
		}
	}
	return keys, nil // ReadDir sorts by name
}

// Delete removes key.
func (d *Dir) Delete(_ context.Context, key string) error {
	p, err := d.path(key)
	if err != nil {
		return err
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}
