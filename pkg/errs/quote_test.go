package errs_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/steward-run/steward/pkg/errs"
)

func TestQuote(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"short", "abc", `"abc"`},
		{"at the limit", strings.Repeat("a", errs.MaxEcho), `"` + strings.Repeat("a", errs.MaxEcho) + `"`},
		{"past the limit", strings.Repeat("a", 1<<20), `"` + strings.Repeat("a", errs.MaxEcho) + `"…`},
		{"cut inside a rune", strings.Repeat("a", errs.MaxEcho-1) + "é", `"` + strings.Repeat("a", errs.MaxEcho-1) + `"…`},
		{"control characters", "a\x1bcb", `"a\x1bcb"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := errs.Quote(tt.in); got != tt.want {
				t.Errorf("Quote = %s, want %s", got, tt.want)
			}
		})
	}
}

func ExampleQuote() {
	fmt.Println(errs.Field("task_id", "%s is not a task id", errs.Quote(strings.Repeat("x", 100))))
	// Output: task_id: "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"… is not a task id
}
