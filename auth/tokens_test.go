package auth

import (
	"slices"
	"strings"
	"testing"
)

func TestParseTokens(t *testing.T) {
	toks, err := ParseTokens("ci:s3:cr:et:trip,triage; admin:pw:*\n# a comment\n\nro:x:\n")
	if err != nil {
		t.Fatal(err)
	}
	if len(toks) != 3 {
		t.Fatalf("%d tokens", len(toks))
	}
	if toks[0].Name != "ci" || toks[0].Secret != "s3:cr:et" || !slices.Equal(toks[0].Swarms, []string{"trip", "triage"}) {
		t.Errorf("token 1: %+v", toks[0].Swarms)
	}
	if toks[1].Name != "admin" || !slices.Equal(toks[1].Swarms, []string{"*"}) || toks[2].Swarms != nil {
		t.Errorf("tokens 2, 3: %v %v", toks[1].Swarms, toks[2].Swarms)
	}
	for _, bad := range []string{"nosecret", "name:secret", ":pw:*", "n::*"} {
		_, err := ParseTokens(bad)
		if err == nil {
			t.Errorf("%q accepted", bad)
		} else if strings.Contains(err.Error(), "pw") {
			t.Errorf("error shows the secret: %v", err)
		}
	}
}
