package eval

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
)

// outputScores scores the final output against every check of want, one
// score a check.
func outputScores(want Output, got string) []Score {
	var scores []Score
	if want.Exact != nil {
		scores = append(scores, exactScore(*want.Exact, got))
	}
	if len(want.Contains) > 0 {
		scores = append(scores, containsScore(want.Contains, got))
	}
	if want.Regex != "" {
		scores = append(scores, regexScore(want.Regex, got))
	}
	if len(want.Fields) > 0 {
		scores = append(scores, fieldsScore(want.Fields, got))
	}
	if len(want.Schema) > 0 {
		scores = append(scores, schemaScore(want.Schema, got))
	}
	if want.Similar != nil {
		scores = append(scores, similarScore(*want.Similar, got))
	}
	return scores
}

// exactScore compares the output with want, both trimmed of space; on a
// difference it shows where the two part.
func exactScore(want, got string) Score {
	w, g := strings.TrimSpace(want), strings.TrimSpace(got)
	if w == g {
		return verdict(scoreExact, 1, 1, "output is exactly as expected")
	}
	at := 0
	for at < len(w) && at < len(g) && w[at] == g[at] {
		at++
	}
	for at > 0 && at < len(w) && !utf8.RuneStart(w[at]) {
		at-- // do not cut a character in two
	}
	line := 1 + strings.Count(w[:at], "\n")
	expl := fmt.Sprintf("output differs from the expected at line %d, character %d: want %s, got %s",
		line, utf8.RuneCountInString(w[:at])+1, excerpt(w, at), excerpt(g, at))
	return verdict(scoreExact, 0, 1, expl)
}

// excerpt quotes s from a little before at, cut short.
func excerpt(s string, at int) string {
	const before, after = 20, 60
	start := max(0, at-before)
	for start > 0 && !utf8.RuneStart(s[start]) {
		start--
	}
	prefix := ""
	if start > 0 {
		prefix = "…"
	}
	if at >= len(s) {
		return prefix + strconv.Quote(s[start:]) + " (end of text)"
	}
	return prefix + strconv.Quote(clip(s[start:], before+after))
}

// clip cuts s to at most n bytes, on a character boundary, marking the
// cut with "…".
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func containsScore(want []string, got string) Score {
	var missing []string
	for _, w := range want {
		if !strings.Contains(got, w) {
			missing = append(missing, strconv.Quote(w))
		}
	}
	found := len(want) - len(missing)
	expl := fmt.Sprintf("output contains the %s", count(len(want), "expected text"))
	if len(missing) > 0 {
		expl = fmt.Sprintf("output contains %d of %s; missing: %s", found, count(len(want), "expected text"), strings.Join(missing, ", "))
	}
	return verdict(scoreContains, ratio(found, len(want)), 1, expl)
}

func regexScore(expr, got string) Score {
	re, err := regexp.Compile(expr)
	if err != nil {
		return Score{Name: scoreRegex, Label: "error", Threshold: 1, Error: fmt.Sprintf("regex %q: %v", expr, err)}
	}
	if re.MatchString(got) {
		return verdict(scoreRegex, 1, 1, fmt.Sprintf("output matches /%s/: %s", expr, strconv.Quote(clip(re.FindString(got), 80))))
	}
	return verdict(scoreRegex, 0, 1, fmt.Sprintf("output does not match /%s/; output: %s", expr, strconv.Quote(clip(got, 200))))
}

// fieldsScore checks JSON fields of the output by dotted path; its value
// is the share of fields with the expected value.
func fieldsScore(want map[string]any, got string) Score {
	paths := slices.Sorted(maps.Keys(want))
	values := make([]any, len(paths))
	for i, p := range paths {
		w, err := normalize(want[p])
		if err != nil { // validateExpect refuses it in a set that was loaded
			return Score{Name: scoreFields, Label: "error", Threshold: 1, Error: fmt.Sprintf("field %s: expected value is not JSON: %v", p, err)}
		}
		values[i] = w
	}
	doc, err := outputJSON(got)
	if err != nil {
		return verdict(scoreFields, 0, 1, err.Error())
	}
	var bad []string
	for i, p := range paths {
		g, ok := lookup(doc, splitPath(p))
		switch w := values[i]; {
		case !ok:
			bad = append(bad, fmt.Sprintf("%s: missing, want %s", p, compact(w)))
		case !reflect.DeepEqual(w, g):
			bad = append(bad, fmt.Sprintf("%s: want %s, got %s", p, compact(w), compact(g)))
		}
	}
	expl := fmt.Sprintf("%s as expected", count(len(paths), "field"))
	if len(bad) > 0 {
		expl = fmt.Sprintf("%d of %s differ: %s", len(bad), count(len(paths), "field"), strings.Join(bad, "; "))
	}
	return verdict(scoreFields, ratio(len(paths)-len(bad), len(paths)), 1, expl)
}

