// Package canary runs sample tasks against a Steward and judges them: a
// definition names the tools (each pointed at a staging endpoint or a
// recording stub), a budget cap, and samples (normal, edge and
// expected-failure inputs, each a contract with acceptance criteria and a
// plan or scripted agent steps); the runner drives them as real tasks
// through the Go SDK; the comparison with the last accepted baseline is
// pure. Starting the Steward they run against is the command's business
// (cmd/steward/app), not this package's. See docs/canary.md.
package canary
