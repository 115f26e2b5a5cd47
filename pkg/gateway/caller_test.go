package gateway_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// rawCall sends one raw HTTP/1.1 request to addr and returns its status
// line: what a caller can send that a client library would not.
func rawCall(t *testing.T, addr, req string) string {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(c).ReadString('\n')
	return strings.TrimSpace(line)
}

// TestACallersBadRequestDoesNotMarkAReplicaDown: what a caller gets wrong
// — asking to upgrade the connection, a malformed chunked body — is
// answered as the caller's (400), and the healthy replica stays in
// service. Before, each such request, needing no token, marked the replica
// down and /readyz answered 503: a few a second kept every gateway out of
// its Service.
func TestACallersBadRequestDoesNotMarkAReplicaDown(t *testing.T) {
	for name, req := range map[string]string{
		"upgrade":   "POST /steward.v1.TaskService/CreateTask HTTP/1.1\r\nHost: localhost\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}",
		"bad chunk": "POST /steward.v1.TaskService/CreateTask HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\nzz\r\n",
	} {
		t.Run(name, func(t *testing.T) {
			g, srv := startGateway(t, plane(t, "control", []string{"steward.v1.TaskService"}, startReplica(t, func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.ReadAll(r.Body)
			})))
			if !g.Ready() {
				t.Fatal("the gateway is not ready at the start")
			}
			if got := rawCall(t, strings.TrimPrefix(srv.URL, "http://"), req); !strings.Contains(got, " 400 ") {
				t.Errorf("answered %q, want 400: the caller's mistake", got)
			}
			if !g.Ready() {
				t.Error("one caller's bad request took the healthy replica out of service")
			}
		})
	}
}

// TestReadyzNamesNoReplica: /readyz, open to any caller, says how many
// replicas of each plane are healthy, not where they are or what failed.
func TestReadyzNamesNoReplica(t *testing.T) {
	r := startReplica(t, echo("control"))
	_, srv := startGateway(t, plane(t, "control", []string{"steward.v1.TaskService"}, r))
	code, body := get(t, srv.URL+"/readyz")
	if code != http.StatusOK || !strings.Contains(body, "control: 1 of 1 replicas healthy") {
		t.Errorf("/readyz = %d %q, want 200 with control's count", code, body)
	}
	if host := mustURL(t, r.URL).Host; strings.Contains(body, host) {
		t.Errorf("/readyz shows the replica's address %s: %q", host, body)
	}
}
