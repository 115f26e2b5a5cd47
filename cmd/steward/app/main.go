// Package app is the steward command: flag parsing and the wiring of
// packages into a running process, and nothing else. It is a package, not
// part of main, so that end-to-end tests can run the same Main in-process.
package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os/signal"
	"syscall"

	"connectrpc.com/connect"

	"github.com/steward-run/steward/pkg/terminal"
)

const usage = `steward — a durable runtime for AI-agent tasks

Usage:
  steward dev    [--addr HOST:PORT] [--data DIR] [--nats-listen HOST:PORT] [--auth FILE | --insecure]
                 run every plane and an embedded NATS JetStream in one process; calls need
                 a bearer token from DATA/tokens.json (made on first start) unless --insecure
  steward serve  --plane=control|governance|execution|state --nats=URL (--auth FILE | --insecure)
                 run one plane against an external NATS JetStream
  steward gateway --control URL --governance URL --execution URL --state URL [--addr HOST:PORT]
                 one address for clients of the planes: routes each call to a
                 healthy replica of the plane that serves it
  steward nats-users --out DIR
                 write a NATS user per plane: nkey seeds and the nats-server config
  steward nats-streams --nats URL --replicas N
                 raise Steward's streams and buckets to N replicas in place, as a NATS
                 user allowed to update streams (docs/cluster.md)
  steward backup --nats URL --out DIR | restore --from DIR (--data DIR | --nats URL)
                 snapshot every stream and bucket at a consistent cut, or restore one
                 into a Steward before its planes start (docs/backup.md)
  steward secret-key --out FILE
                 write the key for secret tool parameters that serve's control and
                 execution planes share (kept if FILE exists)
  steward audit  replay|verify|export --task ID [--addr HOST:PORT | --file FILE]
                 replay or verify a task's hash-chained history, online or offline;
                 audit finding records what an auditor found
  steward receipt --task ID [--format markdown|json] [--addr HOST:PORT]
                 print what happened to a task, from its recorded events
  steward dead-letters list | replay --seq N --consumer NAME [--addr HOST:PORT]
                 list the events the planes set aside, or replay one (operators)
  steward tasks ls|show|watch|pause|resume|cancel|fail|accept|return
  steward approvals ls|show|approve|reject
  steward questions ls|answer
  steward actions settle
  steward budget raise
  steward tools ls|show|register|import-mcp
  steward schedules create|get|list|pause|resume|delete
  steward rollouts start|get|list|rollback
                 for the people around a task: see, steer, decide, answer, settle
                 (docs/cli.md); a table, or -o json for scripts
  steward policy test DIR | eval DIR --input FILE
                 run a policy bundle's Rego tests, or judge one policy input with it, here:
                 no server (docs/cli.md)
  steward policy canary --bundle DIR [--since TIME] [--until TIME] [--limit N]
                 re-evaluate past decisions under a candidate bundle, here; exit 0 unchanged,
                 1 loosened, 2 tightened only, 3 error (docs/policy-canary.md)
  steward canary run --def FILE [--against policy=DIR|tool=FILE|model=ID] [--update-baseline]
                 run sample tasks in a Steward of its own, here, and judge them against the
                 last accepted baseline; exit 0 all pass, 1 a sample failed, 3 error (docs/canary.md)
  steward login --addr URL --token TOKEN [--ca FILE]
                 save where Steward is and your token for the commands above
  steward completion bash|zsh|fish
                 print a shell completion script
  steward version [-o json]
                 the version and commit this binary was built from

Run 'steward COMMAND --help' for a command's flags.
`

// Main runs the command line args and returns the exit code.
func Main(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	var err error
	switch name := args[0]; {
	case peopleCommands[name]:
		err = runPeople(args, stdout, stderr)
	case name == "help" || name == "-h" || name == "--help":
		fmt.Fprint(stdout, usage)
	default:
		err = runOlder(name, args[1:], stdout, stderr)
		if errors.Is(err, errUnknownCommand) {
			fmt.Fprintf(stderr, "steward: unknown command %q\n\n%s", name, usage)
			return 2
		}
	}
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		return 2
	default:
		fmt.Fprintln(stderr, "steward:", terminal.Escape(err.Error())+tokenHint(err))
		var fail *failure
		if errors.As(err, &fail) {
			return fail.code
		}
		return 1
	}
}

// tokenHint says how to give a token when a server refused a call for
// the want of one: the server's words name the header, not the flag.
func tokenHint(err error) string {
	if connect.CodeOf(err) != connect.CodeUnauthenticated {
		return ""
	}
	return "; give a token the server accepts with --token TOKEN (or $" + TokenEnv + ")"
}

// errUsage means a flag was wrong; the flag package has already said which.
var errUsage = errors.New("usage")

var errUnknownCommand = errors.New("unknown command")

// runOlder runs a command that parses its own flags.
func runOlder(name string, args []string, stdout, stderr io.Writer) error {
	switch name {
	case "dev", "serve":
		return runServer(name, args, stdout, stderr)
	case "gateway":
		return runGateway(args, stdout, stderr)
	case "nats-users":
		return runNATSUsers(args, stdout, stderr)
	case "nats-streams":
		return runNATSStreams(args, stdout, stderr)
	case "secret-key":
		return runSecretKey(args, stdout, stderr)
	case "audit":
		// What these print came from clients and tools: a reason can
		// carry an escape sequence or a bidi control.
		return runAudit(args, terminal.NewWriter(stdout), terminal.NewWriter(stderr))
	case "archive":
		return runArchive(args, terminal.NewWriter(stdout), terminal.NewWriter(stderr))
	case "receipt":
		return runReceipt(args, terminal.NewWriter(stdout), terminal.NewWriter(stderr))
	case "dead-letters":
		return runDeadLetters(args, terminal.NewWriter(stdout), terminal.NewWriter(stderr))
	case "version":
		return runVersion(args, stdout, stderr)
	case "backup":
		return runBackup(args, stdout, stderr)
	case "restore":
		return runRestore(args, stdout, stderr)
	}
	return errUnknownCommand
}

// failure is an error with a chosen exit code.
type failure struct {
	code int
	err  error
}

func (f *failure) Error() string { return f.err.Error() }

func runServer(mode string, args []string, stdout, stderr io.Writer) error {
	m := NewServer(stdout, stderr)
	if err := m.ParseFlags(mode, args); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := m.Run(ctx); err != nil {
		m.Close()
		return err
	}
	err := m.Wait(ctx)
	m.Close()
	return err
}
