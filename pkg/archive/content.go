package archive

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/steward-run/steward/pkg/action"
	"github.com/steward-run/steward/pkg/bucket"
	"github.com/steward-run/steward/pkg/eventlog"
	"github.com/steward-run/steward/pkg/policystore"
)

// contentBucket is a bucket that keeps content by task, and the prefix of
// one task's keys in it.
type contentBucket struct {
	name string
	keys func(taskID string) string
}

// contentBuckets are where a task's stored requests, results (and
// artifacts) and policy inputs are (natsperm.ContentBuckets).
func contentBuckets() []contentBucket {
	perTask := func(id string) string { return action.Key(id, "") }
	return []contentBucket{{action.RequestBucket, perTask}, {action.ResultBucket, perTask}, {policystore.Bucket, policystore.TaskInputs}}
}

// Content is what PurgeContent did: the tasks whose content it purged,
// and the buckets it left because they refuse purges.
type Content struct {
	Purged  []string
	Refused []string
}

// PurgeContent removes from the content buckets the keys of each of ids
// that the log no longer holds an event of: content goes only after its
// task's events, which go only after the bundle holding both was
// verified and written (PurgeTree), so nothing a task on the log reads is
// removed. A bucket made refusing purges (before archives, which
// JetStream cannot lift) keeps its content, as does content stored under
// the hash alone before keys named their task: it is in Refused, checked
// once per Purger. A bucket that does not exist holds nothing.
func (p *Purger) PurgeContent(ctx context.Context, ids []string) (Content, error) {
	var c Content
	log, err := p.js.Stream(ctx, eventlog.DefaultStream)
	if err != nil {
		return c, err
	}
	for _, id := range ids {
		if !eventlog.ValidTaskID(id) {
			return c, fmt.Errorf("purge content: %q is not a task id", id)
		}
		if n, err := p.count(ctx, log, taskSubjects(id)); err != nil || n > 0 {
			if err != nil {
				return c, err
			}
			continue // still on the log: a later pass, once it is not
		}
		c.Purged = append(c.Purged, id)
	}
	for _, b := range contentBuckets() {
		s, err := p.bucket(ctx, b.name)
		if s == nil || err != nil {
			if errors.Is(err, errRefusesPurges) {
				c.Refused = append(c.Refused, b.name)
				err = nil
			}
			if err != nil {
				return c, err
			}
			continue
		}
		for _, id := range c.Purged {
			if err := s.Purge(ctx, jetstream.WithPurgeSubject(bucket.Subject(b.name, b.keys(id)+">"))); err != nil {
				return c, fmt.Errorf("purge %s of task %s: %w", b.name, id, err)
			}
		}
	}
	return c, nil
}

var errRefusesPurges = errors.New("refuses purges")

// bucket returns the stream behind the bucket name, nil if there is
// none, and errRefusesPurges if it refuses purges.
func (p *Purger) bucket(ctx context.Context, name string) (jetstream.Stream, error) {
	if p.refusing[name] {
		return nil, errRefusesPurges
	}
	s, err := p.js.Stream(ctx, bucket.StreamName(name))
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if s.CachedInfo().Config.DenyPurge {
		p.refusing[name] = true
		return nil, errRefusesPurges
	}
	return s, nil
}

// RefusesPurges says what to do about buckets that refuse purges.
func RefusesPurges(buckets []string) string {
	return fmt.Sprintf("the content buckets %s were created refusing purges, which JetStream cannot lift: archived tasks' stored requests, results and policy inputs stay in them (docs/archives.md)", strings.Join(buckets, ", "))
}
