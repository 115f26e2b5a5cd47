package main

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// sortComponents sorts components' names as the tables show them: the
// planes in the order an action passes them, then the NATS nodes, then
// the rest.
func sortComponents(names []string) []string {
	slices.SortFunc(names, func(a, b string) int { return cmp.Compare(componentOrder(a), componentOrder(b)) })
	return names
}

func componentOrder(name string) string {
	for i, p := range []string{"gateway", "control", "governance", "execution", "state"} {
		if name == p {
			return fmt.Sprint(i)
		}
	}
	if strings.HasPrefix(name, "nats") {
		return "5" + name
	}
	return "9" + name
}

// componentsTable is the CPU milliseconds per action of each component
// (Result.Components), the median of the rounds, for each labelled set of
// rounds that has any; "" when none has.
func componentsTable(labels []string, runs [][]Result) string {
	var names []string
	for _, rs := range runs {
		for _, r := range rs {
			for n := range r.Components {
				if !slices.Contains(names, n) {
					names = append(names, n)
				}
			}
		}
	}
	if len(names) == 0 {
		return ""
	}
	sortComponents(names)
	var b strings.Builder
	b.WriteString("CPU ms per action of each process beside the arm's own (its planes, NATS nodes, PostgreSQL, the Restate server), over the throughput phase (16 at once), medians of the rounds; the arm's own process (the driver) is not among them:\n\n")
	fmt.Fprintf(&b, "| arm | %s | sum |\n| --- |%s ---: |\n", strings.Join(names, " | "), strings.Repeat(" ---: |", len(names)))
	for i, rs := range runs {
		if len(rs) == 0 || rs[0].Components == nil {
			continue
		}
		fmt.Fprintf(&b, "| %s |", labels[i])
		total := 0.0
		for _, n := range names {
			var xs []float64
			for _, r := range rs {
				if v, ok := r.Components[n]; ok {
					xs = append(xs, v)
				}
			}
			if len(xs) == 0 {
				b.WriteString(" – |")
				continue
			}
			total += median(xs)
			fmt.Fprintf(&b, " %.3f |", median(xs))
		}
		fmt.Fprintf(&b, " %.3f |\n", total)
	}
	return b.String()
}

// componentsLine is the line runArm prints after an arm's: each component's
// CPU ms per action, and which NATS node led the event stream.
func componentsLine(c map[string]float64, leader string) string {
	if len(c) == 0 {
		return ""
	}
	names := sortComponents(slices.Collect(maps.Keys(c)))
	var b strings.Builder
	b.WriteString("bench:   cpu ms/action by process (throughput phase):")
	for _, n := range names {
		fmt.Fprintf(&b, " %s %.3f", n, c[n])
	}
	if leader != "" {
		b.WriteString("; event stream led by " + leader)
	}
	return b.String() + "\n"
}
