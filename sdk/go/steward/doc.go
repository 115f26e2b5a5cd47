// Package steward is the Go SDK for Steward's API: a small typed client
// over the one address Steward serves every service on (steward dev, or
// the gateway in front of the planes).
//
// Its reason to exist is what every agent must otherwise get right by
// hand. A command's id — a task's request id, a proposal's id, a
// decision's or context item's id — is chosen once per logical call, here
// when the caller leaves it empty, and sent again unchanged on every
// retry: a response lost after Steward committed the command then finds
// the command, and an action runs once. Only what may not have been
// answered is retried (Unavailable, DeadlineExceeded, a broken
// connection), with backoff; every other refusal comes back at once as an
// *Error naming its code and, for bad input, the field.
//
// It depends on the generated stubs and connect-go alone, never on the
// server's packages (TestTheSDKStandsAlone).
package steward
