package toolpin_test

import (
	"fmt"
	"testing"

	"github.com/steward-run/steward/pkg/toolpin"
)

func TestAllows(t *testing.T) {
	allowed := []string{"search", "wire@1.2.0"}
	for _, tc := range []struct {
		name, version string
		want          bool
	}{
		{"search", "9.0.0", true}, // a bare name allows any version
		{"wire", "1.2.0", true},
		{"wire", "1.3.0", false}, // a pin allows its version only
		{"wire", "", false},
		{"shell", "1.0.0", false},
	} {
		if got := toolpin.Allows(allowed, tc.name, tc.version); got != tc.want {
			t.Errorf("Allows(%v, %s, %s) = %t, want %t", allowed, tc.name, tc.version, got, tc.want)
		}
	}
}

func TestWithin(t *testing.T) {
	parent := []string{"search", "wire@1.2.0"}
	for _, tc := range []struct {
		entry string
		want  bool
	}{
		{"search", true},
		{"search@2.0.0", true}, // a child may pin an unpinned tool
		{"wire@1.2.0", true},
		{"wire", false},       // unpinning widens
		{"wire@1.3.0", false}, // another version widens
		{"shell", false},
	} {
		if got := toolpin.Within(parent, tc.entry); got != tc.want {
			t.Errorf("Within(%v, %s) = %t, want %t", parent, tc.entry, got, tc.want)
		}
	}
}

func Example() {
	allowed := []string{"search", "wire@1.2.0"}
	fmt.Println(toolpin.Split("wire@1.2.0"))
	fmt.Println(toolpin.Find(allowed, "wire"))
	fmt.Println(toolpin.Allows(allowed, "search", "3.1.0"), toolpin.Allows(allowed, "wire", "1.3.0"))
	// Output:
	// wire 1.2.0
	// 1.2.0 true
	// true false
}
