package config

import (
	"os"
	"path/filepath"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Temporal is the optional temporal section of a file: the swarms it names
// run as Temporal workflows (see docs/temporal.md) rather than on Swarm's
// own engine. Only the swarm-temporal command runs such a file; the swarm
// command refuses it, naming that command.
//
//	temporal:
//	  address: temporal.example.com:7233   # default localhost:7233
//	  namespace: agents                    # default "default"
//	  task_queue: swarm                    # default "swarm"
//	  tls:                                 # optional; paths relative to the file
//	    ca: certs/ca.pem
//	    cert: certs/client.pem
//	    key: certs/client.key
//	  swarms: [trip, review]               # or "*" (the default): every swarm
type Temporal struct {
	// Address is the Temporal frontend's HOST:PORT ("" for the default,
	// localhost:7233).
	Address string
	// Namespace is the Temporal namespace ("" for "default").
	Namespace string
	// TaskQueue is the task queue of the swarms' workflows and
	// activities ("" for the engine's default, "swarm").
	TaskQueue string
	// TLS, when set, connects with TLS.
	TLS *TemporalTLS
	// Swarms lists the swarms and workflows that run on Temporal; nil
	// means all of the file's. Teams and conversations cannot be listed.
	Swarms []string
}

// TemporalTLS is the tls entry of the temporal section: absolute paths of
// PEM files. CA, when set, replaces the system's roots; Cert and Key, set
// together, authenticate the client (mTLS).
type TemporalTLS struct {
	CA, Cert, Key string
	// ServerName overrides the name the server's certificate is checked
	// against ("" for the address's host).
	ServerName string
}

// Runs reports whether swarm id runs on Temporal.
func (t *Temporal) Runs(id string) bool {
	return t != nil && (t.Swarms == nil || slices.Contains(t.Swarms, id))
}

var (
	temporalFields    = []string{"address", "namespace", "task_queue", "tls", "swarms"}
	temporalTLSFields = []string{"ca", "cert", "key", "server_name"}
)

// temporal reads the temporal section; f holds every other section.
func (p *parser) temporal(n *yaml.Node, f *File, hasNetwork bool) *Temporal {
	const what = "temporal"
	fs := p.fields(n, what, temporalFields)
	t := &Temporal{}
	for name, dst := range map[string]*string{"address": &t.Address, "namespace": &t.Namespace, "task_queue": &t.TaskQueue} {
		if fd, ok := fs[name]; ok {
			*dst = strings.TrimSpace(p.str(fd.val, what, name))
			if *dst == "" || strings.ContainsAny(*dst, " \t\n") {
				p.errf(fd.val, "%s: %s: want a non-empty name without spaces, or leave the field out for the default", what, name)
			}
		}
	}
	if fd, ok := fs["address"]; ok && t.Address != "" && !strings.Contains(t.Address, ":") {
		p.errf(fd.val, "%s: address %q: want HOST:PORT, such as localhost:7233", what, t.Address)
	}
	if fd, ok := fs["tls"]; ok && !isNull(fd.val) {
		t.TLS = p.temporalTLS(fd.val)
	}
	if hasNetwork {
		p.errf(deref(n), "%s: the file shares or consumes capabilities over the network (network:, share: or network_tools:), which runs on Temporal do not support; run those swarms with the swarm command and another file", what)
	}
	ids := slices.Concat(f.SwarmIDs(), f.WorkflowIDs())
	// Kinds of run the engine refuses, with why: refused here, when the
	// file loads, rather than at a run's start.
	refused := []struct {
		ids  []string
		kind string
		why  string
	}{
		{f.TeamIDs(), "team", "whose mailboxes runs on Temporal do not support"},
		{f.ConversationIDs(), "conversation", "which runs on Temporal do not support yet (a conversation's messages and shared context are not carried into the engine's activities): run it with the swarm command and another file"},
	}
	fd, ok := fs["swarms"]
	if !ok || isNull(fd.val) || (deref(fd.val).Kind == yaml.ScalarNode && (deref(fd.val).Value == "*" || deref(fd.val).Value == "all")) {
		for _, r := range refused {
			if len(r.ids) > 0 {
				p.errf(deref(n), "%s: every swarm runs on Temporal, and the file has the %s(s) %s, %s: list the swarms that run on Temporal under temporal: swarms", what, r.kind, strings.Join(r.ids, ", "), r.why)
			}
		}
		return t
	}
	t.Swarms = p.strList(fd.val, what, "swarms")
	if t.Swarms == nil {
		t.Swarms = []string{}
	}
next:
	for _, id := range t.Swarms {
		for _, r := range refused {
			if slices.Contains(r.ids, id) {
				p.errf(fd.val, "%s: swarms: %s is a %s, %s", what, id, r.kind, r.why)
				continue next
			}
		}
		if !slices.Contains(ids, id) {
			p.errf(fd.val, "%s: swarms: %q is not a swarm or workflow of the file (they are: %s)", what, id, strings.Join(ids, ", "))
		}
	}
	return t
}

// temporalTLS reads the tls entry of the temporal section.
func (p *parser) temporalTLS(n *yaml.Node) *TemporalTLS {
	const what = "temporal: tls"
	fs := p.fields(n, what, temporalTLSFields)
	t := &TemporalTLS{}
	for name, dst := range map[string]*string{"ca": &t.CA, "cert": &t.Cert, "key": &t.Key} {
		fd, ok := fs[name]
		if !ok {
			continue
		}
		path := p.str(fd.val, what, name)
		if path == "" {
			continue
		}
		if !filepath.IsAbs(path) {
			path = filepath.Join(p.dir, path)
		}
		if _, err := os.Stat(path); err != nil {
			p.errf(fd.val, "%s: %s: cannot read %s: %v", what, name, path, err)
		}
		*dst = path
	}
	if fd, ok := fs["server_name"]; ok {
		t.ServerName = p.str(fd.val, what, "server_name")
	}
	if (t.Cert == "") != (t.Key == "") {
		p.errf(deref(n), "%s: cert and key go together (the client's certificate and its private key)", what)
	}
	return t
}
