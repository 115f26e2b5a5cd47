package app

import (
	"bufio"
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"connectrpc.com/connect"

	"github.com/steward-run/steward/pkg/audit"
	"github.com/steward-run/steward/pkg/credential"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/gen/steward/v1/stewardv1connect"
	"github.com/steward-run/steward/pkg/task"
	"github.com/steward-run/steward/pkg/terminal"
)

const auditUsage = `Usage:
  steward audit replay --task ID [--addr HOST:PORT]   print the task's history, step by step
  steward audit replay --file FILE                    the same, offline, from an exported file
  steward audit verify --task ID [--addr HOST:PORT]   check the hash chain (fetched, checked here)
  steward audit verify --file FILE                    the same, offline
  steward audit export --task ID --out FILE [--addr HOST:PORT]
                                                      save the events exactly as stored
  steward audit export --bundle --task ID --out FILE  save an audit bundle: the task's events with
                                                      its sub-tasks' and ancestors', the requests,
                                                      results, tool contracts, policy inputs and
                                                      sources, and keys (the auditor role)
  steward audit export --bundle --tenant T --created-after TIME --created-before TIME --out FILE
                                                      the same for every task of tenant T created
                                                      in the range (RFC 3339), in one bundle
  steward audit verify --bundle FILE [--trust-key FILE]
                                                      check a bundle offline: chains, signatures,
                                                      approvers, hashes, policy re-evaluated,
                                                      receipts recomputed (docs/audit.md)
  steward audit key [--addr HOST:PORT] [--out FILE] [--wait DURATION]
                                                      print the public key governance signs
                                                      task credentials with (PEM); --wait keeps
                                                      asking until governance serves
  steward audit finding --task ID --description TEXT [--action ID] [--request-id ID]
                        [--kind policy_violation] [--addr HOST:PORT]
                                                      record what you found on reviewing a task
                                                      (the auditor role)

Calls carry a bearer token: --token TOKEN, else $STEWARD_TOKEN, else the config file's
that 'steward login' wrote (for its address only), else, for a server on this machine,
the admin token 'steward dev' wrote to .steward/data/tokens.json. --addr and --ca come
the same way ($STEWARD_ADDR, $STEWARD_CA, the config file). A server over TLS:
--addr https://HOST:PORT, and --ca FILE for a CA the system does not trust.

verify exits 0 when the chain holds and 3 when it does not, naming the first bad event;
verify --bundle exits 3 naming every problem by section and event or item.
It prints the head hash: compare it with VerifyTask's head_hash (or a receipt) to
know that no events were cut off the end.

replay and verify also verify the task's credential and its delegation chain: every
link's signature, and that each link keeps or narrows the one before. Pass
--trust-key FILE (PEM or 64 hex digits; repeat for several keys) to require that
every link is signed by a key you trust; without it they print the key id each
credential was signed with. A credential that fails names the task and the link.
With --trust-key they also check the signature of every permit, approval decision,
policy snapshot and approval request (an unsigned one fails: it was recorded before
Steward signed them, or forged); without it they say these were not checked. See
docs/permits.md.
`

// exitChainBroken is verify's exit code for a history that does not hold.
const exitChainBroken = 3

type auditCmd struct {
	verb, taskID, file, out string
	remote
	trusted []ed25519.PublicKey
	stdout  io.Writer
	// key: how long to keep asking a governance plane that is starting.
	wait time.Duration
	// finding: what was found.
	finding findingFlags
	// bundle: export --bundle, verify --bundle.
	bundle bundleFlags
}

