package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/steward-run/steward/pkg/archive"
	"github.com/steward-run/steward/pkg/auditbundle"
	"github.com/steward-run/steward/pkg/gen/steward/v1/stewardv1connect"
	"github.com/steward-run/steward/pkg/natsperm"
)

const archiveUsage = `Usage:
  steward archive run --store STORE --retention AGES --nats URL --nats-nkey FILE
                      [--addr HOST:PORT] [--dry-run]
      archive every tree of ended tasks (a task, its sub-tasks and ancestors)
      of the caller's tenant that ended longer ago than its tenant's age, as
      one verified audit bundle, then purge its events from the log and its
      stored requests, results and policy inputs from their buckets
      (docs/archives.md). AGES: "720h" or
      "720h,acme=24h,beta=0" (0 keeps a tenant's for ever; "-" is the
      default tenant). The token needs the auditor role; the NATS user is
      the archiver (DATA/nats/archiver.nk in dev; steward nats-users).
  steward archive get --store STORE --task ID --out FILE
      write the archived bundle a task is in, for steward audit verify --bundle
  steward archive erase --store STORE --tenant T --reason TEXT
      erase the stored requests, results and policy inputs of every archived
      tree of tenant T ('' for the default tenant), keeping the hashes its
      chains commit to

STORE is a directory, or s3://BUCKET/PREFIX?endpoint=HOST:PORT[&insecure=true]
with $STEWARD_ARCHIVE_ACCESS_KEY and $STEWARD_ARCHIVE_SECRET_KEY. A state plane
given --archive STORE serves archived tasks (GetTask, GetReceipt, ReplayTask:
steward audit verify --task). See docs/archives.md.
`

type archiveCmd struct {
	verb, store, retention, natsURL string
	taskID, out, tenant, reason     string
	dryRun                          bool
	tenantSet                       bool // --tenant given, '' included
	nats                            NATSFlags
	remote
	stdout io.Writer
}

func runArchive(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		fmt.Fprint(stderr, archiveUsage)
		return errUsage
	}
	c := &archiveCmd{verb: args[0], stdout: stdout}
	fs := flag.NewFlagSet("steward archive "+c.verb, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, archiveUsage) }
	fs.StringVar(&c.store, "store", "", "the archive `STORE`: a directory or s3://BUCKET/PREFIX?endpoint=HOST:PORT")
	fs.StringVar(&c.retention, "retention", "", "run: how long ended tasks stay on the log, per tenant (`AGES`)")
	fs.StringVar(&c.natsURL, "nats", "", "run: `URL` of Steward's NATS JetStream")
	fs.BoolVar(&c.dryRun, "dry-run", false, "run: say what would be archived, archive and purge nothing")
	fs.StringVar(&c.taskID, "task", "", "get: task `ID`")
	fs.StringVar(&c.out, "out", "", "get: `FILE` to write the bundle to")
	fs.StringVar(&c.tenant, "tenant", "", "erase: the `TENANT` whose archived content is erased")
	fs.StringVar(&c.reason, "reason", "", "erase: why, kept in each bundle (`TEXT`)")
	c.nats.register(fs, "run: `FILE` of the archiver's nkey user seed")
	c.remote.flags(fs, "the state plane")
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return errUsage
	}
	fs.Visit(func(f *flag.Flag) { c.tenantSet = c.tenantSet || f.Name == "tenant" })
	if fs.NArg() > 0 {
		return fmt.Errorf("steward archive %s: unexpected argument %q", c.verb, fs.Arg(0))
	}
	if c.store == "" {
		return errors.New("steward archive: --store is required")
	}
	store, err := archive.Open(c.store, os.Getenv)
	if err != nil {
		return fmt.Errorf("--store: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	a := archive.New(store)
	switch c.verb {
	case "run":
		return c.run(ctx, a)
	case "get":
		return c.get(ctx, a)
	case "erase":
		return c.erase(ctx, a)
	}
	fmt.Fprint(stderr, archiveUsage)
	return fmt.Errorf("steward archive: unknown subcommand %q", c.verb)
}

// run is archive run: see archiveRun.
func (c *archiveCmd) run(ctx context.Context, a *archive.Archive) error {
	retention, err := archive.ParseRetention(c.retention)
	if c.retention == "" {
		err = errors.New("is required")
	}
	if err != nil {
		return fmt.Errorf("--retention: %w", err)
	}
	base, hc, err := c.dial()
	if err != nil {
		return err
	}
	r := &archiveRun{stdout: c.stdout, archive: a, retention: retention, now: time.Now(), limit: defaultMaxBundleMiB << 20,
		query: stewardv1connect.NewQueryServiceClient(hc, base), audit: stewardv1connect.NewAuditServiceClient(hc, base),
		gov: stewardv1connect.NewGovernanceServiceClient(hc, base), schedules: stewardv1connect.NewScheduleServiceClient(hc, base)}
	if !c.dryRun {
		nc, err := c.connect()
		if err != nil {
			return err
		}
		defer nc.Close()
		js, err := jetstream.New(nc)
		if err != nil {
			return err
		}
		r.purger = archive.NewPurger(js)
	}
	return r.run(ctx)
}

// connect dials NATS as the archiver.
func (c *archiveCmd) connect() (*nats.Conn, error) {
	if c.natsURL == "" {
		return nil, errors.New("--nats is required to purge (or give --dry-run)")
	}
	if err := c.nats.check(); err != nil {
		return nil, err
	}
	opts, err := c.nats.options(natsperm.Inbox(natsperm.Archiver))
	if err != nil {
		return nil, err
	}
	nc, err := nats.Connect(c.natsURL, append(opts, nats.Name("steward archive "+c.verb))...)
	if err != nil {
		return nil, fmt.Errorf("--nats %s: %w", c.natsURL, err)
	}
	return nc, nil
}

// get writes the bundle c.taskID is archived in to --out.
func (c *archiveCmd) get(ctx context.Context, a *archive.Archive) error {
	if c.taskID == "" || c.out == "" {
		return errors.New("steward archive get: --task and --out are required")
	}
	b, root, err := a.Bundle(ctx, c.taskID)
	if err != nil {
		return fmt.Errorf("task %s: %w", c.taskID, err)
	}
	data, err := auditbundle.Marshal(b)
	if err != nil {
		return err
	}
	if err := os.WriteFile(c.out, data, 0o600); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	fmt.Fprintf(c.stdout, "wrote the bundle of %s's tree (rooted at %s, %d tasks) to %s\n", c.taskID, root, len(b.Tasks), c.out)
	return nil
}

// erase erases tenant's archived content.
func (c *archiveCmd) erase(ctx context.Context, a *archive.Archive) error {
	if !c.tenantSet {
		// Erasure cannot be undone: a forgotten flag must not mean the
		// default tenant.
		return errors.New("steward archive erase: --tenant is required (--tenant '' for the default tenant)")
	}
	if c.reason == "" {
		return errors.New("steward archive erase: --reason is required: it is kept in every bundle erased")
	}
	reason := fmt.Sprintf("%s (erased %s)", c.reason, time.Now().UTC().Format(time.RFC3339))
	trees, pieces, err := a.EraseTenant(ctx, c.tenant, reason)
	if err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "erased %d pieces of content from %d archived trees of tenant %q\n", pieces, trees, c.tenant)
	return nil
}
