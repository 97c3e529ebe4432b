package absorb

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/model"
)

// Provider makes an agent that a package offers to any program that links
// it, the way a database/sql driver registers itself: the package calls
// [Provide] in its init function, a program imports it (a blank import is
// enough), and [Discover] builds the agents of every provider linked in.
// Which captain a program makes of them is the program's choice (see
// [Into]).
//
// A provider can be listed ([Providers]) without building its agent: its
// ID, Description and Skills (with their input schemas) describe it.
type Provider struct {
	// ID is the provider's namespaced id: dot-separated labels matching
	// [a-zA-Z0-9_-]+, at least two, such as "acme.research.coder". The
	// last label is the name of the agent it builds.
	ID string
	// Description says what the agent does. The agent built gets it if it
	// has none.
	Description string
	// Skills are the agent's skills (see [Sibling]).
	Skills []Skill
	// Build makes a new agent. Each call of [Discover] calls it once, so
	// every program (and every test) gets agents of its own.
	Build func() *swarm.Agent
}

// Name returns the name of the agent p builds: the last label of its ID.
func (p Provider) Name() string { return p.ID[strings.LastIndexByte(p.ID, '.')+1:] }

// Namespace returns p's ID without its last label.
func (p Provider) Namespace() string { return p.ID[:max(strings.LastIndexByte(p.ID, '.'), 0)] }

var (
	providersMu sync.RWMutex
	providers   = map[string]Provider{}
)

// Provide registers an agent provider, to be called from a package's init
// function. Like sql.Register, it panics if p.ID is malformed or already
// provided, or if p.Build is nil: these are programming errors, found when
// the program starts.
func Provide(p Provider) {
	if err := checkProviderID(p.ID); err != nil {
		panic("absorb: Provide: " + err.Error())
	}
	if p.Build == nil {
		panic("absorb: Provide: provider " + p.ID + " has a nil Build")
	}
	p.Skills = slices.Clone(p.Skills)
	providersMu.Lock()
	defer providersMu.Unlock()
	if _, dup := providers[p.ID]; dup {
		panic("absorb: Provide called twice for provider " + p.ID)
	}
	providers[p.ID] = p
}

func checkProviderID(id string) error {
	labels := strings.Split(id, ".")
	if len(labels) < 2 {
		return fmt.Errorf("provider id %q needs a namespace: want labels separated by dots, such as \"acme.coder\"", id)
	}
	for _, l := range labels {
		if err := checkLabel(l); err != nil {
			return fmt.Errorf("provider id %q: %w", id, err)
		}
	}
	return nil
}

// checkLabel checks a label of a provider id, which names an agent.
func checkLabel(l string) error { return model.CheckName(l) }

// Providers returns the registered providers sorted by ID (those whose
// namespace is one of namespaces or below it, when any are given), without
// building their agents.
func Providers(namespaces ...string) []Provider {
	providersMu.RLock()
	out := make([]Provider, 0, len(providers))
	for _, p := range providers {
		if inNamespaces(p.ID, namespaces) {
			p.Skills = slices.Clone(p.Skills)
			out = append(out, p)
		}
	}
	providersMu.RUnlock()
	slices.SortFunc(out, func(a, b Provider) int { return strings.Compare(a.ID, b.ID) })
	return out
}

func inNamespaces(id string, namespaces []string) bool {
	if len(namespaces) == 0 {
		return true
	}
	for _, ns := range namespaces {
		if strings.HasPrefix(id, ns+".") {
			return true
		}
	}
	return false
}

// Discover builds the agent of every registered provider (of namespaces,
// when any are given) and returns them, with their skills, in the order of
// their provider IDs, which is stable from one start of a program to the
// next. Each call builds new agents.
//
// An agent built with no name or description gets its provider's. A
// provider whose Build returns nil or an agent named otherwise than the
// last label of its ID is an error (wrapping [swarm.ErrInvalid]); Discover
// then returns no agents.
func Discover(namespaces ...string) ([]Sibling, error) {
	ps := Providers(namespaces...)
	out := make([]Sibling, 0, len(ps))
	var errs []error
	for _, p := range ps {
		s, err := p.Sibling()
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, s)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

// Sibling builds p's agent as [Discover] does, with p's skills: it is how
// a program picks one provider, by its ID, among providers whose agents
// share a name.
func (p Provider) Sibling() (Sibling, error) {
	if p.Build == nil {
		return Sibling{}, fmt.Errorf("%w: provider %q has no Build", swarm.ErrInvalid, p.ID)
	}
	a := p.Build()
	if a == nil {
		return Sibling{}, fmt.Errorf("%w: provider %s built no agent", swarm.ErrInvalid, p.ID)
	}
	switch a.Name {
	case "":
		a.Name = p.Name()
	case p.Name():
	default:
		return Sibling{}, fmt.Errorf("%w: provider %s built an agent named %q; its id says %q", swarm.ErrInvalid, p.ID, a.Name, p.Name())
	}
	if a.Description == "" {
		a.Description = p.Description
	}
	return Sibling{Agent: a, Skills: slices.Clone(p.Skills)}, nil
}
