// Package taskstore reads and writes tasks on the event log. A Store
// (New, one per log per process, held by stores.Set) keeps each task's
// fold, changed in place under the task's own lock, so that a read
// applies only what is new and a write copies nothing: Write appends one
// event conditionally on the task's last sequence, Load and Update hand
// out copies (which share the task's parts, its action entries among
// them: a caller copies a part before changing it), UpdateFrom writes on
// a task the caller already holds, and Revoked walks a delegation's
// credential chain. The fold itself is pkg/task, which does no I/O, so
// that an auditor replaying an export offline needs neither NATS nor
// anything else here.
package taskstore
