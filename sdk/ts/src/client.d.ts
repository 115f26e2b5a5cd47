// Declarations for client.js: the wrapper over the generated stubs.
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { CallOptions, Client, Transport } from "@connectrpc/connect";
import type { ActionService } from "./gen/steward/v1/action_service_pb.js";
import type { AuditService } from "./gen/steward/v1/audit_service_pb.js";
import type { DeadLetterService } from "./gen/steward/v1/dead_letter_service_pb.js";
import type { GovernanceService } from "./gen/steward/v1/governance_service_pb.js";
import type { QueryService } from "./gen/steward/v1/query_service_pb.js";
import type { ProposeActionRequestSchema, TaskService } from "./gen/steward/v1/task_service_pb.js";
import type { ToolService } from "./gen/steward/v1/tool_service_pb.js";
import type { Action, ActionStatus } from "./gen/steward/v1/action_pb.js";
import type { TaskStatus } from "./gen/steward/v1/task_pb.js";

/** RetryPolicy: how often and how far apart a retryable call is tried. */
export interface RetryPolicy {
  /** Attempts in all, the first included; 5 by default. */
  maxAttempts: number;
  /** The first backoff; 100 ms by default, doubling each time. */
  initialBackoffMs: number;
  /** The longest backoff; 5 s by default. */
  maxBackoffMs: number;
}

export declare const defaultRetry: Readonly<RetryPolicy>;

export interface ClientOptions {
  /** Steward's single address, e.g. http://127.0.0.1:7700. */
  baseUrl: string;
  /** Bearer token sent on every call. */
  token?: string;
  /** Use the binary protobuf codec instead of JSON. */
  binary?: boolean;
  retry?: Partial<RetryPolicy>;
  /** Each attempt's deadline; 30 s by default. */
  timeoutMs?: number;
  /** A transport to use instead of Connect over HTTP/1.1 (its own auth). */
  transport?: Transport;
  /** How backoff waits. */
  sleep?: (ms: number) => Promise<void>;
}

export type ActionProposal = Omit<MessageInitShape<typeof ProposeActionRequestSchema>, "taskId">;

export interface Settled {
  action: Action;
  taskStatus: TaskStatus;
  /** The action awaits an approval, or its outcome is unknown. */
  needsPerson: boolean;
}

export interface ProposeAndWaitOptions {
  /** Bounds the whole call; 60 s by default. */
  timeoutMs?: number;
  pollMs?: number;
}

export interface StewardClient {
  tasks: Client<typeof TaskService>;
  query: Client<typeof QueryService>;
  governance: Client<typeof GovernanceService>;
  actions: Client<typeof ActionService>;
  tools: Client<typeof ToolService>;
  audit: Client<typeof AuditService>;
  deadLetters: Client<typeof DeadLetterService>;
  proposeAndWait(taskId: string, action: ActionProposal, opts?: ProposeAndWaitOptions): Promise<Settled>;
}

export declare function createClient(options: ClientOptions): StewardClient;

export declare class StewardError extends Error {
  constructor(code: string, message: string, opts?: { field?: string; description?: string; cause?: unknown; attempts?: number });
  /** The Connect code's name: invalid_argument, not_found, unavailable, … */
  readonly code: string;
  /** The request field a refusal names (google.rpc.BadRequest), or "". */
  readonly field: string;
  readonly description: string;
  /** How many attempts were made. */
  readonly attempts: number;
}

export declare function codeName(code: number): string;
export declare function isNetworkError(err: unknown): boolean;
export declare function isRetryable(err: unknown): boolean;
export declare function toStewardError(err: unknown, attempts?: number): StewardError;
export declare function callWithRetry<T>(attempt: (opts: CallOptions) => Promise<T>, callOptions: CallOptions, retry: RetryPolicy, sleep?: (ms: number) => Promise<void>): Promise<T>;
export declare function isSettled(status: ActionStatus): boolean;
export declare function proposeAndWait(client: StewardClient, taskId: string, action: ActionProposal, opts?: ProposeAndWaitOptions): Promise<Settled>;
