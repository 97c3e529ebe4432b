package main_test

import (
	"encoding/json"
	"testing"

	"github.com/swarmrt/swarm/model"
)

// TestStatusUsageCoversTheTeam: `swarm status` of a team run counts what
// its teammates spent, as the dashboard does: the usage of a run tree is
// every run below it, teammates included.
func TestStatusUsageCoversTheTeam(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, map[string]string{
		"swarm.yaml": `version: 1
model: scripted:script.yaml
agents:
  lead: {instructions: You lead.}
  teammate: {instructions: "You are {{.Name}}."}
teams:
  crew:
    lead: lead
    teammate: teammate
    members:
      alice: {role: coder, prompt: "Write the parser."}
`,
		"script.yaml": `lead:
  - {text: hello, usage: {input_tokens: 100, output_tokens: 10}}
alice:
  - {text: parser written, usage: {input_tokens: 200, output_tokens: 20}}
`,
	})
	if r := swarmIn(t, dir, nil, "hi\n/quit\n", "team", "crew", "--id", "crew-1"); r.code != 0 {
		t.Fatalf("team: exit %d\n%s", r.code, r.stderr)
	}
	// Whatever alice had not finished when the prompt ended.
	if r := swarmIn(t, dir, nil, "", "recover"); r.code != 0 {
		t.Fatalf("recover: exit %d\n%s", r.code, r.stderr)
	}
	r := swarmIn(t, dir, nil, "", "status", "crew-1")
	var st struct {
		Usage   model.Usage            `json:"usage"`
		ByAgent map[string]model.Usage `json:"usage_by_agent"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil {
		t.Fatalf("status: %v\n%s%s", err, r.stdout, r.stderr)
	}
	if st.Usage.InputTokens != 300 || st.Usage.OutputTokens != 30 || st.Usage.Calls != 2 {
		t.Errorf("status usage %+v, want the lead's and alice's: 300 in, 30 out, 2 calls", st.Usage)
	}
	if st.ByAgent["alice"].Calls != 1 || st.ByAgent["lead"].Calls != 1 {
		t.Errorf("usage by agent %+v, want lead and alice", st.ByAgent)
	}
}
