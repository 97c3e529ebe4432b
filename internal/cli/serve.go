package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/a2a"
	"github.com/swarmrt/swarm/auth"
	"github.com/swarmrt/swarm/config"
	"github.com/swarmrt/swarm/dashboard"
	"github.com/swarmrt/swarm/eval"
	"github.com/swarmrt/swarm/server"
)

// DefaultAddr is where `swarm serve` listens without --addr or a serve
// section: loopback only.
const DefaultAddr = "127.0.0.1:8080"

// MountFunc builds extra front ends (A2A, MCP) for `swarm serve`. It gets
// the serving runtime, the authenticator of the server and its public base
// URL ("" when none is configured); the mounts it returns are served
// behind the same authentication as the HTTP API.
type MountFunc func(rt *swarm.Runtime, a *auth.Authenticator, publicURL string) ([]server.Mount, error)

var (
	mountsMu   sync.Mutex
	mountFuncs []MountFunc
)

// RegisterMounts adds front ends to `swarm serve`. Protocol packages stay
// free of the command: each has a small file in this package (a2a.go,
// mcp.go) whose init function calls RegisterMounts, e.g.
//
//	func init() {
//		RegisterMounts(func(rt *swarm.Runtime, a *auth.Authenticator, publicURL string) ([]server.Mount, error) {
//			h, err := a2a.NewHandler(rt)
//			return []server.Mount{{Pattern: "/a2a/", Handler: h}}, err
//		})
//	}
func RegisterMounts(f MountFunc) {
	mountsMu.Lock()
	defer mountsMu.Unlock()
	mountFuncs = append(mountFuncs, f)
}

func registeredMounts(rt *swarm.Runtime, a *auth.Authenticator, publicURL string) ([]server.Mount, error) {
	mountsMu.Lock()
	fs := append([]MountFunc(nil), mountFuncs...)
	mountsMu.Unlock()
	var out []server.Mount
	for _, f := range fs {
		m, err := f(rt, a, publicURL)
		if err != nil {
			return nil, err
		}
		out = append(out, m...)
	}
	return out, nil
}

