package eval

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
)

// obs makes observed tool calls from "name" or "name {json args}" or
// "agent: name {json args}".
func obs(specs ...string) []ObservedCall {
	out := make([]ObservedCall, len(specs))
	for i, s := range specs {
		c := ObservedCall{Kind: "tool"}
		if agent, rest, ok := strings.Cut(s, ": "); ok {
			c.Agent, s = agent, rest
		}
		name, args, _ := strings.Cut(s, " ")
		c.Name = name
		if args != "" {
			c.Args = json.RawMessage(args)
		}
		out[i] = c
	}
	return out
}

func call(name string, args map[string]any) Call { return Call{Name: name, Args: args} }

func TestTrajectoryScore(t *testing.T) {
	search := call("search", map[string]any{"q": "weather"})
	book := call("book", map[string]any{"city": "Paris"})
	observed := obs(`search {"q":"weather","limit":5}`, `lookup {}`, `book {"city":"Paris","id":"a1b2"}`)
	tests := []struct {
		name     string
		traj     Trajectory
		observed []ObservedCall
		value    float64
		pass     bool
		expl     []string
	}{
		{"in_order with calls between", Trajectory{Calls: []Call{search, book}}, observed, 1, true,
			[]string{"2 of 2 expected calls found in order", "= #1 search", "\n  #2 lookup {}", "= #3 book"}},
		{"in_order out of order", Trajectory{Match: "in_order", Calls: []Call{book, search}}, observed, 0.5, false,
			[]string{"1 of 2", "#1 matches but is out of order"}},
		{"exact with a call too many", Trajectory{Match: "exact", Calls: []Call{search, book}}, observed, 2.0 / 3, false,
			[]string{"1 unexpected", "+ #2 lookup {}"}},
		{"exact", Trajectory{Match: "exact", Calls: []Call{search, {Name: "lookup"}, book}}, observed, 1, true, nil},
		{"exact no calls wanted", Trajectory{Match: "exact"}, obs("search"), 0, false, []string{"+ #1 search"}},
		{"exact no calls made", Trajectory{Match: "exact"}, nil, 1, true, nil},
		{"exact wrong order", Trajectory{Match: "exact", Calls: []Call{book, {Name: "lookup"}, search}}, observed, 1.0 / 3, false, nil},
		{"any_order", Trajectory{Match: "any_order", Calls: []Call{book, {Name: "lookup"}, search}}, observed, 1, true, nil},
		{"any_order with a call too many", Trajectory{Match: "any_order", Calls: []Call{book, search}}, observed, 2.0 / 3, false,
			[]string{"+ #2 lookup"}},
		{"subset", Trajectory{Match: "subset", Calls: []Call{book}}, observed, 1, true, nil},
		{"subset missing one", Trajectory{Match: "subset", Calls: []Call{book, call("cancel", nil)}}, observed, 0.5, false,
			[]string{"- cancel (any args)   (missing: no call of cancel)"}},
		{"args differ", Trajectory{Calls: []Call{call("book", map[string]any{"city": "Rome"})}}, observed, 0, false,
			[]string{`- book {"city":"Rome"}`, `closest #3 book {"city":"Paris","id":"a1b2"}: args.city: want "Rome", got "Paris"`}},
		{"args exactly, generated id", Trajectory{Calls: []Call{{Name: "book", Args: map[string]any{"city": "Paris"}, ArgsMatch: "exact"}}},
			observed, 0, false, []string{`args.id: not expected, got "a1b2"`}},
		{"args exactly, generated id ignored", Trajectory{Calls: []Call{{Name: "book", Args: map[string]any{"city": "Paris", "id": "x"},
			ArgsMatch: "exact", Ignore: []string{"id"}}}}, observed, 1, true, nil},
		{"args by fields, id differs", Trajectory{Calls: []Call{{Name: "book", Args: map[string]any{"city": "Paris", "id": "x"}}}},
			observed, 0, false, []string{`args.id: want "x", got "a1b2"`}},
		{"agent", Trajectory{Calls: []Call{{Name: "book", Agent: "travel"}}}, obs("travel: book {}"), 1, true, nil},
		{"wrong agent", Trajectory{Calls: []Call{{Name: "book", Agent: "travel"}}}, obs("triage: book {}"), 0, false,
			[]string{`agent: want "travel", got "triage"`}},
		{"numbers from YAML match JSON numbers", Trajectory{Calls: []Call{call("add", map[string]any{"n": 2, "xs": []any{1, 2.5}})}},
			obs(`add {"n":2.0,"xs":[1,2.5]}`), 1, true, nil},
		{"args by fields, arrays whole", Trajectory{Calls: []Call{call("tag", map[string]any{"xs": []any{1}})}}, obs(`tag {"xs":[1,2]}`), 0, false,
			[]string{"args.xs: want [1], got [1,2]"}},
		{"no observed args are an empty object", Trajectory{Calls: []Call{call("ping", map[string]any{})}}, obs("ping"), 1, true, nil},
		{"no observed args lack a field", Trajectory{Calls: []Call{call("ping", map[string]any{"n": 1})}}, obs("ping"), 0, false,
			[]string{"args.n: missing, want 1"}},
		{"observed args not JSON", Trajectory{Calls: []Call{call("add", map[string]any{"n": 2})}}, obs(`add {n:2}`), 0, false,
			[]string{"args: not JSON"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sc := trajectoryScore(tt.traj, tt.observed)
			if sc.Name != "trajectory" || math.Abs(sc.Value-tt.value) > 1e-9 || sc.Pass != tt.pass || sc.Threshold != 1 {
				t.Fatalf("%s value %v pass %v threshold %v, want %v %v 1:\n%s", sc.Name, sc.Value, sc.Pass, sc.Threshold, tt.value, tt.pass, sc.Explanation)
			}
			for _, e := range tt.expl {
				if !strings.Contains(sc.Explanation, e) {
					t.Errorf("explanation lacks %q:\n%s", e, sc.Explanation)
				}
			}
		})
	}
}

