package app

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"

	"github.com/steward-run/steward/pkg/natsperm"
	"github.com/steward-run/steward/pkg/natsusers"
)

const natsUsersUsage = `Usage:
  steward nats-users --out DIR

Writes the NATS users of a services deployment, one per plane:
  DIR/<plane>/nats.nk   the plane's nkey seed (0600): give it to that plane
                        alone, as steward serve --nats-nkey
  DIR/nats/users.conf   the nats-server authorization block: each plane's
                        public key and what it may publish and subscribe to
Seeds already in DIR are kept, so running it again (after an upgrade, or at
every start) renders the permissions anew for the same users. See
docs/deploy.md.
`

func runNATSUsers(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("steward nats-users", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, natsUsersUsage); fs.PrintDefaults() }
	out := fs.String("out", "", "`DIR` to write the seeds and users.conf to (created if missing)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return errUsage
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("steward nats-users: unexpected argument %q", fs.Arg(0))
	}
	if *out == "" {
		return errors.New("--out is required: the directory to write the seeds and users.conf to")
	}
	users, err := natsusers.Write(*out, natsperm.Users(), natsperm.For)
	if err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	for _, u := range users {
		fmt.Fprintf(stdout, "%-10s user %s, seed %s\n", u.Plane, u.NKey, filepath.Join(*out, u.Plane, natsusers.SeedFile))
	}
	fmt.Fprintf(stdout, "nats-server: run with -c %s, or include it from your config\n", filepath.Join(*out, natsusers.ConfigDir, natsusers.ConfigFile))
	return nil
}
