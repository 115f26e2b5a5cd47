package main

import (
	"fmt"
	"image/color"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

type report struct {
	rounds    int
	o         opts
	results   map[string][]Result
	arms      []arm
	took      time.Duration
	when      time.Time
	pgVersion string
	commit    string
	cpu       string
}

func (r *report) environment() {
	if out, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output(); err == nil {
		r.commit = strings.TrimSpace(string(out))
		if out, _ := exec.Command("git", "status", "--porcelain", "--untracked-files=no").Output(); len(out) > 0 {
			r.commit += " (with uncommitted changes)"
		}
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				r.cpu = strings.TrimSpace(v)
				break
			}
		}
	}
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// med is the median over rounds of one metric of one arm.
func (r *report) med(id string, f func(Result) float64) float64 {
	var xs []float64
	for _, res := range r.results[id] {
		xs = append(xs, f(res))
	}
	return median(xs)
}

func p50(x Result) float64  { return x.P50ms }
func p99(x Result) float64  { return x.P99ms }
func tput(x Result) float64 { return x.Throughput }
func cpu(x Result) float64  { return x.CPUms }
func rss(x Result) float64  { return x.RSSMB }
func pss(x Result) float64  { return x.ServerMB }

func ratio(a, b float64) string {
	if a == 0 || b == 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f×", a/b)
}

// table is the summary table, medians of the rounds.
func (r *report) table() string {
	var b strings.Builder
	b.WriteString("| arm | p50 ms | p99 ms | 16 at once /s | CPU ms per action | peak RSS MB | durability | p50 vs (a) | p50 vs (e1) | p50 vs (e2) | throughput vs (a) | throughput vs (e1) | throughput vs (e2) | CPU vs (a) |\n")
	b.WriteString("| --- | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	for _, a := range r.arms {
		id := a.id
		mem := fmt.Sprintf("%.0f", r.med(id, rss))
		if v := r.med(id, pss); v > 0 {
			server := "PostgreSQL"
			if isRestate(a) {
				server = "Restate"
			}
			mem += fmt.Sprintf(" + %s %.0f (PSS)", server, v)
		}
		fmt.Fprintf(&b, "| %s | %.2f | %.2f | %.0f | %.3f | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
			a.name, r.med(id, p50), r.med(id, p99), r.med(id, tput), r.med(id, cpu), mem, a.durability,
			ratio(r.med(id, p50), r.med("floor", p50)), ratio(r.med(id, p50), r.med("dbos-wf1", p50)), ratio(r.med(id, p50), r.med("dbos-step10", p50)),
			ratio(r.med(id, tput), r.med("floor", tput)), ratio(r.med(id, tput), r.med("dbos-wf1", tput)), ratio(r.med(id, tput), r.med("dbos-step10", tput)),
			ratio(r.med(id, cpu), r.med("floor", cpu)))
	}
	return b.String()
}

func (r *report) command() string {
	return fmt.Sprintf("cd bench && go run ./cmd/bench -rounds %d -n %d -tp %d", r.rounds, r.o.latencyN, r.o.throughputN)
}

