package dashboard

import (
	"fmt"
	"html/template"
	"sort"
	"strings"
	"time"

	"github.com/ralphd/ralphd/internal/state"
)

// Point is one step of the cumulative cost curve.
type Point struct {
	At     time.Time
	Cost   float64 // cumulative USD
	Tokens int64   // cumulative tokens
}

// Day sums one calendar day (UTC).
type Day struct {
	Date       string
	Iterations int
	Cost       float64
	Tokens     int64
}

// costSeries reads the iterations in history into the cumulative curve and
// per-day sums, oldest first.
func costSeries(records []state.Record) ([]Point, []Day) {
	its := make([]state.Record, 0, len(records))
	for _, r := range records {
		if r.IsIteration() && !r.EndedAt.IsZero() {
			its = append(its, r)
		}
	}
	sort.SliceStable(its, func(i, j int) bool { return its[i].EndedAt.Before(its[j].EndedAt) })
	var pts []Point
	var days []Day
	var cum Point
	for _, r := range its {
		tok := r.Tokens.Total()
		c := 0.0
		if r.CostUSD != nil {
			c = *r.CostUSD
		}
		cum = Point{At: r.EndedAt, Cost: cum.Cost + c, Tokens: cum.Tokens + tok}
		pts = append(pts, cum)
		d := r.EndedAt.UTC().Format("2006-01-02")
		if len(days) == 0 || days[len(days)-1].Date != d {
			days = append(days, Day{Date: d})
		}
		last := &days[len(days)-1]
		last.Iterations++
		last.Cost += c
		last.Tokens += tok
	}
	return pts, days
}

// costChart draws the cumulative cost as a server-side SVG line chart with
// the cumulative tokens as a second, dashed line on their own scale. Every
// value in it is a number ralphd formats, so it is safe to inline.
func costChart(pts []Point) template.HTML {
	const w, h, pad = 640.0, 220.0, 40.0
	if len(pts) == 0 {
		return ""
	}
	t0, t1 := pts[0].At, pts[len(pts)-1].At
	span := t1.Sub(t0).Seconds()
	maxCost, maxTok := pts[len(pts)-1].Cost, float64(pts[len(pts)-1].Tokens)
	x := func(t time.Time) float64 {
		if span <= 0 {
			return w - pad
		}
		return pad + (w-2*pad)*t.Sub(t0).Seconds()/span
	}
	y := func(v, top float64) float64 {
		if top <= 0 {
			return h - pad
		}
		return h - pad - (h-2*pad)*v/top
	}
	line := func(val func(Point) float64, top float64) string {
		var b strings.Builder
		prev := h - pad
		for i, p := range pts {
			if i == 0 {
				fmt.Fprintf(&b, "%.1f,%.1f ", x(p.At), prev)
			}
			// Steps: the total holds until the next iteration ends.
			fmt.Fprintf(&b, "%.1f,%.1f %.1f,%.1f ", x(p.At), prev, x(p.At), y(val(p), top))
			prev = y(val(p), top)
		}
		return strings.TrimSpace(b.String())
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart" viewBox="0 0 %.0f %.0f" role="img" aria-label="cumulative cost: $%.2f, %d tokens" xmlns="http://www.w3.org/2000/svg">`, w, h, maxCost, pts[len(pts)-1].Tokens)
	fmt.Fprintf(&b, `<line x1="%.0f" y1="%.0f" x2="%.0f" y2="%.0f" stroke="#777"/>`, pad, h-pad, w-pad, h-pad)
	fmt.Fprintf(&b, `<line x1="%.0f" y1="%.0f" x2="%.0f" y2="%.0f" stroke="#777"/>`, pad, pad, pad, h-pad)
	fmt.Fprintf(&b, `<polyline fill="none" stroke="#0072B2" stroke-width="2" points="%s"/>`, line(func(p Point) float64 { return p.Cost }, maxCost))
	fmt.Fprintf(&b, `<polyline fill="none" stroke="#D55E00" stroke-width="1.5" stroke-dasharray="4 3" points="%s"/>`, line(func(p Point) float64 { return float64(p.Tokens) }, maxTok))
	fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" font-size="11" fill="#0072B2">$%.2f</text>`, pad+4, pad-8, maxCost)
	fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" font-size="11" fill="#D55E00" text-anchor="end">%d tokens</text>`, w-pad, pad-8, pts[len(pts)-1].Tokens)
	fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" font-size="10" fill="#555">%s</text>`, pad, h-pad+16, t0.UTC().Format("2006-01-02 15:04"))
	fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" font-size="10" fill="#555" text-anchor="end">%s</text>`, w-pad, h-pad+16, t1.UTC().Format("2006-01-02 15:04"))
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}
