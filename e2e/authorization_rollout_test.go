package e2e_test

import (
	"context"
	"slices"
	"testing"

	"connectrpc.com/connect"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/gen/steward/v1/stewardv1connect"
)

// The matrix's rollout calls (docs/rollouts.md). A rollout needs two
// registered versions of a tool, and one tool ramps once at a time: each
// call registers a tool of its own name, as its tenant's tool admin.

// rolloutAdmin is the fixture key of acme's tool admin, who makes the
// rollout of the "rollout" state.
const rolloutAdmin = "rollout-admin"

// withToolAdmin gives every caller of one tenant its tool admin's tools
// client.
func withToolAdmin(callers map[string]matrixCaller) {
	admin := callers["tool-admin"].tools
	for col, c := range callers {
		c.toolAdmin = admin
		callers[col] = c
	}
}

// startMatrixRollout registers versions 1 and 2 of tool name with admin
// and starts a rollout of it as rs.
func startMatrixRollout(ctx context.Context, admin stewardv1connect.ToolServiceClient, rs stewardv1connect.RolloutServiceClient, name string) (*stewardv1.Rollout, error) {
	for _, v := range []string{"1", "2"} {
		_, err := admin.RegisterTool(ctx, connect.NewRequest(&stewardv1.RegisterToolRequest{Contract: &stewardv1.ToolContract{
			Name: name, Version: v, EffectClass: stewardv1.EffectClass_EFFECT_CLASS_READ, DataSensitivity: stewardv1.DataSensitivity_DATA_SENSITIVITY_PUBLIC,
			Endpoint: &stewardv1.ToolContract_Http{Http: &stewardv1.HTTPEndpoint{Url: "http://192.0.2.1/x"}}}}))
		if err != nil {
			return nil, err
		}
	}
	resp, err := rs.StartRollout(ctx, connect.NewRequest(&stewardv1.StartRolloutRequest{Spec: &stewardv1.RolloutSpec{
		Tool: name, CandidateVersion: "2", StableVersion: "1", Steps: []uint32{50, 100}, MinTasks: 1, MaxFailureRate: 0.5}}))
	if err != nil {
		return nil, err
	}
	return resp.Msg.Rollout, nil
}

// matrixRollout is a ramping rollout of acme's, its tool admin's.
func matrixRollout(t *testing.T, e *harness, name string) subject {
	admin := e.fixtures[rolloutAdmin].(matrixCaller)
	r, err := startMatrixRollout(context.Background(), admin.tools, admin.rollouts, name)
	if err != nil {
		t.Fatal(err)
	}
	return subject{rollout: r.RolloutId}
}

func startRolloutCall(ctx context.Context, c matrixCaller, _ subject, name string) error {
	_, err := startMatrixRollout(ctx, c.toolAdmin, c.rollouts, name)
	return err
}

func getRolloutCall(ctx context.Context, c matrixCaller, s subject, _ string) error {
	_, err := c.rollouts.GetRollout(ctx, connect.NewRequest(&stewardv1.GetRolloutRequest{RolloutId: s.rollout}))
	return err
}

func listRolloutsCall(ctx context.Context, c matrixCaller, s subject, _ string) error {
	resp, err := c.rollouts.ListRollouts(ctx, connect.NewRequest(&stewardv1.ListRolloutsRequest{}))
	if err != nil {
		return err
	}
	if !slices.ContainsFunc(resp.Msg.Rollouts, func(r *stewardv1.Rollout) bool { return r.RolloutId == s.rollout }) {
		return errLeftOut
	}
	return nil
}

func rollBackRolloutCall(ctx context.Context, c matrixCaller, s subject, _ string) error {
	_, err := c.rollouts.RollBackRollout(ctx, connect.NewRequest(&stewardv1.RollBackRolloutRequest{RolloutId: s.rollout, Reason: "by hand"}))
	return err
}
