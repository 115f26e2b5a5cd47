package app

import (
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/steward-run/steward/pkg/secret"
)

const secretKeyUsage = `Usage:
  steward secret-key --out FILE

Writes a new random key for secret tool parameters (docs/secrets.md) to
FILE (0600), as 64 hex digits: give that one file to the control and the
execution planes as steward serve --secret-key. An existing key in FILE is
checked and kept, never replaced, so running it again (at every start, or
from two places at once) leaves every plane on the same key. See
docs/deploy.md.
`

// runSecretKey makes the key steward serve needs and never makes itself:
// the control and execution planes start apart and must share one.
func runSecretKey(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("steward secret-key", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, secretKeyUsage); fs.PrintDefaults() }
	out := fs.String("out", "", "`FILE` to write the key to (its directory is created if missing)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return errUsage
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("steward secret-key: unexpected argument %q", fs.Arg(0))
	}
	if *out == "" {
		return errors.New("--out is required: the file to write the key to")
	}
	_, created, err := secret.LoadOrCreateKey(*out)
	if err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	if created {
		fmt.Fprintf(stdout, "created %s: give it to the control and execution planes as --secret-key, and keep a copy\n", *out)
	} else {
		fmt.Fprintf(stdout, "kept the key already in %s\n", *out)
	}
	return nil
}