func runAudit(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		fmt.Fprint(stderr, auditUsage)
		return errUsage
	}
	c := &auditCmd{verb: args[0], stdout: stdout}
	fs := flag.NewFlagSet("steward audit "+c.verb, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, auditUsage) }
	fs.StringVar(&c.taskID, "task", "", "task `ID`")
	c.remote.flags(fs, "the state plane (of the governance plane for key)")
	fs.StringVar(&c.file, "file", "", "exported event `FILE` to read instead of a server")
	fs.StringVar(&c.out, "out", "", "export: `FILE` to write")
	fs.Func("trust-key", "public key `FILE` (PEM or hex) every credential link, permit, approval decision, snapshot and approval request must be signed with; repeat for several", func(path string) error {
		pub, err := credential.LoadPublicKey(path)
		if err != nil {
			return err
		}
		c.trusted = append(c.trusted, pub)
		return nil
	})
	fs.DurationVar(&c.wait, "wait", 0, "key: keep asking until governance answers, for up to `DURATION` (a deployment job started with governance)")
	c.finding.register(fs)
	c.bundle.register(fs)
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return errUsage
	}
	if c.bundle.on {
		return c.runBundle(fs)
	}
	switch c.verb {
	case "key":
		return c.key()
	case "finding":
		return c.recordFinding()
	}
	switch {
	case c.verb != "replay" && c.verb != "verify" && c.verb != "export":
		fmt.Fprint(stderr, auditUsage)
		return fmt.Errorf("audit: unknown subcommand %q", c.verb)
	case c.file == "" && c.taskID == "":
		return errors.New("audit: give --task ID (with --addr) or --file FILE")
	case c.file != "" && c.taskID != "":
		return errors.New("audit: --task and --file are alternatives; give one")
	case c.verb == "export" && (c.taskID == "" || c.out == ""):
		return errors.New("audit export: --task and --out are required")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	events, err := c.events(ctx)
	if c.verb == "export" {
		if err != nil {
			return err
		}
		return c.export(events)
	}
	if err != nil && len(events) == 0 && c.file == "" {
		return err // nothing arrived: the server or the task is the problem
	}
	return c.replay(events, err)
}

// events fetches the task's stored events, from the file or the server.
// With a file, a framing error comes back with the events read before it.
func (c *auditCmd) events(ctx context.Context) ([][]byte, error) {
	if c.file != "" {
		f, err := os.Open(c.file)
		if err != nil {
			return nil, fmt.Errorf("--file: %w", err)
		}
		defer f.Close()
		return audit.ReadEvents(f)
	}
	base, hc, err := c.dial()
	if err != nil {
		return nil, err
	}
	client := stewardv1connect.NewAuditServiceClient(hc, base)
	stream, err := client.ReplayTask(ctx, connect.NewRequest(&stewardv1.ReplayTaskRequest{TaskId: c.taskID}))
	if err != nil {
		return nil, err
	}
	defer stream.Close()
	var out [][]byte
	for stream.Receive() {
		out = append(out, stream.Msg().Data)
	}
	if err := stream.Err(); err != nil {
		return out, fmt.Errorf("replay %s from %s: %w", c.taskID, base, err)
	}
	return out, nil
}

