package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/steward-run/steward/pkg/eventlog"
	"github.com/steward-run/steward/pkg/natsperm"
	"github.com/steward-run/steward/pkg/stores"
)

const natsStreamsUsage = `Usage:
  steward nats-streams --nats URL --replicas N [--wait DURATION]
                       [--nats-nkey FILE | --nats-creds FILE] [--nats-ca FILE] [--nats-cert FILE --nats-key FILE]

Adds to the event stream the subjects this version writes that an earlier
version's lacks (before a rolling upgrade's first plane of this version
starts: a plane may not update a stream), then raises every stream and
bucket Steward keeps to N replicas in place, on a
JetStream cluster of at least N nodes: JetStream copies each stream's
messages to its new peers while the planes keep running. It waits until
the new replicas are current (up to --wait). A stream with more than N
replicas is left as it is and said so: Steward never lowers one. Run it as
a NATS user allowed to update streams, which no plane's user is (its
nats-server config's own admin, say). Then give the planes --replicas N,
for the streams they create later. See docs/cluster.md.
`

func runNATSStreams(args []string, stdout, stderr io.Writer) error {
	var url string
	var replicas int
	var wait time.Duration
	var nf NATSFlags
	fs := flag.NewFlagSet("steward nats-streams", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, natsStreamsUsage); fs.PrintDefaults() }
	fs.StringVar(&url, "nats", "", "`URL` of the NATS JetStream cluster, e.g. nats://nats:4222 (a user and password may go in it)")
	fs.IntVar(&replicas, "replicas", 0, "`N`, the replicas every stream should have at least (1–5)")
	fs.DurationVar(&wait, "wait", 5*time.Minute, "how long to wait for the new replicas to be current (`DURATION`)")
	nf.register(fs, "`FILE` of the nkey user seed of a NATS user allowed to update streams")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return errUsage
	}
	switch {
	case fs.NArg() > 0:
		return fmt.Errorf("steward nats-streams: unexpected argument %q", fs.Arg(0))
	case url == "":
		return errors.New("--nats is required: the URL of the NATS JetStream cluster")
	case replicas < 1 || replicas > 5:
		return fmt.Errorf("--replicas: %d is not between 1 and 5", replicas)
	case wait <= 0:
		return fmt.Errorf("--wait: %s is not a positive duration", wait)
	}
	if err := nf.check(); err != nil {
		return err
	}
	opts, err := nf.options(strings.TrimSuffix(nats.InboxPrefix, "."))
	if err != nil {
		return err
	}
	nc, err := nats.Connect(url, append(opts, nats.Name("steward nats-streams"))...)
	if err != nil {
		return fmt.Errorf("--nats %s: %w", url, err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	added, err := addSubjects(ctx, js, replicas)
	if err != nil {
		return err
	}
	if len(added) > 0 {
		fmt.Fprintf(stdout, "%-26s subjects %v added, which this version writes\n", eventlog.DefaultStream, added)
	}
	raised, err := stores.Raise(ctx, js, natsperm.Streams(), replicas)
	for _, r := range raised {
		fmt.Fprintln(stdout, raisedLine(r, replicas))
	}
	return err
}

// raisedLine says what Raise did to one stream.
func raisedLine(r stores.Raised, want int) string {
	switch {
	case r.Missing:
		return fmt.Sprintf("%-26s not there: the first plane that opens it creates it, at its --replicas", r.Stream)
	case r.To > r.From:
		return fmt.Sprintf("%-26s raised from %d to %d replicas, all current", r.Stream, r.From, r.To)
	case r.From > want:
		return fmt.Sprintf("%-26s left at %d replicas, more than %d: Steward never lowers a stream's replicas", r.Stream, r.From, want)
	}
	return fmt.Sprintf("%-26s already at %d replicas", r.Stream, r.From)
}
