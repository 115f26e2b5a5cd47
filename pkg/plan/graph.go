package plan

import (
	"fmt"
	"strings"

	"cel.dev/cel-go/cel"

	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// graph is a plan's dependency DAG by step index, once its ids and edges
// have been checked.
type graph struct {
	ids   []string
	index map[string]int
	deps  [][]int // deps[i]: the steps i depends on, as listed
	// reads[i]: the ids of the steps i depends on directly or through
	// others, sorted: the steps its expressions may read.
	reads [][]string
}

// newGraph checks p's ids and dependencies — unique well-formed ids, known
// dependencies, the fan-out limit, no cycle, the depth limit — and returns
// its graph.
func newGraph(p *stewardv1.Plan, l Limits) (*graph, error) {
	n := len(p.Steps)
	g := &graph{ids: make([]string, n), index: make(map[string]int, n), deps: make([][]int, n)}
	for i, s := range p.Steps {
		field := fmt.Sprintf("plan.steps[%d].id", i)
		if err := checkID(field, s.GetId()); err != nil {
			return nil, err
		}
		if j, ok := g.index[s.Id]; ok {
			return nil, errs.Field(field, "%s appears twice (also plan.steps[%d].id)", errs.Quote(s.Id), j)
		}
		g.ids[i], g.index[s.Id] = s.Id, i
	}
	dependents := make([]int, n)
	for i, s := range p.Steps {
		seen := map[string]bool{}
		for k, d := range s.DependsOn {
			field := fmt.Sprintf("plan.steps[%d].depends_on[%d]", i, k)
			j, ok := g.index[d]
			switch {
			case d == "":
				return nil, errs.Field(field, "is empty")
			case !ok:
				return nil, errs.Field(field, "%s is not a step of the plan", errs.Quote(d))
			case j == i:
				return nil, errs.Field(field, "step %s depends on itself", s.Id)
			case seen[d]:
				return nil, errs.Field(field, "%s is listed twice", d)
			}
			seen[d] = true
			if dependents[j]++; dependents[j] > l.MaxFanOut {
				return nil, errs.Field(field, "step %s would have more than %d steps depending on it; the limit is %d", d, l.MaxFanOut, l.MaxFanOut)
			}
			g.deps[i] = append(g.deps[i], j)
		}
	}
	if err := g.acyclic(); err != nil {
		return nil, err
	}
	return g, g.measure(l)
}

// acyclic refuses a cycle, naming its steps, at the dependency that closes
// it. Depth-first in plan order, so the same plan names the same cycle.
func (g *graph) acyclic() error {
	const (
		unseen = iota
		open
		done
	)
	state := make([]int, len(g.ids))
	var path []int // the open steps, outermost first
	var visit func(i int) error
	visit = func(i int) error {
		state[i] = open
		path = append(path, i)
		for k, j := range g.deps[i] {
			switch state[j] {
			case open:
				start := 0
				for path[start] != j {
					start++
				}
				names := make([]string, 0, len(path)-start+1)
				for _, s := range path[start:] {
					names = append(names, g.ids[s])
				}
				names = append(names, g.ids[j])
				return errs.Field(fmt.Sprintf("plan.steps[%d].depends_on[%d]", i, k),
					"makes a cycle: %s (each depends on the next)", strings.Join(names, " → "))
			case unseen:
				if err := visit(j); err != nil {
					return err
				}
			}
		}
		path = path[:len(path)-1]
		state[i] = done
		return nil
	}
	for i := range g.ids {
		if state[i] == unseen {
			if err := visit(i); err != nil {
				return err
			}
		}
	}
	return nil
}

// measure refuses a chain of dependencies past the depth limit and
// gathers each step's reads. The graph is acyclic.
func (g *graph) measure(l Limits) error {
	n := len(g.ids)
	depth := make([]int, n)
	reads := make([]map[string]bool, n)
	var walk func(i int) (int, map[string]bool)
	walk = func(i int) (int, map[string]bool) {
		if reads[i] != nil {
			return depth[i], reads[i]
		}
		d, r := 1, map[string]bool{}
		for _, j := range g.deps[i] {
			dj, rj := walk(j)
			d = max(d, dj+1)
			r[g.ids[j]] = true
			for id := range rj {
				r[id] = true
			}
		}
		depth[i], reads[i] = d, r
		return d, r
	}
	g.reads = make([][]string, n)
	for i := range g.ids {
		if d, _ := walk(i); d > l.MaxDepth {
			return errs.Field(fmt.Sprintf("plan.steps[%d].depends_on", i), "puts step %s at the end of a chain of %d steps; the limit is %d", g.ids[i], d, l.MaxDepth)
		}
		g.reads[i] = sorted(reads[i])
	}
	return nil
}

// scope is what step i's expressions may read.
func (g *graph) scope(i int) scope {
	return scope{steps: g.reads[i], envs: map[[2]bool]*cel.Env{}}
}
