// Package taskstore reads and writes tasks on the event log: Load folds a
// task's events (keeping the last fold of each task, so a read applies
// only what is new), Update appends one event conditionally on the task's
// last sequence, and Revoked walks a delegation's credential chain. The
// fold itself is pkg/task, which does no I/O, so that an auditor replaying
// an export offline needs neither NATS nor anything else here.
package taskstore
