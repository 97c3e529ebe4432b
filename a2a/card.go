package a2a

import (
	sdk "github.com/a2aproject/a2a-go/v2/a2a"
)

// BearerScheme is the name of the security scheme cards declare when the
// server requires bearer tokens.
const BearerScheme = "bearer"

// Media types of inputs and results.
const (
	mediaText = "text/plain"
	mediaJSON = "application/json"
)

// card describes swarm a as an A2A agent reachable under base.
func (s *server) card(a *agent, base string) *sdk.AgentCard {
	desc := a.description
	if desc == "" {
		desc = "The " + a.id + " swarm."
	}
	in, out := []string{mediaJSON}, []string{mediaJSON}
	if a.textIn {
		in = []string{mediaText}
	}
	if a.textOut {
		out = []string{mediaText}
	}
	skillDesc := desc
	if !a.textIn {
		skillDesc += "\n\nInput: a JSON value (a data part, or JSON text) matching this JSON schema: " + string(a.inSchema)
	}
	if !a.textOut {
		skillDesc += "\n\nResult: an artifact with a data part matching this JSON schema: " + string(a.outSchema)
	}
	tags := a.tags
	if tags == nil {
		tags = []string{}
	}
	c := &sdk.AgentCard{
		Name:        a.id,
		Description: desc,
		Version:     s.opts.Version,
		SupportedInterfaces: []*sdk.AgentInterface{
			sdk.NewAgentInterface(base+PathPrefix+a.id, sdk.TransportProtocolJSONRPC),
		},
		Capabilities:       sdk.AgentCapabilities{Streaming: true},
		DefaultInputModes:  in,
		DefaultOutputModes: out,
		Skills: []sdk.AgentSkill{{
			ID:          a.id,
			Name:        a.id,
			Description: skillDesc,
			Tags:        tags,
			InputModes:  in,
			OutputModes: out,
		}},
	}
	if s.opts.Auth.Required() {
		c.SecuritySchemes = sdk.NamedSecuritySchemes{
			BearerScheme: sdk.HTTPAuthSecurityScheme{
				Scheme:      "Bearer",
				Description: "A bearer token allowed this swarm, in the Authorization header.",
			},
		}
		c.SecurityRequirements = sdk.SecurityRequirementsOptions{{BearerScheme: sdk.SecuritySchemeScopes{}}}
	}
	return c
}
