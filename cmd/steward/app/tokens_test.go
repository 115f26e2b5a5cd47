package app

import (
	"os"
	"sync"
	"testing"

	"github.com/steward-run/steward/pkg/rpc"
)

// TestTwoFirstStartsShareOneTokenFile: starts racing on a new data
// directory each get a whole token file, the same one — never one another
// is still writing, which would not parse.
func TestTwoFirstStartsShareOneTokenFile(t *testing.T) {
	for range 20 {
		dir := t.TempDir()
		var wg sync.WaitGroup
		got := make([]rpc.Tokens, 4)
		errs := make([]error, len(got))
		created := make([]bool, len(got))
		for i := range got {
			wg.Go(func() {
				var path string
				if path, created[i], errs[i] = devTokens(dir); errs[i] == nil {
					got[i], errs[i] = rpc.LoadTokens(path)
				}
			})
		}
		wg.Wait()
		n := 0
		for i := range got {
			if errs[i] != nil {
				t.Fatalf("start %d: %v", i, errs[i])
			}
			if created[i] {
				n++
			}
			if len(got[i]) != len(devIdentities) {
				t.Fatalf("start %d read %d tokens, want %d", i, len(got[i]), len(devIdentities))
			}
			for token := range got[0] {
				if _, ok := got[i][token]; !ok {
					t.Fatalf("start %d read other tokens than start 0", i)
				}
			}
		}
		if n != 1 {
			t.Fatalf("%d starts say they created the file, want 1", n)
		}
		entries, err := os.ReadDir(dir)
		if err != nil || len(entries) != 1 {
			t.Fatalf("the data directory holds %v (%v), want the token file alone", entries, err)
		}
		if fi, err := os.Stat(dir + "/" + TokensFileName); err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("the token file: %v, %v; want mode 0600", fi, err)
		}
	}
}
