package sweep

import (
	"fmt"
	"html/template"
	"io"
	"strings"
)

// WriteHTML writes the report as one self-contained page: its styles and
// charts (inline SVG) are in the file, and it loads nothing, so it opens
// anywhere, offline, and can be attached to a review as it is.
func WriteHTML(w io.Writer, r *Report) error {
	return page.Execute(w, r)
}

var page = template.Must(template.New("sweep").Funcs(template.FuncMap{
	"pct":   pct,
	"value": value,
	"mean":  mean,
	"chart": chart,
	"hit":   func(c CoverStat) bool { return c.Sessions > 0 },
	"p50":   func(h *Hist) int64 { return h.Quantile(0.5) },
	"p90":   func(h *Hist) int64 { return h.Quantile(0.9) },
	"p99":   func(h *Hist) int64 { return h.Quantile(0.99) },
	"first": firstLine,
	"deref": func(p *int64) int64 { return *p },
}).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Sweep of {{.Pack}}</title>
<style>
body{font:14px/1.45 system-ui,sans-serif;margin:2em auto;max-width:70em;padding:0 1em;color:#222}
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:2em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:.5em 0}td,th{padding:.2em .7em;text-align:left;border-bottom:1px solid #eee}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}
tr.never td{color:#b00020}code{font-size:.9em;background:#f4f4f4;padding:0 .3em}
.charts{display:grid;grid-template-columns:repeat(auto-fill,minmax(20em,1fr));gap:1em}
figure{margin:0;border:1px solid #eee;padding:.5em}figcaption{font-weight:600}
svg rect{fill:#4a78c2}svg text{font-size:10px;fill:#555}
iframe{width:100%;height:36em;border:1px solid #ddd}
</style>
</head>
<body>
<h1>Sweep of {{.Pack}}</h1>
<p>{{.Population}}<br>{{.Sessions}} sessions played, {{.Failed}} failed.
{{- range .EndReasons}} Ended {{.Reason}}: {{.Sessions}} ({{pct .Sessions $.Sessions}}).{{end}}</p>
{{if .Failures}}<h2>Failed sessions</h2><ul>{{range .Failures}}<li><code>{{.Command}}</code>: {{first .Err}}</li>{{end}}</ul>{{end}}
<h2>Coverage: {{len .Never}} of {{len .Coverage}} items never hit</h2>
<table><tr><th>item</th><th class="n">sessions</th><th class="n">share</th><th class="n">hits</th><th>where</th></tr>
{{range .Coverage}}<tr{{if not (hit .)}} class="never"{{end}}><td>{{.Name}}</td><td class="n">{{.Sessions}}</td><td class="n">{{pct .Sessions $.Sessions}}</td><td class="n">{{.Hits}}</td><td><code>{{.Where}}</code></td></tr>
{{end}}</table>
<h2>Metrics</h2>
<table><tr><th>metric</th><th class="n">mean</th><th class="n">p50</th><th class="n">p90</th><th class="n">p99</th><th class="n">min</th><th class="n">max</th><th class="n">count</th></tr>
{{range .Metrics}}<tr><td>{{.Name}}</td>{{if .N}}<td class="n">{{mean .}}</td><td class="n">{{value (p50 .) .Unit}}</td><td class="n">{{value (p90 .) .Unit}}</td><td class="n">{{value (p99 .) .Unit}}</td><td class="n">{{value .Min .Unit}}</td><td class="n">{{value .Max .Unit}}</td><td class="n">{{.N}}</td>{{else}}<td class="n">-</td>{{end}}</tr>
{{end}}</table>
<div class="charts">
{{range .Metrics}}{{if .N}}<figure><figcaption>{{.Name}}</figcaption>{{chart .}}</figure>
{{end}}{{end}}</div>
<h2>Extremes</h2>
{{range .Extremes}}<h3>{{.What}}</h3>{{if .Sessions}}<table>{{$u := .Unit}}{{range .Sessions}}<tr><td class="n">{{value .Value $u}}</td><td><code>{{.Command}}</code>{{if .Timeline}}<details><summary>timeline</summary><iframe title="timeline of {{.Command}}" srcdoc="{{.Timeline}}"></iframe></details>{{end}}</td></tr>{{end}}</table>{{else if .Alike}}<p>every session: {{value (deref .Alike) .Unit}}</p>{{else}}<p>none</p>{{end}}
{{end}}
</body>
</html>
`))

// chart draws h's buckets as bars, in SVG the page carries itself.
func chart(h *Hist) template.HTML {
	bs := h.Buckets()
	const W, H, pad = 320, 120, 16
	var top int64
	for _, b := range bs {
		top = max(top, b.N)
	}
	var s strings.Builder
	fmt.Fprintf(&s, `<svg viewBox="0 0 %d %d" width="100%%" role="img">`, W, H+2*pad)
	bw := float64(W) / float64(len(bs))
	for i, b := range bs {
		bh := float64(b.N) / float64(max(top, 1)) * H
		fmt.Fprintf(&s, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f"><title>%s to %s: %d</title></rect>`,
			float64(i)*bw+1, pad+H-bh, max(bw-2, 1), bh, value(b.Lo, h.Unit), value(b.Hi, h.Unit), b.N)
	}
	fmt.Fprintf(&s, `<text x="0" y="%d">%s</text><text x="%d" y="%d" text-anchor="end">%s</text><text x="0" y="10">%d</text></svg>`,
		H+2*pad-2, value(bs[0].Lo, h.Unit), W, H+2*pad-2, value(bs[len(bs)-1].Hi, h.Unit), top)
	return template.HTML(s.String())
}
