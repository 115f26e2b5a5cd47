// Command bench runs Steward's governed action side by side with its floor
// (a bare JetStream pipeline of the same shape) and with DBOS Transact on
// PostgreSQL, in interleaved rounds of one invocation, and writes
// bench/results.md, bench/results.png and the marked block of
// docs/performance.md. Run from bench/:
//
//	go run ./cmd/bench
//
// Each arm of each round runs in a child process of its own (this binary
// with -arm), so its peak RSS and CPU time are its own. An arm that fails
// makes the command exit non-zero.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/steward-run/steward/cmd/steward/app"
)

// Result is what one arm reports for one round.
type Result struct {
	Arm        string  `json:"arm"`
	P50ms      float64 `json:"p50_ms"`
	P99ms      float64 `json:"p99_ms"`
	Throughput float64 `json:"throughput"` // actions (or steps) per second, 16 at once
	CPUms      float64 `json:"cpu_ms"`     // CPU milliseconds per action, the arm's whole process (and PostgreSQL's, or its planes' and NATS nodes' processes) while measured
	RSSMB      float64 `json:"rss_mb"`     // peak RSS of the arm's process
	ServerMB   float64 `json:"server_mb"`  // PostgreSQL's (DBOS arms) or the Restate server's (Restate arms) proportional set size at the end
	Samples    int     `json:"samples"`
	// Components is the CPU milliseconds per action of each process the
	// arm runs beside its own (a plane, a NATS node, PostgreSQL), over the
	// throughput phase alone; cpu_ms includes them, over both phases.
	Components map[string]float64 `json:"components,omitempty"`
	// EventsLeader is the NATS node that led the event stream at the end,
	// for the arms that run their nodes apart.
	EventsLeader string `json:"events_leader,omitempty"`
	Load         string `json:"-"` // the machine's load averages as the arm started (set by the driver)
}

// arm describes one arm.
type arm struct {
	id, name, durability string
	run                  func(o opts) (Result, error)
}

type opts struct {
	latencyN, throughputN int
	pgURL                 string
	pgPID                 int
	restate               restateEndpoints
}

// perProcess are the arms that run each plane and NATS node as a process
// of their own; builds before them lack them.
var perProcess = []string{"services-r3", "services-procs", "services-gateway"}

// needSync are the arms that run steward dev with --sync, which builds
// before it lack.
var needSync = []string{"dev-allow-sync"}

// isPart reports whether a is one of the parts arms (parts.go), which
// builds before them lack.
func isPart(a arm) bool { return strings.HasPrefix(a.id, "part-") }

var arms = []arm{
	{"floor", "(a) bare JetStream: 5 appends, 4 hops through durable consumers",
		"JetStream file store: acknowledged once in the OS page cache; fsync every 2 min (sync_interval default)", runFloor},
	{"dev-allow", "(b) Steward dev (its default: bearer tokens), allow-all policy",
		"JetStream file store (as (a)): page cache, fsync every 2 min", runDevAllow},
	{"dev-allow-1rt", "(b1) as (b), one round trip: ProposeAction with wait",
		"JetStream file store (as (a)): page cache, fsync every 2 min", runDevOneCall},
	{"dev-allow-traced", "(b2) as (b), traces on: every span sent over OTLP/HTTP to a receiver that drops them",
		"JetStream file store (as (a)): page cache, fsync every 2 min", runDevTraced},
	{"dev-allow-sync", "(b3) as (b1), --sync always: every append synced to disk before it is acknowledged",
		"JetStream file store, --sync always: fsync before every acknowledgement", runDevSync},
	{"dev-default", "(c) Steward dev, default policy bundle",
		"JetStream file store (as (a)): page cache, fsync every 2 min", runDevDefault},
	{"services", "(d) Steward services mode: 4 planes over TCP NATS",
		"JetStream file store (as (a)): page cache, fsync every 2 min", runServices},
	{"services-r3", "(f) Steward services mode on a three-node JetStream cluster, R3, each plane and node a process",
		"JetStream R3: acknowledged once 2 of 3 nodes hold it in the page cache; fsync every 2 min", func(o opts) (Result, error) { return runPlaneProcesses(o, 3) }},
	{"services-procs", "(g) Steward services mode: 4 planes and NATS, each a process, R1",
		"JetStream file store (as (a)): page cache, fsync every 2 min", func(o opts) (Result, error) { return runPlaneProcesses(o, 1) }},
	{"services-gateway", "(h) as (g), every call through a steward gateway process (the one address)",
		"JetStream file store (as (a)): page cache, fsync every 2 min", runThroughGateway},
	{"dbos-wf1", "(e1) DBOS Transact: one-step workflow",
		"PostgreSQL: fsync (WAL flush) at every commit", runDBOSWorkflow},
	{"dbos-wf1-async", "(e1a) as (e1), synchronous_commit=off",
		"PostgreSQL, synchronous_commit=off: acknowledged before the WAL flush, flushed within 3× wal_writer_delay (600 ms)", runDBOSWorkflowAsync},
	{"dbos-step10", "(e2) DBOS Transact: one step of a ten-step workflow",
		"PostgreSQL: fsync (WAL flush) at every commit", runDBOSStep},
	{"dbos-step10-async", "(e2a) as (e2), synchronous_commit=off",
		"PostgreSQL, synchronous_commit=off: acknowledged before the WAL flush, flushed within 3× wal_writer_delay (600 ms)", runDBOSStepAsync},
	{"part-rpc", "(p1) a part of (b1) alone: its Connect call, answered at once",
		"none: nothing stored", runPartRPC},
	{"part-log", "(p2) a part of (b1) alone: the JetStream messages its design needs (20; (a) sends 18)",
		"JetStream file store (as (a)): page cache, fsync every 2 min", runPartLog},
	{"part-judge", "(p3) a part of (b1) alone: OPA's allow-all evaluation and the permit's Ed25519 signature",
		"none: nothing stored", runPartJudge},
	{"restate-call1", "(r1) Restate: one-step handler, called through the ingress",
		restateDurability, runRestateCall},
	{"restate-step10", "(r2) Restate: one step of a ten-step handler",
		restateDurability, runRestateStep},
}

