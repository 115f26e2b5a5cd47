// Package raceguard says whether this build checks that shared values are
// left as they were: the fold (pkg/task), the task store (pkg/taskstore)
// and the tool registry (pkg/toolreg) hand out parts they share instead of
// copies, and in race-detector builds they compare those parts on every
// read, so that a caller that changes one panics in the tests.
package raceguard
