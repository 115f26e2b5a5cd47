package adapter

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"path/filepath"
)

// fileWriteParams are file.write's parameters. Pointers tell a missing field
// from an empty one: an empty file is a fine thing to write, a missing
// content is a malformed request.
type fileWriteParams struct {
	Path    *string `json:"path"`
	Content *string `json:"content"`
}

// fileWriteResult is file.write's result.
type fileWriteResult struct {
	Path   string `json:"path"`
	Bytes  int    `json:"bytes"`
	SHA256 string `json:"sha256"`
}

// writeFile writes p.Content at p.Path under the sandbox, replacing the file
// whole. A path the request may not use fails deterministically; a failure
// of the machine (disk full, permissions changed under us) is transient,
// and retrying is safe because the same bytes land at the same path.
func (b *builtinAdapter) writeFile(p fileWriteParams) Result {
	if p.Path == nil || p.Content == nil {
		return deterministic("file.write: params need \"path\" and \"content\"")
	}
	root, err := b.sandbox.open()
	if err != nil {
		return transient("file.write: open sandbox: %v", err)
	}
	defer root.Close()
	name, err := localPath(root, *p.Path)
	var refused refusal
	if errors.As(err, &refused) {
		return deterministic("file.write: %v", refused)
	}
	if err != nil {
		return transient("file.write: %v", err)
	}
	data := []byte(*p.Content)
	if err := writeAtomic(root, name, data); err != nil {
		return transient("file.write: %v", err)
	}
	sum := sha256.Sum256(data)
	body, err := json.Marshal(fileWriteResult{
		Path:   filepath.ToSlash(name),
		Bytes:  len(data),
		SHA256: hex.EncodeToString(sum[:]),
	})
	if err != nil {
		return transient("file.write: encode result: %v", err)
	}
	return succeeded(body)
}
