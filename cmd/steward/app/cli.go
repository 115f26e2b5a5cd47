package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"connectrpc.com/connect"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/steward-run/steward/pkg/terminal"
	"github.com/steward-run/steward/sdk/go/steward"
)

// The commands for the people around a task — owners, approvers,
// operators, budget owners (docs/cli.md) — are cobra commands: nested
// verbs (tasks pause, approvals approve) with their own help, and shell
// completion generated from the same tree. The older commands keep their
// flag sets and are in the tree for completion and help only.

// peopleCommands are the commands Main hands to the cobra tree, and the
// hidden ones its completion scripts call.
var peopleCommands = map[string]bool{
	"tasks": true, "approvals": true, "questions": true, "actions": true, "budget": true, "tools": true, "schedules": true, "rollouts": true, "policy": true,
	"objectives": true, "a2a": true, "canary": true, "login": true, "completion": true,
	cobra.ShellCompRequestCmd: true, cobra.ShellCompNoDescRequestCmd: true,
}

// exitRefused is the exit code of a command Steward answered and refused:
// bad input, not found, not allowed, not now (docs/cli.md).
const exitRefused = 4

// callTimeout bounds one command's calls (a watch is not bounded).
const callTimeout = time.Minute

// cli is what every people's command shares: where Steward is, how to
// show what it answers, and where to write.
type cli struct {
	addr, token, ca, output string
	// stdout escapes what clients and tools wrote (terminal.NewWriter);
	// raw is the terminal itself, for completion scripts.
	stdout, stderr, raw io.Writer
}

// runPeople runs one of peopleCommands.
func runPeople(args []string, stdout, stderr io.Writer) error {
	c := &cli{stdout: terminal.NewWriter(stdout), stderr: terminal.NewWriter(stderr), raw: stdout}
	root := c.root()
	root.SetArgs(args)
	cmd, err := root.ExecuteC()
	if err == nil {
		return nil
	}
	if code, ok := errorCode(cmd, err); ok {
		return &failure{code: code, err: said{err}}
	}
	var u *usageError
	if errors.As(err, &u) {
		fmt.Fprintf(c.stderr, "%s: %s\nRun '%s --help' for its usage.\n", cmd.CommandPath(), u.msg, cmd.CommandPath())
		return errUsage
	}
	err = said{err}
	if refused(err) {
		return &failure{code: exitRefused, err: err}
	}
	return err
}

// said is an error as the CLI says it: Main names the program once, so
// the SDK's "steward: " before Steward's refusal goes.
type said struct{ error }

func (s said) Error() string { return strings.Replace(s.error.Error(), "steward: ", "", 1) }
func (s said) Unwrap() error { return s.error }

// root is the cobra tree: the people's commands, and the older ones for
// completion and help.
func (c *cli) root() *cobra.Command {
	root := &cobra.Command{
		Use:           "steward",
		Short:         "a durable runtime for AI-agent tasks",
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	root.SetOut(c.raw)
	root.SetErr(c.stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usagef("%v", err) })
	root.AddCommand(c.tasksCommand(), c.approvalsCommand(), c.questionsCommand(), c.actionsCommand(), c.budgetCommand(), c.toolsCommand(), c.schedulesCommand(), c.rolloutsCommand(), c.policyCommand(), c.objectivesCommand(), c.a2aCommand(), c.canaryCommand(), c.loginCommand())
	for _, name := range []string{"dev", "serve", "gateway", "nats-users", "nats-streams", "secret-key", "audit", "archive", "receipt", "dead-letters", "version", "backup", "restore"} {
		root.AddCommand(c.olderCommand(name))
	}
	root.CompletionOptions.HiddenDefaultCmd = false
	return root
}

// olderCommand is a command with a flag set of its own, in the tree so
// that completion offers it; it runs as Main runs it.
func (c *cli) olderCommand(name string) *cobra.Command {
	return &cobra.Command{
		Use:                name,
		Short:              olderShort[name],
		DisableFlagParsing: true,
		RunE: func(_ *cobra.Command, args []string) error {
			return runOlder(name, args, c.raw, c.stderr)
		},
	}
}

