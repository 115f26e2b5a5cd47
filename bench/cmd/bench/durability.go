package main

import (
	"fmt"
	"strings"
)

// pairing is a Steward arm and a peer's (DBOS, Restate) that acknowledge
// at the same durability.
type pairing struct{ steward, peer, durability string }

const (
	unsynced = "before the disk: page cache / asynchronous commit"
	synced   = "synced to disk at every acknowledgement"
)

// pairings are what the report compares at equal durability, each when
// both its arms ran: Steward's default against PostgreSQL's asynchronous
// commit (neither waits for the disk), then Steward with --sync always
// against PostgreSQL's default and Restate's (all do). (b3) takes (b1)'s path, so
// (b1) is its like against (e1a) and (e2a); (b) is there for the run
// that has no (b1).
var pairings = []pairing{
	{"dev-allow", "dbos-wf1-async", unsynced},
	{"dev-allow", "dbos-step10-async", unsynced},
	{"dev-allow-1rt", "dbos-wf1-async", unsynced},
	{"dev-allow-1rt", "dbos-step10-async", unsynced},
	{"dev-allow-sync", "dbos-wf1", synced},
	{"dev-allow-sync", "dbos-step10", synced},
	{"dev-allow-sync", "restate-call1", synced},
	{"dev-allow-sync", "restate-step10", synced},
}

// equalDurability is the table of the pairings that ran, Steward's
// medians over the peer's; empty if none did.
func (r *report) equalDurability() string {
	var b strings.Builder
	for _, p := range pairings {
		if len(r.results[p.steward]) == 0 || len(r.results[p.peer]) == 0 {
			continue
		}
		if b.Len() == 0 {
			b.WriteString("| acknowledged | Steward | peer | p50, Steward / peer | 16 at once | CPU per action |\n")
			b.WriteString("| --- | --- | --- | ---: | ---: | ---: |\n")
		}
		cell := func(f func(Result) float64, format string) string {
			s, d := r.med(p.steward, f), r.med(p.peer, f)
			return fmt.Sprintf("%s ("+format+" / "+format+")", ratio(s, d), s, d)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", p.durability, label(p.steward), label(p.peer),
			cell(p50, "%.2f ms"), cell(tput, "%.0f/s"), cell(cpu, "%.3f ms"))
	}
	return b.String()
}

// label is an arm's letter and id, "(b3) dev-allow-sync".
func label(id string) string {
	a, _ := find(id)
	letter, _, _ := strings.Cut(a.name, " ")
	return letter + " " + id
}

// durabilitySection is results.md's account of what each arm's
// acknowledgement has survived, and the equal-durability table.
func (r *report) durabilitySection() string {
	var b strings.Builder
	b.WriteString(`## Equal durability

What an acknowledged write has survived differs between the arms (the durability column), and the ratios
should be read with it:

- JetStream's file store as configured by default (every Steward arm but (b3) and (f), and (a); sync_interval two minutes)
  acknowledges an append once it is in the operating system's page cache: a crash of the process loses
  nothing acknowledged; a power loss or kernel panic can lose the last two minutes.
- ` + "`steward dev --sync always`" + ` (b3) syncs every append to disk before acknowledging it: a power loss loses
  nothing acknowledged, on a disk that honours flushes ([docs/storage.md](../docs/storage.md#durability)).
- R3 (f): an append is acknowledged once a majority of the three nodes (2 of 3) has stored it, each in its
  page cache: the loss of one node, power and all, loses nothing acknowledged; two at once can.
- PostgreSQL with synchronous_commit=on (e1, e2) flushes the commit's WAL to disk before acknowledging it,
  as (b3) does. With synchronous_commit=off (e1a, e2a; set on the arm's database before DBOS connects, and
  read back through DBOS's own pool) a commit is acknowledged before its WAL is flushed; the WAL writer
  flushes it within three times wal_writer_delay (200 ms by default, so 600 ms). A crash of the operating
  system, a power loss, or a crash of PostgreSQL itself (an immediate shutdown counts as one) can lose the
  commits of that window, never the database's consistency (PostgreSQL 15 documentation, 30.4
  Asynchronous Commit).
- Restate (r1, r2), one node as configured by default: its log-server syncs its RocksDB WAL at every write
  batch before it acknowledges the appends in it; appends that queue during a write share the next sync
  (restate v1.7.6, crates/log-server/src/rocksdb_logstore/writer.rs). Synced, as (b3) and (e1, e2).

So the pairings below are alike, not the same: neither side of the first waits for the disk, but
PostgreSQL's window is under a second and a crash of PostgreSQL alone can lose it, while JetStream's is two
minutes and a crash of the process loses nothing; both sides of the others flush before they acknowledge.
Ratios are Steward's median over the peer's (below 1× is faster for p50 and CPU, slower for throughput).

`)
	if t := r.equalDurability(); t != "" {
		b.WriteString(t)
	} else {
		b.WriteString("No pairing ran: it takes a Steward arm of (b), (b1) or (b3) and a DBOS or Restate arm at the same durability.\n")
	}
	return b.String()
}
