package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/swarmrt/swarm/auth"
	"github.com/swarmrt/swarm/store"
)

func (a *app) loginCmd() *cobra.Command {
	var clientID, resource, issuer string
	var scopes []string
	c := &cobra.Command{
		Use:   "login URL --client-id ID",
		Short: "Authorize access to an OAuth-protected MCP server or A2A agent, as a person",
		Long: "Discover the authorization server of the service at URL (its protected resource metadata, RFC 9728,\n" +
			"then the server's metadata, RFC 8414), print the URL at which to authorize this client (authorization\n" +
			"code with PKCE), wait for the redirect to a loopback port of this machine, and keep the tokens, refresh\n" +
			"token included, in the store, encrypted with the key of $" + auth.SecretKeyEnv + " (32 bytes, base64).\n" +
			"Agents that reach the service with the same client id, store and key use and refresh them.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if clientID == "" {
				return usageError{fmt.Errorf("--client-id is required: the id under which this client is registered with the authorization server")}
			}
			key, err := auth.SecretKeyFromEnv()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			st, err := a.openStoreFor(ctx, a.storeURLOrDefault(), true)
			if err != nil {
				return err
			}
			defer st.Close()
			secrets, _ := st.(store.Secrets)
			tokens, err := auth.NewSealedStore(secrets, key)
			if err != nil {
				return fmt.Errorf("store %s: %w", a.storeURLOrDefault(), err)
			}
			cl, err := auth.NewClient(auth.ClientConfig{URL: args[0], Resource: resource, Issuer: issuer, ClientID: clientID, Scopes: scopes, Store: tokens})
			if err != nil {
				return usageError{err}
			}
			err = cl.Login(ctx, func(u string) error {
				fmt.Fprintf(a.stderr, "swarm: open this URL to authorize %s:\n\n  %s\n\nswarm: waiting for the authorization...\n", args[0], u)
				return nil
			})
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "authorized: the tokens for %s are kept, encrypted, in store %s\n", args[0], a.storeURLOrDefault())
			return nil
		},
	}
	c.Flags().StringVar(&clientID, "client-id", "", "the client id registered with the authorization server")
	c.Flags().StringSliceVar(&scopes, "scope", nil, "a scope to ask for (repeatable)")
	c.Flags().StringVar(&resource, "resource", "", "the resource identifier to ask tokens for (default: the one the service's metadata names)")
	c.Flags().StringVar(&issuer, "issuer", "", "the authorization server (default: the first the service's metadata names)")
	return c
}
