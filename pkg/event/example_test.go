package event_test

import (
	"fmt"

	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// Seal two events into a chain and verify it, as an auditor would.
func ExampleChain() {
	var stored [][]byte
	var prev []byte
	for _, p := range []event.Payload{&stewardv1.TaskCreated{}, &stewardv1.TaskCancelled{Reason: "done"}} {
		ev, _ := event.New(event.Meta{TaskID: "t1"}, p)
		data, _ := event.Seal(ev, prev)
		prev = ev.Hash
		stored = append(stored, data)
	}
	stored[1][5] ^= 1 // tamper with the second event

	var c event.Chain
	for _, data := range stored {
		if _, err := c.Next(data); err != nil {
			fmt.Println(err.(*event.BreakError).Index, "breaks the chain")
			return
		}
	}
	// Output: 1 breaks the chain
}
