package registry

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// terms splits s into the normalised search terms that both the BM25 index
// and capability matching use:
//
//   - words are maximal runs of letters and digits, so snake_case,
//     kebab-case, dotted and spaced names all split;
//   - camelCase and PascalCase split at case changes ("searchFlights" ->
//     search, flights; "HTTPServer" -> http, server);
//   - words are lowercased, English stop words are dropped, and a light
//     suffix stemmer maps plurals and -ing/-ed forms onto one stem.
//
// terms never returns an empty string.
func terms(s string) []string { return appendTerms(nil, s) }

// appendTerms appends the terms of s to dst and returns the extended slice.
func appendTerms(dst []string, s string) []string {
	eachWord(s, func(w string) {
		w = strings.ToLower(w)
		if !stopWords[w] {
			dst = append(dst, stem(w))
		}
	})
	return dst
}

// words splits s like terms but keeps stop words and does not stem; it is
// what capability names are built from.
func words(s string) []string {
	var out []string
	eachWord(s, func(w string) { out = append(out, strings.ToLower(w)) })
	return out
}

// eachWord calls f with every word of s: runs of letters and digits, further
// split at lower-to-upper case changes and before the last capital of an
// acronym that starts a new capitalised word.
func eachWord(s string, f func(string)) {
	start := -1 // byte offset of the current word, -1 outside a word
	var prev rune
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			if start >= 0 {
				f(s[start:i])
				start = -1
			}
			i += n
			continue
		}
		if start < 0 {
			start = i
		} else if unicode.IsUpper(r) && caseBoundary(prev, s[i+n:]) {
			f(s[start:i])
			start = i
		}
		prev = r
		i += n
	}
	if start >= 0 {
		f(s[start:])
	}
}

// caseBoundary reports whether an upper-case letter preceded by prev and
// followed by rest starts a new word: after a lower-case letter or digit
// ("searchFlights", "oauth2Token"), or as the last capital of an acronym
// followed by lower case ("HTTPServer").
func caseBoundary(prev rune, rest string) bool {
	if unicode.IsLower(prev) || unicode.IsDigit(prev) {
		return true
	}
	if !unicode.IsUpper(prev) {
		return false
	}
	next, _ := utf8.DecodeRuneInString(rest)
	return unicode.IsLower(next)
}

// stem strips common English inflections from a lowercased word. It is a
// deliberately small rule set, applied in order:
//
//	-ies -> -y            (queries -> query)
//	-sses/-xes/-zes/-ches/-shes -> drop -es (boxes -> box)
//	-s -> drop, unless -ss, -us, -is     (flights -> flight)
//	-ing, -ed -> drop when a stem of at least three letters remains,
//	     then undouble a final consonant (planning -> plan), -ied -> -y
//	final -e -> drop on words of four or more letters (schedule, scheduling
//	     -> schedul)
//
// Words containing digits, and words of three letters or fewer, are kept as
// they are. Only ASCII suffixes are touched, so the result is valid UTF-8
// whenever w is.
func stem(w string) string {
	if len(w) <= 3 || strings.ContainsAny(w, "0123456789") {
		return w
	}
	switch {
	case strings.HasSuffix(w, "ies") && len(w) > 4:
		w = w[:len(w)-3] + "y"
	case strings.HasSuffix(w, "sses"), strings.HasSuffix(w, "xes"), strings.HasSuffix(w, "zes"),
		strings.HasSuffix(w, "ches"), strings.HasSuffix(w, "shes"):
		w = w[:len(w)-2]
	case strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") &&
		!strings.HasSuffix(w, "us") && !strings.HasSuffix(w, "is"):
		w = w[:len(w)-1]
	}
	switch {
	case strings.HasSuffix(w, "ied") && len(w) > 4:
		w = w[:len(w)-3] + "y"
	case strings.HasSuffix(w, "ing") && len(w) >= 6:
		w = undouble(w[:len(w)-3])
	case strings.HasSuffix(w, "ed") && len(w) >= 5:
		w = undouble(w[:len(w)-2])
	}
	if len(w) >= 4 && w[len(w)-1] == 'e' {
		w = w[:len(w)-1]
	}
	return w
}

// undouble turns a stem ending in a doubled consonant other than l, s or z
// into a single one (plann -> plan, shipp -> ship; call, pass stay).
func undouble(w string) string {
	n := len(w)
	if n >= 2 && w[n-1] == w[n-2] && strings.IndexByte("bdfgkmnprt", w[n-1]) >= 0 {
		return w[:n-1]
	}
	return w
}

// stopWords are dropped from queries and documents: function words and the
// request phrasing a model or user wraps around what it actually wants.
var stopWords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`a an and any are as at be but by can could do does for from
		get has have how i if in into is it its just me my need of on or our please should so some
		that the their them then there these this those to us want was we were what when where which
		who will with would you your`) {
		m[w] = true
	}
	return m
}()
