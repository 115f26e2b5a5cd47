package policy

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/version"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// decisionQuery is the one document a bundle must define.
const decisionQuery = "data.steward.policy.decision"

// planQuery is the document that judges a whole plan, in the package
// planPackage; a bundle without that package has no plan rule
// (Engine.EvaluatePlan).
const (
	planQuery   = "data.steward.plan.decision"
	planPackage = "data.steward.plan"

	// revisionQuery judges a proposed revision of a task's contract, in
	// revisionPackage (Engine.EvaluateRevision).
	revisionQuery   = "data.steward.revision.decision"
	revisionPackage = "data.steward.revision"
)

//go:embed default/*.rego
var defaultFiles embed.FS

// defaultBundle is the bundle Load uses for an empty directory.
var defaultBundle = mustSub(defaultFiles, "default")

func mustSub(fsys fs.FS, dir string) fs.FS {
	sub, err := fs.Sub(fsys, dir)
	if err != nil {
		panic(err) // only if the embed pattern above is wrong
	}
	return sub
}

// bundle is one compiled revision of a policy. It is immutable once built,
// so any number of goroutines may evaluate it while a newer one is built.
type bundle struct {
	query    rego.PreparedEvalQuery
	revision string
	// planQuery is prepared only when the bundle defines planPackage.
	planQuery   rego.PreparedEvalQuery
	hasPlanRule bool
	// revisionQuery likewise, for revisionPackage.
	revisionQuery   rego.PreparedEvalQuery
	hasRevisionRule bool
	// sources are what governance keeps of the revision for auditors.
	sources *stewardv1.PolicySources
}

// source is the policy files of a bundle, by slash-separated path relative
// to the bundle root.
type source struct {
	files    map[string][]byte
	revision string
}

// isPolicyFile reports whether a bundle file is policy that gets evaluated.
// Tests (*_test.rego) are left out of both the compiled bundle and the
// revision: they do not decide anything, so editing one is not a new policy.
func isPolicyFile(name string) bool {
	return strings.HasSuffix(name, ".rego") && !strings.HasSuffix(name, "_test.rego")
}

// readSource reads every policy file under fsys, in subdirectories too, and
// computes the bundle revision over them.
func readSource(fsys fs.FS) (source, error) {
	src := source{files: map[string][]byte{}}
	var names []string
	err := fs.WalkDir(fsys, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || !isPolicyFile(name) {
			return nil
		}
		content, err := fs.ReadFile(fsys, name)
		if err != nil {
			return err
		}
		src.files[name] = content
		names = append(names, name)
		return nil
	})
	if err != nil {
		return source{}, err
	}
	if len(names) == 0 {
		return source{}, errors.New("no .rego policy files")
	}
	// WalkDir visits in lexical order, so names is already sorted: the
	// revision does not depend on how the directory lists its entries.
	src.revision = revisionOf(src.files, names)
	return src, nil
}

// revisionOf is the revision of a bundle of files, whose paths, sorted,
// are names.
func revisionOf(files map[string][]byte, names []string) string {
	h := sha256.New()
	for _, name := range names {
		// Length-prefix each part so no two bundles hash the same input
		// (moving bytes from one file's end to the next file's name, say).
		content := files[name]
		h.Write([]byte(strconv.Itoa(len(name)) + ":" + name + strconv.Itoa(len(content)) + ":"))
		h.Write(content)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// sources is src as governance keeps it for auditors: every file, sorted,
// and the OPA version that evaluates it.
func (src source) sources() *stewardv1.PolicySources {
	out := &stewardv1.PolicySources{Revision: src.revision, OpaVersion: version.Version}
	for _, name := range slices.Sorted(maps.Keys(src.files)) {
		out.Files = append(out.Files, &stewardv1.PolicyFile{Path: name, Content: src.files[name]})
	}
	return out
}

// compile parses the source's modules and prepares the decision query,
// and the plan query when a module is in planPackage, without the
// built-ins a bundle may not use (determinism.go). origin prefixes
// file names in compile errors, so they point at the files an operator
// edits.
func compile(ctx context.Context, src source, origin string) (*bundle, error) {
	modules := make([]func(*rego.Rego), 0, len(src.files))
	hasPlanRule, hasRevisionRule := false, false
	for name, content := range src.files {
		path := filepath.Join(origin, filepath.FromSlash(name))
		modules = append(modules, rego.Module(path, string(content)))
		if m, err := ast.ParseModuleWithOpts(path, string(content), ast.ParserOptions{RegoVersion: ast.RegoV1}); err == nil {
			hasPlanRule = hasPlanRule || m.Package.Path.String() == planPackage
			hasRevisionRule = hasRevisionRule || m.Package.Path.String() == revisionPackage
		}
	}
	prepare := func(query string) (rego.PreparedEvalQuery, error) {
		opts := append([]func(*rego.Rego){rego.Query(query), rego.SetRegoVersion(ast.RegoV1), rego.Capabilities(capabilities())}, modules...)
		q, err := rego.New(opts...).PrepareForEval(ctx)
		if err != nil {
			return q, fmt.Errorf("compile policy %s: %w", src.revision, explainRefusal(src.files, origin, err))
		}
		return q, nil
	}
	query, err := prepare(decisionQuery)
	if err != nil {
		return nil, err
	}
	b := &bundle{query: query, revision: src.revision, hasPlanRule: hasPlanRule, hasRevisionRule: hasRevisionRule, sources: src.sources()}
	if hasPlanRule {
		if b.planQuery, err = prepare(planQuery); err != nil {
			return nil, err
		}
	}
	if hasRevisionRule {
		if b.revisionQuery, err = prepare(revisionQuery); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// withSources is r with the sources of the bundle that decided it.
func (b *bundle) withSources(r Result) Result {
	r.Sources = b.sources
	return r
}
