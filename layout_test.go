package swarm_test

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// strategyPackages are the kinds of run built on the public seam
// (Strategy and Driver): each must get by with the public API alone,
// because what they need, users writing a strategy need too.
var strategyPackages = []string{"adaptive", "team", "workflow", "conversation"}

// publicAPIPackages are the other concepts moved out of the root package
// onto its public API: absorb (skills, captains, providers) is built on
// swarm.Delegation, as a user's package could be.
var publicAPIPackages = []string{"absorb"}

// leafPackages hold types a user writes against and the engine applies:
// they depend on neither the root package nor anything that does, so a
// program (or a tool) can use them without the engine.
var leafPackages = []string{"guardrail"}

// The module's layout rules: every package says what it is for, and no
// strategy package (nor any package built on the public API) reaches into
// the module's internal packages.
func TestLayout(t *testing.T) {
	if testing.Short() {
		t.Skip("lists every package of the module")
	}
	out, err := exec.Command("go", "list", "-json=ImportPath,Name,Doc,Deps", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	const module = "github.com/swarmrt/swarm"
	seen := map[string]bool{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p struct {
			ImportPath, Name, Doc string
			Deps                  []string
		}
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		if p.Doc == "" {
			t.Errorf("package %s has no doc comment saying what it is for", p.ImportPath)
		}
		rel := strings.TrimPrefix(p.ImportPath, module+"/")
		if slices.Contains(leafPackages, rel) {
			seen[rel] = true
			for _, d := range p.Deps {
				if d == module || strings.HasPrefix(d, module+"/internal/") {
					t.Errorf("package %s imports %s: it is a leaf of the module", rel, d)
				}
			}
		}
		for _, s := range append(slices.Clone(strategyPackages), publicAPIPackages...) {
			if rel != s {
				continue
			}
			seen[s] = true
			for _, d := range p.Deps {
				if strings.HasPrefix(d, module+"/internal/") {
					t.Errorf("package %s imports %s: it uses only the public API", rel, d)
				}
			}
		}
	}
	for _, s := range append(slices.Clone(publicAPIPackages), leafPackages...) {
		if !seen[s] {
			t.Errorf("package %s, built on the public API, is missing", s)
		}
	}
	t.Logf("packages checked: %v", seen)
}
