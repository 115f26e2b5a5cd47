package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os/signal"
	"runtime/debug"
	"slices"
	"strings"
	"syscall"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/steward-run/steward/pkg/backup"
	"github.com/steward-run/steward/pkg/embedded"
	"github.com/steward-run/steward/pkg/eventlog"
	"github.com/steward-run/steward/pkg/natsperm"
)

const backupUsage = `Usage:
  steward backup --nats URL --out DIR
                 [--nats-nkey FILE | --nats-creds FILE] [--nats-ca FILE] [--nats-cert FILE --nats-key FILE]

Takes a snapshot of every stream and KV bucket Steward keeps, with their
consumers, into DIR (new or empty), while the planes run: the state plane's
view snapshots first, then the events, then every store written before the
events that name it, so that the backup is a consistent cut at the events
it holds (docs/backup.md). Run it as a NATS user allowed to snapshot
streams, which no plane's user is (steward dev's admin, DATA/nats/admin.nk,
with --nats-listen). The keys are not in it: keep DATA/credential.key, the
secret key and the token file where you keep secrets.
`

const restoreUsage = `Usage:
  steward restore --from DIR (--data DATA | --nats URL [--nats-nkey FILE | --nats-creds FILE] [--nats-ca FILE] ...)

Restores a backup that steward backup took into a Steward that holds none
of its streams, before any plane starts: --data restores into the data
directory a steward dev will start on (put the keys back in it first);
--nats into a NATS JetStream that steward serve planes will use. Nothing is
restored if any stream exists or any file of the backup is damaged. The
cut is recorded (bucket STEWARD_RESTORE) for the planes, which go on from
it: an action proposed before it with no outcome in the backup may have been
sent after it, so it is recorded unknown and settled by the tool's status
query or a person, never sent again blind (docs/backup.md).
`

// streamsFlags are the flags backup and restore share.
type streamsFlags struct {
	url, dir, data string
	nf             NATSFlags
}