func schemaScore(schema json.RawMessage, got string) Score {
	rs, err := compileSchema(schema)
	if err != nil {
		return Score{Name: scoreSchema, Label: "error", Threshold: 1, Error: err.Error()}
	}
	doc, err := outputJSON(got)
	if err != nil {
		return verdict(scoreSchema, 0, 1, err.Error())
	}
	if err := rs.Validate(doc); err != nil {
		return verdict(scoreSchema, 0, 1, "output does not match the schema: "+err.Error())
	}
	return verdict(scoreSchema, 1, 1, "output matches the schema")
}

// compileSchema compiles a JSON schema, refusing keywords the validator
// would silently ignore (a typo such as "requried" would turn a check
// off).
func compileSchema(data json.RawMessage) (*jsonschema.Resolved, error) {
	var s jsonschema.Schema
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("schema is not a JSON schema: %w", err)
	}
	if m := schemaMistakes(&s, map[*jsonschema.Schema]bool{}); len(m) > 0 {
		return nil, fmt.Errorf("schema: %s", strings.Join(m, "; "))
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		return nil, fmt.Errorf("schema does not compile: %w", err)
	}
	return rs, nil
}

// jsonTypes are the type names of JSON schema.
var jsonTypes = []string{"array", "boolean", "integer", "null", "number", "object", "string"}

// schemaMistakes lists what jsonschema-go would silently accept in s and
// its subschemas: unknown keywords (it keeps them in Extra; "x-"
// extensions are allowed) and unknown type names.
func schemaMistakes(s *jsonschema.Schema, seen map[*jsonschema.Schema]bool) []string {
	if s == nil || seen[s] {
		return nil
	}
	seen[s] = true
	var out []string
	for _, k := range slices.Sorted(maps.Keys(s.Extra)) {
		if !strings.HasPrefix(k, "x-") {
			out = append(out, fmt.Sprintf("unknown keyword %q", k))
		}
	}
	for _, t := range append([]string{s.Type}, s.Types...) {
		if t != "" && !slices.Contains(jsonTypes, t) {
			out = append(out, fmt.Sprintf("unknown type %q (want one of %s)", t, strings.Join(jsonTypes, ", ")))
		}
	}
	// Subschemas are the fields of type *Schema, []*Schema and
	// map[string]*Schema.
	v := reflect.ValueOf(s).Elem()
	for i := range v.NumField() {
		switch f := v.Field(i).Interface().(type) {
		case *jsonschema.Schema:
			out = append(out, schemaMistakes(f, seen)...)
		case []*jsonschema.Schema:
			for _, c := range f {
				out = append(out, schemaMistakes(c, seen)...)
			}
		case map[string]*jsonschema.Schema:
			for _, k := range slices.Sorted(maps.Keys(f)) {
				out = append(out, schemaMistakes(f[k], seen)...)
			}
		}
	}
	return out
}

// outputJSON decodes the output as JSON: the whole text, or else the
// first block fenced in ``` (```json) within it.
func outputJSON(s string) (any, error) {
	t := strings.TrimSpace(s)
	v, err := decodeJSON([]byte(t))
	if err == nil {
		return v, nil
	}
	if block, ok := fenced(t); ok {
		if v, ferr := decodeJSON([]byte(block)); ferr == nil {
			return v, nil
		}
	}
	return nil, fmt.Errorf("output is not JSON (%v): %s", err, strconv.Quote(clip(t, 120)))
}

// fenced returns the content of the first block fenced in ``` in s,
// without the language tag after the opening fence.
func fenced(s string) (string, bool) {
	_, rest, ok := strings.Cut(s, "```")
	if !ok {
		return "", false
	}
	// A language tag ("json") follows the opening fence, before a line
	// break or the value.
	tag := strings.IndexFunc(rest, func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && !strings.ContainsRune("_+-", r)
	})
	if tag > 0 && strings.ContainsRune("{[ \t\r\n", rune(rest[tag])) {
		rest = rest[tag:]
	}
	body, _, ok := strings.Cut(rest, "```")
	return strings.TrimSpace(body), ok
}

