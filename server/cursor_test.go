package server

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/swarmrt/swarm/auth"
)

// TestCraftedCursorIsRefused: a cursor is opaque, but it is only base64
// JSON, so a client can make one up. One that names no run, or a run the
// caller may not see or that is not of the listed swarm, did not come from
// a previous page: 400, not an empty page that reads as the end of the list.
func TestCraftedCursorIsRefused(t *testing.T) {
	ts, _, _ := newTest(t, Options{Auth: echoAndAdmin(t)})
	echoOnly := client{t: t, base: ts.URL, token: "s-echo"}
	admin := client{t: t, base: ts.URL, token: "s-admin"}
	mine := echoOnly.start("echo", `{"input": "x"}`)
	echoOnly.wait(mine.ID)
	theirs := admin.start("approval", `{"input": "x"}`)
	admin.wait(theirs.ID)

	// craft builds the cursor of a listing filtered by swarmID (the same
	// shape the server hands out) that names run id.
	craft := func(id, swarmID string) string {
		return base64.RawURLEncoding.EncodeToString([]byte(`{"id":"` + id + `","f":"` + swarmID + `\u0000"}`))
	}
	for _, tc := range []struct {
		name  string
		c     client
		query string
	}{
		{"a run that does not exist", admin, "cursor=" + craft("no-such-run", "")},
		{"a run the token may not see", echoOnly, "cursor=" + craft(theirs.ID, "")},
		{"a run of another swarm than the listed one", admin, "swarm=echo&cursor=" + craft(theirs.ID, "echo")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := tc.c.get("/v1/runs?" + tc.query)
			if res.status != 400 || res.errorCode() != "bad_request" || !strings.Contains(string(res.body), "cursor") {
				t.Errorf("GET /v1/runs?%s: %d %s, want 400 bad_request about the cursor", tc.query, res.status, res.body)
			}
		})
	}
	// The cursors the server hands out still work, for every token.
	for _, c := range []client{admin, echoOnly} {
		var page RunList
		first := c.get("/v1/runs?limit=1")
		first.decode(t, &page)
		if first.status != 200 || len(page.Runs) != 1 {
			t.Fatalf("token %s, first page: %d %s", c.token, first.status, first.body)
		}
		if page.NextCursor == "" {
			continue
		}
		if res := c.get("/v1/runs?limit=1&cursor=" + page.NextCursor); res.status != 200 {
			t.Errorf("token %s, next page: %d %s", c.token, res.status, res.body)
		}
	}
}

// echoAndAdmin returns the tokens s-echo, for swarm echo only, and
// s-admin, for every swarm.
func echoAndAdmin(t *testing.T) *auth.Authenticator {
	t.Helper()
	a, err := auth.New([]auth.Token{
		{Name: "echo-only", Secret: "s-echo", Swarms: []string{"echo"}},
		{Name: "admin", Secret: "s-admin", Swarms: []string{"*"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return a
}
