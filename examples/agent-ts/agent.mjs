// The example agent's scenario, shortened, on the TypeScript client
// (sdk/ts): sync a few files from one toy store to another through
// governed HTTP tools, deciding each copy with a model first and
// recording why, then hand the result in and print the receipt.
//
// Its state is Steward's: started again after it left mid-way
// (--exit-after), it finds its task by its request id (--run), its
// decisions with allDecisions — the model is asked only for a file whose
// decision is not on the record — and its actions by their proposal ids,
// each copy's derived from its decision's. See docs/sdk-typescript.md.
//
//   go run ./cmd/steward dev &
//   go run ./examples/agent --fixtures-only --files 3 &     # prints "fixtures http://…"
//   node examples/agent-ts/agent.mjs --store http://…/store --model http://…/v1
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";

import { ActionStatus, createClient, RiskTier, StewardError, TaskStatus } from "../../sdk/ts/src/index.js";
import { DataSensitivity, EffectClass } from "../../sdk/ts/src/gen/steward/v1/tool_pb.js";

const { values: flags } = parseArgs({
  options: {
    steward: { type: "string", default: "http://127.0.0.1:7700" },
    tokens: { type: "string", default: ".steward/data/tokens.json" },
    store: { type: "string" },
    model: { type: "string" },
    run: { type: "string", default: "sync-ts-1" },
    files: { type: "string", default: "3" },
    "exit-after": { type: "string", default: "0" },
  },
});
if (!flags.store || !flags.model) throw new Error("--store and --model are required: run examples/agent --fixtures-only");
const files = Number(flags.files);
const tokens = Object.fromEntries(JSON.parse(readFileSync(flags.tokens, "utf8")).tokens.map((t) => [t.principal, t.token]));
const steward = createClient({ baseUrl: flags.steward, token: tokens["agent:dev"] });
const admin = createClient({ baseUrl: flags.steward, token: tokens["user:admin"] });
const fileName = (i) => `file-${String(i).padStart(2, "0")}.txt`;

// registerTools registers the store's and the model's tools, as an admin
// does once; the same contract again is already there.
async function registerTools() {
  const http = (name, path, effectClass) => ({
    name, version: "1", effectClass, dataSensitivity: DataSensitivity.INTERNAL, timeout: { seconds: 5n },
    retryPolicy: { maxAttempts: 3, initialBackoff: { nanos: 100_000_000 }, maxBackoff: { seconds: 1n } },
    idempotency: { honoursKey: true }, statusQuery: true,
    endpoint: { case: "http", value: { url: flags.store + path, statusUrl: flags.store + "/status" } },
  });
  const tools = [
    http("sync_list", "/list", EffectClass.READ),
    http("sync_copy", "/copy", EffectClass.IDEMPOTENT_WRITE),
    { name: "sync_llm", version: "1", effectClass: EffectClass.READ, dataSensitivity: DataSensitivity.INTERNAL, timeout: { seconds: 30n },
      endpoint: { case: "model", value: { baseUrl: flags.model, model: "toy-1", provider: "toy", maxTokens: 200, inputMicrosPer1k: 100n, outputMicrosPer1k: 300n } } },
  ];
  for (const contract of tools) {
    await admin.tools.registerTool({ contract }).catch((err) => { if (err.code !== "already_exists") throw err; });
  }
}

// openTask creates the run's task — or, started again, finds it: the
// request id is the run's name — and waits for it to run.
async function openTask() {
  let { task } = await steward.tasks.createTask({ requestId: flags.run, contract: {
    intent: `Sync ${files} files from the source store to the destination`,
    desiredOutcome: "every file in the destination, and a manifest naming them",
    requesterRef: "user:ana", accountableOwnerRef: "user:ana", riskTier: RiskTier.MEDIUM, budget: { maxTokens: 100_000n },
    allowedTools: ["sync_list", "sync_copy", "sync_llm"],
    acceptanceCriteria: [{ id: "manifest", description: "the manifest names every file",
      expression: `"manifest" in artifacts && artifacts["manifest"].json.files == ${files}` }],
  } });
  const taskId = task.contract.taskId;
  while (task.status === TaskStatus.PENDING) {
    await new Promise((resolve) => setTimeout(resolve, 50)); // the control plane starts it at once
    ({ task } = await steward.query.getTask({ taskId }));
  }
  return taskId;
}

// step proposes an action under its proposal id and waits for it to
// succeed (Steward retries a transient failure under the tool's policy).
async function step(taskId, proposalId, tool, params, decisionId = "") {
  const { action } = await steward.proposeAndWait(taskId, { proposalId, tool, target: "store", params, decisionId }, { timeoutMs: 60_000 });
  if (action.status !== ActionStatus.SUCCEEDED) throw new Error(`${proposalId}: ${tool} ended ${ActionStatus[action.status]}`);
  return action;
}

// recorded waits, watching the task's events, until Steward has recorded
// the decision it observed of a model call, which it does just after the
// call succeeded: a proposal citing it before then is refused.
async function recorded(taskId, decisionId) {
  for await (const rec of steward.watchTask(taskId)) {
    const { payload } = rec.event;
    if (payload.case === "decisionRecorded" && payload.value.decision?.decisionId === decisionId) return;
  }
}

async function main() {
  await registerTools();
  const taskId = await openTask();
  // The agent's word while it works, for a contract that watches it.
  const stopBeating = steward.keepAlive(taskId, { intervalMs: 5_000 });
  try {
    const decided = new Set((await steward.allDecisions(taskId)).map((d) => d.decisionId));
    console.log(`task ${taskId}: ${decided.size} decisions already on the record`);
    const listing = await step(taskId, "list", "sync_list", { store: "source" });
    await steward.attachContext(taskId, { contextId: "listing", uri: "store://source", digest: `sha256:${listing.outcome?.resultHash}`,
      source: "sync_list", egress: ["toy"] });
    for (let i = 1; i <= files; i++) {
      const name = fileName(i);
      const decisionId = `copy-${name}`;
      if (!decided.has(decisionId)) {
        // The model call's proposal id is the decision's: Steward records
        // what it observed of the call as that decision.
        await step(taskId, decisionId, "sync_llm", { messages: [{ role: "user", content: `Copy ${name} to the destination?` }],
          decision_id: decisionId, context_ids: ["listing"], prompt_template_id: "sync", prompt_version: "v1", code_version: "examples/agent-ts@1" });
        console.log(`decided ${decisionId}`);
        await recorded(taskId, decisionId);
      }
      await step(taskId, `${decisionId}/put`, "sync_copy", { file: name }, decisionId);
      console.log(`copied ${name}`);
      if (i === Number(flags["exit-after"])) {
        console.log(`left after ${i} files`);
        process.exit(3);
      }
    }
    await steward.tasks.submitArtifact({ taskId, name: "manifest", mediaType: "application/json", requestId: `${flags.run}/manifest`,
      content: new TextEncoder().encode(JSON.stringify({ files })) });
    const { task } = await steward.tasks.markProduced({ taskId });
    console.log(`task ${taskId}: TASK_STATUS_${TaskStatus[task.status]}`);
  } finally {
    await stopBeating();
  }
  console.log((await steward.query.getReceipt({ taskId })).markdown);
}

main().catch((err) => {
  console.error("agent:", err instanceof StewardError ? `${err.code}: ${err.message}` : err);
  process.exit(1);
});
