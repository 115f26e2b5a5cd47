// Package e2e holds Steward's end-to-end tests. They build the real
// steward binary (or run its Main in-process), drive it with the generated
// Connect client, a gRPC client and grpcurl when it is installed, and kill
// it with SIGKILL to check that nothing acknowledged is lost.
package e2e
