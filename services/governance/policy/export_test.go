package policy

import "slices"

// RevisionOf is the revision of a bundle of files, for tests that build
// the sources Restore reads.
func RevisionOf(files map[string][]byte) string {
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	slices.Sort(names)
	return revisionOf(files, names)
}
