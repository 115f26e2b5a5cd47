package adapter

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// opsDir under the sandbox holds the builtins' op records. Requests may not
// write into it: they could forge a record.
const opsDir = ".steward-ops"

// sandbox is the one directory builtin tools may write under. Every access
// goes through an os.Root, so even a symlink planted after a path was
// checked cannot lead a write outside.
type sandbox struct {
	dir string
}

func (s sandbox) open() (*os.Root, error) {
	return os.OpenRoot(s.dir)
}

// refusal is why a request's path may not be written: the request is at
// fault, so the failure is deterministic.
type refusal string

func (r refusal) Error() string { return string(r) }

// localPath checks a path from a request and returns it cleaned. It refuses
// an empty or absolute path, one that climbs out with "..", one into the op
// records, and one that goes through a symlink or ends at something other
// than a regular file. Symlinks are refused outright, even those that stay
// inside, because a tool's effect should be where its request says.
func localPath(root *os.Root, p string) (string, error) {
	switch {
	case p == "":
		return "", refusal("path is empty")
	case filepath.IsAbs(p) || strings.HasPrefix(p, "/"):
		return "", refusal(fmt.Sprintf("path %q is absolute", p))
	case !filepath.IsLocal(p):
		return "", refusal(fmt.Sprintf("path %q escapes the sandbox", p))
	}
	clean := filepath.Clean(p)
	parts := strings.Split(clean, string(filepath.Separator))
	if parts[0] == opsDir {
		return "", refusal(fmt.Sprintf("path %q is reserved for op records", p))
	}
	for i := range parts {
		sub := filepath.Join(parts[:i+1]...)
		fi, err := root.Lstat(sub)
		if errors.Is(err, fs.ErrNotExist) {
			return clean, nil // the rest is created
		}
		if err != nil {
			return "", fmt.Errorf("check %q: %w", sub, err)
		}
		last := i == len(parts)-1
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			return "", refusal(fmt.Sprintf("path %q goes through a symlink at %q", p, sub))
		case !last && !fi.IsDir():
			return "", refusal(fmt.Sprintf("path %q: %q is not a directory", p, sub))
		case last && !fi.Mode().IsRegular():
			return "", refusal(fmt.Sprintf("path %q is not a regular file", p))
		}
	}
	return clean, nil
}

// writeAtomic writes data to name under root so that name holds either its
// old bytes or all of the new ones, and keeps them through a crash: a
// temporary file beside it, fsync, rename, fsync of the directory.
func writeAtomic(root *os.Root, name string, data []byte) (err error) {
	dir := filepath.Dir(name)
	if err := root.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp := filepath.Join(dir, ".steward-tmp-"+rand.Text())
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = root.Remove(tmp)
		}
	}()
	if _, err := f.Write(data); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := root.Rename(tmp, name); err != nil {
		return err
	}
	d, err := root.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
