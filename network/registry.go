package network

import (
	"slices"
	"strings"
	"sync"
	"time"
)

// Offer is a capability as a provider offers it: the capability, the id of
// the node that provides it and the node's URL.
type Offer struct {
	Capability
	// Node is the provider's node id.
	Node string `json:"node"`
	// URL is the provider's base URL.
	URL string `json:"url"`
}

type offerKey struct{ node, name, version string }

// Registry indexes the capabilities the peers of a node offer, by name and
// by tag. It is safe for concurrent use. Every list it returns is sorted:
// newest version first, then by node id.
type Registry struct {
	mu      sync.RWMutex
	offers  map[offerKey]Offer
	byNode  map[string][]offerKey
	byName  map[string]map[offerKey]struct{}
	byTag   map[string]map[offerKey]struct{}
	seen    map[string]time.Time
	gen     uint64
	changed chan struct{}
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{offers: map[offerKey]Offer{}, byNode: map[string][]offerKey{}, byName: map[string]map[offerKey]struct{}{},
		byTag: map[string]map[offerKey]struct{}{}, seen: map[string]time.Time{}, changed: make(chan struct{})}
}

// Set makes caps the capabilities node offers at url, replacing what it
// offered before. Invalid capabilities are left out.
func (r *Registry) Set(node, url string, caps []Capability) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.removeLocked(node)
	r.seen[node] = time.Now()
	for _, c := range caps {
		if c.Validate() != nil {
			continue
		}
		k := offerKey{node, c.Name, c.Version}
		if _, dup := r.offers[k]; dup {
			continue
		}
		r.offers[k] = Offer{Capability: c.clone(), Node: node, URL: url}
		r.byNode[node] = append(r.byNode[node], k)
		add(r.byName, c.Name, k)
		for _, t := range c.Tags {
			add(r.byTag, t, k)
		}
	}
	r.bump()
}

func add(idx map[string]map[offerKey]struct{}, s string, k offerKey) {
	m := idx[s]
	if m == nil {
		m = map[offerKey]struct{}{}
		idx[s] = m
	}
	m[k] = struct{}{}
}

// Remove drops every capability of node and reports whether it had any
// (or was known).
func (r *Registry) Remove(node string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, known := r.seen[node]
	if !known {
		return false
	}
	r.removeLocked(node)
	delete(r.seen, node)
	r.bump()
	return true
}

func (r *Registry) removeLocked(node string) {
	for _, k := range r.byNode[node] {
		o := r.offers[k]
		delete(r.offers, k)
		drop(r.byName, o.Name, k)
		for _, t := range o.Tags {
			drop(r.byTag, t, k)
		}
	}
	delete(r.byNode, node)
}

func drop(idx map[string]map[offerKey]struct{}, s string, k offerKey) {
	if m := idx[s]; m != nil {
		delete(m, k)
		if len(m) == 0 {
			delete(idx, s)
		}
	}
}

func (r *Registry) bump() {
	r.gen++
	close(r.changed)
	r.changed = make(chan struct{})
}

// Generation counts the changes of the registry.
func (r *Registry) Generation() uint64 {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.gen
}

// Changed returns a channel closed at the next change.
func (r *Registry) Changed() <-chan struct{} {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.changed
}

// Find returns a provider of capability name: the newest version, then
// the first node by id.
func (r *Registry) Find(name string) (Offer, bool) {
	ps := r.Providers(name)
	if len(ps) == 0 {
		return Offer{}, false
	}
	return ps[0], true
}

// Providers returns every provider of capability name.
func (r *Registry) Providers(name string) []Offer {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.list(r.byName[name])
}

// ByTag returns every offer with tag.
func (r *Registry) ByTag(tag string) []Offer {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.list(r.byTag[tag])
}

// All returns every offer.
func (r *Registry) All() []Offer {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]Offer, 0, len(r.offers))
	for _, o := range r.offers {
		out = append(out, cloneOffer(o))
	}
	sortOffers(out)
	return out
}

// OfNode returns the offers of node.
func (r *Registry) OfNode(node string) []Offer {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]Offer, 0, len(r.byNode[node]))
	for _, k := range r.byNode[node] {
		out = append(out, cloneOffer(r.offers[k]))
	}
	sortOffers(out)
	return out
}

// Len returns the number of offers.
func (r *Registry) Len() int {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return len(r.offers)
}

func (r *Registry) list(keys map[offerKey]struct{}) []Offer {
	out := make([]Offer, 0, len(keys))
	for k := range keys {
		out = append(out, cloneOffer(r.offers[k]))
	}
	sortOffers(out)
	return out
}

func cloneOffer(o Offer) Offer {
	o.Capability = o.Capability.clone()
	return o
}

func sortOffers(os []Offer) {
	slices.SortFunc(os, func(a, b Offer) int {
		if c := strings.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		if c := CompareVersions(b.Version, a.Version); c != 0 {
			return c
		}
		return strings.Compare(a.Node, b.Node)
	})
}