func (a *app) serveCmd() *cobra.Command {
	var (
		addr, tokenFile string
		publicURL       string
		allowHosts      []string
		verbose         bool
		shutdownWait    time.Duration
		drainDelay      time.Duration
		storeWait       time.Duration
	)
	c := &cobra.Command{
		Use:   "serve",
		Short: "Serve the swarms over HTTP (JSON API, event streams, and the registered front ends)",
		Long: "Serve the swarms of the definitions file over HTTP until SIGINT or SIGTERM.\n" +
			"Runs interrupted by an earlier crash are recovered at start. The server listens on loopback by default;\n" +
			"any other address requires bearer tokens, from --token-file, $SWARM_TOKENS or the serve section of\n" +
			"swarm.yaml. Token text format: entries separated by ';' or new lines, each name:secret:swarm1,swarm2\n" +
			"(swarms '*' for all). The listening address is printed on stderr as 'listening on http://HOST:PORT'.\n" +
			"Against DNS rebinding, every request to a Host other than a loopback name, the listening address or the\n" +
			"names of --allow-host, --public-url and the serve section (hosts, public_url) is refused, as is every\n" +
			"request whose Origin is another site's.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			log := a.stderrLogger(verbose)
			a.logger, a.storeWait, a.serving = log, storeWait, true
			rt, file, err := a.openRuntime(ctx, true)
			if err != nil {
				return err
			}
			defer closeRuntime(rt)
			tokens, err := serveTokens(tokenFile, file.Serve)
			if err != nil {
				return usageError{err}
			}
			authn, err := auth.New(tokens)
			if err != nil {
				return usageError{err}
			}
			if file.Serve != nil && file.Serve.OAuth != nil {
				o, err := serveOAuth(rt, file.Serve.OAuth)
				if err != nil {
					return usageError{err}
				}
				authn.UseOAuth(o)
			}
			if addr == "" && file.Serve != nil {
				addr = file.Serve.Addr
			}
			if addr == "" {
				addr = DefaultAddr
			}
			if err := auth.RequireForAddr(authn, addr); err != nil {
				return usageError{err}
			}
			publicURL, hosts, err := serveNames(file, addr, publicURL, allowHosts)
			if err != nil {
				return usageError{err}
			}
			mounts, err := registeredMounts(rt, authn, publicURL)
			if err != nil {
				return err
			}
			// The eval runner is defined once the protocols have taken
			// the file's swarms (A2A and MCP do not offer it): eval runs
			// left by a swarm eval run that died are continued here, and
			// the API and the dashboard show them.
			exposed := rt.Swarms()
			if err := eval.Define(rt, eval.Options{}); err != nil {
				return err
			}
			node := file.Network()
			if node != nil {
				// Deferred after closeRuntime, so run before it: the
				// node stops while the store is open.
				defer node.Close()
				mounts = append(mounts, server.Mount{Pattern: "/v1/network/", Handler: node.Handler()})
			}
			// The web dashboard at / and /ui/, behind the same tokens as
			// the API (it checks them itself: a browser logs in once and
			// carries its token in a cookie).
			d, err := dashboard.New(rt, dashboard.Options{Auth: authn, Logger: log, Network: node})
			if err != nil {
				return err
			}
			mounts = append(mounts, d.Mounts()...)
			opts := server.Options{Auth: authn, Mounts: mounts, Logger: log, Hosts: hosts}
			if a.tel != nil {
				opts.Metrics = a.tel.WritePrometheus
			}
			srv, err := server.New(rt, opts)
			if err != nil {
				return err
			}
			// A network node joins before runs are recovered, so that a
			// recovered run finds the network tools it was using; it needs
			// the listening address. Without one, runs are recovered
			// before the port is opened.
			var ln net.Listener
			listen := func() error {
				l, err := net.Listen("tcp", addr)
				if err != nil {
					return usageError{err}
				}
				ln = l
				if node == nil {
					return nil
				}
				if err := startNode(ctx, a.stderr, node, rt, file, "http://"+ln.Addr().String()); err != nil {
					ln.Close()
					return err
				}
				return nil
			}
			if node != nil {
				if err := listen(); err != nil {
					return err
				}
			}
			ids, err := rt.Recover(ctx)
			if err != nil {
				if ln != nil {
					ln.Close()
				}
				return err
			}
			if len(ids) > 0 {
				fmt.Fprintf(a.stderr, "swarm: recovered %d run(s)\n", len(ids))
			}
			if node == nil {
				if err := listen(); err != nil {
					return err
				}
			}
			hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute,
				ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
			hs.RegisterOnShutdown(srv.CloseStreams)
			served := make(chan error, 1)
			go func() { served <- hs.Serve(ln) }()
			mode := "without authentication (loopback)"
			if authn.Required() {
				mode = fmt.Sprintf("with %d bearer token(s)", len(tokens))
			}
			if authn.OAuth() != nil {
				mode += " and OAuth access tokens of " + file.Serve.OAuth.Issuer
			}
			fmt.Fprintf(a.stderr, "swarm: listening on http://%s %s\n", ln.Addr(), mode)
			printEndpoints(a.stderr, "http://"+ln.Addr().String(), file, mounts, exposed)
			if authn.OAuth() != nil {
				fmt.Fprintf(a.stderr, "swarm:   OAuth     http://%s%s (protected resource metadata)\n", ln.Addr(), auth.WellKnownPath)
			}

			// The node works: it claims runs that are runnable (resumed,
			// released, or whose owner's lease expired) as the store
			// announces them, and drains on shutdown.
			worked := make(chan error, 1)
			wctx, stopWork := context.WithCancel(context.WithoutCancel(ctx))
			go func() { worked <- rt.Work(wctx, swarm.WorkOptions{DrainTimeout: shutdownWait}) }()
			// Another engine's worker (swarm-temporal's) works beside it.
			engined := make(chan error, 1)
			if a.engineOn && a.engine.Serve != nil {
				go func() { engined <- a.engine.Serve(wctx, rt) }()
				defer func() { <-engined }()
			}
			select {
			case <-ctx.Done():
			case err := <-engined:
				engined <- err // for the deferred wait
				stopWork()
				<-worked
				_ = hs.Close()
				return fmt.Errorf("the engine's worker stopped: %w", err)
			case err := <-served:
				stopWork()
				<-worked
				return err
			}
			// Not ready from now on (GET /readyz answers 503), while the
			// node goes on serving for --drain-delay: a load balancer
			// (a Kubernetes Service) stops sending it new requests before
			// it stops listening.
			srv.Drain()
			// Draining starts now, beside the HTTP shutdown, so that the
			// runs waiting for a model go to other nodes at once even
			// while requests are still open.
			stopWork()
			if drainDelay > 0 {
				fmt.Fprintf(a.stderr, "swarm: draining: not ready, serving for %s more\n", drainDelay)
				time.Sleep(drainDelay)
			}
			fmt.Fprintln(a.stderr, "swarm: shutting down")
			sctx, cancel := context.WithTimeout(context.Background(), shutdownWait)
			defer cancel()
			if node != nil {
				// The node leaves first: the feeds it serves end at once
				// with a goodbye (peers drop it now, and the HTTP
				// shutdown does not wait for the streams), and its row
				// leaves the store's node table while the store is open.
				if err := node.Leave(sctx); err != nil {
					fmt.Fprintf(a.stderr, "swarm: %v\n", err)
				}
			}
			err = hs.Shutdown(sctx)
			srv.CloseStreams()
			if err != nil {
				fmt.Fprintf(a.stderr, "swarm: requests still open after %s: %v\n", shutdownWait, err)
				_ = hs.Close()
			}
			if err := <-worked; err != nil && !errors.Is(err, swarm.ErrClosed) {
				fmt.Fprintf(a.stderr, "swarm: draining: %v\n", err)
			}
			if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
				return err
			}
			// closeRuntime (deferred) interrupts the runs driven here and
			// releases their leases for the next process.
			return nil
		},
	}
	c.Flags().StringVar(&addr, "addr", "", "listen address HOST:PORT (default: the file's serve.addr or "+DefaultAddr+"; port 0 picks a free port)")
	c.Flags().StringVar(&publicURL, "public-url", "", "the server's public base URL, such as https://swarm.example.com (default: the file's serve.public_url): agent cards name it, and its host is allowed")
	c.Flags().StringArrayVar(&allowHosts, "allow-host", nil, "a further name the server answers to (host or host:port, '*' for any; repeatable), besides loopback names, its address and the file's serve.hosts")
	c.Flags().StringVar(&tokenFile, "token-file", "", "file of bearer tokens, one name:secret:swarm1,swarm2 per line ('*' for all swarms)")
	c.Flags().BoolVarP(&verbose, "verbose", "v", false, "log every request on stderr")
	c.Flags().DurationVar(&storeWait, "store-wait", time.Minute, "how long to wait at start for a store database that is down or starting")
	c.Flags().DurationVar(&shutdownWait, "shutdown-timeout", 15*time.Second, "how long shutdown waits for open requests")
	c.Flags().DurationVar(&drainDelay, "drain-delay", 0, "on SIGTERM, how long the node goes on serving, not ready (/readyz 503), before it stops listening")
	return c
}