func (r *report) markdown() string {
	var b strings.Builder
	b.WriteString("# Governed action side by side\n\n")
	b.WriteString("Written by `bench/cmd/bench`; do not edit by hand. Rerun with `" + r.command() + "`.\n\n")
	fmt.Fprintf(&b, "Run %s at commit %s, %s, %d CPUs (%s), %s; PostgreSQL: %s. %d interleaved rounds (each round runs every arm once, the order rotated by one each round), each arm in a fresh child process; the table gives the median of the rounds. Whole run: %s.\n\n",
		r.when.Format("2006-01-02 15:04 UTC"), r.commit, runtime.Version(), runtime.NumCPU(), r.cpu, runtime.GOOS+"/"+runtime.GOARCH, orNone(r.pgVersion), r.rounds, r.took.Round(time.Second))
	b.WriteString(r.table())
	b.WriteString("\n![p50, p99 and throughput per arm](results.png)\n\n")
	fmt.Fprintf(&b, `What is measured, per arm and round, after %d unmeasured warm-up actions: %d actions one after another (p50, p99), then %d actions with 16 in flight at once (throughput).
CPU per action is the arm's process's user and system CPU time (getrusage) over both phases divided by the actions done; for
the DBOS arms it adds the CPU time of PostgreSQL's postmaster and backends, for the Restate arms that of the Restate server, for (f) and (g) that of every plane's and NATS
node's process, read from /proc (each one's alone, over the throughput phase, in the table at the end). Peak RSS is the child process's
maximum resident set (the whole arm: for Steward the NATS server and all planes, for DBOS the Go client, for Restate the Go service; PostgreSQL's
or the Restate server's proportional set size at the end of the arm is given beside it).

- (a) the floor: an embedded NATS server (in-process, file store, as `+"`steward dev`"+` uses), one stream, four durable
  consumers; the client publishes, consumer k receives hop k-1 and publishes hop k, the action is done when the fifth publish
  is acknowledged. Five appends, four hops, no Steward logic. Each message is handled on its own goroutine.
- (b) `+"`steward dev`"+` in the arm's process (cmd/steward/app), driven over Connect on loopback: the built-in `+"`noop`"+`
  tool, an allow-all Rego policy, task credentials as always (issued and signed by
  governance, their signatures verified by governance at evaluation, their expiry and revocation checked by execution before
  dispatch). Latency is from
  the `+"`ProposeAction`"+` call until `+"`GetAction`"+` with `+"`wait`"+` answers that the action succeeded; a task
  takes %d actions, then the next is created, and task creation counts in throughput and CPU, not in the latency samples.
- (c) as (b) with the built-in default policy bundle.
- (d) as (b) in services mode: four `+"`steward serve --plane=...`"+` servers (in the arm's process, each with its own
  NATS connection) on an embedded NATS server reached over TCP on loopback; writes go to the control plane, reads to the
  state plane.
- (f) as (d), but each plane and each of three NATS nodes is a process of its own (this binary again, as `+"`steward`"+` or as a
  node): a JetStream cluster routed on loopback, each node with its own store, the planes started with `+"`--replicas 3`"+`
  and spread over the nodes (state and control on the first, governance on the second, execution on the third). Peak RSS
  is the largest of the arm's processes', not their sum.
- (g) as (f) with one NATS node, not clustered, and `+"`--replicas 1`"+`: (d)'s work, each component's CPU apart.
- (e1) DBOS Transact Go (github.com/dbos-inc/dbos-transact-golang v1.8.0) on a throwaway PostgreSQL cluster on loopback
  (fsync=on, synchronous_commit=on): `+"`RunWorkflow`"+` of a one-step workflow until `+"`GetResult`"+` returns.
- (e2) the same, one step of a ten-step workflow: latency from one step's end to the next's (steps 2–10, inside the
  workflow); throughput and CPU count ten steps per workflow, its start and end included.
- (b3) as (b) with one call per action, `+"`ProposeAction`"+` with `+"`wait`"+` (the SDKs' `+"`ProposeAndWait`"+`, arm (b1)), and
  `+"`steward dev --sync always`"+`: every append synced to disk before it is acknowledged. (e1a) and (e2a) are (e1) and (e2)
  with synchronous_commit=off on their database.
- (r1) Restate: the Restate server %s (npm's @restatedev/restate-server, one node, its default configuration, telemetry
  off) on loopback, a service of the Restate Go SDK (github.com/restatedev/sdk-go v1.2.0) in the arm's process over HTTP/2
  cleartext, registered with the admin API; a handler of one `+"`restate.Run`"+` step called through the ingress, request and
  response (HTTP/1.1), latency until the response is back.
- (r2) the same, one step of a ten-step handler, measured as (e2).
%s

Durability differs between the arms and the ratios should be read with it: see Equal durability at the end. Restate's
log-server syncs its RocksDB WAL at every write batch before it acknowledges the appends in it (its partition store is
rebuilt from that log), as PostgreSQL at synchronous_commit=on flushes its WAL at every commit.

The machine is shared: other work runs on its two cores while the arms run (the load averages below), which lowers
throughput and stretches p99 for every arm; the rounds are interleaved so that this hits all arms alike, and the ratios
are steadier than the absolute figures.

Per round:

| round | arm | p50 ms | p99 ms | /s | CPU ms | RSS MB | load average at start |
| ---: | --- | ---: | ---: | ---: | ---: | ---: | --- |
`, warmup, r.o.latencyN, r.o.throughputN, actionsPerTask, restateVersion, partsArms)
	for i := range r.rounds {
		for _, a := range r.arms {
			if res := r.results[a.id]; i < len(res) {
				x := res[i]
				fmt.Fprintf(&b, "| %d | %s | %.2f | %.2f | %.0f | %.3f | %.0f | %s |\n", i+1, a.id, x.P50ms, x.P99ms, x.Throughput, x.CPUms, x.RSSMB, x.Load)
			}
		}
	}
	var labels []string
	var runs [][]Result
	for _, a := range r.arms {
		labels, runs = append(labels, a.name), append(runs, r.results[a.id])
	}
	if t := componentsTable(labels, runs); t != "" {
		b.WriteString("\n" + t)
	}
	b.WriteString("\n" + r.durabilitySection())
	return b.String()
}

// partsArms describes arms (p1)–(p3) (parts.go) in results.md.
const partsArms = `- (p1)–(p3) parts of a (b1) action under Steward's design as it stands, each alone with no Steward logic around it:
  (p1) its Connect call (` + "`ProposeAction`" + ` with wait, HTTP/1.1 on loopback, a bearer token), answered at once with an
  action of (b1)'s answer's size; (p2) the JetStream messages the design needs, on (a)'s server: five appends (four
  events, conditional and carrying their ids, and the policy input), the delivery and acknowledgement of each event a
  plane reacts to by deciding what comes next (three), and the four events to the projection's follower: 20 messages,
  where (a) sends 18 and (b1) about 29; (p3) the allow-all policy evaluated by OPA and the permit's Ed25519 signature.
  (p2) does (a)'s kind of work, so the parts' sum stands in for (a), not beside it; it leaves out more that (b1) must do
  (hashing the action, the policy input, authentication, task creation) and so errs low.`