func main() {
	runAsComponent(app.Main)
	armID := flag.String("arm", "", "run one arm in this process and print its result as JSON (used by the driver)")
	rounds := flag.Int("rounds", 3, "interleaved rounds")
	latencyN := flag.Int("n", 400, "sequential actions per arm and round, for p50 and p99")
	throughputN := flag.Int("tp", 800, "actions per arm and round at 16 at once, for throughput")
	pgURL := flag.String("pg", "", "PostgreSQL URL (child arms)")
	pgPID := flag.Int("pgpid", 0, "postmaster pid (child arms)")
	var rs restateEndpoints
	flag.StringVar(&rs.ingress, "restate-ingress", "", "Restate ingress URL (child arms)")
	flag.StringVar(&rs.admin, "restate-admin", "", "Restate admin API URL (child arms)")
	flag.IntVar(&rs.pid, "restate-pid", 0, "Restate server pid (child arms)")
	cpuProfile := flag.String("cpuprofile", "", "with -arm: write the arm's CPU profile to this file")
	only := flag.String("arms", "", "comma-separated arm ids to run (default all: floor,dev-allow,dev-allow-1rt,dev-allow-traced,dev-allow-sync,dev-default,services,services-r3,services-procs,services-gateway,dbos-wf1,dbos-wf1-async,dbos-step10,dbos-step10-async,part-rpc,part-log,part-judge,restate-call1,restate-step10)")
	outDir := flag.String("out", ".", "directory for results.md and results.png")
	doc := flag.String("doc", "../docs/performance.md", "Markdown file whose marked block to rewrite; empty for none")
	base := flag.String("base", "", "a git `REV` to compare with: its arms run beside this build's, round by round, and a comparison is printed instead of writing the reports (default arms: all but DBOS's, Restate's, the parts', those that run each process apart: services-r3, services-procs, services-gateway, and dev-allow-sync)")
	memory := flag.Int("memory", 0, "instead of the arms: measure each plane's resident memory with `N` running tasks (arm (g)'s layout) and print a table")
	flag.Parse()
	if *memory > 0 {
		if err := runMemory(os.Stdout, *memory); err != nil {
			fatalf("memory: %v", err)
		}
		return
	}
	o := opts{latencyN: *latencyN, throughputN: *throughputN, pgURL: *pgURL, pgPID: *pgPID, restate: rs}
	if *armID != "" {
		a, ok := find(*armID)
		if !ok {
			fatalf("unknown arm %q", *armID)
		}
		stop := profile(*cpuProfile)
		r, err := a.run(o)
		stop()
		if err != nil {
			fatalf("%s: %v", a.id, err)
		}
		r.Arm = a.id
		_ = json.NewEncoder(os.Stdout).Encode(r)
		return
	}
	selected := arms
	if *base != "" {
		// Neither DBOS's nor Restate's arms nor those that measure each
		// process apart or need --sync (builds before them lack them):
		// -arms names them.
		selected = slices.DeleteFunc(slices.Clone(arms), func(a arm) bool {
			return strings.HasPrefix(a.id, "dbos") || isRestate(a) || isPart(a) || slices.Contains(perProcess, a.id) || slices.Contains(needSync, a.id)
		})
	}
	if *only != "" {
		selected = nil
		for _, id := range strings.Split(*only, ",") {
			a, ok := find(id)
			if !ok {
				fatalf("-arms: unknown arm %q", id)
			}
			selected = append(selected, a)
		}
	}
	if err := drive(selected, *rounds, o, *outDir, *doc, *base); err != nil {
		fatalf("%v", err)
	}
}

