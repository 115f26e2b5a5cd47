package archive

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/task"
)

// Retention is how long ended tasks stay in the hot log, per tenant.
// Zero keeps them for ever.
type Retention struct {
	// Default is for tenants not named, the default tenant ("") included.
	Default time.Duration
	Tenants map[string]time.Duration
}

// ParseRetention reads "720h" or "720h,acme=24h,beta=0": a default age,
// then a tenant's own; a tenant named "-" is the default tenant.
func ParseRetention(s string) (Retention, error) {
	r := Retention{Tenants: map[string]time.Duration{}}
	for i, part := range strings.Split(s, ",") {
		name, age, named := strings.Cut(part, "=")
		if !named {
			age = name
		}
		d, err := time.ParseDuration(strings.TrimSpace(age))
		if err != nil || d < 0 {
			return Retention{}, fmt.Errorf("retention %q: %q is not an age (720h, 0 to keep for ever)", s, age)
		}
		switch {
		case !named && i == 0:
			r.Default = d
		case !named:
			return Retention{}, fmt.Errorf("retention %q: only the first age may be without a tenant", s)
		case name == "-":
			r.Tenants[""] = d
		default:
			r.Tenants[name] = d
		}
	}
	return r, nil
}

// Age is how long tenant's ended tasks are kept hot; zero for ever.
func (r Retention) Age(tenant string) time.Duration {
	if d, ok := r.Tenants[tenant]; ok {
		return d
	}
	return r.Default
}

// String is r as ParseRetention reads it.
func (r Retention) String() string {
	parts := []string{r.Default.String()}
	for _, t := range slices.Sorted(maps.Keys(r.Tenants)) {
		name := t
		if name == "" {
			name = "-"
		}
		parts = append(parts, name+"="+r.Tenants[t].String())
	}
	return strings.Join(parts, ",")
}

// Fold folds each task of b from its events, by id.
func Fold(b *stewardv1.AuditBundle) (map[string]*stewardv1.Task, error) {
	out := map[string]*stewardv1.Task{}
	for _, bt := range b.Tasks {
		if out[bt.TaskId] != nil {
			continue // TaskRecords took all its pieces
		}
		recs, err := TaskRecords(b, bt.TaskId)
		if err != nil {
			return nil, err
		}
		t := &stewardv1.Task{}
		for _, rec := range recs {
			if err := task.Apply(t, rec.Event, rec.Sequence); err != nil {
				return nil, fmt.Errorf("archive: task %s: %w", bt.TaskId, err)
			}
		}
		out[bt.TaskId] = t
	}
	return out, nil
}

// Due says why the tree of tasks (a bundle's, folded) may not be archived
// at now under r, or "" when it may: every task has ended, longer ago
// than its tenant's age, and the bundle left none of the tree out. A
// tree is archived whole, so no live task loses its parent's or a
// sub-task's events.
func Due(tasks map[string]*stewardv1.Task, withheld []*stewardv1.WithheldTask, now time.Time, r Retention) string {
	if len(withheld) > 0 {
		return fmt.Sprintf("task %s of the tree is not in the bundle (%s)", withheld[0].TaskId, withheld[0].Reason)
	}
	for _, id := range slices.Sorted(maps.Keys(tasks)) {
		t := tasks[id]
		if !task.Terminal(t.Status) {
			return fmt.Sprintf("task %s of the tree is %s", id, t.Status)
		}
		age := r.Age(t.Tenant)
		if age == 0 {
			return fmt.Sprintf("task %s's tenant %q keeps ended tasks for ever", id, t.Tenant)
		}
		if ended := t.UpdatedAt.AsTime(); now.Sub(ended) < age {
			return fmt.Sprintf("task %s ended at %s, less than %s ago", id, ended.UTC().Format(time.RFC3339), age)
		}
	}
	return ""
}
