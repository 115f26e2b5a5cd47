package natsperm

import (
	"slices"

	"github.com/steward-run/steward/pkg/action"
	"github.com/steward-run/steward/pkg/eventlog"
	"github.com/steward-run/steward/pkg/policystore"
)

// Archiver is the NATS user `steward archive run` connects as
// (docs/archives.md): the one user besides an operator's admin that may
// purge, and only the event log and the content buckets, after each tree
// it removes is written to the archive and read back. No
// plane may purge: a plane that could would be able to erase the history
// it is judged by.
const Archiver = "archiver"

// ContentBuckets are the buckets that keep content by task, which the
// archiver purges of the tasks it archived (pkg/archive).
func ContentBuckets() []string {
	return []string{action.RequestBucket, action.ResultBucket, policystore.Bucket}
}

// Users returns every NATS user this table describes, in a fixed order:
// the planes and the archiver.
func Users() []string { return append(Planes(), Archiver) }

// archiverGrants are the archiver's lines of the table. JetStream's purge
// request carries its subject filter in its body, which permissions do
// not see: the archiver's right is to purge the log at all, and what it
// purges is `steward archive`'s code (a task's subjects).
func archiverGrants() []Grant {
	events := eventlog.DefaultStream
	refused := slices.DeleteFunc(RefusedAPI(), func(s string) bool { return s == "$JS.API.STREAM.PURGE.>" })
	var info, purge []string
	for _, b := range ContentBuckets() {
		info, purge = append(info, "$JS.API.STREAM.INFO."+kvStream(b)), append(purge, "$JS.API.STREAM.PURGE."+kvStream(b))
	}
	return []Grant{
		{Subjects: []string{"$JS.API.INFO", "$JS.API.STREAM.INFO." + events}, Why: "look up the log and what a task holds on it"},
		{Subjects: []string{"$JS.API.STREAM.PURGE." + events}, Why: "remove the events of the tasks it archived (steward archive run)"},
		{Subjects: info, Why: "look up whether a content bucket takes purges"},
		{Subjects: purge, Why: "remove the stored requests, results and policy inputs of the tasks it archived, after their events"},
		{Deny: true, Subjects: refused, Why: "never delete a stream, a message or a consumer, nor reshape a stream"},
		{Subscribe: true, Subjects: []string{Inbox(Archiver) + ".>"}, Why: "its own replies"},
	}
}
