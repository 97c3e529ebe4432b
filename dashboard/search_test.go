package dashboard_test

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/swarmtest"
)

// listed follows the runs list from path through its "Older runs" links
// and returns the runs it lists.
func listed(t *testing.T, b *browser, path string) []string {
	t.Helper()
	var got []string
	for pages := 0; path != ""; pages++ {
		if pages > 10 {
			t.Fatal("more pages than runs")
		}
		p := b.get(path)
		if p.status != 200 {
			t.Fatalf("GET %s: %d %s", path, p.status, p.body)
		}
		for _, m := range rowRE.FindAllStringSubmatch(p.body, -1) {
			got = append(got, m[1])
		}
		path = ""
		if m := olderRE.FindStringSubmatch(p.body); m != nil {
			path = strings.ReplaceAll(m[1], "&amp;", "&")
		}
	}
	return got
}

// The runs list's text search finds runs by their input (across pages,
// the next page keeping the search), by their result and by their reason,
// ignoring case.
func TestRunsTextSearch(t *testing.T) {
	ts, rt := serve(t, true)
	ctx := swarmtest.Context(t)
	var needles []string
	for i := range 110 {
		id := fmt.Sprintf("r%03d", i)
		input := `"hay"`
		if i%2 == 0 {
			input = fmt.Sprintf(`"find the Walrus %d"`, i)
			needles = append([]string{id}, needles...)
		}
		if _, err := rt.Start(ctx, "echo", []byte(input), swarm.WithID(id)); err != nil {
			t.Fatal(err)
		}
		if _, err := rt.Wait(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	start(t, rt, "slow", "dragon-run")
	if err := rt.Stop(ctx, "dragon-run", "halted by the Dragon"); err != nil {
		t.Fatal(err)
	}
	if st, _ := rt.Wait(ctx, "dragon-run"); st.State != swarm.StateStopped {
		t.Fatalf("the stopped run is %s", st.State)
	}
	b := newBrowser(t, ts.URL)

	if got := listed(t, b, "/ui/?text=walrus"); !slices.Equal(got, needles) {
		t.Errorf("text=walrus lists %d runs %v…, want the %d whose input says it", len(got), got[:min(5, len(got))], len(needles))
	}
	if got := listed(t, b, "/ui/?text="+url.QueryEscape("WALRUS 42")); !slices.Equal(got, []string{"r042"}) {
		t.Errorf("text=WALRUS 42 lists %v, want [r042]", got)
	}
	if got := listed(t, b, "/ui/?text=dragon"); !slices.Equal(got, []string{"dragon-run"}) {
		t.Errorf("a search by reason lists %v, want [dragon-run]", got)
	}
	if got := listed(t, b, "/ui/?text=done&swarm=echo"); len(got) != 110 {
		t.Errorf("a search by result lists %d runs, want the 110 echo runs", len(got))
	}
	if got := listed(t, b, "/ui/?text=nothing-says-this"); len(got) != 0 {
		t.Errorf("a search nothing matches lists %v", got)
	}
	if p := b.get("/ui/?text=" + strings.Repeat("x", 201)); p.status != 400 {
		t.Errorf("a 201-byte search: %d, want 400", p.status)
	}
}
