package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// build is a bench binary of one commit: -base builds the base's from a
// temporary git worktree, so that each arm runs the code of its commit.
type build struct {
	label, bin string
}

// buildBase builds bench/cmd/bench at rev in a temporary git worktree of
// this repository; cleanup removes the worktree and the binary.
func buildBase(rev string) (b build, cleanup func(), err error) {
	short, err := git("rev-parse", "--short=7", rev+"^{commit}")
	if err != nil {
		return build{}, nil, err
	}
	tmp, err := os.MkdirTemp("", "bench-base-")
	if err != nil {
		return build{}, nil, err
	}
	src := filepath.Join(tmp, "src")
	cleanup = func() {
		_, _ = git("worktree", "remove", "--force", src)
		os.RemoveAll(tmp)
	}
	if _, err := git("worktree", "add", "--detach", src, short); err != nil {
		cleanup()
		return build{}, nil, err
	}
	b = build{label: short, bin: filepath.Join(tmp, "bench")}
	cmd := exec.Command("go", "build", "-o", b.bin, "./cmd/bench")
	cmd.Dir = filepath.Join(src, "bench")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		cleanup()
		return build{}, nil, fmt.Errorf("build the bench of %s: %w", short, err)
	}
	fmt.Fprintf(os.Stderr, "bench: built the base %s\n", short)
	return b, cleanup, nil
}

func git(args ...string) (string, error) {
	out, err := exec.Command("git", args...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out)), nil
}

// run is one arm of one build: this binary's (key the arm's id) or the
// base's (key id@label).
type run struct {
	a        arm
	bin, key string
}

// order is round r's runs: the arms rotated by r, as without a base; with
// one, each arm's two builds back to back, the base first in odd rounds,
// so that neither always runs after the other.
func order(selected []arm, r int, self string, base *build) []run {
	arms := slices.Clone(selected)
	for range r % len(arms) {
		arms = append(arms[1:], arms[0])
	}
	var out []run
	for _, a := range arms {
		head := run{a: a, bin: self, key: a.id}
		if base == nil {
			out = append(out, head)
			continue
		}
		other := run{a: a, bin: base.bin, key: a.id + "@" + base.label}
		if r%2 == 1 {
			head, other = other, head
		}
		out = append(out, head, other)
	}
	return out
}

// comparison is -base's report: per arm, this build's medians beside the
// base's and the median of the per-round ratios (this build over the
// base), each round's pair having run back to back.
func comparison(selected []arm, all map[string][]Result, base build) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# This build against %s\n\n", base.label)
	b.WriteString("Medians of the rounds; the ratios are medians of each round's ratio, this build over the base (below 1× is faster for latency and CPU, slower for throughput).\n\n")
	b.WriteString("| arm | p50 ms | base p50 ms | p50 | p99 | 16 at once | CPU per action | rounds |\n")
	b.WriteString("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	for _, a := range selected {
		head, old := all[a.id], all[a.id+"@"+base.label]
		n := min(len(head), len(old))
		paired := func(f func(Result) float64) string {
			var rs []float64
			for i := range n {
				if v := f(old[i]); v != 0 {
					rs = append(rs, f(head[i])/v)
				}
			}
			if len(rs) == 0 {
				return "–"
			}
			return fmt.Sprintf("%.3f×", median(rs))
		}
		med := func(rs []Result) float64 {
			var xs []float64
			for _, r := range rs {
				xs = append(xs, p50(r))
			}
			return median(xs)
		}
		fmt.Fprintf(&b, "| %s | %.2f | %.2f | %s | %s | %s | %s | %d |\n",
			a.name, med(head), med(old), paired(p50), paired(p99), paired(tput), paired(cpu), n)
	}
	var labels []string
	var runs [][]Result
	for _, a := range selected {
		labels = append(labels, a.id, a.id+"@"+base.label)
		runs = append(runs, all[a.id], all[a.id+"@"+base.label])
	}
	if t := componentsTable(labels, runs); t != "" {
		b.WriteString("\n" + t)
	}
	return b.String()
}