func (c *auditCmd) export(events [][]byte) error {
	f, err := os.Create(c.out)
	if err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	w := bufio.NewWriter(f)
	for _, d := range events {
		if err := audit.WriteEvent(w, d); err != nil {
			f.Close()
			return err
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "exported %d events of task %s to %s\n", len(events), c.taskID, c.out)
	return nil
}

// replay checks every event here, whatever the server said, and prints
// each step (replay) or only the verdict (verify). fetchErr is a problem
// met while reading, reported as a break after the events that did arrive.
func (c *auditCmd) replay(events [][]byte, fetchErr error) error {
	if len(events) == 0 && fetchErr == nil {
		return &failure{code: exitChainBroken, err: errors.New("FAIL: no events to verify")}
	}
	var rep *audit.Report
	if c.verb == "replay" {
		r := audit.NewReplayer(c.taskID, audit.WithCredentials(c.trusted...), audit.WithDecisions(c.trusted...))
		for _, d := range events {
			step, err := r.Next(d, 0)
			if err != nil {
				break
			}
			ev := step.Event
			fmt.Fprintf(c.stdout, "%3d  %s  %-15s %-28s → %s\n", step.Index, ev.Time.AsTime().Format(time.RFC3339Nano),
				terminal.EscapeLine(ev.Type), terminal.EscapeLine(ev.Actor.GetPrincipal()+"/"+ev.Actor.GetPlane()), task.StatusName(step.Task.Status))
		}
		rep = r.Report()
	} else {
		rep = audit.Verify(c.taskID, events, audit.WithCredentials(c.trusted...), audit.WithDecisions(c.trusted...))
	}
	if rep.Break == nil && fetchErr != nil {
		return &failure{code: exitChainBroken, err: fmt.Errorf("FAIL: after %d good events: %v", rep.Events, fetchErr)}
	}
	if rep.Break != nil {
		return &failure{code: exitChainBroken, err: fmt.Errorf("FAIL: %v", rep.Break)}
	}
	if len(c.trusted) > 0 && len(rep.Credentials) == 0 {
		// The hash chain needs no key: without a credential, nothing here
		// shows that the trusted governance wrote these events.
		return &failure{code: exitChainBroken, err: fmt.Errorf("FAIL: --trust-key was given, but the %d events carry no credential to check it against", rep.Events)}
	}
	for _, cc := range rep.Credentials {
		signed := "signed by key " + strings.Join(slices.Compact(slices.Clone(cc.KeyIDs)), ", ")
		if !cc.Pinned {
			signed += " (not pinned: pass --trust-key to check who signed)"
		} else {
			signed += " (trusted)"
		}
		fmt.Fprintf(c.stdout, "credential %s of task %s for %s: chain of %d verified, %s\n",
			terminal.EscapeLine(cc.CredentialID), terminal.EscapeLine(cc.TaskID), terminal.EscapeLine(cc.Principal), cc.Links, signed)
	}
	if len(c.trusted) > 0 {
		d := rep.Decisions
		fmt.Fprintf(c.stdout, "signatures: %d permits, %d approval decisions, %d policy snapshots and %d approval requests verified (trusted)\n", d.Permits, d.Approvals, d.Snapshots, d.Requests)
	} else {
		fmt.Fprintln(c.stdout, "signatures of permits, approval decisions, policy snapshots and approval requests not checked: pass --trust-key to check them")
	}
	if err := c.forkLink(events); err != nil {
		return &failure{code: exitChainBroken, err: fmt.Errorf("FAIL: %v", err)}
	}
	fmt.Fprintf(c.stdout, "ok: %d events verified, task %s is %s, head %s\n",
		rep.Events, terminal.EscapeLine(rep.Task.GetContract().GetTaskId()), task.StatusName(rep.Task.Status), hex.EncodeToString(rep.Head))
	return nil
}

// key fetches the public key governance signs credentials with and
// prints it as PEM (or writes it to --out), for --trust-key.
func (c *auditCmd) key() error {
	if c.wait < 0 {
		return fmt.Errorf("--wait: %s is negative", c.wait)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute+c.wait)
	defer cancel()
	base, hc, err := c.dial()
	if err != nil {
		return err
	}
	client := stewardv1connect.NewGovernanceServiceClient(hc, base)
	giveUp := time.Now().Add(c.wait)
	var resp *connect.Response[stewardv1.GetCredentialKeyResponse]
	for {
		resp, err = client.GetCredentialKey(ctx, connect.NewRequest(&stewardv1.GetCredentialKeyRequest{}))
		// Unavailable is a governance not yet listening (or not yet
		// resolvable); anything else it said will not change.
		if err == nil || connect.CodeOf(err) != connect.CodeUnavailable || time.Now().After(giveUp) {
			break
		}
		time.Sleep(time.Second)
	}
	if err != nil {
		return fmt.Errorf("credential key from %s: %w", base, err)
	}
	if len(resp.Msg.PublicKey) != ed25519.PublicKeySize {
		return fmt.Errorf("credential key from %s: %d bytes, not an Ed25519 public key", base, len(resp.Msg.PublicKey))
	}
	pub := ed25519.PublicKey(resp.Msg.PublicKey)
	if id := credential.KeyID(pub); id != resp.Msg.KeyId {
		return fmt.Errorf("credential key from %s: its id is %s, the server says %s", base, id, resp.Msg.KeyId)
	}
	pemBytes, err := credential.MarshalPublicKey(pub)
	if err != nil {
		return err
	}
	if c.out == "" {
		_, err = c.stdout.Write(pemBytes)
		return err
	}
	if err := os.WriteFile(c.out, pemBytes, 0o644); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	fmt.Fprintf(c.stdout, "credential key %s written to %s\n", resp.Msg.KeyId, c.out)
	return nil
}
