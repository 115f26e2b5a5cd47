package policy

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
)

// decisionQuery is the one document a bundle must define.
const decisionQuery = "data.steward.policy.decision"

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
	h := sha256.New()
	for _, name := range names {
		// Length-prefix each part so no two bundles hash the same input
		// (moving bytes from one file's end to the next file's name, say).
		content := src.files[name]
		h.Write([]byte(strconv.Itoa(len(name)) + ":" + name + strconv.Itoa(len(content)) + ":"))
		h.Write(content)
	}
	src.revision = "sha256:" + hex.EncodeToString(h.Sum(nil))
	return src, nil
}

// compile parses the source's modules and prepares the decision query.
// origin prefixes file names in compile errors, so they point at the files
// an operator edits.
func compile(ctx context.Context, src source, origin string) (*bundle, error) {
	opts := []func(*rego.Rego){
		rego.Query(decisionQuery),
		rego.SetRegoVersion(ast.RegoV1),
	}
	for name, content := range src.files {
		opts = append(opts, rego.Module(filepath.Join(origin, filepath.FromSlash(name)), string(content)))
	}
	query, err := rego.New(opts...).PrepareForEval(ctx)
	if err != nil {
		return nil, fmt.Errorf("compile policy %s: %w", src.revision, err)
	}
	return &bundle{query: query, revision: src.revision}, nil
}
