package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/dbos-inc/dbos-transact-golang/dbos"
	"github.com/dbos-inc/dbos-transact-golang/dbos/internals"
	"github.com/jackc/pgx/v5"
)

func noopStep(context.Context) (string, error) { return "ok", nil }

// oneStep is a durable workflow of one step.
func oneStep(ctx dbos.Context, _ string) (string, error) {
	return dbos.RunAsStep(ctx, noopStep)
}

// tenSteps is a durable workflow of ten steps; it returns when each step
// finished, in Unix nanoseconds.
func tenSteps(ctx dbos.Context, _ string) ([]int64, error) {
	ends := make([]int64, 0, 10)
	for range 10 {
		if _, err := dbos.RunAsStep(ctx, noopStep); err != nil {
			return nil, err
		}
		ends = append(ends, time.Now().UnixNano())
	}
	return ends, nil
}

// synchronous_commit settings: "on" acknowledges a commit once its WAL is
// flushed to disk, "off" before (PostgreSQL's asynchronous commit).
const (
	syncCommit  = "on"
	asyncCommit = "off"
)

// launchDBOS starts DBOS Transact on the system database at url, with
// synchronous_commit set to commit on that database before DBOS connects
// and read back through DBOS's own pool, so that an arm never measures a
// durability other than the one it reports.
func launchDBOS(url, commit string) (dbos.Context, error) {
	if err := setCommit(url, commit); err != nil {
		return nil, fmt.Errorf("synchronous_commit=%s: %w", commit, err)
	}
	ctx, err := dbos.NewContext(context.Background(), dbos.Config{
		AppName:     "steward-bench",
		DatabaseURL: url,
		Logger:      slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		return nil, err
	}
	dbos.RegisterWorkflow(ctx, oneStep)
	dbos.RegisterWorkflow(ctx, tenSteps)
	if err := dbos.Launch(ctx); err != nil {
		return nil, err
	}
	if err := checkCommit(ctx, commit); err != nil {
		dbos.Shutdown(ctx, 10*time.Second)
		return nil, err
	}
	return ctx, nil
}

// setCommit makes commit the synchronous_commit of every session that
// connects to url's database from now on.
func setCommit(url, commit string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	var db string
	if err := conn.QueryRow(ctx, "select current_database()").Scan(&db); err != nil {
		return err
	}
	_, err = conn.Exec(ctx, fmt.Sprintf("alter database %s set synchronous_commit = %s", pgx.Identifier{db}.Sanitize(), commit))
	return err
}

// checkCommit fails unless a connection of DBOS's own pool commits with
// synchronous_commit want.
func checkCommit(ctx dbos.Context, want string) error {
	rt, err := internals.RuntimeOf(ctx)
	if err != nil {
		return err
	}
	pool := dbos.PgxPool(rt.SystemDB().Pool())
	if pool == nil {
		return errors.New("DBOS's system database is not on a pgx pool")
	}
	var got string
	if err := pool.QueryRow(ctx, "show synchronous_commit").Scan(&got); err != nil {
		return err
	}
	if got != want {
		return fmt.Errorf("DBOS's connections have synchronous_commit=%s, not %s", got, want)
	}
	return nil
}

func runDBOSWorkflow(o opts) (Result, error)      { return dbosWorkflow(o, syncCommit) }
func runDBOSWorkflowAsync(o opts) (Result, error) { return dbosWorkflow(o, asyncCommit) }
func runDBOSStep(o opts) (Result, error)          { return dbosStep(o, syncCommit) }
func runDBOSStepAsync(o opts) (Result, error)     { return dbosStep(o, asyncCommit) }

// dbosWorkflow is arms (e1) and (e1a): a one-step workflow, from
// RunWorkflow until its result is back.
func dbosWorkflow(o opts, commit string) (Result, error) {
	ctx, err := launchDBOS(o.pgURL, commit)
	if err != nil {
		return Result{}, err
	}
	defer dbos.Shutdown(ctx, 10*time.Second)
	one := func(int) ([]time.Duration, int, error) {
		start := time.Now()
		h, err := dbos.RunWorkflow(ctx, oneStep, "")
		if err != nil {
			return nil, 0, err
		}
		if _, err := h.GetResult(); err != nil {
			return nil, 0, err
		}
		return []time.Duration{time.Since(start)}, 1, nil
	}
	r, err := phases(o.latencyN, o.throughputN, one, postgresCPU(o.pgPID))
	r.ServerMB = treePSS(o.pgPID)
	return r, err
}

// dbosStep is arms (e2) and (e2a): one step of a ten-step workflow.
// Latency is from the end of one step to the end of the next (steps 2 to
// 10); throughput and CPU count ten steps per workflow, workflow start and
// end included.
func dbosStep(o opts, commit string) (Result, error) {
	ctx, err := launchDBOS(o.pgURL, commit)
	if err != nil {
		return Result{}, err
	}
	defer dbos.Shutdown(ctx, 10*time.Second)
	one := func(int) ([]time.Duration, int, error) {
		h, err := dbos.RunWorkflow(ctx, tenSteps, "")
		if err != nil {
			return nil, 0, err
		}
		ends, err := h.GetResult()
		if err != nil {
			return nil, 0, err
		}
		lat := make([]time.Duration, 0, 9)
		for i := 1; i < len(ends); i++ {
			lat = append(lat, time.Duration(ends[i]-ends[i-1]))
		}
		return lat, len(ends), nil
	}
	r, err := phases(o.latencyN, o.throughputN, one, postgresCPU(o.pgPID))
	r.ServerMB = treePSS(o.pgPID)
	return r, err
}

// postgresCPU reads the CPU time of PostgreSQL's postmaster and backends.
func postgresCPU(pid int) func() map[string]time.Duration {
	return func() map[string]time.Duration { return map[string]time.Duration{"postgresql": treeCPU(pid)} }
}
