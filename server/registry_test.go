package server

import (
	"net/http"
	"strings"
	"testing"
)

func TestRegistrySearch(t *testing.T) {
	ts, _, _ := newTest(t, Options{})
	c := client{t: t, base: ts.URL}
	r := c.get("/v1/registry/search?q=large+tool+results")
	if r.status != http.StatusOK {
		t.Fatalf("search: %d %s", r.status, r.body)
	}
	var hits RegistryHits
	r.decode(t, &hits)
	if len(hits.Hits) == 0 || hits.Hits[0].Entry.ID != "big" || hits.Hits[0].Score <= 0 {
		t.Fatalf("hits %+v", hits)
	}
	r = c.get("/v1/registry/search?q=number&kind=swarm&limit=1")
	r.decode(t, &hits)
	if len(hits.Hits) != 1 || hits.Hits[0].Entry.ID != "typed" {
		t.Errorf("typed hits %+v", hits)
	}
	for _, bad := range []string{"limit=0", "limit=x", "kind=robot"} {
		if r := c.get("/v1/registry/search?q=a&" + bad); r.status != http.StatusBadRequest {
			t.Errorf("%s: %d %s", bad, r.status, r.body)
		}
	}
}

func TestMetrics(t *testing.T) {
	ts, _, _ := newTest(t, Options{})
	c := client{t: t, base: ts.URL}
	c.start("echo", `{"input":"hi"}`)
	r := c.get("/metrics")
	if r.status != http.StatusOK || !strings.Contains(string(r.body), "# TYPE swarm_runs_driven gauge") || !strings.Contains(string(r.body), "swarm_lease_renewals_total ") {
		t.Fatalf("metrics: %d\n%s", r.status, r.body)
	}
}
