// Command agent is an example agent on Steward's Go SDK (sdk/go/steward),
// doing a long task the way a real one would: it syncs files from one
// store to another through governed HTTP tools, asking a model before
// each copy and recording why, publishing a manifest only once a person
// approved it, and handing in its result for acceptance by criteria.
//
// Its state is Steward's, not its own: killed at any point (--crash-after
// kills it after that many files) and started again with its working
// directory gone, it finds its task by its request id, its decisions by
// ListDecisions, and its actions by their proposal ids, and finishes
// without asking the model again for any decision already recorded, or
// running any step twice. See docs/sdk.md ("The example agent").
//
//	go run ./cmd/steward dev &
//	go run ./examples/agent
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
)

// config is the agent's flags.
type config struct {
	steward, tokens, dir, run string
	files, crashAfter         int
	// store and model are the tools' and the model's URLs; empty, the
	// agent serves toy ones itself on fixtures, keeping the stores under
	// fixturesDir, which outlives the agent.
	store, model, fixtures, fixturesDir string
	// fixturesOnly serves the toy store and model, and nothing more: for
	// the agents of examples/agent-ts and examples/agent-python.
	fixturesOnly bool
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "agent:", err)
		}
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var c config
	fs := flag.NewFlagSet("agent", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.steward, "steward", "http://127.0.0.1:7700", "Steward's `URL`")
	fs.StringVar(&c.tokens, "tokens", filepath.Join(".steward", "data", "tokens.json"), "`FILE` of steward dev's tokens (the agent's, the approver's and the admin's are used)")
	fs.StringVar(&c.dir, "dir", ".agent", "working `DIR`: notes the agent may lose")
	fs.StringVar(&c.run, "run", "sync-1", "`NAME` of this run: its task's request id, so a restart finds the task")
	fs.IntVar(&c.files, "files", 10, "how many files to sync (`N`)")
	fs.IntVar(&c.crashAfter, "crash-after", 0, "kill the agent (SIGKILL) after `N` files, to show a restart")
	fs.StringVar(&c.store, "store", "", "`URL` of the store tools (default: a toy store served by the agent)")
	fs.StringVar(&c.model, "model", "", "`URL` of an OpenAI-compatible model API (default: a toy model served by the agent)")
	fs.StringVar(&c.fixtures, "fixtures", "127.0.0.1:7711", "`ADDR` the toy store and model listen on")
	fs.StringVar(&c.fixturesDir, "fixtures-dir", filepath.Join(".steward", "agent-stores"), "`DIR` of the toy stores")
	fs.BoolVar(&c.fixturesOnly, "fixtures-only", false, "only serve the toy store and model on --fixtures, print their URL, and wait for an interrupt")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if c.files < 1 || c.files > 99 {
		return fmt.Errorf("--files: %d is not between 1 and 99", c.files)
	}
	if c.fixturesOnly {
		return serveOnly(ctx, c, stdout)
	}
	if c.store == "" || c.model == "" {
		url, stop, err := serveFixtures(c.fixtures, c.fixturesDir, c.files)
		if err != nil {
			return err
		}
		defer stop()
		c.store, c.model = orDefault(c.store, url+"/store"), orDefault(c.model, url+"/v1")
	}
	a, err := newAgent(c, stdout)
	if err != nil {
		return err
	}
	return a.work(ctx)
}

func orDefault(s, def string) string {
	if s != "" {
		return s
	}
	return def
}

// serveOnly serves the toy store and model until ctx ends, having printed
// where: "fixtures http://ADDR" (the store under /store, the model under
// /v1).
func serveOnly(ctx context.Context, c config, stdout io.Writer) error {
	url, stop, err := serveFixtures(c.fixtures, c.fixturesDir, c.files)
	if err != nil {
		return err
	}
	defer stop()
	fmt.Fprintf(stdout, "fixtures %s\n", url)
	<-ctx.Done()
	return nil
}
