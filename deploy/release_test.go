package deploy_test

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"debug/elf"
	"debug/macho"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// releaseImage is the image every manifest and the compose file name:
// the repository's, tagged with the VERSION file's version (scripts/release
// bump changes them together).
func releaseImage(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "VERSION"))
	if err != nil {
		t.Fatal(err)
	}
	v := strings.TrimSpace(string(b))
	if !regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$`).MatchString(v) {
		t.Fatalf("VERSION %q is not a version such as 0.36.0", v)
	}
	return "ghcr.io/steward-run/steward:" + v
}

// stewardVersion is what `steward version -o json` prints.
type stewardVersion struct {
	Version string `json:"version"`
	Commit  string `json:"commit"`
	Dirty   bool   `json:"dirty"`
	OS      string `json:"os"`
	Arch    string `json:"arch"`
}

func runVersion(t *testing.T, binary string) stewardVersion {
	t.Helper()
	out, err := exec.Command(binary, "version", "-o", "json").Output()
	if err != nil {
		t.Fatalf("%s version -o json: %v", binary, err)
	}
	var v stewardVersion
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatalf("%s version -o json printed %q: %v", binary, out, err)
	}
	return v
}

// gitHead is the commit the tests run at, and whether its tree has
// changes (as go's vcs.modified and scripts/release count them).
func gitHead(t *testing.T) (string, bool) {
	t.Helper()
	head, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatalf("git rev-parse HEAD: %v", err)
	}
	status, err := exec.Command("git", "status", "--porcelain").Output()
	if err != nil {
		t.Fatalf("git status: %v", err)
	}
	return strings.TrimSpace(string(head)), len(bytes.TrimSpace(status)) > 0
}

func TestImagesNameTheVersion(t *testing.T) {
	want := releaseImage(t)
	check := func(where, image string) {
		t.Helper()
		if strings.HasPrefix(image, "nats:") {
			return
		}
		if image != want {
			t.Errorf("%s: image %q, want %q (VERSION; scripts/release bump VERSION changes every one)", where, image, want)
		}
	}
	p, err := loadCompose(t, filepath.Join("..", "docker-compose.yml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range p.Services {
		check("docker-compose.yml service "+s.Name, s.Image)
	}
	for _, overlay := range []string{"dev", "prod"} {
		m := loadManifests(t, overlay)
		var pods []corev1.PodSpec
		for _, d := range m.deployments {
			pods = append(pods, d.Spec.Template.Spec)
		}
		for _, s := range m.statefuls {
			pods = append(pods, s.Spec.Template.Spec)
		}
		var n int
		for _, pod := range pods {
			for _, c := range slices.Concat(pod.InitContainers, pod.Containers) {
				check("overlays/"+overlay+" container "+c.Name, c.Image)
				if c.Image == want {
					n++
				}
			}
		}
		if n < len(planes)+1 {
			t.Errorf("overlays/%s: %d containers run %s, want every plane's and the gateway's", overlay, n, want)
		}
	}
}

// dockerBuild is the Dockerfile's RUN that builds steward, its lines
// joined, as the shell that runs it sees it.
func dockerBuild(t *testing.T) (string, []string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	src := strings.ReplaceAll(string(b), "\\\n", " ")
	var run string
	var args []string
	for line := range strings.Lines(src) {
		instr, rest, _ := strings.Cut(strings.TrimSpace(line), " ")
		switch strings.ToUpper(instr) {
		case "ARG":
			name, _, _ := strings.Cut(strings.TrimSpace(rest), "=")
			args = append(args, name)
		case "RUN":
			if strings.Contains(rest, "go build") {
				run = rest
			}
		}
	}
	if run == "" {
		t.Fatal("Dockerfile: no RUN go build")
	}
	return run, args
}

// TestDockerfileStampsTheVersion runs the Dockerfile's own build command,
// as docker would with --build-arg VERSION and COMMIT, and asks the
// binary it makes what it is: the same stamp scripts/release sets.
func TestDockerfileStampsTheVersion(t *testing.T) {
	if testing.Short() {
		t.Skip("builds steward")
	}
	run, args := dockerBuild(t)
	for _, want := range []string{"VERSION", "COMMIT", "TARGETOS", "TARGETARCH"} {
		if !slices.Contains(args, want) {
			t.Errorf("Dockerfile: no ARG %s (have %q)", want, args)
		}
	}
	script, err := os.ReadFile(filepath.Join("..", "scripts", "release"))
	if err != nil {
		t.Fatal(err)
	}
	const symbol = "github.com/steward-run/steward/cmd/steward/app.stamp"
	if !strings.Contains(run, "-X "+symbol+"=${VERSION},${COMMIT}") || !bytes.Contains(script, []byte("stamp_symbol="+symbol)) {
		t.Fatalf("the Dockerfile (%q) and scripts/release must both set -X %s=VERSION,COMMIT", run, symbol)
	}
	build, _, _ := strings.Cut(run, "&&")
	dir := t.TempDir()
	build = strings.Replace(build, "-o /steward", "-o "+filepath.Join(dir, "steward"), 1)
	cmd := exec.Command("sh", "-c", build)
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(), "VERSION=9.8.7-docker", "COMMIT=0123abcd", "TARGETOS="+runtime.GOOS, "TARGETARCH="+runtime.GOARCH)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", build, err, out)
	}
	got := runVersion(t, filepath.Join(dir, "steward"))
	if got.Version != "9.8.7-docker" || got.Commit != "0123abcd" || got.Dirty {
		t.Errorf("the Dockerfile's build says %+v, want version 9.8.7-docker, commit 0123abcd, not dirty", got)
	}
}

// TestPlainBuildKnowsItsCommit: go build (and go install) with no
// -ldflags, in a git checkout, prints the commit from the build info
// the toolchain recorded.
func TestPlainBuildKnowsItsCommit(t *testing.T) {
	if testing.Short() {
		t.Skip("builds steward")
	}
	// A linked worktree's .git is a file, and the go command takes only a
	// .git directory for a repository (golang/go#58218): it records no
	// commit there. CI builds in a clone.
	if fi, err := os.Stat(filepath.Join("..", ".git")); err == nil && !fi.IsDir() {
		t.Skip("a linked git worktree: the go command records no vcs information in one")
	}
	bin := filepath.Join(t.TempDir(), "steward")
	// No -ldflags, the point here; CGO_ENABLED=0 and -trimpath only so its
	// packages come from the build cache scripts/release's filled for this
	// platform (TestReleaseArchives), not a fifth cold compile in CI.
	build := exec.Command("go", "build", "-trimpath", "-buildvcs=true", "-o", bin, "../cmd/steward")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	head, dirty := gitHead(t)
	got := runVersion(t, bin)
	if got.Commit != head || got.Dirty != dirty || got.Version == "" {
		t.Errorf("a plain go build says %+v, want commit %s, dirty %v", got, head, dirty)
	}
}

// archiveFile is one entry of a release archive.
type archiveFile struct {
	hdr  tar.Header
	body []byte
}

func readArchive(t *testing.T, path string) []archiveFile {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if !zr.ModTime.IsZero() || zr.Name != "" {
		t.Errorf("%s: gzip header records time %v, name %q; want neither (gzip -n)", path, zr.ModTime, zr.Name)
	}
	tr := tar.NewReader(zr)
	var files []archiveFile
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		body, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, archiveFile{*hdr, body})
	}
}

// readSums reads SHA256SUMS: "HEX  NAME" lines.
func readSums(t *testing.T, dir string) map[string]string {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sums := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		sum, name, ok := strings.Cut(sc.Text(), "  ")
		if !ok {
			t.Fatalf("SHA256SUMS line %q is not HEX  NAME", sc.Text())
		}
		sums[name] = sum
	}
	return sums
}

// binaryPlatform says which os/arch an executable is for, from its
// headers alone.
func binaryPlatform(body []byte) string {
	if f, err := elf.NewFile(bytes.NewReader(body)); err == nil {
		arch := map[elf.Machine]string{elf.EM_X86_64: "amd64", elf.EM_AARCH64: "arm64"}[f.Machine]
		if f.Type != elf.ET_EXEC || f.Class != elf.ELFCLASS64 {
			return "linux/not an executable"
		}
		return "linux/" + arch
	}
	if f, err := macho.NewFile(bytes.NewReader(body)); err == nil {
		arch := map[macho.Cpu]string{macho.CpuAmd64: "amd64", macho.CpuArm64: "arm64"}[f.Cpu]
		if f.Type != macho.TypeExec {
			return "darwin/not an executable"
		}
		return "darwin/" + arch
	}
	return "unknown"
}

func commitTime(t *testing.T) time.Time {
	t.Helper()
	out, err := exec.Command("git", "log", "-1", "--format=%ct", "HEAD").Output()
	if err != nil {
		t.Fatal(err)
	}
	sec, err := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return time.Unix(sec, 0)
}

// release runs scripts/release in the checkout at root (this one is
// ".."), with args after --out DIR, and returns DIR.
func release(t *testing.T, root string, args ...string) string {
	t.Helper()
	out := t.TempDir()
	cmd := exec.Command("./scripts/release", append([]string{"--out", out}, args...)...)
	cmd.Dir = root
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "SOURCE_DATE_EPOCH=") })
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("scripts/release in %s: %v\n%s", root, err, b)
	}
	return out
}

// cleanClone is a fresh clone of this repository at head, in a directory
// of another name: what a second machine would build from.
func cleanClone(t *testing.T, head string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "other")
	for _, args := range [][]string{
		{"clone", "--quiet", "--shared", "--no-checkout", "..", dir},
		{"-C", dir, "checkout", "--quiet", head},
	} {
		if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
			t.Fatalf("git %q: %v\n%s", args, err, out)
		}
	}
	return dir
}

var releasePlatforms = []string{"linux/amd64", "linux/arm64", "darwin/amd64", "darwin/arm64"}

// TestReleaseArchives runs scripts/release and checks what it made: four
// archives, the one for this machine byte-identical when built again from
// a clean clone elsewhere (from this tree when it has changes a clone would
// not), each holding a
// binary for its os/arch, a README and (when there is one) LICENSE, in a
// fixed order with fixed owners, modes and times; SHA256SUMS matching
// them; and the binary for this machine reporting the version and commit
// it was built with.
func TestReleaseArchives(t *testing.T) {
	if testing.Short() {
		t.Skip("cross-compiles steward four times")
	}
	const version = "0.0.0-test.1"
	native := runtime.GOOS + "/" + runtime.GOARCH
	if !slices.Contains(releasePlatforms, native) {
		native = "linux/amd64"
	}
	first := release(t, "..", version)
	head, dirty := gitHead(t)
	// One platform again, not four: the second build's packages come from
	// the build cache (the same flags and, with -trimpath, no paths), so it
	// links, stamps, tars and gzips again, which is what could differ.
	elsewhere := ".."
	if !dirty {
		elsewhere = cleanClone(t, head)
	}
	second := release(t, elsewhere, "--platform", native, version)
	mtime := commitTime(t)
	sums := readSums(t, first)
	if len(sums) != len(releasePlatforms) {
		t.Errorf("SHA256SUMS names %d files, want %d: %v", len(sums), len(releasePlatforms), sums)
	}
	for _, p := range releasePlatforms {
		name := "steward_" + version + "_" + strings.ReplaceAll(p, "/", "_")
		a, err := os.ReadFile(filepath.Join(first, name+".tar.gz"))
		if err != nil {
			t.Fatal(err)
		}
		if b, err := os.ReadFile(filepath.Join(second, name+".tar.gz")); p == native && (err != nil || !bytes.Equal(a, b)) {
			t.Errorf("%s: built again in %s, a different archive (err %v): not reproducible", name, elsewhere, err)
		}
		if sum := sha256.Sum256(a); sums[name+".tar.gz"] != hex.EncodeToString(sum[:]) {
			t.Errorf("%s.tar.gz: SHA256SUMS says %q, the file's is %x", name, sums[name+".tar.gz"], sum)
		}
		files := readArchive(t, filepath.Join(first, name+".tar.gz"))
		checkArchive(t, name, files, mtime)
		bin := files[len(files)-1]
		if got := binaryPlatform(bin.body); got != p {
			t.Errorf("%s: steward is for %s, want %s", name, got, p)
		}
		if p != runtime.GOOS+"/"+runtime.GOARCH {
			continue
		}
		path := filepath.Join(t.TempDir(), "steward")
		if err := os.WriteFile(path, bin.body, 0o755); err != nil {
			t.Fatal(err)
		}
		got := runVersion(t, path)
		if got.Version != version || got.Commit != head || got.Dirty != dirty || got.OS+"/"+got.Arch != p {
			t.Errorf("%s: steward version says %+v, want %s at %s (dirty %v) for %s", name, got, version, head, dirty, p)
		}
	}
}

// checkArchive: the entries are NAME/, then its files in name order
// (LICENSE when the repository has one, README, steward), owned by 0:0,
// with the commit's time and fixed modes.
func checkArchive(t *testing.T, name string, files []archiveFile, mtime time.Time) {
	t.Helper()
	want := []string{name + "/"}
	if _, err := os.Stat(filepath.Join("..", "LICENSE")); err == nil {
		want = append(want, name+"/LICENSE")
	}
	want = append(want, name+"/README", name+"/steward")
	var got []string
	for _, f := range files {
		got = append(got, f.hdr.Name)
		mode := int64(0o644)
		if f.hdr.Typeflag == tar.TypeDir || strings.HasSuffix(f.hdr.Name, "/steward") {
			mode = 0o755
		}
		if f.hdr.Uid != 0 || f.hdr.Gid != 0 || f.hdr.Uname != "" || f.hdr.Gname != "" || !f.hdr.ModTime.Equal(mtime) || f.hdr.Mode != mode {
			t.Errorf("%s: %s is owned by %d:%d (%q:%q), mode %o, time %v; want 0:0, %o, %v",
				name, f.hdr.Name, f.hdr.Uid, f.hdr.Gid, f.hdr.Uname, f.hdr.Gname, f.hdr.Mode, f.hdr.ModTime, mode, mtime)
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("%s: entries %q, want %q", name, got, want)
	}
	if readme := string(files[len(files)-2].body); !strings.Contains(readme, "steward "+strings.Split(name, "_")[1]) {
		t.Errorf("%s: README does not name the version:\n%s", name, readme)
	}
}

// TestReleaseBump: scripts/release bump renames the image everywhere the
// VERSION is named, and refuses a version an image tag cannot carry
// (a tag is letters, digits, _ . and -: no + of semver build metadata).
func TestReleaseBump(t *testing.T) {
	dir := t.TempDir()
	base, _ := filepath.Glob(filepath.Join("k8s", "base", "*.yaml"))
	for i := range base {
		base[i] = filepath.Join("deploy", base[i])
	}
	for _, rel := range append(base, "scripts/release", "VERSION", "docker-compose.yml") {
		b, err := os.ReadFile(filepath.Join("..", rel))
		if err == nil {
			err = os.MkdirAll(filepath.Join(dir, filepath.Dir(rel)), 0o755)
		}
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, rel), b, 0o755)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	bump := func(v string) ([]byte, error) {
		cmd := exec.Command("./scripts/release", "bump", v)
		cmd.Dir = dir
		return cmd.CombinedOutput()
	}
	if out, err := bump("0.37.0+build.1"); err == nil {
		t.Errorf("bump 0.37.0+build.1 succeeded (%s); want refused: docker tags have no +", out)
	}
	if out, err := bump("9.8.7"); err != nil {
		t.Fatalf("bump 9.8.7: %v\n%s", err, out)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "deploy", "k8s", "base", "*.yaml"))
	var named int
	for _, f := range append(files, filepath.Join(dir, "docker-compose.yml"), filepath.Join(dir, "VERSION")) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range regexp.MustCompile(`ghcr\.io/steward-run/steward:[^\s"']+`).FindAll(b, -1) {
			if named++; string(m) != "ghcr.io/steward-run/steward:9.8.7" {
				t.Errorf("%s names %s after bump 9.8.7", f, m)
			}
		}
	}
	if v, _ := os.ReadFile(filepath.Join(dir, "VERSION")); string(v) != "9.8.7\n" || named < len(planes)+1 {
		t.Errorf("after bump 9.8.7: VERSION %q, the image named %d times", v, named)
	}
}
