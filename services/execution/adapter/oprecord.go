package adapter

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
)

// opRecord is what a builtin remembers about an op_key it has done.
type opRecord struct {
	OpKey  string          `json:"op_key"`
	Kind   string          `json:"kind"`
	Result json.RawMessage `json:"result"`
}

// opStore keeps op records as files, SandboxDir/.steward-ops/<sha256(op_key)>.json,
// each written atomically, so a record survives a restart and is either
// whole or absent. The file name is a hash because an op_key is not a safe
// file name.
type opStore struct {
	sandbox sandbox
}

func (s opStore) init() error {
	root, err := s.sandbox.open()
	if err != nil {
		return err
	}
	defer root.Close()
	return root.MkdirAll(opsDir, 0o755)
}

func opPath(opKey string) string {
	sum := sha256.Sum256([]byte(opKey))
	return filepath.Join(opsDir, hex.EncodeToString(sum[:])+".json")
}

// load returns the record of opKey, and whether there is one.
func (s opStore) load(opKey string) (opRecord, bool, error) {
	root, err := s.sandbox.open()
	if err != nil {
		return opRecord{}, false, err
	}
	defer root.Close()
	data, err := root.ReadFile(opPath(opKey))
	if errors.Is(err, fs.ErrNotExist) {
		return opRecord{}, false, nil
	}
	if err != nil {
		return opRecord{}, false, err
	}
	var rec opRecord
	if err := json.Unmarshal(data, &rec); err != nil {
		return opRecord{}, false, fmt.Errorf("op record %s: %w", opPath(opKey), err)
	}
	if rec.OpKey != opKey {
		return opRecord{}, false, fmt.Errorf("op record %s belongs to another op_key", opPath(opKey))
	}
	return rec, true, nil
}

// save writes rec durably.
func (s opStore) save(rec opRecord) error {
	data, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	root, err := s.sandbox.open()
	if err != nil {
		return err
	}
	defer root.Close()
	return writeAtomic(root, opPath(rec.OpKey), data)
}
