// Command steward is Steward's one binary: `steward dev` runs everything in
// one process with an embedded NATS JetStream server, `steward serve` runs
// one plane against an external NATS, and `steward audit` replays and
// verifies task histories. See `steward help`.
package main

import (
	"os"
	// Schedules name IANA time zones (docs/schedules.md): the zone
	// database goes in the binary, so a host or image without one
	// (distroless, scratch) reads them the same.
	_ "time/tzdata"

	"github.com/steward-run/steward/cmd/steward/app"
)

func main() {
	os.Exit(app.Main(os.Args[1:], os.Stdout, os.Stderr))
}
