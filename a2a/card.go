package a2a

import (
	"context"

	sdk "github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/swarmrt/swarm/auth"
)

// BearerScheme is the name of the security scheme cards declare when the
// server requires bearer tokens.
const BearerScheme = "bearer"

// The names of the OAuth 2.0 security schemes cards declare when the
// server accepts its authorization server's access tokens: authorization
// code with PKCE (a person) and client credentials (a service). Both ask
// for the scope swarm:{id}.
const (
	OAuthScheme        = "oauth2"
	OAuthServiceScheme = "oauth2-client-credentials"
	// OAuthDeviceScheme is the device code flow (RFC 8628), declared when
	// the authorization server offers it: a person on another device.
	OAuthDeviceScheme = "oauth2-device-code"
)

// Media types of inputs and results.
const (
	mediaText = "text/plain"
	mediaJSON = "application/json"
)

// card describes swarm a as an A2A agent reachable under base.
func (s *server) card(ctx context.Context, a *agent, base string) *sdk.AgentCard {
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
		s.oauthSchemes(ctx, c, a.id)
	}
	return c
}

// oauthSchemes declares in c the OAuth flows by which a client gets a
// token for swarm id from the server's authorization server, when it has
// one and its metadata can be read (else the card declares bearer tokens
// only, and says why in the logs of the first card).
func (s *server) oauthSchemes(ctx context.Context, c *sdk.AgentCard, id string) {
	o := s.opts.Auth.OAuth()
	if o == nil {
		return
	}
	md, err := o.ServerMetadata(ctx)
	if err != nil || md.TokenEndpoint == "" {
		return
	}
	scopes := map[string]string{auth.ScopeSwarmPrefix + id: "Run the swarm " + id + " and read its runs."}
	if md.AuthorizationEndpoint != "" {
		c.SecuritySchemes[OAuthScheme] = sdk.OAuth2SecurityScheme{
			Description:       "OAuth 2.0 authorization code with PKCE, for a person.",
			Oauth2MetadataURL: md.URL,
			Flows:             sdk.AuthorizationCodeOAuthFlow{AuthorizationURL: md.AuthorizationEndpoint, TokenURL: md.TokenEndpoint, Scopes: scopes, PKCERequired: true},
		}
		c.SecurityRequirements = append(c.SecurityRequirements, sdk.SecurityRequirements{OAuthScheme: sdk.SecuritySchemeScopes{auth.ScopeSwarmPrefix + id}})
	}
	if md.DeviceAuthorizationEndpoint != "" {
		c.SecuritySchemes[OAuthDeviceScheme] = sdk.OAuth2SecurityScheme{
			Description:       "OAuth 2.0 device code, for a person on another device.",
			Oauth2MetadataURL: md.URL,
			Flows:             sdk.DeviceCodeOAuthFlow{DeviceAuthorizationURL: md.DeviceAuthorizationEndpoint, TokenURL: md.TokenEndpoint, Scopes: scopes},
		}
		c.SecurityRequirements = append(c.SecurityRequirements, sdk.SecurityRequirements{OAuthDeviceScheme: sdk.SecuritySchemeScopes{auth.ScopeSwarmPrefix + id}})
	}
	c.SecuritySchemes[OAuthServiceScheme] = sdk.OAuth2SecurityScheme{
		Description:       "OAuth 2.0 client credentials, for a service.",
		Oauth2MetadataURL: md.URL,
		Flows:             sdk.ClientCredentialsOAuthFlow{TokenURL: md.TokenEndpoint, Scopes: scopes},
	}
	c.SecurityRequirements = append(c.SecurityRequirements, sdk.SecurityRequirements{OAuthServiceScheme: sdk.SecuritySchemeScopes{auth.ScopeSwarmPrefix + id}})
}
