package app

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"
)

// stamp is what a release build's linker writes, and the one
// package-level var here: -ldflags "-X …/app.stamp=VERSION,COMMIT[,dirty]"
// (scripts/release, the Dockerfile). -X sets only a package-level string,
// and nothing else in this package assigns it: its one writer runs before
// main. Empty in a plain go build, which reads the build info instead.
var stamp string

const versionUsage = `Usage:
  steward version [-o json]

Prints the version this binary was built as and the commit it was built
from, and says when that commit's tree had changes not committed. A release
build (scripts/release, the Dockerfile) is told both by -ldflags; a plain go
build or go install reads them from the module and git information the Go
toolchain records (docs/releases.md).
`

// buildInfo is what steward version prints.
type buildInfo struct {
	Version string `json:"version"`
	Commit  string `json:"commit,omitempty"`
	Dirty   bool   `json:"dirty"`
	Go      string `json:"go"`
	OS      string `json:"os"`
	Arch    string `json:"arch"`
}

// readBuildInfo is the stamp a release build carries, else what the
// toolchain recorded: go install module@v1.2.3 records the version, a
// build inside a git checkout the commit and whether it was modified.
func readBuildInfo(stamp string, info *debug.BuildInfo, ok bool) buildInfo {
	b := buildInfo{Version: "dev", Go: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH}
	if stamp != "" {
		parts := strings.Split(stamp, ",")
		b.Version = parts[0]
		if len(parts) > 1 {
			b.Commit = parts[1]
		}
		b.Dirty = len(parts) > 2 && parts[2] == "dirty"
		return b
	}
	if !ok {
		return b
	}
	if v := info.Main.Version; v != "" && v != "(devel)" {
		b.Version = v
	}
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			b.Commit = s.Value
		case "vcs.modified":
			b.Dirty = s.Value == "true"
		}
	}
	return b
}

func runVersion(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("steward version", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, versionUsage); fs.PrintDefaults() }
	var output string
	fs.StringVar(&output, "o", "", "`FORMAT`: json for scripts")
	fs.StringVar(&output, "output", "", "`FORMAT`: json for scripts (the same as -o)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return errUsage
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("steward version: unexpected argument %q", fs.Arg(0))
	}
	info, ok := debug.ReadBuildInfo()
	b := readBuildInfo(stamp, info, ok)
	switch output {
	case "json":
		return json.NewEncoder(stdout).Encode(b)
	case "":
		_, err := fmt.Fprintln(stdout, b)
		return err
	}
	return fmt.Errorf("-o %q: want json, or nothing for a line for people", output)
}

// String is the line for people:
// steward 0.36.0 (commit 1a2b…; go1.26.8 linux/amd64).
func (b buildInfo) String() string {
	commit := "commit unknown"
	if b.Commit != "" {
		commit = "commit " + b.Commit
	}
	if b.Dirty {
		commit += ", with changes not committed"
	}
	return fmt.Sprintf("steward %s (%s; %s %s/%s)", b.Version, commit, b.Go, b.OS, b.Arch)
}
