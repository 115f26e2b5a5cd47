#!/usr/bin/env bash
# A governed task from start to end, with nothing but curl and jq:
#   1. create a task that may use two tools;
#   2. propose a read: policy allows it and it runs at once; read its
#      result back through the API, checked against its recorded hash;
#   3. propose an irreversible write with the proposer's case for it (what
#      it will do, how it would be undone): it waits for a person, who
#      sees that case;
#   4. approve it, bound to its action hash, as someone with the role;
#   5. show the ledger: each action with its policy snapshot, approval,
#      permit and outcome.
# Start Steward first, from the repository root:
#   go run ./cmd/steward dev --tools examples/tools.json
# It reads the bearer tokens `steward dev` wrote to its data directory on
# first start (STEWARD_DATA, .steward/data by default).
set -euo pipefail
URL=${STEWARD_URL:-http://127.0.0.1:7700}
TOKENS=${STEWARD_DATA:-.steward/data}/tokens.json
token() { # token PRINCIPAL: the header carrying PRINCIPAL's token
  echo "Authorization: Bearer $(jq -er --arg p "$1" '.tokens[] | select(.principal == $p) | .token' "$TOKENS")"
}
AGENT=$(token agent:dev)
APPROVER=$(token user:approver)
RUN=${RUN:-$(date +%s)}

call() { # call TOKEN-HEADER SERVICE/METHOD JSON
  # prints the answer; a refused call prints the server's message, not only curl's status, and fails.
  local body
  body=$(curl -sS --fail-with-body "$URL/steward.v1.$2" -H 'Content-Type: application/json' -H "$1" -d "$3") || { echo "$2 refused: $body" >&2; return 1; }
  echo "$body"
}
# wait_for TASK JQ-CONDITION: poll GetTask until the condition holds.
wait_for() {
  for _ in $(seq 100); do
    if call "$AGENT" QueryService/GetTask "{\"taskId\": \"$1\"}" | jq -e "$2" >/dev/null; then return 0; fi
    sleep 0.1
  done
  echo "timed out waiting for: $2" >&2
  return 1
}

echo "== 1. create a task"
TASK=$(call "$AGENT" TaskService/CreateTask "{\"requestId\": \"walkthrough-$RUN\", \"contract\": {
  \"intent\": \"Publish the weekly customer report\", \"desiredOutcome\": \"reports/weekly.md on the shared drive\",
  \"requesterRef\": \"agent:dev\", \"accountableOwnerRef\": \"user:ana\", \"authorizerRef\": \"user:approver\",
  \"riskTier\": \"RISK_TIER_MEDIUM\", \"allowedTools\": [\"lookup\", \"publish\"]}}" | jq -r .task.contract.taskId)
echo "task $TASK"
wait_for "$TASK" '.task.status == "TASK_STATUS_RUNNING"'

echo "== 2. propose a read: it runs at once"
READ=$(call "$AGENT" TaskService/ProposeAction "{\"taskId\": \"$TASK\", \"proposalId\": \"lookup-$RUN\",
  \"tool\": \"lookup\", \"params\": {\"customer\": \"acme\"}}" | jq -r .action.actionId)
wait_for "$TASK" ".task.actions[] | select(.actionId == \"$READ\") | .status == \"ACTION_STATUS_SUCCEEDED\""
echo "$READ succeeded; its result, as the tool answered it:"
call "$AGENT" QueryService/GetResult "{\"taskId\": \"$TASK\", \"actionId\": \"$READ\"}" | jq -c '{result, resultHash, sizeBytes}'

echo "== 3. propose an irreversible write, saying why: it waits for a person"
WRITE=$(call "$AGENT" TaskService/ProposeAction "{\"taskId\": \"$TASK\", \"proposalId\": \"publish-$RUN\",
  \"tool\": \"publish\", \"target\": \"shared-drive\",
  \"params\": {\"path\": \"reports/weekly-$RUN.md\", \"content\": \"# Weekly report\\nAll quiet.\\n\"},
  \"rationale\": {\"expectedImpact\": \"everyone on the shared drive can read this week's report\",
    \"rollbackPlan\": \"publish a correction: a published file cannot be unpublished\",
    \"evidence\": [\"lookup-$RUN\"], \"alternatives\": [\"mail it to the team only\"]}}" | jq -r .action.actionId)
wait_for "$TASK" '.task.status == "TASK_STATUS_WAITING_FOR_APPROVAL"'
APPROVAL=$(call "$APPROVER" GovernanceService/ListApprovals "{\"taskId\": \"$TASK\", \"pendingOnly\": true}" | jq '.approvals[0]')
echo "$APPROVAL" | jq '{approvalId, tool, target, parametersJson, effectClass, policyReasons, expectedImpact, rationale, requiredRoles}'

echo "== 4. approve it, bound to the action hash"
call "$APPROVER" GovernanceService/DecideApproval "{\"approvalId\": $(echo "$APPROVAL" | jq .approvalId),
  \"actionHash\": $(echo "$APPROVAL" | jq .actionHash), \"decision\": \"APPROVAL_DECISION_APPROVE\",
  \"comment\": \"report reviewed\"}" | jq -c '.approval | {decidedBy, decision}'
wait_for "$TASK" ".task.actions[] | select(.actionId == \"$WRITE\") | .status == \"ACTION_STATUS_SUCCEEDED\""

echo "== 5. the ledger"
call "$AGENT" QueryService/GetTask "{\"taskId\": \"$TASK\"}" | jq '.task | {status, actions: [.actions[] | {
  tool, status, policy: .snapshot.decision, revision: .snapshot.bundleRevision, approvedBy: .approval.decidedBy,
  permit: .permit.permitId, claimedBy, result: (.outcome.resultRef // "inline")}]}'
echo "done: task $TASK"
