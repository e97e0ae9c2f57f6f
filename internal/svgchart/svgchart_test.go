package svgchart

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestRender(t *testing.T) {
	t0 := time.Date(2026, 11, 26, 20, 0, 0, 0, time.UTC)
	series := func(n int) []Point {
		var ps []Point
		for i := range n {
			ps = append(ps, Point{T: t0.Add(time.Duration(i) * 10 * time.Second), V: float64(i * 100)})
		}
		return ps
	}
	tests := []struct {
		name  string
		chart Chart
		want  []string // substrings
		not   []string
		// points is the data-points of each polyline, in order.
		points []int
	}{
		{name: "two series", chart: Chart{ID: "bitrate", Title: "Bitrate", Unit: "kb/s",
			Series: []Series{{Name: "Video", Points: series(6)}, {Name: "Audio", Points: series(5)}}},
			want:   []string{`id="chart-bitrate"`, `Bitrate <span class="unit">(kb/s)</span>`, `Video: <b>500</b>`, `Audio: <b>400</b>`, `20:00:00`, `20:00:50 UTC`},
			points: []int{6, 5}},
		{name: "no points says so", chart: Chart{ID: "x", Title: "Viewers", Series: []Series{{Name: "Viewers"}}},
			want: []string{"No data yet."}, not: []string{"<svg", "<polyline"}},
		{name: "one point is a dot", chart: Chart{ID: "x", Title: "Viewers", Series: []Series{{Name: "Viewers", Points: series(1)}}},
			want: []string{"<circle"}, points: []int{1}},
		{name: "text is escaped", chart: Chart{ID: `"><script>`, Title: "<b>bold</b>", Series: []Series{{Name: "<i>", Points: series(2)}}},
			want: []string{"&lt;b&gt;bold&lt;/b&gt;", "&#34;&gt;&lt;script&gt;", "&lt;i&gt;"}, not: []string{"<script>", "<b>bold", "<i>"}, points: []int{2}},
		{name: "a long series is thinned", chart: Chart{ID: "x", Title: "Viewers", Series: []Series{{Name: "V", Points: series(5000)}}},
			points: []int{MaxPoints}},
		{name: "daily axis", chart: Chart{ID: "d", Title: "Per day", Daily: true, Series: []Series{{Name: "V", Points: []Point{{T: t0, V: 1}, {T: t0.AddDate(0, 0, 29), V: 3}}}}},
			want: []string{"Nov 26", "Dec 25 UTC"}, points: []int{2}},
	}
	count := regexp.MustCompile(`data-points="(\d+)" points="([^"]*)"`)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := string(Render(tt.chart))
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("missing %q in %s", w, out)
				}
			}
			for _, n := range tt.not {
				if strings.Contains(out, n) {
					t.Errorf("has %q: %s", n, out)
				}
			}
			got := count.FindAllStringSubmatch(out, -1)
			if len(got) != len(tt.points) {
				t.Fatalf("%d polylines, want %d", len(got), len(tt.points))
			}
			for i, m := range got {
				n, _ := strconv.Atoi(m[1])
				if n != tt.points[i] || len(strings.Fields(m[2])) != n {
					t.Errorf("polyline %d: data-points %s with %d coordinates, want %d", i, m[1], len(strings.Fields(m[2])), tt.points[i])
				}
			}
		})
	}
}

func TestThinKeepsSpikes(t *testing.T) {
	t0 := time.Unix(0, 0)
	ps := make([]Point, 1000)
	for i := range ps {
		ps[i] = Point{T: t0.Add(time.Duration(i) * time.Second)}
	}
	ps[777].V = 42
	got := Thin(ps, 100)
	if len(got) != 100 {
		t.Fatalf("%d points, want 100", len(got))
	}
	peak := 0.0
	for i, p := range got {
		peak = max(peak, p.V)
		if i > 0 && !p.T.After(got[i-1].T) {
			t.Fatalf("point %d out of time order", i)
		}
	}
	if peak != 42 {
		t.Errorf("the spike was lost: peak %v", peak)
	}
	if short := ps[:50]; len(Thin(short, 100)) != 50 {
		t.Error("a short series was changed")
	}
}