// serveNames returns the public base URL of the server (flag, else the
// file's) and the names it answers to besides loopback ones and its
// address: those of the flag and the file, and the hosts of the public
// URL, of the OAuth resource, of the network url and of the listen
// address.
func serveNames(file *config.File, addr, publicURL string, flagHosts []string) (string, []string, error) {
	var hosts []string
	var urls []string
	if sec := file.Serve; sec != nil {
		if publicURL == "" {
			publicURL = sec.PublicURL
		}
		hosts = append(hosts, sec.Hosts...)
		if sec.OAuth != nil {
			urls = append(urls, sec.OAuth.Resource)
		}
	}
	if publicURL != "" {
		if err := config.CheckPublicURL(publicURL); err != nil {
			return "", nil, fmt.Errorf("--public-url: %w", err)
		}
		publicURL = strings.TrimSuffix(publicURL, "/")
	}
	hosts = append(hosts, flagHosts...)
	for _, u := range append(urls, publicURL, file.NetworkURL()) {
		if pu, err := url.Parse(u); err == nil && pu.Hostname() != "" {
			hosts = append(hosts, pu.Hostname())
		}
	}
	if h, _, err := net.SplitHostPort(addr); err == nil && h != "" && net.ParseIP(h) == nil {
		hosts = append(hosts, h)
	}
	if _, err := auth.NewHostGuard(hosts); err != nil {
		return "", nil, err
	}
	return publicURL, hosts, nil
}

