package e2e_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"

	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// TestNewTypesAreReactedToBeforeTheyAreWritten: a plane upgraded in the
// documented order (upgradeOrder) takes every event type added since the
// last release (proto/baseline.binpb.gz) before any plane writes it. A durable
// consumer whose filter a newer replica widens passes over, for good, the
// events stored before on the subject it adds (docs/compatibility.md,
// rule 3), so a type one plane writes and another reacts to must have the
// reacting plane upgraded first; a change that breaks this needs a gate
// or another order, and this test says which type.
func TestNewTypesAreReactedToBeforeTheyAreWritten(t *testing.T) {
	h := startSteward(t, setup{nats: true})
	_, stream := h.events(t)
	released := releasedTypes(t)
	filters := map[string][]string{}
	stewardtest.Eventually(t, 30*time.Second, func() (bool, string) {
		filters = reactionFilters(t, stream)
		return len(filters) >= 3, "durable consumers on the event stream: " + strings.Join(slices.Sorted(maps.Keys(filters)), ", ")
	})
	checked := 0
	for plane, subjects := range filters {
		for _, subj := range subjects {
			typ := typeOfSubject(subj)
			owner := event.Owner(typ)
			if owner == "" {
				t.Errorf("%s reacts to %s, which no plane owns", plane, subj)
				continue
			}
			checked++
			if released[typ] || owner == plane {
				continue
			}
			if slices.Index(upgradeOrder, plane) > slices.Index(upgradeOrder, owner) {
				t.Errorf("%s (new since the last release) is written by %s and reacted to by %s, which a rolling upgrade replaces after it: "+
					"events %s writes before then are passed over by %s's consumer for good", typ, owner, plane, owner, plane)
			}
		}
	}
	if checked < 10 {
		t.Fatalf("checked only %d reactions: %v", checked, filters)
	}
}

// reactionFilters returns each plane's durable consumer's filter subjects.
func reactionFilters(t *testing.T, stream jetstream.Stream) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	lister := stream.ListConsumers(context.Background())
	for info := range lister.Info() {
		c := info.Config
		if c.Durable == "" {
			continue // a follower, which reads every type
		}
		if !slices.Contains(upgradeOrder, c.Durable) {
			t.Fatalf("durable consumer %q on the event stream: say which plane runs it", c.Durable)
		}
		out[c.Durable] = append(slices.Clone(c.FilterSubjects), c.FilterSubject)
		out[c.Durable] = slices.DeleteFunc(out[c.Durable], func(s string) bool { return s == "" })
	}
	if err := lister.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// typeOfSubject is the event type of a filter subject of
// eventlog.TypeFilter's shape, <chain prefix>.*.<type>.
func typeOfSubject(subject string) string {
	_, typ, _ := strings.Cut(subject, ".*.")
	return typ
}

// releasedTypes are the event types of the last release: the payloads of
// Event in proto/baseline.binpb.gz, named by this build.
func releasedTypes(t *testing.T) map[string]bool {
	t.Helper()
	raw, err := os.ReadFile("../proto/baseline.binpb.gz")
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	var set descriptorpb.FileDescriptorSet
	if err := proto.Unmarshal(data, &set); err != nil {
		t.Fatal(err)
	}
	fields := (&stewardv1.Event{}).ProtoReflect().Descriptor().Fields()
	out := map[string]bool{}
	for _, f := range set.File {
		for _, m := range f.MessageType {
			if f.GetPackage() != "steward.v1" || m.GetName() != "Event" {
				continue
			}
			for _, fd := range m.Field {
				if fd.OneofIndex == nil || m.OneofDecl[fd.GetOneofIndex()].GetName() != "payload" {
					continue
				}
				head := fields.ByNumber(protoreflect.FieldNumber(fd.GetNumber()))
				ev := &stewardv1.Event{}
				r := ev.ProtoReflect()
				r.Set(head, r.NewField(head))
				out[event.TypeOf(ev)] = true
			}
		}
	}
	if len(out) < 20 {
		t.Fatalf("the baseline names %d event types", len(out))
	}
	return out
}
