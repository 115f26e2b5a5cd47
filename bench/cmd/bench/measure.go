package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// concurrency is how many actions are in flight in the throughput phase.
const concurrency = 16

// warmup is how many actions each arm does, unmeasured, before it is
// measured.
const warmup = 50

// selfCPU is the CPU time this process has used so far, user and system.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// clockTick is USER_HZ, the unit of /proc/<pid>/stat's times: 100 on
// Linux.
const clockTick = 100

// treeCPU is the CPU time of process pid and of its children (PostgreSQL's
// postmaster and its backends), read from /proc.
func treeCPU(pid int) time.Duration {
	if pid == 0 {
		return 0
	}
	var total int64
	eachInTree(pid, func(_ string, stat []string) {
		if len(stat) < 13 {
			return
		}
		ut, _ := strconv.ParseInt(stat[11], 10, 64)
		st, _ := strconv.ParseInt(stat[12], 10, 64)
		total += ut + st
	})
	return time.Duration(total) * time.Second / clockTick
}

// treePSS is the proportional set size of pid and its children in MB.
func treePSS(pid int) float64 {
	var kb int64
	eachInTree(pid, func(dir string, _ []string) {
		r, err := os.ReadFile(filepath.Join(dir, "smaps_rollup"))
		if err != nil {
			return
		}
		for _, line := range strings.Split(string(r), "\n") {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == "Pss:" {
				n, _ := strconv.ParseInt(f[1], 10, 64)
				kb += n
			}
		}
	})
	return float64(kb) / 1024
}

// eachInTree calls fn with the /proc directory of pid and of each of its
// children, and the fields of its stat after the command name (which is in
// parentheses, and may hold spaces).
func eachInTree(pid int, fn func(dir string, stat []string)) {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		dir := filepath.Join("/proc", e.Name())
		b, err := os.ReadFile(filepath.Join(dir, "stat"))
		if err != nil {
			continue
		}
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
		if len(f) < 2 {
			continue
		}
		if ppid, _ := strconv.Atoi(f[1]); p == pid || ppid == pid {
			fn(dir, f)
		}
	}
}

// phases runs the two measured phases of an arm: sequential calls of one
// until n actions are done, for latency, then calls from 16 workers at
// once until tp actions are done, for throughput. one(w) does work on
// worker w (0 in the latency phase) and returns the latencies to record
// and how many actions it did. CPU per action covers both phases, adding
// the CPU time of the processes others reads, by name, outside this one
// (PostgreSQL, NATS nodes, planes); each of those is also given apart,
// per action of the throughput phase alone (Components).
func phases(n, tp int, one func(w int) ([]time.Duration, int, error), others func() map[string]time.Duration) (Result, error) {
	if others == nil {
		others = func() map[string]time.Duration { return nil }
	}
	// Warm up, unmeasured: connections, caches, the policy's first
	// evaluations.
	for warmed := 0; warmed < warmup; {
		_, k, err := one(0)
		if err != nil {
			return Result{}, fmt.Errorf("warm-up: %w", err)
		}
		warmed += k
	}
	cpu0, ext0 := selfCPU(), others()
	var lat []time.Duration
	done := 0
	for done < n {
		d, k, err := one(0)
		if err != nil {
			return Result{}, fmt.Errorf("action %d: %w", done, err)
		}
		lat = append(lat, d...)
		done += k
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, concurrency)
	start, tp0 := time.Now(), others()
	for w := range concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Load() < int64(tp) {
				_, k, err := one(w + 1)
				if err != nil {
					errs <- fmt.Errorf("worker %d: %w", w+1, err)
					next.Store(int64(tp))
					return
				}
				next.Add(int64(k))
			}
		}()
	}
	wg.Wait()
	took := time.Since(start)
	ext := others()
	cpu := selfCPU() - cpu0 + sum(ext) - sum(ext0)
	select {
	case err := <-errs:
		return Result{}, err
	default:
	}
	if len(lat) == 0 {
		return Result{}, fmt.Errorf("no latencies recorded")
	}
	total := done + int(next.Load())
	slices.Sort(lat)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	r := Result{
		P50ms:      ms(lat[len(lat)/2]),
		P99ms:      ms(lat[len(lat)*99/100]),
		Throughput: float64(next.Load()) / took.Seconds(),
		CPUms:      ms(cpu) / float64(total),
		Samples:    len(lat),
	}
	for name, t := range ext {
		if r.Components == nil {
			r.Components = map[string]float64{}
		}
		r.Components[name] = ms(t-tp0[name]) / float64(next.Load())
	}
	return r, nil
}

func sum(m map[string]time.Duration) time.Duration {
	var t time.Duration
	for _, d := range m {
		t += d
	}
	return t
}
