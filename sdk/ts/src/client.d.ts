// Declarations for client.js: the wrapper over the generated stubs.
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { CallOptions, Client, Transport } from "@connectrpc/connect";
import type { ActionService } from "./gen/steward/v1/action_service_pb.js";
import type { AuditService } from "./gen/steward/v1/audit_service_pb.js";
import type { DeadLetterService } from "./gen/steward/v1/dead_letter_service_pb.js";
import type { GovernanceService } from "./gen/steward/v1/governance_service_pb.js";
import type { QueryService } from "./gen/steward/v1/query_service_pb.js";
import type {
  AttachContextResponse, HeartbeatResponse, ProposeActionRequestSchema, RecordDecisionResponse, SubmitPlanResponse, TaskService,
} from "./gen/steward/v1/task_service_pb.js";
import type { ListDecisionsResponse } from "./gen/steward/v1/query_service_pb.js";
import type { ContextItemSchema, Decision, DecisionSchema } from "./gen/steward/v1/decision_pb.js";
import type { EventRecord } from "./gen/steward/v1/event_pb.js";
import type { PlanSchema } from "./gen/steward/v1/plan_pb.js";
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

export interface WatchOptions {
  /** Events after this sequence; 0 (the default): from the task's first. */
  afterSequence?: bigint | number;
  /** Ends the watch: the loop throws a StewardError canceled. */
  signal?: AbortSignal;
  /** Called each time a stream opens, with the task's last sequence then. */
  onLive?: (lastSequence: bigint) => void;
}

export interface KeepAliveOptions {
  /** Between heartbeats; 30 s by default. The first is sent at once. */
  intervalMs?: number;
  /** Each answer, or a failed heartbeat's error. */
  onBeat?: (answer: HeartbeatResponse | undefined, error: StewardError | undefined) => void;
  /** What the agent is doing, for the timeline. */
  note?: string;
}

export type PageOptions = CallOptions & { pageToken?: string; pageSize?: number };

export interface StewardClient {
  tasks: Client<typeof TaskService>;
  query: Client<typeof QueryService>;
  governance: Client<typeof GovernanceService>;
  actions: Client<typeof ActionService>;
  tools: Client<typeof ToolService>;
  audit: Client<typeof AuditService>;
  deadLetters: Client<typeof DeadLetterService>;
  proposeAndWait(taskId: string, action: ActionProposal, opts?: ProposeAndWaitOptions): Promise<Settled>;
  /** The task's events, in order, each once: a broken stream resumes from the last one yielded. */
  watchTask(taskId: string, opts?: WatchOptions): AsyncGenerator<EventRecord, void, undefined>;
  /** Says the agent is at work: answers "still working?", resumes a task suspended for its silence. */
  heartbeat(taskId: string, note?: string, opts?: CallOptions): Promise<HeartbeatResponse>;
  /** Heartbeats every opts.intervalMs until the returned stop() (which resolves once it has stopped). */
  keepAlive(taskId: string, opts?: KeepAliveOptions): () => Promise<void>;
  /** SubmitPlan under opts.requestId, chosen once when empty. */
  submitPlan(taskId: string, plan: MessageInitShape<typeof PlanSchema>, opts?: CallOptions & { requestId?: string }): Promise<SubmitPlanResponse>;
  /** RecordDecision under decision.decisionId, chosen once when empty. */
  recordDecision(taskId: string, decision: MessageInitShape<typeof DecisionSchema>, opts?: CallOptions): Promise<RecordDecisionResponse>;
  /** AttachContext under item.contextId, chosen once when empty. */
  attachContext(taskId: string, item: MessageInitShape<typeof ContextItemSchema>, opts?: CallOptions): Promise<AttachContextResponse>;
  /** One page of the task's decisions. */
  listDecisions(taskId: string, opts?: PageOptions): Promise<ListDecisionsResponse>;
  /** Every decision the task recorded, page after page. */
  allDecisions(taskId: string, opts?: CallOptions): Promise<Decision[]>;
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
