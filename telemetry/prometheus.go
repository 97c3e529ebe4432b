package telemetry

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// writePrometheus renders rm in the Prometheus text exposition format.
func writePrometheus(w io.Writer, rm *metricdata.ResourceMetrics) error {
	b := bufio.NewWriter(w)
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			name := promName(m.Name)
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				sum(b, name, m.Description, d)
			case metricdata.Sum[float64]:
				sum(b, name, m.Description, d)
			case metricdata.Histogram[int64]:
				header(b, name, "histogram", m.Description)
				for _, p := range d.DataPoints {
					hist(b, name, p.Attributes, p.Bounds, p.BucketCounts, float64(p.Sum), p.Count)
				}
			case metricdata.Histogram[float64]:
				header(b, name, "histogram", m.Description)
				for _, p := range d.DataPoints {
					hist(b, name, p.Attributes, p.Bounds, p.BucketCounts, p.Sum, p.Count)
				}
			}
		}
	}
	return b.Flush()
}

func sum[N int64 | float64](b *bufio.Writer, name, help string, d metricdata.Sum[N]) {
	kind := "gauge"
	if d.IsMonotonic {
		kind, name = "counter", name+"_total"
	}
	header(b, name, kind, help)
	for _, p := range d.DataPoints {
		fmt.Fprintf(b, "%s%s %s\n", name, labels(p.Attributes, "", ""), num(float64(p.Value)))
	}
}

func header(b *bufio.Writer, name, kind, help string) {
	fmt.Fprintf(b, "# HELP %s %s\n# TYPE %s %s\n", name, strings.ReplaceAll(help, "\n", " "), name, kind)
}

func hist(b *bufio.Writer, name string, attrs attribute.Set, bounds []float64, counts []uint64, sum float64, count uint64) {
	var cum uint64
	for i, bound := range bounds {
		cum += counts[i]
		fmt.Fprintf(b, "%s_bucket%s %d\n", name, labels(attrs, "le", num(bound)), cum)
	}
	fmt.Fprintf(b, "%s_bucket%s %d\n", name, labels(attrs, "le", "+Inf"), count)
	fmt.Fprintf(b, "%s_sum%s %s\n", name, labels(attrs, "", ""), num(sum))
	fmt.Fprintf(b, "%s_count%s %d\n", name, labels(attrs, "", ""), count)
}

func promName(s string) string {
	var b strings.Builder
	for i, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r == '_', r == ':', r >= '0' && r <= '9' && i > 0:
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	return b.String()
}

func labels(set attribute.Set, extraK, extraV string) string {
	var parts []string
	for _, kv := range set.ToSlice() {
		parts = append(parts, promName(string(kv.Key))+"="+strconv.Quote(kv.Value.Emit()))
	}
	sort.Strings(parts)
	if extraK != "" {
		parts = append(parts, extraK+"="+strconv.Quote(extraV))
	}
	if len(parts) == 0 {
		return ""
	}
	return "{" + strings.Join(parts, ",") + "}"
}

func num(f float64) string {
	if math.IsInf(f, 1) {
		return "+Inf"
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}
