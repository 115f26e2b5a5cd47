package main

import (
	"strings"
	"testing"
)

// The table gives each component's median over the rounds, the planes in
// the order an action passes them and then the nodes, "–" where an arm has
// no such process, and the sum of the medians; arms without components
// have no row, and with none at all there is no table.
func TestComponentsTable(t *testing.T) {
	r1 := []Result{
		{Components: map[string]float64{"state": 1, "nats-1": 4, "control": 2}},
		{Components: map[string]float64{"state": 3, "nats-1": 6, "control": 2}},
		{Components: map[string]float64{"state": 2, "nats-1": 5, "control": 8}},
	}
	r3 := []Result{{Components: map[string]float64{"control": 1, "nats-2": 1, "nats-1": 1, "state": 1}}}
	got := componentsTable([]string{"r1", "r3", "dev"}, [][]Result{r1, r3, {{CPUms: 1}}})
	for _, want := range []string{
		"| arm | control | state | nats-1 | nats-2 | sum |",
		"| r1 | 2.000 | 2.000 | 5.000 | – | 9.000 |",
		"| r3 | 1.000 | 1.000 | 1.000 | 1.000 | 4.000 |",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("table lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "| dev |") {
		t.Errorf("an arm without components has a row:\n%s", got)
	}
	if got := componentsTable([]string{"dev"}, [][]Result{{{CPUms: 1}}}); got != "" {
		t.Errorf("no components, yet a table:\n%s", got)
	}
}
