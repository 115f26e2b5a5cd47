// An A2A client of another implementation than Steward's (@a2a-js/sdk),
// run by e2e/a2a_client_test.go against the real binary. It opens a task
// under a skill and follows it by streaming; when the task asks for input
// it resubscribes once (the stream ends at input-required), answers with
// a message to the task, follows it to its end, and reads it back. Each
// line it prints is one thing it saw, for the test to check.
import { A2AClient } from "@a2a-js/sdk/client";
import { randomUUID } from "node:crypto";

const base = process.env.STEWARD_URL;
const token = process.env.STEWARD_TOKEN;
const answer = process.env.A2A_ANSWER;

// The card advertises a bearer scheme: every call carries the token.
const authFetch = (url, init = {}) => {
  const headers = new Headers(init.headers);
  headers.set("Authorization", `Bearer ${token}`);
  return fetch(url, { ...init, headers });
};

const text = (parts) => (parts ?? []).map((p) => (p.kind === "text" ? p.text : JSON.stringify(p))).join("");

const client = await A2AClient.fromCardUrl(`${base}/.well-known/agent-card.json`, { fetchImpl: authFetch });
const card = await client.getAgentCard();
console.log(`card ${card.protocolVersion} ${card.skills.map((s) => s.id).join(",")}`);

let task;
// follow prints each event of a stream and returns the last state.
async function follow(stream) {
  let state;
  for await (const ev of stream) {
    if (ev.kind === "task") {
      task = ev;
      state = ev.status.state;
      console.log(`task ${ev.id} ${state}`);
    } else if (ev.kind === "status-update") {
      state = ev.status.state;
      console.log(`state ${state} ${text(ev.status.message?.parts)}`.trimEnd());
      if (ev.final) break;
    } else if (ev.kind === "artifact-update") {
      console.log(`artifact ${ev.artifact.name} ${JSON.stringify(text(ev.artifact.parts))}`);
    }
  }
  return state;
}

const message = (parts, extra = {}) => ({ kind: "message", messageId: randomUUID(), role: "user", parts, ...extra });

let state = await follow(
  client.sendMessageStream({ message: message([{ kind: "text", text: "Summarise last week's incidents" }]), metadata: { skill: "summarise" } }),
);
if (state !== "input-required") throw new Error(`the first stream ended ${state}, not input-required`);
state = await follow(client.resubscribeTask({ id: task.id }));
console.log(`resubscribed ${state}`);

state = await follow(
  client.sendMessageStream({ message: message([{ kind: "text", text: answer }], { taskId: task.id, contextId: task.contextId }) }),
);
if (state !== "completed") throw new Error(`the second stream ended ${state}, not completed`);

const got = await client.getTask({ id: task.id });
if ("error" in got) throw new Error(`tasks/get: ${JSON.stringify(got.error)}`);
for (const a of got.result.artifacts ?? []) {
  console.log(`read ${got.result.status.state} ${a.name} ${JSON.stringify(text(a.parts))}`);
}