// group is a command that only holds verbs: alone, or with a verb it does
// not know, it is a usage error.
func (c *cli) group(use, short string, verbs ...*cobra.Command) *cobra.Command {
	g := &cobra.Command{
		Use:   use,
		Short: short,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usagef("unknown command %q", args[0])
			}
			return usagef("which one? %s", verbNames(cmd))
		},
	}
	g.AddCommand(verbs...)
	return g
}

func verbNames(cmd *cobra.Command) string {
	s := ""
	for _, v := range cmd.Commands() {
		if s != "" {
			s += ", "
		}
		s += v.Name()
	}
	return s
}

// verb is a command of a group that takes the named positional
// arguments, no more and no fewer, and the connection flags: a local
// command with a client of Steward, its calls bounded by callTimeout.
func (c *cli) verb(use, short string, args []string, run func(ctx context.Context, s *steward.Client, args []string) error) *cobra.Command {
	cmd := c.local(use, short, args, func(ctx context.Context, got []string) error {
		s, err := c.client(steward.DefaultRetry)
		if err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(ctx, callTimeout)
		defer cancel()
		return run(ctx, s, got)
	})
	cmd.ValidArgsFunction = c.completeIDs(args)
	c.connectionFlags(cmd.Flags())
	return cmd
}

// local is a verb of a group that runs here, calling no server: the
// named positional arguments and -o. Its arguments complete as
// directories (policy bundles).
func (c *cli) local(use, short string, args []string, run func(ctx context.Context, args []string) error) *cobra.Command {
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  exactly(args),
		RunE: func(cmd *cobra.Command, got []string) error {
			if c.output != "table" && c.output != "json" {
				return usagef("--output must be table or json, not %q", c.output)
			}
			return run(cmd.Context(), got)
		},
		ValidArgsFunction: func(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
			return nil, cobra.ShellCompDirectiveFilterDirs
		},
	}
	cmd.Flags().StringVarP(&c.output, "output", "o", "table", "table (for people) or json (one object a line: protojson for Steward's messages)")
	return cmd
}

// exactly takes the named positional arguments, no more and no fewer.
func exactly(args []string) cobra.PositionalArgs {
	return func(_ *cobra.Command, got []string) error {
		switch {
		case len(got) < len(args):
			return usagef("missing %s", args[len(got)])
		case len(got) > len(args):
			return usagef("unexpected argument %q", got[len(args)])
		}
		return nil
	}
}

// connectionFlags adds where Steward is.
func (c *cli) connectionFlags(fs *pflag.FlagSet) {
	fs.StringVar(&c.addr, "addr", "", "`URL` (or HOST:PORT) of Steward (default $"+AddrEnv+", else the config file's, else "+DefaultAddr+")")
	fs.StringVar(&c.token, "token", "", "bearer `TOKEN` (default $"+TokenEnv+", else the config file's for its address)")
	fs.StringVar(&c.ca, "ca", "", "PEM `FILE` of the CAs that sign the server's TLS certificate (default $"+CAEnv+", else the config file's)")
}

// watching is the retry of a watch: a person following a task would
// rather it waited out a restart of Steward than gave up.
var watching = steward.Retry{Attempts: 40, First: 200 * time.Millisecond, Max: 5 * time.Second}

// interruptible returns ctx ended also by Ctrl-C or SIGTERM.
func interruptible(ctx context.Context) (context.Context, context.CancelFunc) {
	return signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
}

// usageError is a command given wrongly: exit 2, with its message.
type usageError struct{ msg string }

func (u *usageError) Error() string        { return u.msg }
func (u *usageError) Is(target error) bool { return target == errUsage }

func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// refused reports whether Steward answered err: the command was heard and
// turned down, as against not heard or failed inside.
func refused(err error) bool {
	switch steward.CodeOf(err) {
	case connect.CodeInvalidArgument, connect.CodeNotFound, connect.CodeAlreadyExists, connect.CodePermissionDenied,
		connect.CodeUnauthenticated, connect.CodeFailedPrecondition, connect.CodeOutOfRange, connect.CodeResourceExhausted,
		connect.CodeAborted:
		return true
	}
	return false
}
