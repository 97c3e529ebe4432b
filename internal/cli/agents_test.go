package cli

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/absorb"
)

func init() {
	absorb.Provide(absorb.Provider{ID: "clitest.greeter", Description: "Greets", Build: func() *swarm.Agent { return &swarm.Agent{} },
		Skills: []absorb.Skill{{Name: "greet", Description: "says hello", Input: absorb.InputOf[struct {
			Who string `json:"who"`
		}]()}}})
}

// swarm agents lists the provided agents, then the file's, with their
// skills and inputs.
func TestAgentsCommand(t *testing.T) {
	path := writeFile(t, `version: 1
agents:
  factor:
    description: Factors integers
    skills:
      factor: {description: the prime factors of n, input: {type: object, properties: {n: {type: integer}}}}
      check: {description: whether n is prime}
  captain:
    absorb: all
`)
	var out, errOut bytes.Buffer
	if code := Main([]string{"--file", path, "agents"}, strings.NewReader(""), &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	for _, want := range []string{
		"greeter (provided by clitest.greeter): Greets\n  skill greet: says hello\n    input: {\"type\":\"object\"",
		"factor (" + path + "): Factors integers\n  skill factor: the prime factors of n\n    input: {\"type\":\"object\",\"properties\":{\"n\"",
		"  skill check: whether n is prime\n    input: text\n",
		"captain (" + path + ")\n  absorbs: all\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if i, j := strings.Index(out.String(), "greeter"), strings.Index(out.String(), "factor"); i < 0 || j < i {
		t.Errorf("provided agents come first:\n%s", out.String())
	}

	out.Reset()
	if code := Main([]string{"--file", path, "agents", "--json"}, strings.NewReader(""), &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	var first agentListing
	if len(lines) != 3 || json.Unmarshal([]byte(lines[0]), &first) != nil || first.Provider != "clitest.greeter" || first.Skills[0].Name != "greet" {
		t.Errorf("JSON lines %q", lines)
	}
}
