package team_test

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestOnlyThePublicAPI: the package is a kind of run written on the public
// strategy seam, as a user's would be: none of its files imports the
// engine's internal packages.
func TestOnlyThePublicAPI(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("no Go files: %v", err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, name, src, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if path == "github.com/swarmrt/swarm/internal" || strings.HasPrefix(path, "github.com/swarmrt/swarm/internal/") {
				t.Errorf("%s imports %s: a strategy package uses only the public API", name, path)
			}
		}
	}
}
