package eventlog

// This file is the one place where the log reads what earlier builds wrote
// on the dead-letter stream (docs/compatibility.md). parseDeadLetter takes
// both shapes of a record's subject apart; what an older record means is
// here.

// unnamedConsumer reports whether a dead-letter record's consumer is
// unnamed: the record is of the older shape, steward.deadletter.<seq>,
// which builds before aa744e6 (2026-12-04; 2c26151 among them) wrote
// without the consumer that set it aside. It is listed and counted
// (UnnamedConsumer), never replayed: there is no consumer to hand it to.
func unnamedConsumer(consumer string) bool { return consumer == "" }

// consumerName is consumer for messages, or what an empty one means.
func consumerName(consumer string) string {
	if unnamedConsumer(consumer) {
		return "an unnamed consumer (a record of the older shape)"
	}
	return consumer
}
