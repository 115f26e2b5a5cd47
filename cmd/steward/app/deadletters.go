package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/encoding/protojson"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/gen/steward/v1/stewardv1connect"
)

const deadLettersUsage = `Usage:
  steward dead-letters list [--format text|json] [--addr HOST:PORT] [--token TOKEN] [--ca FILE]
  steward dead-letters replay --seq N --consumer NAME [--addr HOST:PORT] [--token TOKEN] [--ca FILE]

list prints the events the planes set aside — one line per event and
consumer: its sequence, the consumer, where it stands (waiting, replaying,
replayed, replay-failed), its task and type, when and why — oldest first.
json prints the DeadLetter messages as protojson, one per line.

replay asks the consumer that set the event at sequence N aside to take it
again, once its cause is gone; list shows how it went. Operators of the
default tenant only (docs/dead-letters.md).
`

func runDeadLetters(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || (args[0] != "list" && args[0] != "replay") {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
			fmt.Fprint(stdout, deadLettersUsage)
			return flag.ErrHelp
		}
		fmt.Fprint(stderr, "steward dead-letters: say list or replay\n\n"+deadLettersUsage)
		return errUsage
	}
	verb := args[0]
	var format, consumer string
	var seq uint64
	var r remote
	fs := flag.NewFlagSet("steward dead-letters "+verb, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, deadLettersUsage) }
	r.flags(fs, "the state plane")
	if verb == "list" {
		fs.StringVar(&format, "format", "text", "text or json")
	} else {
		fs.Uint64Var(&seq, "seq", 0, "the event's `SEQUENCE`, as list shows it")
		fs.StringVar(&consumer, "consumer", "", "the `NAME` of the consumer that set it aside, as list shows it")
	}
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return errUsage
	}
	bad := func(format string, args ...any) error {
		fmt.Fprintf(stderr, "steward dead-letters: "+format+"\n\n%s", append(args, deadLettersUsage)...)
		return errUsage
	}
	switch {
	case fs.NArg() > 0:
		return bad("unexpected argument %q", fs.Arg(0))
	case verb == "list" && format != "text" && format != "json":
		return bad("--format must be text or json, not %q", format)
	case verb == "replay" && seq == 0:
		return bad("--seq is required")
	}
	base, hc, err := r.dial()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	client := stewardv1connect.NewDeadLetterServiceClient(hc, base)
	if verb == "replay" {
		resp, err := client.ReplayDeadLetter(ctx, connect.NewRequest(&stewardv1.ReplayDeadLetterRequest{Sequence: seq, Consumer: consumer}))
		if err != nil {
			return fmt.Errorf("replay %d to %s at %s: %w", seq, consumer, base, err)
		}
		_, err = fmt.Fprintf(stdout, "replay %s asked of %s for the event at %d; 'steward dead-letters list' shows how it goes\n", resp.Msg.ReplayId, consumer, seq)
		return err
	}
	return listDeadLetters(ctx, client, base, format, stdout)
}

// listDeadLetters prints every page of dead letters.
func listDeadLetters(ctx context.Context, client stewardv1connect.DeadLetterServiceClient, base, format string, stdout io.Writer) error {
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	if format == "text" {
		fmt.Fprintln(tw, "SEQ\tCONSUMER\tSTATE\tTASK\tTYPE\tSET ASIDE\tREASON")
	}
	token := ""
	for {
		resp, err := client.ListDeadLetters(ctx, connect.NewRequest(&stewardv1.ListDeadLettersRequest{PageToken: token}))
		if err != nil {
			return fmt.Errorf("list dead letters at %s: %w", base, err)
		}
		for _, d := range resp.Msg.DeadLetters {
			if format == "json" {
				out, err := protojson.Marshal(d)
				if err != nil {
					return err
				}
				fmt.Fprintf(stdout, "%s\n", out)
				continue
			}
			fmt.Fprintln(tw, deadLetterLine(d))
		}
		if token = resp.Msg.NextPageToken; token == "" {
			break
		}
	}
	return tw.Flush()
}

// deadLetterLine is d as one tab-separated line.
func deadLetterLine(d *stewardv1.DeadLetter) string {
	state := strings.ReplaceAll(strings.ToLower(strings.TrimPrefix(d.State.String(), "DEAD_LETTER_STATE_")), "_", "-")
	reason := d.Reason
	if d.ReplayError != "" {
		reason += " (replay: " + d.ReplayError + ")"
	}
	or := func(s string) string {
		if s == "" {
			return "-"
		}
		return s
	}
	typ := d.EventType
	if d.TaskId == "" {
		typ = d.Subject
	}
	return strings.Join([]string{strconv.FormatUint(d.Sequence, 10), or(d.Consumer), state, or(d.TaskId), or(typ),
		d.SetAsideAt.AsTime().UTC().Format(time.RFC3339), strings.ReplaceAll(reason, "\t", " ")}, "\t")
}
