package natsperm_test

import (
	"fmt"
	"strings"

	"github.com/steward-run/steward/pkg/natsperm"
)

// Only governance may publish a permit; execution, which runs it, may not.
func ExampleFor() {
	permit := "steward.task.*.action.permitted"
	for _, plane := range natsperm.Planes() {
		allowed := false
		for _, s := range natsperm.For(plane).Publish.Allow {
			allowed = allowed || s == permit
		}
		fmt.Printf("%s publishes permits: %v\n", plane, allowed)
	}
	fmt.Println("replies for governance arrive under", natsperm.Inbox("governance"))
	fmt.Println("refused to all:", strings.Join(natsperm.RefusedAPI()[:2], ", "), "…")
	// Output:
	// control publishes permits: false
	// governance publishes permits: true
	// execution publishes permits: false
	// state publishes permits: false
	// replies for governance arrive under _INBOX_governance
	// refused to all: $JS.API.STREAM.PURGE.>, $JS.API.STREAM.DELETE.> …
}