func runBackup(args []string, stdout, stderr io.Writer) error {
	var f streamsFlags
	fs := newStreamsFlagSet("steward backup", backupUsage, stderr, &f)
	fs.StringVar(&f.dir, "out", "", "`DIR` to write the backup into: new, or empty")
	if err := parseStreamsFlags(fs, args); err != nil {
		return err
	}
	if f.dir == "" || f.url == "" {
		return usageLine(stderr, "--nats and --out are required")
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	nc, err := f.connect("steward backup")
	if err != nil {
		return err
	}
	defer nc.Close()
	streams, err := presentStreams(ctx, nc)
	if err != nil {
		return err
	}
	// The timers go without their consumers (backup.Take): one handled
	// after the events were taken fires again after a restore.
	m, err := backup.Take(ctx, nc, streams, f.dir, buildVersion(), natsperm.TimerStreams()...)
	for _, s := range m.Streams {
		fmt.Fprintf(stdout, "%-26s %8d messages up to sequence %d, %d bytes\n", s.Name, s.Messages, s.LastSeq, s.Bytes)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "backup written to %s; keep the keys (DATA/credential.key, the secret key, tokens) apart from it\n", f.dir)
	return nil
}

// presentStreams is every stream Steward keeps that the server holds, in
// the order a backup takes them. A bucket no plane has opened yet is
// empty and is left out; the events stream must be there.
func presentStreams(ctx context.Context, nc *nats.Conn) ([]string, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	var held []string
	names := js.StreamNames(ctx)
	for n := range names.Name() {
		held = append(held, n)
	}
	if err := names.Err(); err != nil {
		return nil, fmt.Errorf("list the streams: %w", err)
	}
	if !slices.Contains(held, eventlog.DefaultStream) {
		return nil, fmt.Errorf("the server holds no %s stream: is it Steward's NATS?", eventlog.DefaultStream)
	}
	return slices.DeleteFunc(backupOrder(), func(s string) bool { return !slices.Contains(held, s) }), nil
}

// backupOrder is every stream Steward keeps, in the order a backup takes
// them: the state plane's view snapshots (derived from the log, and
// checked against it), the events, then every store written before the
// events that name it (docs/backup.md).
func backupOrder() []string {
	return backup.Order(natsperm.Streams(), eventlog.DefaultStream, "KV_"+natsperm.StateViewsBucket)
}

func runRestore(args []string, stdout, stderr io.Writer) error {
	var f streamsFlags
	fs := newStreamsFlagSet("steward restore", restoreUsage, stderr, &f)
	fs.StringVar(&f.dir, "from", "", "`DIR` of the backup")
	fs.StringVar(&f.data, "data", "", "the `DIR` steward dev will start on, to restore into (instead of --nats)")
	if err := parseStreamsFlags(fs, args); err != nil {
		return err
	}
	switch {
	case f.dir == "":
		return usageLine(stderr, "--from is required: the backup's directory")
	case (f.url == "") == (f.data == ""):
		return usageLine(stderr, "give one of --data and --nats: where to restore into")
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	var nc *nats.Conn
	var err error
	if f.data != "" {
		// A server of its own on the data directory, listening nowhere,
		// for as long as the restore takes.
		srv, serr := embedded.Start(embedded.Config{StoreDir: f.data})
		if serr != nil {
			return fmt.Errorf("--data: %w", serr)
		}
		defer srv.Shutdown()
		nc, err = srv.Connect(nats.Name("steward restore"))
	} else {
		nc, err = f.connect("steward restore")
	}
	if err != nil {
		return err
	}
	defer nc.Close()
	m, err := backup.Restore(ctx, nc, f.dir, eventlog.DefaultStream)
	if err != nil {
		return err
	}
	for _, s := range m.Streams {
		fmt.Fprintf(stdout, "%-26s %8d messages up to sequence %d restored\n", s.Name, s.Messages, s.LastSeq)
	}
	fmt.Fprintf(stdout, "restored the backup taken at %s; start the planes on it\n", m.TakenAt.Format("2006-01-02T15:04:05Z"))
	if js, err := jetstream.New(nc); err == nil {
		if cut, err := backup.ReadCut(ctx, js); err == nil && cut != nil {
			fmt.Fprintf(stdout, "the cut is event %d (%s): an action proposed before it with no outcome is settled, not sent again blind\n",
				cut.Sequence, cut.Time.Format("2006-01-02T15:04:05Z"))
		}
	}
	return nil
}

// newStreamsFlagSet is the flag set backup and restore share.
func newStreamsFlagSet(name, usage string, stderr io.Writer, f *streamsFlags) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, usage); fs.PrintDefaults() }
	fs.StringVar(&f.url, "nats", "", "`URL` of Steward's NATS JetStream, e.g. nats://127.0.0.1:4222")
	f.nf.register(fs, "`FILE` of the nkey user seed of a NATS user allowed to snapshot and restore streams (steward dev's DATA/nats/admin.nk)")
	return fs
}

// parseStreamsFlags parses args and refuses arguments left over.
func parseStreamsFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return errUsage
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%s: unexpected argument %q", fs.Name(), fs.Arg(0))
	}
	return nil
}

// usageLine says what was wrong with the flags, as the flag package does.
func usageLine(stderr io.Writer, msg string) error {
	fmt.Fprintln(stderr, msg)
	return errUsage
}

// connect dials the NATS the flags name.
func (f streamsFlags) connect(name string) (*nats.Conn, error) {
	if err := f.nf.check(); err != nil {
		return nil, err
	}
	opts, err := f.nf.options(strings.TrimSuffix(nats.InboxPrefix, "."))
	if err != nil {
		return nil, err
	}
	nc, err := nats.Connect(f.url, append(opts, nats.Name(name))...)
	if err != nil {
		return nil, fmt.Errorf("--nats %s: %w", f.url, err)
	}
	return nc, nil
}

// buildVersion is the version steward version prints.
func buildVersion() string {
	info, ok := debug.ReadBuildInfo()
	return readBuildInfo(stamp, info, ok).Version
}
