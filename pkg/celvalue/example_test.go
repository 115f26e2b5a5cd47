package celvalue_test

import (
	"fmt"

	"cel.dev/cel-go/cel"

	"github.com/steward-run/steward/pkg/celvalue"
)

// ExampleFromJSON: a JSON object's keys come out of map() in order, every
// time; a Go map's would not.
func ExampleFromJSON() {
	env, _ := cel.NewEnv(cel.Variable("doc", cel.DynType))
	ast, _ := env.Compile("doc.map(k, k)")
	prg, _ := env.Program(ast)
	doc := map[string]any{"zeta": 1.0, "alpha": 2.0, "mid": []any{true, nil}}
	v, _, err := prg.Eval(map[string]any{"doc": celvalue.FromJSON(doc)})
	fmt.Println(v, err)
	// Output: [alpha, mid, zeta] <nil>
}
