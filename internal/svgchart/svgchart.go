// Package svgchart draws small line charts as inline SVG on the server:
// the studio's show statistics and the console's dashboard use it, so the
// pages need no chart script and no asset beyond their own stylesheet.
// The SVG scales to its container (viewBox, width 100%), so a chart reads
// on a 390 px phone as on a desktop.
package svgchart

import (
	"fmt"
	"html"
	"html/template"
	"math"
	"strconv"
	"strings"
	"time"
)

// Point is one sample of a series.
type Point struct {
	T time.Time
	V float64
}

// Series is one line of a chart.
type Series struct {
	Name   string
	Points []Point
}

// Chart is a titled chart of one or more series over time sharing one
// unit ("kb/s", "viewers").
type Chart struct {
	// ID names the chart in the page (id="chart-<ID>"), for links, tests
	// and the script that refreshes it.
	ID     string
	Title  string
	Unit   string
	Series []Series
	// Daily labels the time axis with dates rather than clock times.
	Daily bool
}

// The drawing's geometry, in viewBox units.
const (
	width   = 600
	height  = 180
	padT    = 4
	padB    = 4
	maxText = 80
)

// Render returns the chart as a <figure> with an inline SVG and a legend
// naming each series with its latest value. Each series is one <polyline>
// whose data-points attribute is its number of points. A chart with no
// point says so instead of drawing empty axes.
func Render(c Chart) template.HTML {
	var b strings.Builder
	fmt.Fprintf(&b, `<figure class="chart" id="chart-%s">`, esc(c.ID))
	fmt.Fprintf(&b, `<figcaption>%s`, esc(c.Title))
	if c.Unit != "" {
		fmt.Fprintf(&b, ` <span class="unit">(%s)</span>`, esc(c.Unit))
	}
	b.WriteString(`</figcaption>`)
	t0, t1, top, n := bounds(c.Series)
	if n == 0 {
		b.WriteString(`<p class="muted chart-empty">No data yet.</p></figure>`)
		return template.HTML(b.String())
	}
	if !t1.After(t0) {
		t1 = t0.Add(time.Second)
	}
	top = niceCeil(top)
	x := func(t time.Time) float64 {
		return float64(t.Sub(t0)) / float64(t1.Sub(t0)) * width
	}
	y := func(v float64) float64 {
		return height - padB - v/top*(height-padT-padB)
	}
	// The SVG stretches to the box (preserveAspectRatio none) and holds
	// lines only; the labels are HTML around it, so they stay readable
	// at any width.
	layout := "15:04"
	switch {
	case c.Daily:
		layout = "Jan 2"
	case t1.Sub(t0) < 2*time.Minute:
		layout = "15:04:05"
	}
	fmt.Fprintf(&b, `<div class="plot"><span class="ymax">%s</span>`, esc(short(top)))
	fmt.Fprintf(&b, `<svg viewBox="0 0 %d %d" preserveAspectRatio="none" role="img" aria-label="%s">`, width, height, esc(c.Title))
	for _, v := range []float64{0, top / 2, top} {
		fmt.Fprintf(&b, `<line class="grid" x1="0" x2="%d" y1="%.1f" y2="%.1f"/>`, width, y(v), y(v))
	}
	for i, s := range c.Series {
		if len(s.Points) == 0 {
			continue
		}
		s.Points = Thin(s.Points, MaxPoints)
		fmt.Fprintf(&b, `<polyline class="s%d" data-series="%s" data-points="%d" points="`, i%4, esc(s.Name), len(s.Points))
		for j, p := range s.Points {
			if j > 0 {
				b.WriteByte(' ')
			}
			fmt.Fprintf(&b, "%.1f,%.1f", x(p.T), y(p.V))
		}
		b.WriteString(`"/>`)
		if len(s.Points) == 1 {
			p := s.Points[0]
			fmt.Fprintf(&b, `<circle class="s%d" cx="%.1f" cy="%.1f" r="3"/>`, i%4, x(p.T), y(p.V))
		}
	}
	fmt.Fprintf(&b, `</svg><div class="xaxis"><span>%s</span><span>%s UTC</span></div></div><ul class="legend">`,
		esc(t0.UTC().Format(layout)), esc(t1.UTC().Format(layout)))
	for i, s := range c.Series {
		last := "–"
		if len(s.Points) > 0 {
			last = short(s.Points[len(s.Points)-1].V)
		}
		fmt.Fprintf(&b, `<li class="s%d">%s: <b>%s</b></li>`, i%4, esc(s.Name), esc(last))
	}
	b.WriteString(`</ul></figure>`)
	return template.HTML(b.String())
}

// bounds are the time span, the largest value (at least 1) and the number
// of points of the series.
func bounds(series []Series) (t0, t1 time.Time, top float64, n int) {
	top = 1
	for _, s := range series {
		for _, p := range s.Points {
			if n == 0 || p.T.Before(t0) {
				t0 = p.T
			}
			if n == 0 || p.T.After(t1) {
				t1 = p.T
			}
			if !math.IsNaN(p.V) && !math.IsInf(p.V, 0) {
				top = max(top, p.V)
			}
			n++
		}
	}
	return t0, t1, top, n
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten, so the axis
// reads in round figures.
func niceCeil(v float64) float64 {
	exp := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if v <= m*exp {
			return m * exp
		}
	}
	return 10 * exp
}

// short writes a figure in at most a few characters: 950, 1.2k, 3.4M.
func short(v float64) string {
	a := math.Abs(v)
	switch {
	case a >= 1e9:
		return strconv.FormatFloat(v/1e9, 'f', 1, 64) + "G"
	case a >= 1e6:
		return strconv.FormatFloat(v/1e6, 'f', 1, 64) + "M"
	case a >= 1e4:
		return strconv.FormatFloat(v/1e3, 'f', 0, 64) + "k"
	case a >= 100 || v == math.Trunc(v):
		return strconv.FormatFloat(v, 'f', 0, 64)
	default:
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
}

// esc escapes text for HTML, cut to a sane length.
func esc(s string) string {
	if len(s) > maxText {
		s = strings.ToValidUTF8(s[:maxText], "")
	}
	return html.EscapeString(s)
}

// MaxPoints is as many points as a series draws: more would be finer
// than the chart's width shows. Thin brings a longer series down to it.
const MaxPoints = 300

// Thin returns points (in time order) cut into at most n runs of equal
// length, each drawn as its highest point at its first time, so a spike
// survives. A series of n points or fewer is returned as it is.
func Thin(points []Point, n int) []Point {
	if n < 1 || len(points) <= n {
		return points
	}
	out := make([]Point, 0, n)
	for i := range n {
		lo, hi := i*len(points)/n, (i+1)*len(points)/n
		p := points[lo]
		for _, q := range points[lo+1 : hi] {
			p.V = max(p.V, q.V)
		}
		out = append(out, p)
	}
	return out
}
