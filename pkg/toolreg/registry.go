// Package toolreg is the tool registry as every plane sees it: an
// in-memory index of registered tool versions, folded from the tool
// registrations on the log (steward.tool.<name>). The execution plane
// writes registrations; the control plane reads contracts to validate
// proposals, governance to feed policy, execution to find endpoints. Each
// keeps its own Registry, rebuilt on start like any projection.
//
// A tool belongs to a tenant: the default tenant's ("") are global, seen
// by every tenant; another tenant's only by that tenant. Every read names
// the tenant it reads for — a task's, or a caller's — and finds that
// tenant's own tool of a name, else the global one; another tenant's is
// not found, in the same words as a tool that does not exist. The
// execution plane keeps a name to one of the two (Register), so that a
// tenant's tool never stands in for a global one.
//
// A Registry is safe for concurrent use.
package toolreg

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"

	"golang.org/x/mod/semver"
	"google.golang.org/protobuf/proto"

	"github.com/steward-run/steward/pkg/action"
	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/raceguard"
)

// Entry is a registered tool version with its compiled parameter schema.
// An entry Get, Lookup, AsOf or LookupAsOf returns is the registry's own,
// shared by every reader and never changed once applied: a lookup costs
// no copy of the tool. A reader must not change it, nor its Tool; one that
// needs a tool of its own copies it (proto.CloneOf). In race-detector
// builds a change is caught at the next lookup of the entry (check).
type Entry struct {
	Tool   *stewardv1.Tool
	Schema *action.Schema
	// ResultSchema checks a successful result; nil when the contract
	// declares none.
	ResultSchema *action.Schema
	// Unusable says why a version registered earlier can no longer be
	// proposed: its schema does not compile under this release's limits.
	// It stays listed, so that it is not taken for unregistered.
	Unusable error
	// applied is, in race-detector builds only, the entry as applied.
	applied *applied
}

// applied is an entry as Apply made it: its fields, and a copy of its
// tool.
type applied struct {
	entry Entry
	tool  *stewardv1.Tool
}

// keep notes, in race-detector builds, e as applied, for check.
func (e *Entry) keep() {
	if raceguard.On {
		e.applied = &applied{entry: *e, tool: proto.CloneOf(e.Tool)}
	}
}

// check returns e, having panicked, in race-detector builds, if a reader
// changed it since it was applied: its tool, or what it points to.
func (e *Entry) check() *Entry {
	if !raceguard.On {
		return e
	}
	was := e.applied
	if e.Tool != was.entry.Tool || e.Schema != was.entry.Schema || e.ResultSchema != was.entry.ResultSchema || !proto.Equal(e.Tool, was.tool) {
		panic(fmt.Sprintf("toolreg: tool %s@%s, shared by the registry's lookups, was changed by a reader: copy it before changing it",
			was.tool.GetContract().GetName(), was.tool.GetContract().GetVersion()))
	}
	return e
}

// Registry indexes registered tools.
type Registry struct {
	logger *slog.Logger

	progress eventlog.Progress

	mu       sync.RWMutex
	versions map[key]map[string]*Entry // (tenant, name) → version → entry
	latest   map[key]*Entry
	// complete is a stream sequence below which every registration is
	// applied, known from a catch-up (LookupAsOf).
	complete uint64
	// heavy bounds the heavy schema work of the process (action.Heavy).
	heavy *action.Heavy
}

// key names a tool: its tenant ("" for a global tool) and its name.
type key struct{ tenant, name string }

// New returns an empty registry.
func New(logger *slog.Logger) *Registry {
	return &Registry{logger: logger, versions: map[key]map[string]*Entry{}, latest: map[key]*Entry{}, heavy: action.NewHeavy()}
}

// keyOf returns the tool tenant means by name, its own tool of that name
// or else the global one. The caller holds r.mu.
func (r *Registry) keyOf(tenant, name string) key {
	if own := (key{tenant, name}); tenant != "" && r.versions[own] != nil {
		return own
	}
	return key{"", name}
}

// Apply indexes one registration. A registration whose schema no longer
// compiles (it passed the limits of the release that registered it) is
// kept as Unusable, named so in a proposal's answer, rather than dropped.
// Schemas compile before the lock is taken: readers never wait for one.
func (r *Registry) Apply(rec *stewardv1.EventRecord) error {
	reg := rec.Event.GetToolRegistered()
	defer r.progress.Advance(rec.Sequence)
	if reg == nil {
		return nil
	}
	c := reg.Contract
	e := &Entry{Tool: &stewardv1.Tool{Contract: c, RegisteredAt: rec.Event.Time, RegisteredBy: rec.Event.Actor.GetPrincipal(), Sequence: rec.Sequence, Tenant: reg.Tenant}}
	var err error
	if e.Schema, err = r.heavy.CompileSchema(c.ParametersSchema); err != nil {
		e.Unusable = fmt.Errorf("its parameters_schema does not compile under this release's limits: %w", err)
	} else if c.ResultSchema != "" {
		if e.ResultSchema, err = r.heavy.CompileSchema(c.ResultSchema); err != nil {
			e.Unusable = fmt.Errorf("its result_schema does not compile under this release's limits: %w", err)
		}
	}
	e.keep()
	if e.Unusable != nil {
		r.logger.Warn("a registered tool version can no longer be proposed; register a new version", "tool", c.Name, "version", c.Version, "err", e.Unusable)
	}
	k := key{reg.Tenant, c.Name}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.versions[k] == nil {
		r.versions[k] = map[string]*Entry{}
	}
	if _, ok := r.versions[k][c.Version]; ok {
		return nil // a version is registered once; the first stands
	}
	r.versions[k][c.Version] = e
	if cur := r.latest[k]; cur == nil || newer(c.Version, cur.Tool.Contract.Version) {
		r.latest[k] = e
	}
	return nil
}

