package config

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/model/openai"
)

// The models: section names OpenAI-compatible endpoints, usable in model
// specs as "NAME:MODEL":
//
//	models:
//	  myllm:
//	    base_url: http://gpu-box:8000/v1
//	    api_key_env: MYLLM_KEY        # optional: unset means no key is sent
//	    headers: {X-Team: swarm}      # values may use ${ENV_VARS}
//	    structured_output: false      # send the result schema (default false)
//	    api: chat                     # or responses
//	    prices:                       # USD per million tokens, per model
//	      some-model: {input: 0.2, output: 0.6}
//	prices:                           # price overrides by model spec
//	  openai:gpt-4.1-mini: {input: 0.4, cached_input: 0.1, output: 1.6}
//	  scripted:script.yaml: {input: 1, output: 2}   # relative to the file, as in model:
var (
	modelFields = []string{"base_url", "api_key_env", "headers", "structured_output", "api", "prices"}
	priceFields = []string{"input", "cached_input", "cache_write", "output"}
)

// models parses the models: and prices: sections.
func (p *parser) models(top map[string]field, f *File) {
	for _, e := range p.entries(top, "models", "model endpoint") {
		what := "models: " + e.name
		if e.name == "" || strings.ContainsAny(e.name, ": ") {
			p.errf(e.key, "%s: a model endpoint name has no colon or space", what)
			continue
		}
		if e.name == "scripted" || slices.Contains(model.Providers(), e.name) {
			p.errf(e.key, "%s: %q is the name of a builtin provider; choose another name", what, e.name)
			continue
		}
		fs := p.fields(e.val, what, modelFields)
		ep := openai.Endpoint{KeyOptional: true}
		if fd, ok := fs["base_url"]; ok {
			ep.BaseURL = p.str(fd.val, what, "base_url")
		}
		if ep.BaseURL == "" {
			p.errf(e.key, "%s: missing base_url (such as http://localhost:8000/v1)", what)
		}
		if fd, ok := fs["api_key_env"]; ok {
			ep.APIKeyEnv = p.str(fd.val, what, "api_key_env")
		}
		if fd, ok := fs["headers"]; ok && !isNull(fd.val) {
			ep.Headers = map[string]string{}
			for _, h := range p.entries(fs, "headers", "header") {
				ep.Headers[h.name] = p.str(h.val, what+": headers", h.name)
			}
		}
		if fd, ok := fs["structured_output"]; ok {
			if err := deref(fd.val).Decode(&ep.StructuredOutput); err != nil || deref(fd.val).ShortTag() != "!!bool" {
				p.errf(fd.val, "%s: structured_output: want true or false, got %s", what, describe(fd.val))
			}
		}
		if fd, ok := fs["api"]; ok {
			switch api := openai.API(p.str(fd.val, what, "api")); api {
			case openai.Chat, openai.Responses, "":
				ep.API = api
			default:
				p.errf(fd.val, "%s: api: want %q or %q, got %q", what, openai.Chat, openai.Responses, api)
			}
		}
		if f.Models == nil {
			f.Models = map[string]openai.Endpoint{}
		}
		f.Models[e.name] = ep
		if _, ok := fs["prices"]; ok {
			for _, pe := range p.entries(fs, "prices", "model") {
				p.setPrice(f, e.name+":"+pe.name, pe.val, what+": prices: "+pe.name)
			}
		}
	}
	for _, pe := range p.entries(top, "prices", "model spec") {
		if !strings.Contains(pe.name, ":") {
			p.errf(pe.key, "prices: %q is not a model spec such as \"openai:gpt-4.1-mini\"", pe.name)
			continue
		}
		p.setPrice(f, p.scriptedAbs(pe.name), pe.val, "prices: "+pe.name)
	}
}

func (p *parser) setPrice(f *File, spec string, n *yaml.Node, what string) {
	fs := p.fields(n, what, priceFields)
	var pr model.Price
	for name, dst := range map[string]*float64{"input": &pr.Input, "cached_input": &pr.CachedInput, "cache_write": &pr.CacheWrite, "output": &pr.Output} {
		fd, ok := fs[name]
		if !ok {
			continue
		}
		v := deref(fd.val)
		if t := v.ShortTag(); (t != "!!float" && t != "!!int") || v.Decode(dst) != nil || *dst < 0 {
			p.errf(v, "%s: %s: want a non-negative number of dollars per million tokens, got %s", what, name, describe(v))
		}
	}
	if f.Prices == nil {
		f.Prices = map[string]model.Price{}
	}
	f.Prices[spec] = pr
}

// OpenModel opens a model spec, resolving the endpoints of the file's
// models: section first and every registered provider otherwise. Use it as
// [swarm.Config].OpenModel so that agents can name those endpoints.
func (f *File) OpenModel(spec string) (model.Model, error) {
	provider, name, _ := strings.Cut(spec, ":")
	if ep, ok := f.Models[provider]; ok {
		m, err := openai.Open(provider, ep, name)
		if err != nil {
			return nil, fmt.Errorf("model %q: %w", spec, err)
		}
		return m, nil
	}
	return model.Open(spec)
}

// ApplyPrices sets the prices of the file's models: and prices: sections
// with [model.SetPrice].
func (f *File) ApplyPrices() {
	for spec, p := range f.Prices {
		model.SetPrice(spec, p)
	}
}

// UsesDefaultModel reports whether one of the file's agents or swarms names
// no model of its own, and so runs on the default: the file's Model, or the
// runtime's default model when Model is "".
func (f *File) UsesDefaultModel() bool {
	for _, a := range f.agents {
		if a.model == "" {
			return true
		}
	}
	for _, s := range f.swarms {
		if s.model == "" {
			return true
		}
	}
	return false
}

// CheckModels opens every model the file's agents and swarms will run on:
// the model each one names, and the file's Model when one of them names
// none (see [File.UsesDefaultModel]). A model that is not used, such as
// a Model replaced by the caller before, is not opened. A spec that cannot
// be opened (an unknown provider, a missing API key, a scripted model
// whose script is malformed) is an [*Error] naming the file and the line
// of the spec; several are joined.
func (f *File) CheckModels() error {
	type use struct {
		spec, what string
		line       int
	}
	var uses []use
	if f.Model != "" && f.UsesDefaultModel() {
		uses = append(uses, use{f.Model, "model", f.modelLine})
	}
	for _, a := range f.agents {
		if a.model != "" {
			uses = append(uses, use{a.model, "agent " + a.name + ": model", a.modelLine})
		}
	}
	for _, s := range f.swarms {
		if s.model != "" {
			uses = append(uses, use{s.model, "swarm " + s.name + ": model", s.modelLine})
		}
	}
	var errs []error
	failed := map[string]bool{}
	opened := map[string]bool{}
	for _, u := range uses {
		if opened[u.spec] {
			continue
		}
		if _, err := f.OpenModel(u.spec); err != nil {
			if !failed[u.spec] {
				errs = append(errs, &Error{File: f.Path, Line: u.line, Err: fmt.Errorf("%s: %w", u.what, err)})
			}
			failed[u.spec] = true
			continue
		}
		opened[u.spec] = true
	}
	return errors.Join(errs...)
}
