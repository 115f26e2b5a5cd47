package eventlog

import "errors"

// TaskIDRule says what ValidTaskID accepts, for error messages.
const TaskIDRule = "a task id is 1–64 ASCII letters, digits, '-' or '_'"

// ValidTaskID reports whether id can name a task: 1–64 ASCII letters,
// digits, '-' or '_', which keeps it one safe NATS subject token.
func ValidTaskID(id string) bool {
	if len(id) == 0 || len(id) > 64 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// ErrInvalidTaskID is returned for a task id that ValidTaskID rejects.
var ErrInvalidTaskID = errors.New("invalid task id: want 1-64 letters, digits, '-' or '_'")
