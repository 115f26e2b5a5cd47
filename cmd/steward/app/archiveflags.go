package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"

	"github.com/steward-run/steward/pkg/archive"
	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/services/state"
)

// ArchiveFlags name the archive a state plane serves archived tasks from
// (docs/archives.md): GetTask, GetReceipt, ReplayTask and VerifyTask read
// a task there once `steward archive run` has taken it off the log.
type ArchiveFlags struct {
	Store string
	open  *archive.Archive
}

func (f *ArchiveFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.Store, "archive", "", "the archive `STORE` (a directory, or s3://BUCKET/PREFIX?endpoint=HOST:PORT with $STEWARD_ARCHIVE_ACCESS_KEY and $STEWARD_ARCHIVE_SECRET_KEY) that tasks taken off the log by 'steward archive run' are read from (state plane; docs/archives.md)")
}

// archive opens the store once; nil without --archive.
func (f *ArchiveFlags) archive() (*archive.Archive, error) {
	if f.Store == "" || f.open != nil {
		return f.open, nil
	}
	store, err := archive.Open(f.Store, os.Getenv)
	if err != nil {
		return nil, fmt.Errorf("--archive: %w", err)
	}
	f.open = archive.New(store)
	return f.open, nil
}

// tenant is the edge's lookup of a task's tenant (rpc.TenantFunc) for a
// task the log no longer holds: the archive's, when there is one.
func (f *ArchiveFlags) tenant(ctx context.Context, taskID string, onLog error) (string, error) {
	a, err := f.archive()
	if err != nil || a == nil || !errs.Is(onLog, errs.NotFound) {
		return "", onLog
	}
	b, _, err := a.Bundle(ctx, taskID)
	if errors.Is(err, archive.ErrNotFound) {
		return "", onLog
	}
	if err != nil {
		return "", errs.Wrap(errs.Unavailable, err, "read task %s from the archive", taskID)
	}
	tasks, err := archive.Fold(b)
	if err != nil || tasks[taskID] == nil {
		return "", errs.New(errs.Corrupt, "task %s in the archive does not fold: %v", taskID, err)
	}
	return tasks[taskID].Tenant, nil
}

// reader is the archive as the state plane reads it; nil without
// --archive (an interface holding a nil pointer is not nil).
func (f *ArchiveFlags) reader() (state.ArchivedTasks, error) {
	a, err := f.archive()
	if a == nil || err != nil {
		return nil, err
	}
	return a, nil
}
