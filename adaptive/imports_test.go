package adaptive_test

import (
	"go/parser"
	"go/token"
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestOnlyThePublicSeam: the adaptive loop is written against the public
// API of package swarm; none of its files imports the engine's internal
// packages.
func TestOnlyThePublicSeam(t *testing.T) {
	files, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range files {
		if !strings.HasSuffix(f.Name(), ".go") {
			continue
		}
		parsed, err := parser.ParseFile(token.NewFileSet(), f.Name(), nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range parsed.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if path == "github.com/swarmrt/swarm/internal" || strings.HasPrefix(path, "github.com/swarmrt/swarm/internal/") {
				t.Errorf("%s imports %s, an internal package of the engine", f.Name(), path)
			}
		}
		n++
	}
	if n == 0 {
		t.Fatal("no Go files found")
	}
}
