package cli

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/spf13/cobra"
)

func (a *app) healthcheckCmd() *cobra.Command {
	var (
		addr    string
		ready   bool
		timeout time.Duration
	)
	c := &cobra.Command{
		Use:   "healthcheck",
		Short: "Check a swarm serve on this machine: exit 0 if GET /healthz (or /readyz) answers 200",
		Long: "Check a swarm serve: GET /healthz (with --ready, /readyz) at --addr and exit 0 if it answers 200,\n" +
			"1 otherwise. It needs no shell or curl, so a container image FROM scratch can use it as its health check.\n" +
			"An unspecified host (0.0.0.0, [::], or none) is checked on loopback.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			host, port, err := net.SplitHostPort(addr)
			if err != nil {
				return usageError{fmt.Errorf("--addr %q: %w", addr, err)}
			}
			if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
				host = "127.0.0.1"
			}
			path := "/healthz"
			if ready {
				path = "/readyz"
			}
			url := "http://" + net.JoinHostPort(host, port) + path
			client := &http.Client{Timeout: timeout}
			res, err := client.Get(url)
			if err != nil {
				return fmt.Errorf("healthcheck: %w", err)
			}
			defer res.Body.Close()
			body, _ := io.ReadAll(io.LimitReader(res.Body, 4096))
			if res.StatusCode != http.StatusOK {
				return fmt.Errorf("healthcheck: GET %s: %s: %s", url, res.Status, body)
			}
			fmt.Fprintf(a.stdout, "%s: %s\n", url, body)
			return nil
		},
	}
	c.Flags().StringVar(&addr, "addr", DefaultAddr, "address of the swarm serve, HOST:PORT (as its --addr)")
	c.Flags().BoolVar(&ready, "ready", false, "check /readyz (ready to take requests) instead of /healthz (alive)")
	c.Flags().DurationVar(&timeout, "timeout", 5*time.Second, "how long to wait for the answer")
	return c
}
