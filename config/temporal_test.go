package config

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const temporalBase = `version: 1
agents:
  lead: {instructions: Lead.}
swarms:
  trip: {instructions: Plan.}
  review: {instructions: Review.}
`

func TestTemporalSection(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"ca.pem", "client.pem", "client.key"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("pem"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	f, err := Parse([]byte(temporalBase+`temporal:
  address: temporal.example.com:7233
  namespace: agents
  task_queue: swarms
  tls: {ca: ca.pem, cert: client.pem, key: client.key, server_name: temporal.example.com}
  swarms: [trip]
`), dir)
	if err != nil {
		t.Fatal(err)
	}
	tp := f.Temporal
	if tp == nil || tp.Address != "temporal.example.com:7233" || tp.Namespace != "agents" || tp.TaskQueue != "swarms" || !slices.Equal(tp.Swarms, []string{"trip"}) {
		t.Fatalf("temporal %+v", tp)
	}
	if tp.TLS == nil || tp.TLS.CA != filepath.Join(dir, "ca.pem") || tp.TLS.Key != filepath.Join(dir, "client.key") || tp.TLS.ServerName != "temporal.example.com" {
		t.Fatalf("tls %+v", tp.TLS)
	}
	if !tp.Runs("trip") || tp.Runs("review") {
		t.Fatal("Runs does not follow the list")
	}
	for _, all := range []string{"temporal: {}\n", "temporal:\n  swarms: \"*\"\n", "temporal:\n  swarms: all\n"} {
		f, err := Parse([]byte(temporalBase+all), dir)
		if err != nil {
			t.Fatalf("%q: %v", all, err)
		}
		if !f.Temporal.Runs("trip") || !f.Temporal.Runs("review") || f.Temporal.Address != "" {
			t.Fatalf("%q: %+v", all, f.Temporal)
		}
	}
	f, err = Parse([]byte(temporalBase), dir)
	if err != nil || f.Temporal != nil || f.Temporal.Runs("trip") {
		t.Fatalf("no section: %+v, %v", f.Temporal, err)
	}
}

func TestTemporalSectionErrors(t *testing.T) {
	team := "teams:\n  crew: {lead: lead}\n"
	conv := "conversations:\n  desk: {queen: lead}\n"
	for _, c := range []struct{ name, text, want string }{
		{"unknown field", "temporal: {adress: x:1}\n", `unknown field "adress"`},
		{"empty namespace", "temporal: {namespace: \"\"}\n", "temporal: namespace: want a non-empty name"},
		{"address without port", "temporal: {address: temporal.example.com}\n", `temporal: address "temporal.example.com": want HOST:PORT`},
		{"unknown swarm", "temporal: {swarms: [trip, nope]}\n", `temporal: swarms: "nope" is not a swarm or workflow of the file (they are: trip, review)`},
		{"cert without key", "temporal:\n  tls: {cert: " + os.Args[0] + "}\n", "temporal: tls: cert and key go together"},
		{"missing file", "temporal:\n  tls: {ca: missing.pem}\n", "temporal: tls: ca: cannot read"},
		{"team listed", team + "temporal: {swarms: [crew]}\n", "temporal: swarms: crew is a team, whose mailboxes runs on Temporal do not support"},
		{"team under all", team + "temporal: {}\n", "the file has the team(s) crew, whose mailboxes runs on Temporal do not support"},
		{"conversation listed", conv + "temporal: {swarms: [trip, desk]}\n", "temporal: swarms: desk is a conversation, which runs on Temporal do not support yet"},
		{"conversation under all", conv + "temporal: {}\n", "the file has the conversation(s) desk, which runs on Temporal do not support yet"},
		{"network", "share:\n  - agent: lead\ntemporal: {}\n", "temporal: the file shares or consumes capabilities over the network"},
	} {
		_, err := Parse([]byte(temporalBase+c.text), t.TempDir())
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}
