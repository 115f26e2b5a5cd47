// Package keyfile creates the files that hold a key or a token: once, whole
// and private. Two processes may start at the same moment on one data
// directory (or one shared volume) and both find the file missing; each
// writes its own candidate, and exactly one of them lands. The other reads
// the winner's, so both go on with the same key. Create is safe for
// concurrent use, by goroutines and by processes.
package keyfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
)

// Create writes data to path, mode 0600, unless path exists: created
// reports whether this call made it. The file is written whole under a
// temporary name in the same directory, synced, then hard-linked into
// place, which fails if path exists: a reader never sees half a file, and
// of two creators the first link wins while the loser's data is dropped.
// The directory is created (0700) if missing, and synced after the link.
func Create(path string, data []byte) (created bool, err error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return false, err
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*") // mode 0600
	if err != nil {
		return false, err
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return false, err
	}
	switch err := os.Link(tmp.Name(), path); {
	case errors.Is(err, fs.ErrExist):
		return false, nil
	case err != nil:
		return false, err
	}
	// The link is the key's existence: synced with its directory, so a
	// crash right after cannot take back a key already handed out.
	return true, syncDir(dir)
}

// Replace writes data to path with mode, replacing what is there: written
// whole under a temporary name in the same directory, synced, then renamed
// into place, so a reader sees the old file or the new, never half of one.
func Replace(path string, data []byte, mode os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // gone by the rename when it succeeds
	err = tmp.Chmod(mode)
	if err == nil {
		_, err = tmp.Write(data)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// syncDir flushes dir's entries to stable storage.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// OpenToOthers reports whether users of the machine other than the
// file's owner and group hold any permission on path (read it, above all),
// with its mode: a key or token file they may read hands them what it
// holds. Group bits are left alone (a Kubernetes Secret is mounted 0440),
// and so is Windows, whose modes do not say. A file that cannot be read is
// not reported.
func OpenToOthers(path string) (fs.FileMode, bool) {
	fi, err := os.Stat(path)
	if err != nil || runtime.GOOS == "windows" {
		return 0, false
	}
	return fi.Mode().Perm(), fi.Mode().Perm()&0o007 != 0
}

// ReadAtMost reads the file at path, refusing one past max bytes before it
// is read whole: a file read again and again (a token file), or one that
// may be hostile, must not cost what its size says.
func ReadAtMost(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("%s is larger than %d bytes", path, max)
	}
	return data, nil
}