func orNone(s string) string {
	if s == "" {
		return "not used"
	}
	return s
}

// chart draws p50 and p99 latency and throughput per arm, side by side.
func (r *report) chart(path string) error {
	labels := make([]string, len(r.arms))
	var vp50, vp99, vtp plotter.Values
	for i, a := range r.arms {
		labels[i] = a.id
		vp50 = append(vp50, r.med(a.id, p50))
		vp99 = append(vp99, r.med(a.id, p99))
		vtp = append(vtp, r.med(a.id, tput))
	}
	w := vg.Points(14)

	lat := plot.New()
	lat.Title.Text = "latency per action (ms), median of rounds"
	b50, err := plotter.NewBarChart(vp50, w)
	if err != nil {
		return err
	}
	b50.Color, b50.Offset = plotter.DefaultLineStyle.Color, -w/2
	b99, err := plotter.NewBarChart(vp99, w)
	if err != nil {
		return err
	}
	b99.Color, b99.Offset = plotColor(0x80, 0x80, 0x80), w/2
	lat.Add(b50, b99)
	if err := addLabels(lat, vp50, -w/2, "%.2f"); err != nil {
		return err
	}
	if err := addLabels(lat, vp99, w/2, "%.1f"); err != nil {
		return err
	}
	lat.Legend.Add("p50", b50)
	lat.Legend.Add("p99", b99)
	lat.Legend.Top, lat.Legend.Left = true, true
	lat.Legend.XOffs = vg.Points(30)
	lat.Y.Max *= 1.1 // room for the labels
	lat.NominalX(labels...)

	tp := plot.New()
	tp.Title.Text = "throughput, 16 at once (actions or steps/s)"
	bt, err := plotter.NewBarChart(vtp, w)
	if err != nil {
		return err
	}
	bt.Color = plotColor(0x30, 0x60, 0xa0)
	tp.Add(bt)
	if err := addLabels(tp, vtp, 0, "%.0f"); err != nil {
		return err
	}
	tp.NominalX(labels...)
	tp.Y.Max *= 1.1

	img := vgimg.New(vg.Points(1000), vg.Points(380))
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: 1, Cols: 2, PadX: vg.Points(20), PadTop: vg.Points(10), PadBottom: vg.Points(10), PadLeft: vg.Points(10), PadRight: vg.Points(10)}
	canvases := plot.Align([][]*plot.Plot{{lat, tp}}, tiles, dc)
	lat.Draw(canvases[0][0])
	tp.Draw(canvases[0][1])
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = vgimg.PngCanvas{Canvas: img}.WriteTo(f)
	return err
}

const (
	docBegin = "<!-- bench:begin (written by bench/cmd/bench; do not edit by hand) -->"
	docEnd   = "<!-- bench:end -->"
)

// rewriteDoc replaces the marked block of the Markdown file at path with
// the summary table.
func (r *report) rewriteDoc(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	s := string(b)
	i, j := strings.Index(s, docBegin), strings.Index(s, docEnd)
	if i < 0 || j < i {
		return fmt.Errorf("%s: no block between %q and %q", path, docBegin, docEnd)
	}
	var blk strings.Builder
	blk.WriteString(docBegin + "\n")
	fmt.Fprintf(&blk, "`%s` (%d interleaved rounds in one run, medians; %s, commit %s; details and each round: [bench/results.md](../bench/results.md)):\n\n",
		r.command(), r.rounds, r.when.Format("2006-01-02"), r.commit)
	blk.WriteString(r.table())
	if t := r.equalDurability(); t != "" {
		blk.WriteString("\nAt equal durability, Steward's medians over DBOS's (what each setting promises: [bench/results.md](../bench/results.md#equal-durability), [storage.md](storage.md#durability)):\n\n" + t)
	}
	blk.WriteString("\n![p50, p99 and throughput per arm](../bench/results.png)\n")
	s = s[:i] + blk.String() + s[j:]
	return os.WriteFile(path, []byte(s), 0o644)
}

func plotColor(r, g, b uint8) color.Color { return color.RGBA{R: r, G: g, B: b, A: 0xff} }

// addLabels writes each bar's value above it.
func addLabels(p *plot.Plot, vs plotter.Values, offset vg.Length, format string) error {
	xy := plotter.XYLabels{}
	for i, v := range vs {
		xy.XYs = append(xy.XYs, plotter.XY{X: float64(i), Y: v})
		xy.Labels = append(xy.Labels, fmt.Sprintf(format, v))
	}
	l, err := plotter.NewLabels(xy)
	if err != nil {
		return err
	}
	for i := range l.TextStyle {
		l.TextStyle[i].XAlign = draw.XCenter
		l.Offset = vg.Point{X: offset, Y: vg.Points(2)}
	}
	p.Add(l)
	return nil
}