// loadavg is the machine's 1, 5 and 15 minute load averages.
func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

func find(id string) (arm, bool) {
	for _, a := range arms {
		if a.id == id {
			return a, true
		}
	}
	return arm{}, false
}

func fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "bench: "+format+"\n", args...)
	os.Exit(1)
}

// drive runs every arm in every round, each round in a rotated order, and
// writes the reports; with a base revision, it runs the base's arms beside
// this build's and prints the comparison instead.
func drive(selected []arm, rounds int, o opts, outDir, doc, baseRev string) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	needPG := slices.ContainsFunc(selected, func(a arm) bool { return strings.HasPrefix(a.id, "dbos") })
	var pg *postgres
	if needPG {
		if pg, err = startPostgres(); err != nil {
			return fmt.Errorf("postgresql: %w", err)
		}
		defer pg.stop()
		fmt.Fprintf(os.Stderr, "bench: %s (fsync=%s, synchronous_commit=%s, wal_writer_delay=%s)\n", pg.version, pg.setting("fsync"), pg.setting("synchronous_commit"), pg.setting("wal_writer_delay"))
	}
	if slices.ContainsFunc(selected, isRestate) {
		rs, err := startRestate()
		if err != nil {
			return fmt.Errorf("restate: %w", err)
		}
		defer rs.stop()
		o.restate = rs.restateEndpoints
		fmt.Fprintf(os.Stderr, "bench: %s (ingress %s, admin %s)\n", rs.version, rs.ingress, rs.admin)
	}
	var base *build
	if baseRev != "" {
		b, cleanup, err := buildBase(baseRev)
		if err != nil {
			return err
		}
		defer cleanup()
		base = &b
	}
	// The commit and whether the tree is clean, before anything is
	// written.
	rep := report{rounds: rounds, o: o, arms: selected}
	rep.environment()
	started := time.Now()
	all := map[string][]Result{}
	failed := 0
	for r := range rounds {
		for _, x := range order(selected, r, self, base) {
			res, err := runArm(x, r, o, pg)
			if err != nil {
				failed++
				fmt.Fprintf(os.Stderr, "bench: round %d, %s FAILED: %v\n", r+1, x.key, err)
				continue
			}
			all[x.key] = append(all[x.key], res)
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d arm runs failed", failed)
	}
	if base != nil {
		fmt.Print(comparison(selected, all, *base))
		return nil
	}
	rep.results, rep.took, rep.when = all, time.Since(started), time.Now().UTC()
	if pg != nil {
		rep.pgVersion = pg.version
	}
	md := rep.markdown()
	if err := os.WriteFile(filepath.Join(outDir, "results.md"), []byte(md), 0o644); err != nil {
		return err
	}
	if err := rep.chart(filepath.Join(outDir, "results.png")); err != nil {
		return fmt.Errorf("chart: %w", err)
	}
	fmt.Print(md)
	if doc != "" {
		if err := rep.rewriteDoc(doc); err != nil {
			return err
		}
	}
	return nil
}

// runArm runs one arm of one build in round r, in a child process of its
// own, and prints its line.
func runArm(x run, r int, o opts, pg *postgres) (Result, error) {
	a := x.a
	args := []string{"-arm", a.id, "-n", fmt.Sprint(o.latencyN), "-tp", fmt.Sprint(o.throughputN)}
	if strings.HasPrefix(a.id, "dbos") {
		db := fmt.Sprintf("dbos_%s_%d", strings.NewReplacer("-", "_", "@", "_").Replace(x.key), r)
		if err := pg.createDB(db); err != nil {
			return Result{}, err
		}
		args = append(args, "-pg", pg.url(db), "-pgpid", fmt.Sprint(pg.pid))
	}
	if isRestate(a) {
		args = append(args, o.restate.args()...)
	}
	cmd := exec.Command(x.bin, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, os.Stderr
	t := time.Now()
	load := loadavg()
	var res Result
	if err := cmd.Run(); err != nil {
		return Result{}, err
	}
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		return Result{}, err
	}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		res.RSSMB = float64(ru.Maxrss) / 1024
	}
	res.Load = load
	fmt.Fprintf(os.Stderr, "bench: round %d %-12s p50 %6.3f ms  p99 %6.3f ms  %7.0f/s  cpu %.3f ms/action  rss %4.0f MB  (%s)\n",
		r+1, x.key, res.P50ms, res.P99ms, res.Throughput, res.CPUms, res.RSSMB, time.Since(t).Round(time.Millisecond))
	fmt.Fprint(os.Stderr, componentsLine(res.Components, res.EventsLeader))
	return res, nil
}
