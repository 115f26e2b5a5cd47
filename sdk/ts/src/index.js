// The Steward client: the wrapper, and the generated messages and enums
// callers name most.
export * from "./client.js";
export { ActionStatus } from "./gen/steward/v1/action_pb.js";
export { TaskStatus } from "./gen/steward/v1/task_pb.js";
export { RiskTier } from "./gen/steward/v1/risk_pb.js";
