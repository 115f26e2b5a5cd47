package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// cluster is Steward as services run it: each plane its own `steward
// serve` process on one NATS JetStream, with several execution workers
// that share the permits, and the reference tool behind "search" (a read)
// and "wire" (an irreversible write).
type cluster struct {
	// env is the bus the processes share, with the stores over it: the
	// test reads the log there.
	env  *stewardtest.Env
	tool *stewardtest.Tool
	// order is the processes' names in the order they start: the workers
	// first, so their tools are registered before the other planes read
	// the registry.
	order []string
	args  map[string][]string
	procs map[string]*proc
	// agent creates and steers tasks on the control plane and reads them
	// from the state plane; approver decides on the governance plane.
	agent, approver authed
}

// startCluster starts the control, governance and state planes and
// workers execution workers, named w0, w1, …, each a `steward serve`
// process.
func startCluster(t *testing.T, workers int) *cluster {
	t.Helper()
	c := &cluster{env: stewardtest.NewEnv(t), tool: stewardtest.StartTool(t), args: map[string][]string{}, procs: map[string]*proc{}}
	dir := t.TempDir()
	common := []string{"serve", "--nats", c.env.Server.ClientURL(), "--addr", "127.0.0.1:0", "--log-level", "warn",
		"--auth", writeFile(t, dir, "tokens.json", clusterTokens)}
	tools := c.toolsFile(t, dir)
	for i := range workers {
		name := fmt.Sprint("w", i)
		c.add(name, slices.Concat(common, c.as("execution"), []string{"--worker", name, "--tools", tools, "--sandbox", t.TempDir()}))
	}
	c.add("governance", slices.Concat(common, c.as("governance"), []string{"--credential-key", filepath.Join(dir, "credential.key")}))
	c.add("control", slices.Concat(common, c.as("control")))
	c.add("state", slices.Concat(common, c.as("state")))
	for _, name := range c.order {
		c.start(t, name)
	}
	c.agent = withToken(c.procs["control"].url, agentToken)
	c.agent.query = withToken(c.procs["state"].url, agentToken).query
	c.approver = withToken(c.procs["governance"].url, approverToken)
	return c
}

// clusterTokens names the agent and the approver.
var clusterTokens = fmt.Sprintf(`{"tokens": [
  {"token": %q, "principal": "agent:summariser", "roles": []},
  {"token": %q, "principal": "user:bo", "roles": ["authorizer"]}
]}`, agentToken, approverToken)

// as is the flags of a plane signing in to NATS as its own user.
func (c *cluster) as(plane string) []string {
	return []string{"--plane", plane, "--nats-nkey", c.env.SeedFile(plane)}
}

func (c *cluster) add(name string, args []string) {
	c.order = append(c.order, name)
	c.args[name] = args
}

// toolsFile writes the --tools file of the reference tool's "search" and
// "wire", with the default timeout: a slow machine must not make a call
// time out and be tried again.
func (c *cluster) toolsFile(t *testing.T, dir string) string {
	t.Helper()
	search, wire := c.tool.Contract("search", "/search"), c.tool.Contract("wire", "/wire")
	search.EffectClass, wire.EffectClass = stewardv1.EffectClass_EFFECT_CLASS_READ, stewardv1.EffectClass_EFFECT_CLASS_IRREVERSIBLE
	var file struct {
		Tools []json.RawMessage `json:"tools"`
	}
	for _, k := range []*stewardv1.ToolContract{search, wire} {
		k.Timeout = nil
		b, err := protojson.Marshal(k)
		if err != nil {
			t.Fatal(err)
		}
		file.Tools = append(file.Tools, b)
	}
	b, err := json.Marshal(file)
	if err != nil {
		t.Fatal(err)
	}
	return writeFile(t, dir, "tools.json", string(b))
}

// start starts the process name, again if it was stopped: then on the
// address it had, as a service restarts behind its name.
func (c *cluster) start(t *testing.T, name string) {
	t.Helper()
	p := startCommand(t, nil, c.args[name]...)
	c.procs[name] = p
	addr := slices.Index(c.args[name], "--addr") + 1
	c.args[name][addr] = strings.TrimPrefix(p.url, "http://")
}

// stop stops the process name cleanly.
func (c *cluster) stop(t *testing.T, name string) {
	t.Helper()
	c.procs[name].stop(t)
}

// consumers names the durable consumers on the event stream: the planes'
// own, which outlive their processes.
func (c *cluster) consumers(t *testing.T) []string {
	t.Helper()
	s, err := c.env.JS.Stream(context.Background(), c.env.Log.Config().Stream)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	lister := s.ListConsumers(context.Background())
	for info := range lister.Info() {
		if info.Config.Durable != "" {
			names = append(names, info.Name)
		}
	}
	if err := lister.Err(); err != nil {
		t.Fatal(err)
	}
	return names
}
