package deploy_test

import (
	"fmt"
	"os"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// capacityDoc holds the sizing table the manifests' requests and limits
// come from, between sizingBegin and sizingEnd.
const (
	capacityDoc = "../docs/capacity.md"
	sizingBegin = "<!-- sizing:begin -->"
	sizingEnd   = "<!-- sizing:end -->"
)

// sizing is one row of capacity.md's sizing table.
type sizing struct {
	cpuRequest, cpuLimit, memRequest, memLimit resource.Quantity
	goMemLimit                                 string
}

// sizingTable reads capacity.md's table, by workload.
func sizingTable() (map[string]sizing, error) {
	b, err := os.ReadFile(capacityDoc)
	if err != nil {
		return nil, err
	}
	_, rest, ok := strings.Cut(string(b), sizingBegin)
	block, _, ok2 := strings.Cut(rest, sizingEnd)
	if !ok || !ok2 {
		return nil, fmt.Errorf("%s: no table between %s and %s", capacityDoc, sizingBegin, sizingEnd)
	}
	rows := map[string]sizing{}
	for line := range strings.SplitSeq(strings.TrimSpace(block), "\n") {
		cells := strings.Split(strings.Trim(strings.TrimSpace(line), "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		if len(cells) != 6 || cells[0] == "workload" || strings.HasPrefix(cells[0], "---") {
			continue
		}
		var s sizing
		for i, q := range []*resource.Quantity{&s.cpuRequest, &s.cpuLimit, &s.memRequest, &s.memLimit} {
			if *q, err = resource.ParseQuantity(cells[i+1]); err != nil {
				return nil, fmt.Errorf("%s: %s: %w", capacityDoc, cells[0], err)
			}
		}
		s.goMemLimit = cells[5]
		rows[cells[0]] = s
	}
	return rows, nil
}

// sizingFaults checks that each workload's requests, limits and
// GOMEMLIMIT are capacity.md's (the dev overlay lowers the requests, so
// there only the limits), and that the table's GOMEMLIMIT is 90 % of its
// memory limit.
func sizingFaults(overlay string, m *manifests) []string {
	table, err := sizingTable()
	if err != nil {
		return []string{err.Error()}
	}
	var faults []string
	for _, name := range append(workloads, "nats") {
		want, ok := table[name]
		if !ok {
			faults = append(faults, fmt.Sprintf("%s: not in %s's sizing table", name, capacityDoc))
			continue
		}
		if tenth := want.memLimit.Value() * 9 / 10 >> 20; want.goMemLimit != fmt.Sprintf("%dMiB", tenth) {
			faults = append(faults, fmt.Sprintf("%s: the table's GOMEMLIMIT %s, want %dMiB (90 %% of %s)", name, want.goMemLimit, tenth, want.memLimit.String()))
		}
		_, tmpl, _ := m.workload(name)
		c := tmpl.Spec.Containers[0]
		check := map[string][2]resource.Quantity{
			"cpu limit":    {c.Resources.Limits[corev1.ResourceCPU], want.cpuLimit},
			"memory limit": {c.Resources.Limits[corev1.ResourceMemory], want.memLimit},
		}
		if overlay != "dev" {
			check["cpu request"] = [2]resource.Quantity{c.Resources.Requests[corev1.ResourceCPU], want.cpuRequest}
			check["memory request"] = [2]resource.Quantity{c.Resources.Requests[corev1.ResourceMemory], want.memRequest}
		}
		for what, q := range check {
			if q[0].Cmp(q[1]) != 0 {
				faults = append(faults, fmt.Sprintf("%s: %s %s, %s says %s", name, what, q[0].String(), capacityDoc, q[1].String()))
			}
		}
		if got := envValue(c, "GOMEMLIMIT"); got != want.goMemLimit {
			faults = append(faults, fmt.Sprintf("%s: GOMEMLIMIT %q, %s says %s", name, got, capacityDoc, want.goMemLimit))
		}
	}
	return faults
}

// envValue is the literal value of the container's variable name, "" if
// it has none.
func envValue(c corev1.Container, name string) string {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}
