package app

import (
	"flag"
	"fmt"
)

// ContentKeysFlag is --content-keys: the key form of the content the
// planes store (requests, results, artifacts, policy inputs). "task", the
// default, keys it by its task, so that archiving a task purges it;
// "shared" keys it by its hash alone, as builds before per-task keys did
// and still read, for a rolling upgrade from one (docs/compatibility.md).
type ContentKeysFlag struct{ form string }

func (f *ContentKeysFlag) register(fs *flag.FlagSet) {
	fs.Func("content-keys", "`FORM` of the keys new stored content (requests, results, artifacts, policy inputs) is written under: task (the default; archiving a task purges its content) or shared (the hash alone, which builds before per-task keys read; archives leave it): use shared while rolling from such a build, then restart without it (docs/compatibility.md)", func(s string) error {
		if s != "task" && s != "shared" {
			return fmt.Errorf("%q is not task or shared", s)
		}
		f.form = s
		return nil
	})
}

// Shared reports whether --content-keys=shared.
func (f ContentKeysFlag) Shared() bool { return f.form == "shared" }
