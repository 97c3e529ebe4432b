package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/swarmrt/swarm/absorb"
)

// agentListing is one agent of swarm agents.
type agentListing struct {
	Name        string         `json:"name"`
	Source      string         `json:"source"` // "provided" or the file
	Provider    string         `json:"provider,omitempty"`
	Description string         `json:"description,omitempty"`
	Skills      []skillListing `json:"skills,omitempty"`
	Absorbs     []string       `json:"absorbs,omitempty"`
}

type skillListing struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Input       json.RawMessage `json:"input,omitempty"` // absent: text
}

func skillsOf(ss []absorb.Skill) []skillListing {
	out := make([]skillListing, len(ss))
	for i, s := range ss {
		out[i] = skillListing{Name: s.Name, Description: s.Description, Input: s.Input.Schema()}
	}
	return out
}

func (a *app) agentsCmd() *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "agents",
		Short: "List the agents a captain can absorb: those provided to this binary and those of the file",
		Long: `List the agents a captain can absorb (absorb: in swarm.yaml): the agents provided
to this binary by the packages linked into it (absorb.Provide), in provider id order,
then the agents of the definitions file (--file, or swarm.yaml if it exists), in
the order of the file. Each agent is listed with its skills and their inputs.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			var list []agentListing
			for _, p := range absorb.Providers() {
				list = append(list, agentListing{Name: p.Name(), Source: "provided", Provider: p.ID, Description: p.Description, Skills: skillsOf(p.Skills)})
			}
			if _, err := os.Stat("swarm.yaml"); a.file != "" || err == nil {
				file, err := a.loadFile()
				if err != nil {
					return err
				}
				for _, ag := range file.Agents() {
					list = append(list, agentListing{Name: ag.Name, Source: file.Path, Description: ag.Description, Skills: skillsOf(ag.Skills), Absorbs: ag.Absorbs})
				}
			}
			if len(list) == 0 {
				fmt.Fprintln(a.stderr, "no agents: none is provided to this binary and there is no definitions file")
			}
			if asJSON {
				for _, l := range list {
					writeJSON(a.stdout, l)
				}
				return nil
			}
			for _, l := range list {
				src := l.Source
				if l.Provider != "" {
					src = "provided by " + l.Provider
				}
				fmt.Fprintf(a.stdout, "%s (%s)", l.Name, src)
				if l.Description != "" {
					fmt.Fprintf(a.stdout, ": %s", l.Description)
				}
				fmt.Fprintln(a.stdout)
				if len(l.Absorbs) > 0 {
					fmt.Fprintf(a.stdout, "  absorbs: %s\n", strings.Join(l.Absorbs, ", "))
				}
				for _, s := range l.Skills {
					in := "text"
					if s.Input != nil {
						in = string(s.Input)
					}
					fmt.Fprintf(a.stdout, "  skill %s", s.Name)
					if s.Description != "" {
						fmt.Fprintf(a.stdout, ": %s", s.Description)
					}
					fmt.Fprintf(a.stdout, "\n    input: %s\n", in)
				}
			}
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "JSON lines instead of text")
	return c
}
