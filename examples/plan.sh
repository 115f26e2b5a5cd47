#!/usr/bin/env bash
# A plan from submission to end, with nothing but curl and jq:
#   1. create a task that may look customers up;
#   2. submit a plan, as data: a lookup, two branches computing their
#      parameters from its result in CEL, a step whose `when` is false, and
#      a last step that reads how the others ended;
#   3. wait while Steward judges the plan and runs it, step by step, each
#      action governed on its own, until the plan marks the task produced;
#   4. show each step's status, and the plan's lines of the timeline.
# Start Steward first, from the repository root, as for walkthrough.sh:
#   go run ./cmd/steward dev --tools examples/tools.json
# It reads the bearer tokens `steward dev` wrote to its data directory on
# first start (STEWARD_DATA, .steward/data by default).
set -euo pipefail
URL=${STEWARD_URL:-http://127.0.0.1:7700}
TOKENS=${STEWARD_DATA:-.steward/data}/tokens.json
AGENT="Authorization: Bearer $(jq -er '.tokens[] | select(.principal == "agent:dev") | .token' "$TOKENS")"
RUN=${RUN:-$(date +%s)}

call() { # call SERVICE/METHOD JSON, as the agent
  # prints the answer; a refused call prints the server's message, not only curl's status, and fails.
  local body
  body=$(curl -sS --fail-with-body "$URL/steward.v1.$1" -H 'Content-Type: application/json' -H "$AGENT" -d "$2") || { echo "$1 refused: $body" >&2; return 1; }
  echo "$body"
}
# wait_for TASK JQ-CONDITION: poll GetTask until the condition holds.
wait_for() {
  for _ in $(seq 200); do
    if call QueryService/GetTask "{\"taskId\": \"$1\"}" | jq -e "$2" >/dev/null; then return 0; fi
    sleep 0.1
  done
  echo "timed out waiting for: $2" >&2
  return 1
}

echo "== 1. create a task"
TASK=$(call TaskService/CreateTask "{\"requestId\": \"plan-walkthrough-$RUN\", \"contract\": {
  \"intent\": \"Check on customer acme\", \"desiredOutcome\": \"acme's billing and support records looked up\",
  \"requesterRef\": \"agent:dev\", \"accountableOwnerRef\": \"user:ana\", \"authorizerRef\": \"user:approver\",
  \"riskTier\": \"RISK_TIER_MEDIUM\", \"allowedTools\": [\"lookup\"]}}" | jq -r .task.contract.taskId)
echo "task $TASK"
wait_for "$TASK" '.task.status == "TASK_STATUS_RUNNING"'

# Steps name what they read: `steps.find.result` is find's result ({"ok":
# true} from the example's lookup tool), `steps.<id>.status` how a step
# ended. A step runs once every step it depends on is done.
echo "== 2. submit the plan"
call TaskService/SubmitPlan "{\"taskId\": \"$TASK\", \"requestId\": \"plan-$RUN\", \"plan\": {
  \"version\": 1, \"ending\": \"PLAN_ENDING_PRODUCE\", \"steps\": [
  {\"id\": \"find\", \"action\": {\"tool\": \"lookup\", \"params\": {\"customer\": \"acme\"}}, \"expect\": \"result.ok\"},
  {\"id\": \"billing\", \"dependsOn\": [\"find\"], \"action\": {\"tool\": \"lookup\",
    \"paramExprs\": {\"customer\": \"steps.find.result.ok ? 'acme-billing' : 'nobody'\"}}},
  {\"id\": \"support\", \"dependsOn\": [\"find\"], \"action\": {\"tool\": \"lookup\",
    \"paramExprs\": {\"customer\": \"steps.find.result.ok ? 'acme-support' : 'nobody'\"}}},
  {\"id\": \"escalate\", \"dependsOn\": [\"find\"], \"when\": \"!steps.find.result.ok\",
    \"action\": {\"tool\": \"lookup\", \"params\": {\"customer\": \"acme-escalations\"}}},
  {\"id\": \"summary\", \"dependsOn\": [\"billing\", \"support\", \"escalate\"], \"action\": {\"tool\": \"lookup\",
    \"paramExprs\": {\"customer\": \"'acme: billing ' + steps.billing.status + ', escalate ' + steps.escalate.status\"}}}
  ]}}" | jq -c '{created, version: .task.plan.version, governance: .task.plan.governance}'

# No acceptance owner reviews this task, so once produced, its acceptance
# checks (none here) all pass and it is accepted at once.
echo "== 3. wait while it runs: judged, then each step's action proposed, governed and run"
wait_for "$TASK" '.task.status | IN("TASK_STATUS_PRODUCED", "TASK_STATUS_ACCEPTED")'

echo "== 4. each step, and the parameters it computed"
TASKJSON=$(call QueryService/GetTask "{\"taskId\": \"$TASK\"}")
# An action's request is its canonical JSON, base64 in protojson.
echo "$TASKJSON" | jq -r '.task as $t | $t.plan.steps[] | .stepId as $s | .reason as $why | "\($s)\t\(.status)\t\(
  [$t.actions[] | select(.planStepId == $s) | .request | @base64d | fromjson | .params | tojson] | first // $why)"'
# The timeline tells each event as a sentence; the plan's own lines show
# it judged, each step started and ended (both branches at once), and the
# task produced. The actions' lines between them are left out here.
echo "== the plan in the timeline"
call QueryService/GetTimeline "{\"taskId\": \"$TASK\"}" |
  jq -r '.entries[] | select(.type | startswith("plan.") or . == "task.produced") | "\(.sequence)\t\(.summary)"'
echo "done: task $TASK $(echo "$TASKJSON" | jq -r .task.status)"
