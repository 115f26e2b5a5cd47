// Package a2a serves Steward tasks to A2A clients: the agent card and the
// A2A JSON-RPC binding (protocol version ProtocolVersion), mapped onto the
// Connect API.
//
// Every A2A call is made again as Connect calls by the caller itself: the
// handler forwards the caller's Authorization (or, in the open mode, its
// Steward-Principal) header and holds no authority of its own, so the
// same tokens, tenants, roles and policy decide what an A2A client may do,
// and the receipts name it. A skill of the card is a contract template an
// operator configures (LoadSkills). An A2A context is a Steward task the
// client creates (its creator, so its agent in Steward's terms); each A2A
// task is a sub-task of it delegated to the skill's agent, who works it
// through the Connect API as any agent does. docs/a2a.md has the mapping.
//
// A Handler is safe for concurrent use.
package a2a

// ProtocolVersion is the A2A specification version served: the agent card
// says it, and the JSON-RPC binding follows it (a2a-go v0.3.3 and
// @a2a-js/sdk 0.3.x speak it).
const ProtocolVersion = "0.3.0"
