package app

import (
	"flag"
	"fmt"
)

// SyncFlag is --sync, dev's durability setting: when the embedded
// JetStream has written an append to disk before it acknowledges it.
// "interval", the default, acknowledges once the append is in the
// operating system's page cache and syncs every two minutes, as JetStream
// does: an acknowledged append survives a crash of the process, not a
// power loss. "always" syncs every write before acknowledging it, as
// PostgreSQL's default commit does, at the cost of a disk flush per
// append (docs/storage.md#durability).
type SyncFlag struct{ always bool }

func (f *SyncFlag) register(fs *flag.FlagSet) {
	fs.Func("sync", "`WHEN` the embedded JetStream syncs an append to disk: interval (the default: acknowledged from the page cache, synced every 2 min; survives a crash of the process, not a power loss) or always (synced before it is acknowledged; a disk flush per append) (docs/storage.md)", func(s string) error {
		switch s {
		case "interval":
			f.always = false
		case "always":
			f.always = true
		default:
			return fmt.Errorf("%q is not interval or always", s)
		}
		return nil
	})
}

// Always reports whether --sync=always.
func (f SyncFlag) Always() bool { return f.always }
