package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/swarmrt/swarm/store"
	_ "github.com/swarmrt/swarm/store/postgres" // registers postgres:// and postgresql://
)

// versioned is a store that reports its schema version.
type versioned interface {
	SchemaVersion(ctx context.Context) (int, error)
}

func (a *app) migrateCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "migrate",
		Short: "Create or upgrade the store's schema and print its version",
		Long: "Open the --store database, applying the schema migrations built into this program (PostgreSQL:\n" +
			"serialised by an advisory lock, safe while other nodes start), and print the schema version.\n" +
			"A database with a newer schema than this program knows is refused and left alone.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			url := a.storeURLOrDefault()
			if err := ensureStoreDir(url); err != nil {
				return err
			}
			st, err := store.Open(ctx, url)
			if err != nil {
				return err
			}
			defer st.Close()
			v, ok := st.(versioned)
			if !ok {
				fmt.Fprintf(a.stdout, "%s: no schema to migrate\n", store.Redact(url))
				return nil
			}
			n, err := v.SchemaVersion(ctx)
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "schema version %d\n", n)
			return nil
		},
	}
}
