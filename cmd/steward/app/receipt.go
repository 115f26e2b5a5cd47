package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/steward-run/steward/pkg/eventlog"
	"github.com/steward-run/steward/sdk/go/steward"
)

const receiptUsage = `Usage:
  steward receipt --task ID [--format markdown|json] [--addr HOST:PORT] [--token TOKEN] [--ca FILE]

Prints the task's receipt: what happened to it, from its recorded events
alone. markdown (the default) is for people; json is the Receipt message as
protojson, for machines. Both name the last event they cover: compare its
hash with the head hash that 'steward audit verify --task ID' prints.
`

func runReceipt(args []string, stdout, stderr io.Writer) error {
	var taskID, format string
	var r remote
	fs := flag.NewFlagSet("steward receipt", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, receiptUsage) }
	fs.StringVar(&taskID, "task", "", "task `ID`")
	fs.StringVar(&format, "format", "markdown", "markdown or json")
	r.flags(fs, "the state plane")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return errUsage
	}
	bad := func(format string, args ...any) error {
		fmt.Fprintf(stderr, "steward receipt: "+format+"\n\n%s", append(args, receiptUsage)...)
		return errUsage
	}
	switch {
	case fs.NArg() > 0:
		return bad("unexpected argument %q", fs.Arg(0))
	case taskID == "":
		return bad("--task is required")
	case !eventlog.ValidTaskID(taskID):
		return bad("--task: %q is not a task id (1–64 letters, digits, '-' or '_')", taskID)
	case format != "markdown" && format != "json":
		return bad("--format must be markdown or json, not %q", format)
	}
	base, hc, err := r.dial()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	resp, err := steward.New(base, steward.WithHTTPClient(hc)).GetReceipt(ctx, taskID)
	if err != nil {
		return fmt.Errorf("receipt %s from %s: %w", taskID, base, err)
	}
	if format == "markdown" {
		_, err = io.WriteString(stdout, resp.Markdown)
		return err
	}
	// Every field, set or not, so that a machine sees the whole shape:
	// an empty list of artifacts says "none recorded", not "left out".
	out, err := protojson.MarshalOptions{Multiline: true, Indent: "  ", EmitUnpopulated: true}.Marshal(resp.Receipt)
	if err != nil {
		return fmt.Errorf("receipt %s: encode JSON: %w", taskID, err)
	}
	_, err = fmt.Fprintf(stdout, "%s\n", out)
	return err
}
