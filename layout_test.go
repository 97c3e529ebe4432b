package swarm_test

import (
	"bytes"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// strategyPackages are the kinds of run built on the public seam
// (package strategy): each must get by with the public API alone, because
// what they need, users writing a strategy need too.
var strategyPackages = []string{"adaptive", "team", "workflow", "conversation"}

// publicAPIPackages are the other concepts moved out of the root package
// onto its public API: absorb (skills, captains, providers) is built on
// swarm.Delegation, as a user's package could be.
var publicAPIPackages = []string{"absorb"}

// leafPackages hold what a user writes against and the engine applies;
// they import no package of the module but the ones listed (the standard
// library and other modules are theirs to use), so they never reach back
// into the engine: guardrail holds guardrails' types, compact compaction's
// settings and pure algorithms.
var leafPackages = map[string][]string{"compact": {"model"}, "guardrail": {"model"}}

// seamPackages are the only packages that may import internal/seam, the
// bridge between the engine and the public seam above it.
var seamPackages = []string{"github.com/swarmrt/swarm", "github.com/swarmrt/swarm/strategy"}

// maxRootNames bounds the root package's exported types and functions:
// the root is the API a program imports and the engine (whose names are
// unexported); the seam, teams, guardrails, compaction and every kind of
// run live in packages of their own.
const maxRootNames = 60

// The module's layout rules: every package says what it is for, no
// strategy package (nor any package built on the public API) imports the
// module's internal packages (the root's own use of them is the engine's),
// only the engine and package strategy reach the seam's bridge, and the
// root package stays within its budget of exported names.
func TestLayout(t *testing.T) {
	if testing.Short() {
		t.Skip("lists every package of the module")
	}
	out, err := exec.Command("go", "list", "-json=ImportPath,Name,Doc,Imports,Deps", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	const module = "github.com/swarmrt/swarm"
	seen := map[string]bool{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p struct {
			ImportPath, Name, Doc string
			Imports, Deps         []string
		}
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		if p.Doc == "" {
			t.Errorf("package %s has no doc comment saying what it is for", p.ImportPath)
		}
		rel := strings.TrimPrefix(p.ImportPath, module+"/")
		if allowed, ok := leafPackages[rel]; ok {
			seen[rel] = true
			for _, d := range p.Deps {
				if d != module && !strings.HasPrefix(d, module+"/") {
					continue
				}
				if !slices.Contains(allowed, strings.TrimPrefix(d, module+"/")) {
					t.Errorf("package %s imports %s: it may import only %v of the module", rel, d, allowed)
				}
			}
		}
		if slices.Contains(p.Imports, module+"/internal/seam") && !slices.Contains(seamPackages, p.ImportPath) {
			t.Errorf("package %s imports internal/seam: only %v may", rel, seamPackages)
		}
		for _, s := range append(slices.Clone(strategyPackages), publicAPIPackages...) {
			if rel != s {
				continue
			}
			seen[s] = true
			for _, d := range p.Imports {
				if strings.HasPrefix(d, module+"/internal/") {
					t.Errorf("package %s imports %s: it uses only the public API", rel, d)
				}
			}
		}
	}
	for _, s := range append(slices.Clone(publicAPIPackages), slices.Collect(maps.Keys(leafPackages))...) {
		if !seen[s] {
			t.Errorf("package %s, whose imports are checked, is missing", s)
		}
	}
	t.Logf("packages checked: %v", seen)
	if names := rootNames(t); len(names) > maxRootNames {
		t.Errorf("the root package exports %d types and functions (at most %d): %v", len(names), maxRootNames, names)
	}
}

// rootNames lists the root package's exported top-level types and
// functions (not methods, constants or variables).
func rootNames(t *testing.T) []string {
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, ".", func(fi fs.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, 0)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range pkgs["swarm"].Files {
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil && d.Name.IsExported() {
					names = append(names, d.Name.Name)
				}
			case *ast.GenDecl:
				for _, sp := range d.Specs {
					if ts, ok := sp.(*ast.TypeSpec); ok && ts.Name.IsExported() {
						names = append(names, ts.Name.Name)
					}
				}
			}
		}
	}
	slices.Sort(names)
	return names
}
