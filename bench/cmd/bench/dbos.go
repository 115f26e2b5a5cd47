package main

import (
	"context"
	"io"
	"log/slog"
	"time"

	"github.com/dbos-inc/dbos-transact-golang/dbos"
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

// launchDBOS starts DBOS Transact on the system database at url.
func launchDBOS(url string) (dbos.Context, error) {
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
	return ctx, nil
}

// runDBOSWorkflow is arm (e1): a one-step workflow, from RunWorkflow until
// its result is back.
func runDBOSWorkflow(o opts) (Result, error) {
	ctx, err := launchDBOS(o.pgURL)
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

// runDBOSStep is arm (e2): one step of a ten-step workflow. Latency is
// from the end of one step to the end of the next (steps 2 to 10);
// throughput and CPU count ten steps per workflow, workflow start and end
// included.
func runDBOSStep(o opts) (Result, error) {
	ctx, err := launchDBOS(o.pgURL)
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
