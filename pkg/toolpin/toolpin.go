// Package toolpin reads the entries of a contract's allowed tools: a bare
// name ("search") allows any version of the tool, a pin ("search@1.2.0")
// allows that version only. Every place that compares allowed tools with a
// tool — the control plane's proposals, the credential's coverage and
// narrowing — reads them here, so that they agree.
//
// The functions are pure and safe for concurrent use.
package toolpin

import "strings"

// Split returns the tool name and pinned version of an allowed-tools
// entry; version is "" for a bare name. The version is what follows the
// first "@": tool names hold no "@".
func Split(entry string) (name, version string) {
	name, version, _ = strings.Cut(entry, "@")
	return name, version
}

// Find returns the version allowed names pins for tool name: found is
// false when name is not allowed at all, version "" when any version is.
// Validation keeps a name to one entry; should a list hold more, a bare
// entry wins, then the first pin.
func Find(allowed []string, name string) (version string, found bool) {
	for _, e := range allowed {
		n, v := Split(e)
		if n != name {
			continue
		}
		if v == "" {
			return "", true
		}
		if !found {
			version, found = v, true
		}
	}
	return version, found
}

// Allows reports whether allowed lets a task call version of tool name.
func Allows(allowed []string, name, version string) bool {
	pin, found := Find(allowed, name)
	return found && (pin == "" || pin == version)
}

// Within reports whether entry keeps or narrows parent: a bare name needs
// the parent to allow any version, a pin needs the parent to allow that
// version (bare or pinned to the same).
func Within(parent []string, entry string) bool {
	name, version := Split(entry)
	pin, found := Find(parent, name)
	return found && (pin == "" || pin == version)
}