// newer orders versions: semantic versions by precedence ("v" optional),
// anything else by registration order (the later one wins).
func newer(a, b string) bool {
	va, vb := "v"+trimV(a), "v"+trimV(b)
	if semver.IsValid(va) && semver.IsValid(vb) {
		return semver.Compare(va, vb) > 0
	}
	return true
}

func trimV(s string) string {
	if len(s) > 0 && s[0] == 'v' {
		return s[1:]
	}
	return s
}

// Skip notes a registration that could not be decoded.
func (r *Registry) Skip(seq uint64, _ error) { r.progress.Advance(seq) }

// Progress says how far the registry has applied the log.
func (r *Registry) Progress() *eventlog.Progress { return &r.progress }

// Run follows the registrations on log until ctx ends.
func (r *Registry) Run(ctx context.Context, log *eventlog.Log) { log.KeepReadingTools(ctx, r) }

// Sync waits until the registry holds every registration on the log now:
// after a registration, a reader sees it.
func (r *Registry) Sync(ctx context.Context, log *eventlog.Log) error {
	return eventlog.CatchUp(ctx, r, log.LastToolSequence)
}

// Get returns a version of the tool tenant means by name, the latest when
// version is empty: the registry's own entry, read-only (Entry).
func (r *Registry) Get(tenant, name, version string) (*Entry, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	k := r.keyOf(tenant, name)
	var e *Entry
	if version == "" {
		e = r.latest[k]
	} else {
		e = r.versions[k][version]
	}
	if e == nil {
		if version == "" {
			return nil, errs.New(errs.NotFound, "tool %s is not registered", errs.Quote(name))
		}
		return nil, errs.New(errs.NotFound, "tool %s has no version %s", errs.Quote(name), errs.Quote(version))
	}
	return e.check(), nil
}

// Lookup is Get for a reader that must not miss a registration made just
// before: a named version is immutable once registered, so only a miss
// waits for the registry to catch up with the log and asks again. The
// latest version may lag a registration by as long as the registry takes
// to apply it.
func (r *Registry) Lookup(ctx context.Context, log *eventlog.Log, tenant, name, version string) (*Entry, error) {
	if e, err := r.Get(tenant, name, version); err == nil {
		return e, nil
	}
	if err := r.Sync(ctx, log); err != nil {
		return nil, err
	}
	return r.Get(tenant, name, version)
}

// AsOf returns the version of tool name that a task of tenant created at
// stream sequence created takes when a proposal names no version: the
// latest of those registered before it. Registrations and tasks share one
// stream, so the comparison is exact, where registration and creation
// times, set by two planes' clocks, are not. A version registered after the task
// never appears in it: nobody can relabel a tool under a running task.
func (r *Registry) AsOf(tenant, name string, created uint64) (*Entry, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	versions := r.versions[r.keyOf(tenant, name)]
	var best *Entry
	for _, e := range versions {
		if e.Tool.Sequence < created && (best == nil || later(e, best)) {
			best = e
		}
	}
	switch {
	case len(versions) == 0:
		return nil, errs.New(errs.NotFound, "tool %s is not registered", errs.Quote(name))
	case best == nil:
		return nil, errs.New(errs.NotFound, "tool %s has no version registered before the task was created; a task takes only those, unless its contract pins a version", errs.Quote(name))
	}
	return best.check(), nil
}

// later orders two registered versions as Apply orders the latest:
// semantic versions by precedence, anything else by registration.
func later(a, b *Entry) bool {
	va, vb := "v"+trimV(a.Tool.Contract.Version), "v"+trimV(b.Tool.Contract.Version)
	if semver.IsValid(va) && semver.IsValid(vb) {
		return semver.Compare(va, vb) > 0
	}
	return a.Tool.Sequence > b.Tool.Sequence
}

// LookupAsOf is AsOf for a reader that must not miss a version registered
// before the task: unless the registry has applied the log that far, it
// catches up first. Once caught up past created, it remembers so, and the
// next task as old asks nothing of the log.
func (r *Registry) LookupAsOf(ctx context.Context, log *eventlog.Log, tenant, name string, created uint64) (*Entry, error) {
	r.mu.RLock()
	complete := r.complete
	r.mu.RUnlock()
	if r.progress.Applied() < created && complete < created {
		// Every registration before created is on the log already (the
		// task is), so the last one now is at or past it.
		if err := r.Sync(ctx, log); err != nil {
			return nil, err
		}
		r.mu.Lock()
		r.complete = max(r.complete, created)
		r.mu.Unlock()
	}
	return r.AsOf(tenant, name, created)
}

// List returns the latest version of every tool tenant sees, its own and
// the global ones, by name.
func (r *Registry) List(tenant string) []*stewardv1.Tool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]*stewardv1.Tool, 0, len(r.latest))
	for k, e := range r.latest {
		if k.tenant == tenant || k.tenant == "" && r.keyOf(tenant, k.name) == k {
			out = append(out, proto.CloneOf(e.check().Tool))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Contract.Name < out[j].Contract.Name })
	return out
}

// Variants returns the latest version of every tool, of any tenant, whose
// name is name but for case, and not name itself, global ones first:
// registrations compare names without case (Lookup beside lookup reads
// as one tool to a person).
func (r *Registry) Variants(name string) []*stewardv1.Tool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var out []*stewardv1.Tool
	for k, e := range r.latest {
		if k.name != name && strings.EqualFold(k.name, name) {
			out = append(out, proto.CloneOf(e.check().Tool))
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		return a.Tenant < b.Tenant || a.Tenant == b.Tenant && a.Contract.Name < b.Contract.Name
	})
	return out
}
