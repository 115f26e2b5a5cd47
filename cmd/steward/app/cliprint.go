package app

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/steward-run/steward/pkg/terminal"
)

// json reports whether the command prints protojson.
func (c *cli) json() bool { return c.output == "json" }

// message prints m as one line of protojson: the wire's JSON, so that a
// script reads what an RPC would answer.
func (c *cli) message(m proto.Message) error {
	out, err := protojson.Marshal(m)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(c.stdout, "%s\n", out)
	return err
}

// messages prints each of ms as a line of protojson (message).
func messages[M proto.Message](c *cli, ms []M) error {
	for _, m := range ms {
		if err := c.message(m); err != nil {
			return err
		}
	}
	return nil
}

// table prints rows under header, in columns. A cell is one line: what
// a client wrote cannot start a row of its own.
func (c *cli) table(header []string, rows [][]string) error {
	w := tabwriter.NewWriter(c.stdout, 2, 8, 2, ' ', 0)
	fmt.Fprintln(w, strings.Join(header, "\t"))
	for _, row := range rows {
		cells := make([]string, len(row))
		for i, cell := range row {
			cells[i] = terminal.EscapeLine(cell)
		}
		fmt.Fprintln(w, strings.Join(cells, "\t"))
	}
	return w.Flush()
}

// fields prints name: value lines, leaving out empty values.
func fields(w io.Writer, pairs ...string) {
	tw := tabwriter.NewWriter(w, 2, 8, 1, ' ', 0)
	for i := 0; i+1 < len(pairs); i += 2 {
		if pairs[i+1] != "" {
			fmt.Fprintf(tw, "%s:\t%s\n", pairs[i], terminal.EscapeLine(pairs[i+1]))
		}
	}
	_ = tw.Flush()
}

// word is an enum value as a person says it: TASK_STATUS_WAITING_FOR_INPUT
// is "waiting_for_input".
func word(v fmt.Stringer, prefix string) string {
	s := strings.ToLower(strings.TrimPrefix(v.String(), prefix))
	if s == "unspecified" {
		return ""
	}
	return s
}

// when is a time in UTC to the second; "" for none.
func when(t *timestamppb.Timestamp) string {
	if t == nil {
		return ""
	}
	return t.AsTime().UTC().Format(time.DateTime)
}

// short cuts s to n characters, marking the cut.
func short(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
