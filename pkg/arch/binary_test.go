package arch

import (
	"os/exec"
	"strings"
	"testing"
)

// TestTheBinaryLinksNoGRPC: the steward binary links neither gRPC (Connect
// serves the gRPC protocol without it) nor what came with OpenTelemetry's
// OTLP exporters, which pkg/tracing replaces with its own. Every linked
// package costs resident memory in every Steward (issue 13's bound on an
// idle one): gRPC brought golang.org/x/net/trace, whose html/template
// made the linker keep every exported method of every type, 17 MB of the
// binary and 13 MB of an idle process's memory.
func TestTheBinaryLinksNoGRPC(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", module+"cmd/steward").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	banned := []string{
		"google.golang.org/grpc",
		"github.com/grpc-ecosystem/",
		"go.opentelemetry.io/proto/otlp/collector/",
		"go.opentelemetry.io/otel/exporters/",
		"golang.org/x/net/trace",
		"html/template",
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, b := range banned {
			if dep == b || strings.HasPrefix(dep, strings.TrimSuffix(b, "/")+"/") {
				t.Errorf("cmd/steward links %s (go mod why -m / go list -deps say through what)", dep)
			}
		}
	}
}
