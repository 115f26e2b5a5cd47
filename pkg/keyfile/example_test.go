package keyfile_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/steward-run/steward/pkg/keyfile"
)

func ExampleCreate() {
	dir, _ := os.MkdirTemp("", "keyfile")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "secret.key")
	for _, key := range []string{"first", "second"} {
		created, err := keyfile.Create(path, []byte(key+"\n"))
		fmt.Println(created, err)
	}
	b, _ := os.ReadFile(path)
	fmt.Print(string(b))
	// Output:
	// true <nil>
	// false <nil>
	// first
}
