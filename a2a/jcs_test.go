package a2a

import "testing"

// TestCanonicalCard checks the RFC 8785 form against the RFC's own
// examples (section 3.2.2 and appendix B) and the A2A specification's
// (§8.4.1), and that a card's signatures are left out.
func TestCanonicalCard(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"numbers":[333333333.33333329,1E30,4.50,2e-3,0.000000000000000000000000001],"string":"\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/","literals":[null,true,false]}`,
			`{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}`},
		{`{"\u20ac":"Euro Sign","\r":"Carriage Return","\ufb33":"Hebrew Letter Dalet With Dagesh","1":"One","\ud83d\ude00":"Emoji: Grinning Face","\u0080":"Control","\u00f6":"Latin Small Letter O With Diaeresis"}`,
			"{\"\\r\":\"Carriage Return\",\"1\":\"One\",\"\u0080\":\"Control\",\"\u00f6\":\"Latin Small Letter O With Diaeresis\",\"\u20ac\":\"Euro Sign\",\"\U0001F600\":\"Emoji: Grinning Face\",\"\ufb33\":\"Hebrew Letter Dalet With Dagesh\"}"},
		{`{"a":[1e21,1e-7,-0.0,123456789012345680000,0.1,9007199254740993]}`, `{"a":[1e+21,1e-7,0,123456789012345680000,0.1,9007199254740992]}`},
		{`{"name":"Example Agent","description":"","capabilities":{"streaming":false,"pushNotifications":false},"skills":[],"signatures":[{"protected":"x","signature":"y"}]}`,
			`{"capabilities":{"pushNotifications":false,"streaming":false},"description":"","name":"Example Agent","skills":[]}`},
	} {
		got, err := canonicalCard([]byte(c.in))
		if err != nil || string(got) != c.want {
			t.Errorf("canonicalCard(%s)\n got %s (%v)\nwant %s", c.in, got, err, c.want)
		}
	}
	got, err := canonicalCard([]byte(`{"capabilities":{"extensions":[]},"skills":[],"securitySchemes":{},"name":"n"}`), prune)
	if want := `{"capabilities":{},"name":"n","skills":[]}`; err != nil || string(got) != want {
		t.Errorf("pruned: %s %v, want %s", got, err, want)
	}
	for _, bad := range []string{`[1]`, `null`, `{"a":1e999}`, `{`} {
		if _, err := canonicalCard([]byte(bad)); err == nil {
			t.Errorf("canonicalCard(%s): no error", bad)
		}
	}
}
