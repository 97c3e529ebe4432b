package registry

import (
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestTerms(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"  ,;- _ ", nil},
		{"Book a flight", []string{"book", "flight"}},
		{"search_flights", []string{"search", "flight"}},
		{"handoff_to_flight_booker", []string{"handoff", "flight", "booker"}},
		{"flight-booking", []string{"flight", "book"}},
		{"searchFlights", []string{"search", "flight"}},
		{"SearchFlights", []string{"search", "flight"}},
		{"HTTPServer", []string{"http", "server"}},
		{"getURL", []string{"url"}}, // a stop word inside a name goes too, as in a query
		{"oauth2Token", []string{"oauth2", "token"}},
		{"I need to book hotels in Tokyo, please!", []string{"book", "hotel", "tokyo"}},
		{"the and of to", nil},
		{"queries companies", []string{"query", "company"}},
		{"boxes classes searches dishes", []string{"box", "class", "search", "dish"}},
		{"status analysis business", []string{"status", "analysis", "business"}},
		{"planning shipping booked tried", []string{"plan", "ship", "book", "try"}},
		{"calling passed", []string{"call", "pass"}},
		{"schedule scheduling", []string{"schedul", "schedul"}},
		{"code coding", []string{"cod", "cod"}},
		{"issue issues", []string{"issu", "issu"}},
		{"bus gas run ring", []string{"bus", "gas", "run", "ring"}},
		{"Zürich Café naïve", []string{"zürich", "café", "naïv"}},
		{"東京 hotels", []string{"東京", "hotel"}},
		{"v2 mp3s 2024", []string{"v2", "mp3s", "2024"}},
		{"bad\xffutf8", []string{"bad", "utf8"}},
	}
	for _, tt := range tests {
		got := terms(tt.in)
		if !slices.Equal(got, tt.want) {
			t.Errorf("terms(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestStemAgreesAcrossForms checks that the inflected forms a user or model
// writes share one stem with the form an entry uses.
func TestStemAgreesAcrossForms(t *testing.T) {
	groups := [][]string{
		{"book", "books", "booking", "bookings", "booked"},
		{"flight", "flights"},
		{"ticket", "tickets", "ticketing"},
		{"refund", "refunds", "refunding", "refunded"},
		{"plan", "plans", "planning", "planned"},
		{"review", "reviews", "reviewing", "reviewed"},
		{"triage", "triaging", "triaged"},
		{"price", "prices", "pricing", "priced"},
		{"reservation", "reservations"},
		{"itinerary", "itineraries"},
		{"search", "searches", "searching", "searched"},
	}
	for _, g := range groups {
		want := stem(g[0])
		for _, w := range g[1:] {
			if got := stem(w); got != want {
				t.Errorf("stem(%q) = %q, want %q like stem(%q)", w, got, want, g[0])
			}
		}
	}
}

func TestCapability(t *testing.T) {
	tests := []struct{ in, want string }{
		{"handoff_to_flight_booker", "flight_booker"},
		{"transfer_to_sales", "sales"},
		{"transfer_to_flight-booker", "flight_booker"},
		{"search_flights", "search_flights"},
		{"searchFlights", "search_flights"},
		{"Flight Booker", "flight_booker"},
		{"handoff_to", "handoff_to"}, // nothing after the prefix: keep it
		{"to_handoff_x", "to_handoff_x"},
		{"  ", ""},
	}
	for _, tt := range tests {
		if got := Capability(tt.in); got != tt.want {
			t.Errorf("Capability(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestCapabilities(t *testing.T) {
	got := Capabilities(
		[]string{"handoff_to_seat_picker", "flight-booker", "handoff_to_flight_booker", ""},
		[]string{"searchFlights", "search_flights", "!!"},
	)
	want := []string{"flight_booker", "search_flights", "seat_picker"}
	if !slices.Equal(got, want) {
		t.Errorf("Capabilities = %q, want %q", got, want)
	}
	if got := Capabilities(nil, nil); len(got) != 0 {
		t.Errorf("Capabilities(nil, nil) = %q, want empty", got)
	}
}

func TestMatchKey(t *testing.T) {
	want := matchKey("flight_booker")
	for _, s := range []string{"Flight bookers", "flightBooker", "handoff_to_flight_booker", "flight-booker"} {
		if got := matchKey(s); got != want {
			t.Errorf("matchKey(%q) = %q, want %q", s, got, want)
		}
	}
	if matchKey("search_flights") == matchKey("search_hotels") {
		t.Error("different capabilities share a match key")
	}
}

func FuzzTerms(f *testing.F) {
	for _, s := range []string{"", "handoff_to_flight_booker", "HTTPServer", "I need hotels!", "Zürich\xff東京", "ies", "sses", "aing", "ed"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, w := range terms(s) {
			if w == "" {
				t.Fatalf("terms(%q) has an empty term", s)
			}
			if stopWords[w] {
				t.Fatalf("terms(%q) has stop word %q", s, w)
			}
			if !utf8.ValidString(w) {
				t.Fatalf("terms(%q) has invalid UTF-8 %q", s, w)
			}
			if strings.IndexFunc(w, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) >= 0 {
				t.Fatalf("terms(%q) has %q with a separator in it", s, w)
			}
		}
		c := Capability(s)
		if c != "" && (strings.HasPrefix(c, "_") || strings.HasSuffix(c, "_") || strings.Contains(c, "__")) {
			t.Fatalf("Capability(%q) = %q is not clean snake_case", s, c)
		}
		_ = matchKey(s)
	})
}
