package bucket

import (
	"log/slog"
	"strconv"
)

// WarnReplicas logs, at a process's start, a stream (a bucket's, the
// event log's, a timer stream) whose replica count is not the configured
// one, and leaves it as it is: a plane's NATS user may not update streams,
// and Steward never lowers a stream's replicas — that would drop copies an
// operator chose to keep. Fewer than configured names the command that
// raises them in place.
func WarnReplicas(log *slog.Logger, stream string, have, want int) {
	switch {
	case have < want:
		log.Warn("stream has fewer replicas than configured; raise it in place with `steward nats-streams --replicas "+strconv.Itoa(want)+"` (docs/cluster.md)",
			"stream", stream, "stream_replicas", have, "configured", want)
	case have > want:
		log.Warn("stream has more replicas than configured; leaving it as it is: Steward never lowers a stream's replicas",
			"stream", stream, "stream_replicas", have, "configured", want)
	}
}
