package app

import (
	"context"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/gen/steward/v1/stewardv1connect"
)

const receiptUsage = `Usage:
  steward receipt --task ID [--format markdown|json] [--addr HOST:PORT] [--token TOKEN] [--ca FILE]

Prints the task's receipt: what happened to it, from its recorded events
alone. markdown (the default) is for people; json is the Receipt message as
protojson, for machines. Both name the last event they cover: compare its
hash with the head hash that 'steward audit verify --task ID' prints.
`

func runReceipt(args []string, stdout, stderr io.Writer) error {
	var taskID, format, addr, token string
	var roots *x509.CertPool
	fs := flag.NewFlagSet("steward receipt", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, receiptUsage) }
	fs.StringVar(&taskID, "task", "", "task `ID`")
	fs.StringVar(&format, "format", "markdown", "markdown or json")
	fs.StringVar(&addr, "addr", DefaultAddr, "`HOST:PORT` (or URL) of the state plane")
	caFlag(fs, &roots)
	fs.StringVar(&token, "token", "", "bearer `TOKEN` (default $"+TokenEnv+", else, for a server on this machine, the admin token in "+DefaultDataDir+"/"+TokensFileName+")")
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
	base := serverURL(addr)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	client := stewardv1connect.NewQueryServiceClient(httpClient(token, roots), base)
	resp, err := client.GetReceipt(ctx, connect.NewRequest(&stewardv1.GetReceiptRequest{TaskId: taskID}))
	if err != nil {
		return fmt.Errorf("receipt %s from %s: %w", taskID, base, err)
	}
	if format == "markdown" {
		_, err = io.WriteString(stdout, resp.Msg.Markdown)
		return err
	}
	// Every field, set or not, so that a machine sees the whole shape:
	// an empty list of artifacts says "none recorded", not "left out".
	out, err := protojson.MarshalOptions{Multiline: true, Indent: "  ", EmitUnpopulated: true}.Marshal(resp.Msg.Receipt)
	if err != nil {
		return fmt.Errorf("receipt %s: encode JSON: %w", taskID, err)
	}
	_, err = fmt.Fprintf(stdout, "%s\n", out)
	return err
}
