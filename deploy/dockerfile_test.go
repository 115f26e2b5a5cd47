package deploy_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDockerfile(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	var froms, users, entrypoints []string
	var builds bool
	// A RUN continued over lines with \ is one instruction.
	for line := range strings.Lines(strings.ReplaceAll(string(b), "\\\n", " ")) {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		instr, rest, _ := strings.Cut(line, " ")
		switch strings.ToUpper(instr) {
		case "FROM":
			froms = append(froms, rest)
		case "USER":
			users = append(users, strings.TrimSpace(rest))
		case "ENTRYPOINT":
			entrypoints = append(entrypoints, strings.TrimSpace(rest))
		case "RUN":
			if strings.Contains(rest, "go build") && strings.Contains(rest, "./cmd/steward") {
				builds = true
				if !strings.Contains(rest, "CGO_ENABLED=0") {
					t.Errorf("go build is not CGO_ENABLED=0; a static runtime image needs a static binary")
				}
			}
		}
	}
	if len(froms) < 2 {
		t.Fatalf("FROM lines = %q, want a multi-stage build", froms)
	}
	// --platform=$BUILDPLATFORM: the build stage cross-compiles.
	if build := strings.TrimPrefix(froms[0], "--platform=$BUILDPLATFORM "); !strings.HasPrefix(build, "golang:1.26") {
		t.Errorf("build stage FROM %q, want golang:1.26", froms[0])
	}
	if !builds {
		t.Error("no RUN go build ... ./cmd/steward")
	}
	if _, err := os.Stat(filepath.Join("..", "cmd", "steward")); err != nil {
		t.Errorf("Dockerfile builds ./cmd/steward: %v", err)
	}
	if len(users) == 0 {
		t.Error("no USER: the image would run as root")
	} else if u := users[len(users)-1]; u == "root" || u == "0" || strings.HasPrefix(u, "0:") || strings.HasPrefix(u, "root:") {
		t.Errorf("final USER %q is root", u)
	}
	if len(entrypoints) == 0 || entrypoints[len(entrypoints)-1] != `["/steward"]` {
		t.Errorf("ENTRYPOINT = %q, want [\"/steward\"]", entrypoints)
	}
}
