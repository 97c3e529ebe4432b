package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/store"
)

func (a *app) memoryCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "memory",
		Short: "List, show and delete what agents remember (memory banks)",
		Long: "Agents with memory (package memory; memory: in swarm.yaml) keep entries in banks in the store, such as\n" +
			"user:alice or agent:support. `swarm memory banks` lists the banks, `swarm memory ls BANK` a bank's entries,\n" +
			"`swarm memory show BANK KEY` one entry, `swarm memory rm BANK KEY...` deletes entries and\n" +
			"`swarm memory rm --bank BANK` a whole bank.",
	}
	c.AddCommand(a.memoryBanksCmd(), a.memoryLsCmd(), a.memoryShowCmd(), a.memoryRmCmd())
	return c
}

// memories returns rt's store as store.Memories.
func memories(rt *swarm.Runtime) (store.Memories, error) {
	ms, ok := rt.Store().(store.Memories)
	if !ok {
		return nil, fmt.Errorf("store %T keeps no memory banks", rt.Store())
	}
	return ms, nil
}

// withMemories is withRuntime for the memory commands.
func (a *app) withMemories(f func(ctx context.Context, ms store.Memories, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		ctx := cmd.Context()
		rt, err := a.runtime(ctx, false)
		if err != nil {
			return err
		}
		defer closeRuntime(rt)
		ms, err := memories(rt)
		if err != nil {
			return err
		}
		if len(args) > 0 {
			if err := store.CheckBank(args[0]); err != nil {
				return usageError{err}
			}
		}
		return f(ctx, ms, args)
	}
}

func (a *app) memoryBanksCmd() *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "banks [PREFIX]",
		Short: "List memory banks (those whose name starts with PREFIX)",
		Args:  cobra.MaximumNArgs(1),
		RunE: a.withMemories(func(ctx context.Context, ms store.Memories, args []string) error {
			banks, err := ms.Banks(ctx, strings.Join(args, ""))
			if err != nil {
				return err
			}
			if len(banks) == 0 {
				fmt.Fprintf(a.stderr, "no memory banks in %s\n", a.storeNote())
			}
			if asJSON {
				for _, b := range banks {
					writeJSON(a.stdout, b)
				}
				return nil
			}
			fmt.Fprintf(a.stdout, "%-40s %8s %10s  %s\n", "BANK", "ENTRIES", "BYTES", "UPDATED")
			for _, b := range banks {
				fmt.Fprintf(a.stdout, "%-40s %8d %10d  %s\n", b.Name, b.Entries, b.Bytes, b.UpdatedAt.Local().Format(time.DateTime))
			}
			return nil
		}),
	}
	c.Flags().BoolVar(&asJSON, "json", false, "JSON lines instead of a table")
	return c
}

func (a *app) memoryLsCmd() *cobra.Command {
	var prefix, after string
	var limit int
	var asJSON bool
	c := &cobra.Command{
		Use:   "ls BANK",
		Short: "List a memory bank's entries in key order",
		Args:  bankArgs(1, 1),
		RunE: a.withMemories(func(ctx context.Context, ms store.Memories, args []string) error {
			es, err := ms.ListMemories(ctx, args[0], store.MemoryFilter{Prefix: prefix, After: after, Limit: limit})
			if err != nil {
				return err
			}
			if len(es) == 0 {
				fmt.Fprintf(a.stderr, "no entries in memory bank %s of %s\n", args[0], a.storeNote())
			}
			if asJSON {
				for _, e := range es {
					writeJSON(a.stdout, e)
				}
				return nil
			}
			fmt.Fprintf(a.stdout, "%-30s %-19s  %s\n", "KEY", "UPDATED", "TEXT")
			for _, e := range es {
				text := strings.Join(strings.Fields(e.Text), " ")
				if len(text) > 60 {
					text = truncateRunes(text, 57) + "..."
				}
				fmt.Fprintf(a.stdout, "%-30s %-19s  %s\n", e.Key, e.UpdatedAt.Local().Format(time.DateTime), text)
			}
			return nil
		}),
	}
	c.Flags().StringVar(&prefix, "prefix", "", "only the keys that start with this")
	c.Flags().StringVar(&after, "after", "", "only the keys after this one (the last key of the previous page)")
	c.Flags().IntVar(&limit, "limit", 100, "the most entries listed (0: all)")
	c.Flags().BoolVar(&asJSON, "json", false, "JSON lines instead of a table")
	return c
}

func (a *app) memoryShowCmd() *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "show BANK KEY",
		Short: "Print one entry of a memory bank",
		Args:  bankArgs(2, 2),
		RunE: a.withMemories(func(ctx context.Context, ms store.Memories, args []string) error {
			e, err := ms.GetMemory(ctx, args[0], args[1])
			if errors.Is(err, store.ErrNotFound) {
				return usageError{fmt.Errorf("%w (in %s)", err, a.storeNote())}
			}
			if err != nil {
				return err
			}
			if asJSON {
				writeJSON(a.stdout, e)
				return nil
			}
			fmt.Fprintln(a.stdout, e.Text)
			return nil
		}),
	}
	c.Flags().BoolVar(&asJSON, "json", false, "the entry as JSON (with its tags, version, times and vector)")
	return c
}

func (a *app) memoryRmCmd() *cobra.Command {
	var bank string
	c := &cobra.Command{
		Use:   "rm BANK KEY... | --bank BANK",
		Short: "Delete entries of a memory bank, or a whole bank",
		Args: func(cmd *cobra.Command, args []string) error {
			switch {
			case bank != "" && len(args) > 0:
				return usageError{errors.New("give BANK KEY... or --bank BANK, not both")}
			case bank == "" && len(args) < 2:
				return usageError{errors.New("name what to delete: swarm memory rm BANK KEY... (or a whole bank: swarm memory rm --bank BANK)")}
			}
			return nil
		},
		RunE: a.withMemories(func(ctx context.Context, ms store.Memories, args []string) error {
			if bank != "" {
				if err := store.CheckBank(bank); err != nil {
					return usageError{err}
				}
				n, err := ms.DeleteBank(ctx, bank)
				if err != nil {
					return err
				}
				fmt.Fprintf(a.stdout, "deleted memory bank %s (%d entries)\n", bank, n)
				return nil
			}
			code := ExitCompleted
			for _, key := range args[1:] {
				err := ms.DeleteMemory(ctx, args[0], key)
				switch {
				case err == nil:
					fmt.Fprintf(a.stdout, "deleted %s from memory bank %s\n", key, args[0])
					continue
				case errors.Is(err, store.ErrNotFound):
					code = max(code, ExitUsage)
				default:
					code = max(code, ExitFailed)
				}
				fmt.Fprintln(a.stderr, "swarm:", err)
			}
			if code != ExitCompleted {
				return exitError{code}
			}
			return nil
		}),
	}
	c.Flags().StringVar(&bank, "bank", "", "delete this whole bank: its entries and the record of its writes")
	return c
}

// bankArgs accepts between lo and hi arguments, the first a bank.
func bankArgs(lo, hi int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) < lo || len(args) > hi {
			return usageError{fmt.Errorf("usage: swarm memory %s", cmd.Use)}
		}
		return nil
	}
}

// truncateRunes cuts s to at most n bytes at a rune boundary.
func truncateRunes(s string, n int) string {
	for n > 0 && n < len(s) && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:min(n, len(s))]
}