// A call that fits two expected calls goes to the one that needs it: a
// greedy pairing would fail this trajectory.
func TestTrajectoryAnyOrderPairsAtBest(t *testing.T) {
	traj := Trajectory{Match: "any_order", Calls: []Call{{Name: "search"}, call("search", map[string]any{"q": "a"})}}
	sc := trajectoryScore(traj, obs(`search {"q":"a"}`, `search {"q":"b"}`))
	if !sc.Pass {
		t.Fatalf("failed:\n%s", sc.Explanation)
	}
}

// In order, the longest common subsequence is found, not the first
// match: pairing the first "a" with the first observed "a" leaves "b c"
// with nothing.
func TestTrajectoryInOrderFindsLongestMatch(t *testing.T) {
	traj := Trajectory{Calls: []Call{call("a", map[string]any{"k": 2}), {Name: "b"}, {Name: "c"}}}
	sc := trajectoryScore(traj, obs(`a {"k":1}`, `b`, `a {"k":2}`, `b`, `c`))
	if !sc.Pass {
		t.Fatalf("failed:\n%s", sc.Explanation)
	}
}

func TestIgnoreNestedFields(t *testing.T) {
	want := Call{Name: "order", ArgsMatch: "exact", Ignore: []string{"items.*.id", "meta"},
		Args: map[string]any{"items": []any{map[string]any{"sku": "x", "id": 1}, map[string]any{"sku": "y", "id": 2}}}}
	good := obs(`order {"items":[{"sku":"x","id":"u-9"},{"sku":"y","id":"u-7"}],"meta":{"at":"now"}}`)
	if sc := trajectoryScore(Trajectory{Calls: []Call{want}}, good); !sc.Pass {
		t.Fatalf("ignored fields compared:\n%s", sc.Explanation)
	}
	bad := obs(`order {"items":[{"sku":"x","id":"u-9"},{"sku":"z","id":"u-7"}]}`)
	sc := trajectoryScore(Trajectory{Calls: []Call{want}}, bad)
	if sc.Pass || !strings.Contains(sc.Explanation, `args.items.1.sku: want "y", got "z"`) {
		t.Fatalf("a field not ignored went unseen:\n%s", sc.Explanation)
	}
}

func TestForbidScore(t *testing.T) {
	observed := obs(`search {"q":"x"}`, `delete_account {"id":7}`)
	tests := []struct {
		name   string
		forbid []Call
		pass   bool
		expl   string
	}{
		{"by name", []Call{{Name: "delete_account"}}, false, `1 forbidden call made: #2 delete_account {"id":7}`},
		{"by args", []Call{call("delete_account", map[string]any{"id": 7})}, false, "#2 delete_account"},
		{"other args allowed", []Call{call("delete_account", map[string]any{"id": 8})}, true, "no forbidden call made (of 1 rule)"},
		{"by agent", []Call{{Name: "search", Agent: "billing"}}, true, ""},
		{"never called", []Call{{Name: "refund"}, {Name: "escalate"}}, true, "(of 2 rules)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sc := forbidScore(tt.forbid, observed)
			if sc.Pass != tt.pass || sc.Value != map[bool]float64{true: 1, false: 0}[tt.pass] || sc.Name != "forbid" {
				t.Fatalf("pass %v value %v, want pass %v: %s", sc.Pass, sc.Value, tt.pass, sc.Explanation)
			}
			if !strings.Contains(sc.Explanation, tt.expl) {
				t.Errorf("explanation %q lacks %q", sc.Explanation, tt.expl)
			}
		})
	}
}
