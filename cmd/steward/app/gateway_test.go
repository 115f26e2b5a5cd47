package app

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	_ "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// TestEveryServiceHasOnePlane: the gateway's table names a plane for each
// service the descriptors compiled in define, and one only.
func TestEveryServiceHasOnePlane(t *testing.T) {
	routed := map[string]string{}
	for _, r := range PlaneRoutes() {
		if len(r.Services) == 0 {
			t.Errorf("the %s plane serves nothing", r.Plane)
		}
		for _, s := range r.Services {
			if other, ok := routed[s]; ok {
				t.Errorf("%s is routed to %s and %s", s, other, r.Plane)
			}
			routed[s] = r.Plane
		}
	}
	var defined []string
	protoregistry.GlobalFiles.RangeFilesByPackage("steward.v1", func(fd protoreflect.FileDescriptor) bool {
		for i := range fd.Services().Len() {
			defined = append(defined, string(fd.Services().Get(i).FullName()))
		}
		return true
	})
	for _, s := range defined {
		if routed[s] == "" {
			t.Errorf("no plane serves %s", s)
		}
	}
	if len(routed) != len(defined) {
		t.Errorf("routed %d services, the descriptors define %d: %v", len(routed), len(defined), defined)
	}
}

func TestGatewayFlagsAreChecked(t *testing.T) {
	planes := []string{"--control", "http://control:7700", "--governance", "http://governance:7700", "--execution", "http://execution:7700", "--state", "http://state:7700,https://state-2:7700"}
	without := func(flag string) []string {
		i := slices.Index(planes, flag)
		return slices.Delete(slices.Clone(planes), i, i+2)
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{without("--state"), "--state is required"},
		{without("--control"), "--control is required"},
		{append(without("--state"), "--state", "state:7700"), `-state: "state:7700" is not a replica's URL`},
		{append(without("--state"), "--state", "http://state:7700/api"), `"http://state:7700/api" is not a replica's URL`},
		{append(without("--execution"), "--execution", "ftp://execution"), `-execution: "ftp://execution"`},
		{append(without("--governance"), "--governance", "http://governance:7700,"), `-governance: "" is not a replica's URL`},
		{append(slices.Clone(planes), "--addr", "nonsense"), "--addr"},
		{append(slices.Clone(planes), "--health-check-every", "1ms"), "--health-check-every: 1ms is outside 100ms–1m"},
		{append(slices.Clone(planes), "--tls-cert", "cert.pem"), "--tls-cert and --tls-key go together"},
		{append(slices.Clone(planes), "--log-level", "loud"), "--log-level"},
		{append(slices.Clone(planes), "--plane-ca", "/no/such/ca.pem"), "--plane-ca"},
		{append(slices.Clone(planes), "--tls-cert", "/no/such/c.pem", "--tls-key", "/no/such/k.pem"), "--tls-cert/--tls-key"},
	} {
		var out, errs bytes.Buffer
		if code := Main(append([]string{"gateway"}, tt.args...), &out, &errs); code == 0 || !strings.Contains(errs.String(), tt.want) {
			t.Errorf("steward gateway %v: exit %d, said %q; want it to mention %q", tt.args, code, errs.String(), tt.want)
		}
	}
}
