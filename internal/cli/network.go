package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/config"
	"github.com/swarmrt/swarm/network"
)

// startNode joins the network of the file: the node is reached at the
// file's network url, else at the listen address.
func startNode(ctx context.Context, w io.Writer, node *network.Node, rt *swarm.Runtime, file *config.File, listen string) error {
	url := file.NetworkURL()
	if url == "" {
		url = listen
	}
	if err := node.Start(ctx, network.StartOptions{Runtime: rt, URL: url}); err != nil {
		return fmt.Errorf("network: %w", err)
	}
	shared := node.Shared()
	names := make([]string, len(shared))
	for i, c := range shared {
		names[i] = c.Name
	}
	if len(shared) == 0 {
		fmt.Fprintf(w, "swarm: network node %s at %s/v1/network/, sharing no capabilities\n", node.ID(), url)
		return nil
	}
	fmt.Fprintf(w, "swarm: network node %s at %s/v1/network/ sharing %d capabilities: %s\n", node.ID(), url, len(shared), strings.Join(names, ", "))
	return nil
}

func (a *app) networkCmd() *cobra.Command {
	var (
		url, tokenEnv string
		asJSON        bool
		timeout       time.Duration
	)
	c := &cobra.Command{
		Use:   "network",
		Short: "List the peers and capabilities of a running node's network",
		Long: "Ask the swarm serve at --url (default http://" + DefaultAddr + ") for its view of the network: the capabilities\n" +
			"it shares, its peers (state, last heartbeat, capabilities) and every capability its peers offer (name, kind,\n" +
			"tags, version, providers). The bearer token, if the node needs one, is read from $SWARM_TOKEN (or --token-env).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(url, "/")+network.PathPeers, nil)
			if err != nil {
				return usageError{err}
			}
			if tok := os.Getenv(tokenEnv); tok != "" {
				req.Header.Set("Authorization", "Bearer "+tok)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return fmt.Errorf("network: %w", err)
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
			if err != nil {
				return fmt.Errorf("network: %w", err)
			}
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("network: %s: %s", resp.Status, strings.TrimSpace(string(body)))
			}
			var st network.Status
			if err := json.Unmarshal(body, &st); err != nil {
				return fmt.Errorf("network: the answer of %s is not a network status: %w", url, err)
			}
			if asJSON {
				_, err := a.stdout.Write(body)
				return err
			}
			printNetwork(a.stdout, st)
			return nil
		},
	}
	c.Flags().StringVar(&url, "url", "http://"+DefaultAddr, "base URL of a running swarm serve")
	c.Flags().StringVar(&tokenEnv, "token-env", "SWARM_TOKEN", "environment variable holding the bearer token")
	c.Flags().BoolVar(&asJSON, "json", false, "print the status as JSON")
	c.Flags().DurationVar(&timeout, "timeout", 10*time.Second, "how long to wait for the node")
	return c
}

// printNetwork prints a node's status as three tables.
func printNetwork(w io.Writer, st network.Status) {
	fmt.Fprintf(w, "node %s %s\n", st.Node.ID, st.Node.URL)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "\nSHARED\tKIND\tTAGS\tVERSION")
	for _, c := range st.Shared {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", c.Name, c.Kind, strings.Join(c.Tags, ","), dash(c.Version))
	}
	fmt.Fprintln(tw, "\nPEER\tNODE\tSTATE\tLAST SEEN\tCAPABILITIES\tSOURCE")
	for _, p := range st.Peers {
		seen := "-"
		if !p.LastSeen.IsZero() {
			seen = p.LastSeen.UTC().Format(time.RFC3339)
		}
		state := p.State
		if p.Error != "" {
			state += " (" + p.Error + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\n", p.URL, dash(p.Node), state, seen, p.Capabilities, p.Source)
	}
	fmt.Fprintln(tw, "\nCAPABILITY\tKIND\tTAGS\tVERSION\tPROVIDERS\tHEALTH")
	type row struct {
		c         network.Capability
		providers []string
	}
	var rows []*row
	for _, o := range st.Capabilities {
		if n := len(rows); n > 0 && rows[n-1].c.Name == o.Name && rows[n-1].c.Version == o.Version {
			rows[n-1].providers = append(rows[n-1].providers, o.Node)
			continue
		}
		rows = append(rows, &row{c: o.Capability, providers: []string{o.Node}})
	}
	for _, r := range rows {
		slices.Sort(r.providers)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.c.Name, r.c.Kind, strings.Join(r.c.Tags, ","), dash(r.c.Version), strings.Join(r.providers, ","), "up")
	}
	tw.Flush()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
