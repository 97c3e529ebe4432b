package server

import (
	"net/http"
	"testing"
)

// TestDeleteRun: DELETE /v1/runs/{id} deletes a finished run (204, then
// 404), refuses a paused one (409) and an unknown one (404), and is behind
// the tokens: none gets 401, one not allowed the run's swarm 403, and
// neither deletes anything.
func TestDeleteRun(t *testing.T) {
	ts, _, _ := newTest(t, Options{Auth: echoAndAdmin(t)})
	admin := client{t: t, base: ts.URL, token: "s-admin"}
	echoOnly := client{t: t, base: ts.URL, token: "s-echo"}
	anonymous := client{t: t, base: ts.URL}
	done := admin.start("echo", `{"input": "x"}`)
	admin.wait(done.ID)
	paused := admin.start("approval", `{"input": "x"}`)
	admin.wait(paused.ID)
	pausedFinished := admin.start("approval", `{"input": "y"}`)
	admin.wait(pausedFinished.ID)
	if res := admin.post("/v1/runs/"+pausedFinished.ID+"/stop", `{"reason": "no"}`); res.status != http.StatusAccepted {
		t.Fatalf("stop: %d %s", res.status, res.body)
	}
	admin.wait(pausedFinished.ID)

	for _, tc := range []struct {
		name   string
		c      client
		id     string
		status int
		code   string
	}{
		{"no token", anonymous, done.ID, http.StatusUnauthorized, "unauthenticated"},
		{"a token not allowed the swarm", echoOnly, pausedFinished.ID, http.StatusForbidden, "forbidden"},
		{"a paused run", admin, paused.ID, http.StatusConflict, "invalid_state"},
		{"an unknown run", admin, "nope", http.StatusNotFound, "not_found"},
		{"a finished run", echoOnly, done.ID, http.StatusNoContent, ""},
		{"a deleted run", admin, done.ID, http.StatusNotFound, "not_found"},
		{"a stopped run", admin, pausedFinished.ID, http.StatusNoContent, ""},
	} {
		res := tc.c.do("DELETE", "/v1/runs/"+tc.id, "", "")
		if res.status != tc.status || res.errorCode() != tc.code {
			t.Errorf("%s: %d %s; want %d %s", tc.name, res.status, res.body, tc.status, tc.code)
		}
	}
	if res := admin.get("/v1/runs/" + done.ID); res.status != http.StatusNotFound {
		t.Errorf("GET of a deleted run: %d %s", res.status, res.body)
	}
	if res := admin.get("/v1/runs/" + paused.ID); res.status != http.StatusOK {
		t.Errorf("GET of the refused run: %d %s", res.status, res.body)
	}
}
