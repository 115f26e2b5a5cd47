package action

import (
	"fmt"
	"strings"

	"github.com/steward-run/steward/pkg/eventlog"
)

// StoredRef is a parsed reference into a content bucket.
type StoredRef struct {
	Bucket string
	// TaskID is the task the content belongs to; "" for a reference of
	// the form written before archives purged content (the hash alone),
	// which events on the log keep for good.
	TaskID string
	Hash   string
}

// Key is the key the content is stored under in its bucket.
func (r StoredRef) Key() string {
	if r.TaskID == "" {
		return r.Hash
	}
	return Key(r.TaskID, r.Hash)
}

// Key is the key of taskID's content of hash: both are single subject
// tokens (a task id is letters, digits, '-' and '_'), so a task's keys are
// exactly the subjects `<task id>.>` of the bucket.
func Key(taskID, hash string) string { return taskID + "." + hash }

// Ref is the reference to taskID's content of hash in bucket.
func Ref(bucket, taskID, hash string) string {
	return StoredRef{Bucket: bucket, TaskID: taskID, Hash: hash}.String()
}

func (r StoredRef) String() string { return "kv://" + r.Bucket + "/" + r.Key() }

// ParseRef parses kv://BUCKET/<task id>.<sha256>, or the older
// kv://BUCKET/<sha256>. It is the one place a reference is taken apart.
func ParseRef(ref string) (StoredRef, error) {
	rest, ok := strings.CutPrefix(ref, "kv://")
	bucket, key, slash := strings.Cut(rest, "/")
	if !ok || !slash || bucket == "" {
		return StoredRef{}, fmt.Errorf("%q is not a kv://BUCKET/KEY reference", ref)
	}
	r := StoredRef{Bucket: bucket, Hash: key}
	if task, hash, dot := strings.Cut(key, "."); dot {
		r.TaskID, r.Hash = task, hash
		if !eventlog.ValidTaskID(task) {
			return StoredRef{}, fmt.Errorf("%q names no task: %s", ref, eventlog.TaskIDRule)
		}
	}
	if !validHash(r.Hash) {
		return StoredRef{}, fmt.Errorf("%q does not end in a SHA-256 (64 lowercase hex digits)", ref)
	}
	return r, nil
}

func validHash(h string) bool {
	if len(h) != 64 {
		return false
	}
	for i := 0; i < len(h); i++ {
		if c := h[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
