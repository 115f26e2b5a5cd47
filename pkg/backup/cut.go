package backup

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// CutBucket is the KV bucket a restore records its cut in: what the
// execution plane reads to tell an action the Steward the backup was
// taken from may have sent after the cut (docs/backup.md, "After a
// restore"). It is not in backups: only the last restore's cut matters,
// and a later cut is always past an earlier one's.
const CutBucket = "STEWARD_RESTORE"

// cutKey is the key of the cut in CutBucket.
const cutKey = "cut"

// Cut is where the restored log ends: its events stream's last sequence
// and that message's time as the server stored it. Every event at or
// before Sequence was in the backup; every later one was appended by the
// restored Steward.
type Cut struct {
	Sequence   uint64    `json:"sequence"`
	Time       time.Time `json:"time"`
	RestoredAt time.Time `json:"restored_at"`
}

// RecordCut records the cut of stream, just restored, in CutBucket, made
// with the stream's replicas: a put over any cut an earlier restore left.
func RecordCut(ctx context.Context, js jetstream.JetStream, stream string) (Cut, error) {
	s, err := js.Stream(ctx, stream)
	if err != nil {
		return Cut{}, fmt.Errorf("look up %s: %w", stream, err)
	}
	info := s.CachedInfo()
	cut := Cut{Sequence: info.State.LastSeq, Time: info.State.LastTime.UTC(), RestoredAt: time.Now().UTC()}
	kv, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: CutBucket, History: 1, Replicas: info.Config.Replicas})
	if err != nil {
		return cut, fmt.Errorf("open bucket %s: %w", CutBucket, err)
	}
	b, err := json.Marshal(cut)
	if err != nil {
		return cut, err
	}
	if _, err := kv.Put(ctx, cutKey, b); err != nil {
		return cut, fmt.Errorf("record the cut in %s: %w", CutBucket, err)
	}
	return cut, nil
}

// ReadCut reads the cut of the last restore; nil when this Steward was
// never restored.
func ReadCut(ctx context.Context, js jetstream.JetStream) (*Cut, error) {
	kv, err := js.KeyValue(ctx, CutBucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("open bucket %s: %w", CutBucket, err)
	}
	e, err := kv.Get(ctx, cutKey)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("read the cut in %s: %w", CutBucket, err)
	}
	var cut Cut
	if err := json.Unmarshal(e.Value(), &cut); err != nil {
		return nil, fmt.Errorf("the cut in %s: %w", CutBucket, err)
	}
	return &cut, nil
}
