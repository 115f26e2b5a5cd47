package app

import (
	"bytes"
	"encoding/json"
	"runtime/debug"
	"strings"
	"testing"
)

func TestReadBuildInfo(t *testing.T) {
	vcs := &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "1a2b3c"}, {Key: "vcs.modified", Value: "true"},
	}}
	for _, tc := range []struct {
		name, stamp string
		info        *debug.BuildInfo
		ok          bool
		version     string
		commit      string
		dirty       bool
	}{
		{"release", "0.36.0,fc434ed", vcs, true, "0.36.0", "fc434ed", false},
		{"release from a modified tree", "0.36.0,fc434ed,dirty", nil, false, "0.36.0", "fc434ed", true},
		// The Dockerfile with no --build-arg COMMIT.
		{"image built without a commit", "dev,", nil, false, "dev", "", false},
		{"go build in a checkout", "", vcs, true, "dev", "1a2b3c", true},
		{"go install module@version", "", &debug.BuildInfo{Main: debug.Module{Version: "v0.36.0"}}, true, "v0.36.0", "", false},
		{"no build info", "", nil, false, "dev", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := readBuildInfo(tc.stamp, tc.info, tc.ok)
			if b.Version != tc.version || b.Commit != tc.commit || b.Dirty != tc.dirty {
				t.Errorf("readBuildInfo(%q) = %+v, want version %q commit %q dirty %v", tc.stamp, b, tc.version, tc.commit, tc.dirty)
			}
		})
	}
}

func TestVersionCommand(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := Main([]string{"version", "-o", "json"}, &out, &errOut); code != 0 {
		t.Fatalf("version -o json: exit %d: %s", code, errOut.String())
	}
	var b buildInfo
	if err := json.Unmarshal(out.Bytes(), &b); err != nil || b.Version == "" || b.Go == "" {
		t.Fatalf("version -o json printed %q (%v)", out.String(), err)
	}
	out.Reset()
	if code := Main([]string{"version"}, &out, &errOut); code != 0 || !strings.HasPrefix(out.String(), "steward "+b.Version+" (") {
		t.Errorf("version: exit %d, printed %q", code, out.String())
	}
	if code := Main([]string{"version", "-o", "yaml"}, &out, &errOut); code != 1 || !strings.Contains(errOut.String(), "want json") {
		t.Errorf("version -o yaml: exit %d, stderr %q; want 1 naming json", code, errOut.String())
	}
}
