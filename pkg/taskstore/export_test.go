package taskstore

import stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"

// FoldInTwo folds recs[:n], then the rest onto that fold, as the cache
// does for a task it has seen, so that the two folds share one id set. It
// returns the first fold's history.
func FoldInTwo(recs []*stewardv1.EventRecord, n int) (History, error) {
	older, err := (&folded{}).extend(recs[:n])
	if err != nil {
		return nil, err
	}
	if _, err := older.extend(recs[n:]); err != nil {
		return nil, err
	}
	return history{set: older.ids, upTo: older.task.LastSequence}, nil
}
