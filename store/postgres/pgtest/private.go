package pgtest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Instance is a PostgreSQL server of a test's own, for tests that stop and
// restart the database: the shared server must stay up for the others.
type Instance struct {
	t       testing.TB
	bin     string // the directory of initdb and pg_ctl
	dir     string // data, socket and log
	port    int
	asUser  []string // runuser prefix when running as root
	running bool
}

// Private initialises and starts a server of t's own on a free loopback
// port, with a database named swarm, and stops it when t ends. It skips t
// loudly when the PostgreSQL server programs are not installed.
func Private(t testing.TB) *Instance {
	t.Helper()
	bin := serverBin()
	if bin == "" {
		t.Skip("SKIPPING: the PostgreSQL server programs (initdb, pg_ctl) are not installed")
	}
	in := &Instance{t: t, bin: bin}
	if os.Geteuid() == 0 {
		// The server refuses to run as root: run it as postgres.
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Skipf("SKIPPING: running as root and there is no postgres user to run a server as: %v", err)
		}
		in.asUser = []string{"runuser", "-u", "postgres", "--"}
		dir, err := os.MkdirTemp("", "swarm-pg")
		if err != nil {
			t.Fatal(err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
		in.dir = dir
		t.Cleanup(func() { os.RemoveAll(dir) })
	} else {
		in.dir = t.TempDir()
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	in.port = ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	in.run("initdb", "-D", in.data(), "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8")
	t.Cleanup(func() {
		if in.running {
			in.Stop()
		}
	})
	in.Start()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, in.url("postgres"))
	if err != nil {
		t.Fatalf("connect to the private server: %v", err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "CREATE DATABASE swarm"); err != nil {
		t.Fatalf("create database: %v", err)
	}
	return in
}

// serverBin finds the directory of initdb and pg_ctl: on PATH, or in
// Debian's /usr/lib/postgresql/VERSION/bin, newest first.
func serverBin() string {
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p)
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(dirs, func(a, b string) int {
		va, _ := strconv.Atoi(filepath.Base(filepath.Dir(a)))
		vb, _ := strconv.Atoi(filepath.Base(filepath.Dir(b)))
		return vb - va
	})
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d
		}
	}
	return ""
}

func (in *Instance) data() string { return filepath.Join(in.dir, "data") }

func (in *Instance) url(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", in.port, db)
}

// URL is the connection URL of the instance's swarm database.
func (in *Instance) URL() string { return in.url("swarm") }

func (in *Instance) run(prog string, args ...string) {
	in.t.Helper()
	if err := in.exec(prog, args...); err != nil {
		in.t.Fatal(err)
	}
}

func (in *Instance) exec(prog string, args ...string) error {
	argv := append(slices.Clone(in.asUser), filepath.Join(in.bin, prog))
	argv = append(argv, args...)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = in.dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s: %w\n%s", prog, err, out)
	}
	return nil
}

// Start starts the server and waits until it accepts connections.
func (in *Instance) Start() {
	in.t.Helper()
	if err := in.TryStart(); err != nil {
		in.t.Fatal(err)
	}
}

// TryStart is Start for another goroutine than the test's: it returns
// the error instead of failing the test.
func (in *Instance) TryStart() error {
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off", in.port, in.dir)
	if err := in.exec("pg_ctl", "-D", in.data(), "-l", filepath.Join(in.dir, "log"), "-o", opts, "-w", "-t", "60", "start"); err != nil {
		return err
	}
	in.running = true
	return nil
}

// Stop shuts the server down fast: open connections are ended and
// transactions in progress rolled back, as in a restart.
func (in *Instance) Stop() {
	in.t.Helper()
	in.run("pg_ctl", "-D", in.data(), "-m", "fast", "-w", "-t", "60", "stop")
	in.running = false
}
