package a2a

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"connectrpc.com/connect"
	"github.com/a2aproject/a2a-go/a2a"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// The A2A 0.3 JSON-RPC methods.
const (
	methodSend        = "message/send"
	methodStream      = "message/stream"
	methodGet         = "tasks/get"
	methodCancel      = "tasks/cancel"
	methodResubscribe = "tasks/resubscribe"
	methodCard        = "agent/getAuthenticatedExtendedCard"
)

// pushMethod reports whether method is one of push notifications', which
// this server does not offer.
func pushMethod(method string) bool {
	switch method {
	case "tasks/pushNotificationConfig/set", "tasks/pushNotificationConfig/get",
		"tasks/pushNotificationConfig/list", "tasks/pushNotificationConfig/delete":
		return true
	}
	return false
}

// serveRPC answers one JSON-RPC request. The caller is authenticated
// (WhoAmI) before anything else is done for it, so that a caller the API
// does not know gets a 401 even on a streaming method.
func (h *Handler) serveRPC(w http.ResponseWriter, r *http.Request) {
	req, rerr := decode(w, r)
	if rerr == nil {
		rerr = known(req.Method)
	}
	if rerr != nil {
		refused(w, req.ID, rerr)
		return
	}
	ctx, c := r.Context(), h.clientsFor(r)
	who, err := c.query.WhoAmI(ctx, connect.NewRequest(&stewardv1.WhoAmIRequest{}))
	if err != nil {
		refused(w, req.ID, fromConnect(err))
		return
	}
	var result any
	switch req.Method {
	case methodStream, methodResubscribe:
		h.serveStream(ctx, w, c, who.Msg.Principal, req)
		return
	case methodSend:
		result, rerr = h.send(ctx, c, who.Msg.Principal, req.Params)
	case methodGet:
		result, rerr = h.get(ctx, c, req.Params)
	case methodCancel:
		result, rerr = h.cancel(ctx, c, req.Params)
	}
	if rerr != nil {
		refused(w, req.ID, rerr)
		return
	}
	answer(w, req.ID, result)
}

// known refuses a method this server does not serve, with the code A2A
// gives it.
func known(method string) *rpcError {
	switch {
	case method == methodSend || method == methodStream || method == methodGet || method == methodCancel || method == methodResubscribe:
		return nil
	case pushMethod(method):
		return &rpcError{Code: codePushNotSupported, Message: "push notifications are not supported: follow a task with message/stream or tasks/resubscribe"}
	case method == methodCard:
		return &rpcError{Code: codeNoExtendedCard, Message: "there is no extended agent card: the public one says everything"}
	}
	return &rpcError{Code: codeMethodNotFound, Message: "no such method: " + method}
}

func (h *Handler) get(ctx context.Context, c clients, raw json.RawMessage) (*a2a.Task, *rpcError) {
	id, rerr := taskParam(raw, "read")
	if rerr != nil {
		return nil, rerr
	}
	resp, err := c.query.GetTask(ctx, connect.NewRequest(&stewardv1.GetTaskRequest{TaskId: id}))
	if err != nil {
		return nil, fromAPI(err)
	}
	return c.viewed(ctx, resp.Msg.Task)
}

func (h *Handler) cancel(ctx context.Context, c clients, raw json.RawMessage) (*a2a.Task, *rpcError) {
	id, rerr := taskParam(raw, "cancel")
	if rerr != nil {
		return nil, rerr
	}
	resp, err := c.tasks.CancelTask(ctx, connect.NewRequest(&stewardv1.CancelTaskRequest{TaskId: id, Reason: "cancelled by an A2A client (tasks/cancel)"}))
	var cerr *connect.Error
	if errors.As(err, &cerr) && cerr.Code() == connect.CodeFailedPrecondition {
		return nil, &rpcError{Code: codeNotCancelable, Message: cerr.Message()}
	}
	if err != nil {
		return nil, fromAPI(err)
	}
	return c.viewed(ctx, resp.Msg.Task)
}

// taskParam is the task id params name (TaskIDParams, TaskQueryParams).
func taskParam(raw json.RawMessage, what string) (string, *rpcError) {
	var p a2a.TaskIDParams
	if rerr := params(raw, &p); rerr != nil {
		return "", rerr
	}
	if p.ID == "" {
		return "", invalidParams("id", "is required: the task to %s", what)
	}
	return string(p.ID), nil
}

// viewed is view with its error said as A2A's.
func (c clients) viewed(ctx context.Context, t *stewardv1.Task) (*a2a.Task, *rpcError) {
	v, err := c.view(ctx, t)
	if err != nil {
		return nil, fromAPI(err)
	}
	return v, nil
}

// serveStream answers message/stream and tasks/resubscribe with events
// over SSE. A refusal found before the first event (bad params, an
// unknown task) is still sent as an event: the stream has begun.
func (h *Handler) serveStream(ctx context.Context, w http.ResponseWriter, c clients, caller string, req envelope) {
	out := startSSE(w, req.ID)
	defer out.keepAlive(h.cfg.KeepAlive)()
	send := func(ev a2a.Event) error { return out.send(ev, nil) }
	var taskID string
	var rerr *rpcError
	if req.Method == methodStream {
		taskID, rerr = h.deliver(ctx, c, caller, req.Params)
	} else {
		taskID, rerr = taskParam(req.Params, "follow")
	}
	if rerr == nil {
		if err := c.stream(ctx, taskID, send); err != nil && ctx.Err() == nil {
			rerr = fromAPI(err)
		}
	}
	if rerr != nil {
		if err := out.send(nil, rerr); err != nil {
			h.cfg.Logger.DebugContext(ctx, "a2a stream: the client left", "err", err)
		}
	}
}

// fromAPI is fromConnect with the API's field names said as A2A's.
func fromAPI(err error) *rpcError {
	rerr := fromConnect(err)
	if f, ok := rerr.Data["field"].(string); ok {
		if a2aName := fieldName(f); a2aName != "" {
			rerr.Data["field"] = a2aName
			rerr.Message = a2aName + " (" + f + "): " + rerr.Message
		}
	}
	return rerr
}

// fieldName is the A2A field an API request field comes from, if any.
func fieldName(apiField string) string {
	switch apiField {
	case "request_id":
		return "message.messageId"
	case "answer", "intent":
		return "message.parts"
	case "task_id":
		return "id"
	}
	return ""
}