// serveTokens gathers the bearer tokens of --token-file, $SWARM_TOKENS and
// the file's serve section.
func serveTokens(tokenFile string, sec *config.Serve) ([]auth.Token, error) {
	var out []auth.Token
	if tokenFile != "" {
		b, err := os.ReadFile(tokenFile)
		if err != nil {
			return nil, fmt.Errorf("token file: %w", err)
		}
		t, err := auth.ParseTokens(string(b))
		if err != nil {
			return nil, fmt.Errorf("token file %s: %w", tokenFile, err)
		}
		out = append(out, t...)
	}
	if env := os.Getenv("SWARM_TOKENS"); env != "" {
		t, err := auth.ParseTokens(env)
		if err != nil {
			return nil, fmt.Errorf("SWARM_TOKENS: %w", err)
		}
		out = append(out, t...)
	}
	if sec != nil {
		for _, t := range sec.Tokens {
			secret := os.Getenv(t.SecretEnv)
			if secret == "" {
				return nil, fmt.Errorf("serve token %q: environment variable %s is not set", t.Name, t.SecretEnv)
			}
			out = append(out, auth.Token{Name: t.Name, Secret: secret, Swarms: t.Swarms, Capabilities: t.Capabilities})
		}
	}
	return out, nil
}

// serveOAuth builds the OAuth validator of the serve section, its client
// credentials read from the environment; the metadata lists a swarm: scope
// per swarm served.
func serveOAuth(rt *swarm.Runtime, sec *config.ServeOAuth) (*auth.OAuth, error) {
	cfg := auth.OAuthConfig{
		Issuer: sec.Issuer, Resource: sec.Resource, Audiences: sec.Audiences, JWKSURI: sec.JWKSURI,
		Algorithms: sec.Algorithms, SwarmsClaim: sec.SwarmsClaim, CapabilitiesClaim: sec.CapabilitiesClaim,
		IntrospectionURL: sec.IntrospectionURL, MinRefresh: sec.JWKSMinRefresh,
		Scopes: []string{auth.ScopeAllSwarms, auth.ScopeAllCapabilities},
	}
	for _, d := range rt.Swarms() {
		cfg.Scopes = append(cfg.Scopes, auth.ScopeSwarmPrefix+d.ID())
	}
	for _, e := range []struct {
		name string
		dst  *string
	}{{sec.ClientIDEnv, &cfg.ClientID}, {sec.ClientSecretEnv, &cfg.ClientSecret}} {
		if e.name == "" {
			continue
		}
		if *e.dst = os.Getenv(e.name); *e.dst == "" {
			return nil, fmt.Errorf("serve: oauth: introspection: environment variable %s is not set", e.name)
		}
	}
	return auth.NewOAuth(cfg)
}

// printEndpoints lists, at the start of swarm serve, the swarms,
// conversations, teams and workflows served (each kind the file has) and where each
// protocol answers. The A2A card at the well-known path of the server is
// that of its only swarm (defs): with several there is none, and each
// swarm's card is under its own path.
func printEndpoints(w io.Writer, base string, file *config.File, mounts []server.Mount, defs []swarm.Definition) {
	for _, kind := range []struct {
		name string
		ids  []string
	}{{"swarms", file.SwarmIDs()}, {"conversations", file.ConversationIDs()}, {"teams", file.TeamIDs()}, {"workflows", file.WorkflowIDs()}} {
		if len(kind.ids) > 0 {
			fmt.Fprintf(w, "swarm: %s of %s: %s\n", kind.name, file.Path, strings.Join(kind.ids, ", "))
		}
	}
	fmt.Fprintf(w, "swarm:   HTTP API  %s/v1/swarms, %s/v1/swarms/{swarm}/runs, %s/v1/runs/{id}/events (OpenAPI: %s/openapi.json)\n", base, base, base, base)
	for _, m := range mounts {
		switch m.Pattern {
		case a2a.PathPrefix:
			fmt.Fprintf(w, "swarm:   A2A       %s%s{swarm} (JSON-RPC; card: %s%s{swarm}/.well-known/agent-card.json)\n", base, a2a.PathPrefix, base, a2a.PathPrefix)
		case a2a.CardPath:
			if len(defs) == 1 {
				fmt.Fprintf(w, "swarm:   A2A card  %s%s (of %s, the only swarm)\n", base, a2a.CardPath, defs[0].ID())
			}
		case "/mcp":
			fmt.Fprintf(w, "swarm:   MCP       %s/mcp (streamable HTTP)\n", base)
		case dashboard.RootPattern:
			// Printed with /ui/.
		case dashboard.PathPrefix:
			fmt.Fprintf(w, "swarm:   Dashboard %s/ (in a browser)\n", base)
		default:
			fmt.Fprintf(w, "swarm:   %s%s\n", base, m.Pattern)
		}
	}
}
