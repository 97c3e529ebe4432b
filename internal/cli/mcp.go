package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/mcp"
)

func (a *app) mcpCmd() *cobra.Command {
	var verbose bool
	c := &cobra.Command{
		Use:   "mcp",
		Short: "Serve the swarms as an MCP server on standard input and output",
		Long: "Serve the swarms of the definitions file as MCP tools (one per swarm, plus resume), run results as\n" +
			"resources (swarm://runs/{id}/result) and swarm instructions as prompts, over stdio; a stateless (2026-07-28)\n" +
			"client that declares the Tasks extension gets long runs as tasks (tasks/get, tasks/update, tasks/cancel). Runs interrupted\n" +
			"earlier are recovered first. Logs go to stderr only; the protocol owns stdout.",
		Args: cobra.NoArgs,
		RunE: a.withRuntime(true, func(ctx context.Context, rt *swarm.Runtime, args []string) error {
			log := a.stderrLogger(verbose)
			if ids, err := rt.Recover(ctx); err != nil {
				log.Warn("recovering interrupted runs failed", "err", err)
			} else if len(ids) > 0 {
				log.Info("recovered interrupted runs", "runs", len(ids))
			}
			opts := mcp.Options{Version: cmp.Or(Version, "dev"), Logger: log}
			if _, err := mcp.NewServer(rt, opts); err != nil {
				return usageError{err}
			}
			t := &sdk.IOTransport{Reader: io.NopCloser(a.stdin), Writer: nopCloser{a.stdout}}
			if err := mcp.Serve(ctx, rt, opts, t); err != nil && ctx.Err() == nil && !errors.Is(err, io.EOF) && !errors.Is(err, sdk.ErrConnectionClosed) {
				return fmt.Errorf("mcp: %w", err)
			}
			return nil
		}),
	}
	c.Flags().BoolVarP(&verbose, "verbose", "v", false, "log each run started and resumed")
	return c
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }
