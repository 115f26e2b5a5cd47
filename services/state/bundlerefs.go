package state

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// bundleRefs is what a bundle's tasks reference, gathered as their events
// are read (ExportBundle).
type bundleRefs struct {
	requests, results map[string]storedRef // by hash
	// tools: by name, the tenant and version pairs named.
	tools     map[string]map[[2]string]bool
	inputs    map[string]string // input hash → a task whose input it is
	revisions map[string]bool
}

// storedRef is a blob in a content-addressed store.
type storedRef struct{ ref, hash string }

func newBundleRefs() *bundleRefs {
	return &bundleRefs{requests: map[string]storedRef{}, results: map[string]storedRef{}, tools: map[string]map[[2]string]bool{},
		inputs: map[string]string{}, revisions: map[string]bool{}}
}

// noteEvent notes the snapshots and stored results ev carries.
func (r *bundleRefs) noteEvent(ev *stewardv1.Event) {
	for _, s := range []*stewardv1.PolicySnapshot{ev.GetPolicyEvaluated().GetSnapshot(), ev.GetActionPermitted().GetSnapshot(), ev.GetPlanEvaluated().GetSnapshot()} {
		if s != nil {
			if _, ok := r.inputs[s.InputHash]; !ok {
				r.inputs[s.InputHash] = ev.GetTaskId()
			}
			r.revisions[s.BundleRevision] = true
		}
	}
	if st := ev.GetActionSettled(); st != nil && st.ResultRef != "" {
		r.results[st.ResultHash] = storedRef{st.ResultRef, st.ResultHash}
	}
}

// noteTask notes the requests, results and tools of t's actions, and the
// content of its artifacts Steward stores (with the results: archiving a
// task purges its keys in the results bucket, docs/archives.md).
func (r *bundleRefs) noteTask(t *stewardv1.Task) {
	for _, a := range t.Artifacts {
		if strings.HasPrefix(a.Uri, storedPrefix) {
			r.results[a.Sha256] = storedRef{a.Uri, a.Sha256}
		}
	}
	for _, a := range t.Actions {
		if a.RequestRef != "" {
			r.requests[a.RequestHash] = storedRef{a.RequestRef, a.RequestHash}
		}
		if o := a.Outcome; o != nil && o.ResultRef != "" {
			r.results[o.ResultHash] = storedRef{o.ResultRef, o.ResultHash}
		}
		if r.tools[a.Tool] == nil {
			r.tools[a.Tool] = map[[2]string]bool{}
		}
		r.tools[a.Tool][[2]string{t.Tenant, a.ToolVersion}] = true
	}
}

func sorted(m map[string]storedRef) []storedRef {
	out := make([]storedRef, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, m[k])
	}
	return out
}

// sendTools sends the registrations of the tools named: every version of
// each registered globally or by a tenant of the tasks, as stored.
// Another tenant's registrations of the same name stay out.
func (s *auditService) sendTools(ctx context.Context, refs *bundleRefs, send func(*stewardv1.ExportBundleResponse) error) error {
	for _, name := range slices.Sorted(maps.Keys(refs.tools)) {
		tenants := map[string]bool{"": true}
		for k := range refs.tools[name] {
			tenants[k[0]] = true
		}
		raws, err := s.plane.log.ReadToolRaw(ctx, name)
		if err != nil {
			return fmt.Errorf("tool %s: %w", name, err)
		}
		for _, raw := range raws {
			ev, err := event.Open(raw.Data)
			if err != nil || ev.GetToolRegistered() == nil || !tenants[ev.GetToolRegistered().GetTenant()] {
				continue
			}
			if err := send(&stewardv1.ExportBundleResponse{Piece: &stewardv1.ExportBundleResponse_Tool{Tool: raw.Data}}); err != nil {
				return err
			}
		}
	}
	return nil
}

// sendPolicy sends each snapshot's recorded input and each revision's
// sources that the policy store holds.
func (s *auditService) sendPolicy(ctx context.Context, refs *bundleRefs, send func(*stewardv1.ExportBundleResponse) error) error {
	store := s.plane.cfg.Policy
	if store == nil {
		return nil
	}
	for _, h := range slices.Sorted(maps.Keys(refs.inputs)) {
		data, ok, err := store.Input(ctx, refs.inputs[h], h)
		if err != nil {
			return err
		}
		if ok {
			if err := send(&stewardv1.ExportBundleResponse{Piece: &stewardv1.ExportBundleResponse_Input{Input: &stewardv1.BundleBlob{Hash: h, Data: data}}}); err != nil {
				return err
			}
		}
	}
	for _, rev := range slices.Sorted(maps.Keys(refs.revisions)) {
		src, ok, err := store.Sources(ctx, rev)
		if err != nil {
			return err
		}
		if ok {
			if err := send(&stewardv1.ExportBundleResponse{Piece: &stewardv1.ExportBundleResponse_Policy{Policy: src}}); err != nil {
				return err
			}
		}
	}
	return nil
}
