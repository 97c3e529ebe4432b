package jsonx

import (
	"encoding/json"
	"testing"
)

func TestMarshalDoesNotEscapeHTML(t *testing.T) {
	escaped, _ := json.Marshal("a > b & c < d")
	v := struct {
		Text string          `json:"text"`
		Raw  json.RawMessage `json:"raw"`
	}{"x -> y & <z>", escaped}
	b, err := Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"text":"x -> y & <z>","raw":"a > b & c < d"}`; string(b) != want {
		t.Errorf("Marshal = %s, want %s", b, want)
	}
}

func TestUnescapeKeepsMeaning(t *testing.T) {
	for _, in := range []string{
		`"a \u003e b"`, `"\\u003e stays"`, `"\\\u003e"`, `{"k\u0026":"\u003C\u003E"}`, `"\u00e9 \n \""`, `"\`, `"\u00`, `"\u003"`,
	} {
		var want, got any
		wantErr := json.Unmarshal([]byte(in), &want)
		out := Unescape([]byte(in))
		gotErr := json.Unmarshal(out, &got)
		if (wantErr == nil) != (gotErr == nil) {
			t.Errorf("Unescape(%s) = %s: valid %v, was %v", in, out, gotErr == nil, wantErr == nil)
			continue
		}
		if wantErr == nil && want != nil && got != nil {
			wb, _ := json.Marshal(want)
			gb, _ := json.Marshal(got)
			if string(wb) != string(gb) {
				t.Errorf("Unescape(%s) = %s, a different value", in, out)
			}
		}
	}
	if got := string(Unescape([]byte(`"\\u003e"`))); got != `"\\u003e"` {
		t.Errorf("an escaped backslash followed by u003e changed: %s", got)
	}
}

func FuzzUnescape(f *testing.F) {
	f.Add(`{"a":"\u003cb\u003e \\u0026 \u0026"}`)
	f.Fuzz(func(t *testing.T, in string) {
		var want any
		if json.Unmarshal([]byte(in), &want) != nil {
			return
		}
		var got any
		out := Unescape([]byte(in))
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("Unescape(%q) = %q: %v", in, out, err)
		}
		wb, _ := json.Marshal(want)
		gb, _ := json.Marshal(got)
		if string(wb) != string(gb) {
			t.Fatalf("Unescape(%q) = %q: %s, want %s", in, out, gb, wb)
		}
	})
}