// decodeJSON decodes one JSON value, nothing after it.
func decodeJSON(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("text follows the JSON value")
	}
	return v, nil
}

// normalize turns a value written in YAML, JSON or Go into its JSON form
// (maps of string keys, []any, float64), as decoded JSON is, so the two
// compare with reflect.DeepEqual.
func normalize(v any) (any, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out any
	err = json.Unmarshal(data, &out)
	return out, err
}

// compact is v as compact JSON, cut short for an explanation.
func compact(v any) string { return clip(jsonText(v), 120) }

// jsonText is v as compact JSON, whole.
func jsonText(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(data)
}

// splitPath splits a dotted path ("order.items.0.sku") into its segments:
// object keys and array indexes.
func splitPath(p string) []string { return strings.Split(p, ".") }

// lookup finds the value at path in a decoded JSON value.
func lookup(v any, path []string) (any, bool) {
	for _, seg := range path {
		switch x := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = x[seg]; !ok {
				return nil, false
			}
		case []any:
			i, err := strconv.Atoi(seg)
			if err != nil || i < 0 || i >= len(x) {
				return nil, false
			}
			v = x[i]
		default:
			return nil, false
		}
	}
	return v, true
}

// similarScore compares the output with a reference by ROUGE-1 F1.
func similarScore(want Similar, got string) Score {
	min := want.Min
	if min == 0 {
		min = 0.5
	}
	ref, out := words(want.Reference), words(got)
	f1, p, r, missing := rouge1(ref, out)
	expl := fmt.Sprintf("ROUGE-1 F1 %.2f (precision %.2f, recall %.2f), least to pass %.2f", f1, p, r, min)
	if len(missing) > 0 {
		expl += "; words of the reference not in the output: " + strings.Join(firstN(missing, 12), ", ")
	}
	return verdict(scoreSimilar, f1, min, expl)
}

// words splits text into lower-case words (letters and digits).
func words(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsNumber(r) })
}

// rouge1 is the ROUGE-1 F1 of candidate against reference, with its
// precision and recall, and the reference's words the candidate lacks,
// in the reference's order.
func rouge1(ref, cand []string) (f1, precision, recall float64, missing []string) {
	if len(ref) == 0 && len(cand) == 0 {
		return 1, 1, 1, nil
	}
	counts := map[string]int{}
	for _, w := range cand {
		counts[w]++
	}
	overlap := 0
	for _, w := range ref {
		if counts[w] > 0 {
			counts[w]--
			overlap++
		} else if !slices.Contains(missing, w) {
			missing = append(missing, w)
		}
	}
	if overlap == 0 {
		return 0, 0, 0, missing
	}
	precision = float64(overlap) / float64(len(cand))
	recall = float64(overlap) / float64(len(ref))
	return 2 * precision * recall / (precision + recall), precision, recall, missing
}

// count is "1 call", "2 calls": n and noun in its number.
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func firstN(s []string, n int) []string {
	if len(s) > n {
		return append(s[:n:n], fmt.Sprintf("(%d more)", len(s)-n))
	}
	return s
}

func validateOutput(v *validator, o Output) {
	if o.Exact == nil && len(o.Contains) == 0 && o.Regex == "" && len(o.Fields) == 0 && len(o.Schema) == 0 && o.Similar == nil {
		v.errf("expect.output", "no check given (exact, contains, regex, fields, schema or similar)")
	}
	for i, s := range o.Contains {
		if s == "" {
			v.errf(fmt.Sprintf("expect.output.contains[%d]", i), "empty text (every output contains it)")
		}
	}
	if o.Regex != "" {
		if _, err := regexp.Compile(o.Regex); err != nil {
			v.errf("expect.output.regex", "%v", err)
		}
	}
	for _, p := range slices.Sorted(maps.Keys(o.Fields)) {
		if slices.Contains(splitPath(p), "") {
			v.errf("expect.output.fields", "path %q has an empty segment", p)
		}
		if _, err := normalize(o.Fields[p]); err != nil {
			v.errf("expect.output.fields."+p, "value is not JSON: %v", err)
		}
	}
	if len(o.Schema) > 0 {
		if _, err := compileSchema(o.Schema); err != nil {
			v.errf("expect.output.schema", "%v", err)
		}
	}
	if o.Similar != nil {
		if strings.TrimSpace(o.Similar.Reference) == "" {
			v.errf("expect.output.similar.reference", "empty reference")
		}
		v.unit("expect.output.similar.min", o.Similar.Min)
	}
}
