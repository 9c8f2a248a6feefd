package timeline

import (
	"bytes"
	"context"
	"flag"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
)

// -shot writes the screenshot of the DayOne page to a file as well:
//
//	go test ./runtime/timeline -run TestBrowser -args -shot $PWD/docs/timeline.png
var shot = flag.String("shot", "", "also write the DayOne timeline's screenshot to this PNG `file`")

// chromium is the browser the test drives. On a machine without one the
// test skips and says how to get it; .ci/run installs Debian's and sets
// BATON_REQUIRE_CHROMIUM=1, so there a missing browser fails instead.
func chromium(t *testing.T) string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	const msg = "no chromium on PATH: install it (apt-get install chromium; .ci/run does)"
	if os.Getenv("BATON_REQUIRE_CHROMIUM") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// browser starts a headless Chromium for the test, with nothing of its
// own that reaches the network, and returns a tab's context.
func browser(t *testing.T, width, height int) context.Context {
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromium(t)),
		chromedp.Flag("headless", true),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(width, height),
	}
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	t.Cleanup(cancel)
	ctx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	t.Cleanup(cancelAlloc)
	ctx, cancelTab := chromedp.NewContext(ctx)
	t.Cleanup(cancelTab)
	return ctx
}

// geometry is what the page measures of itself, in CSS px.
type geometry struct {
	PlotLeft, PlotWidth float64
	Anchor              float64 // the A1_BA_INTERRUPT line's x
	Lanes               []string
	Marks               []struct {
		T    float64
		X    float64
		Type string
	}
	Labels int // labels drawn (zoomed in only)
}

const measure = `(() => {
  const box = e => e.getBoundingClientRect();
  const plot = box(document.querySelector("[data-plot]"));
  const a = box(document.querySelector('line[data-type=anchor][data-rule=A1_BA_INTERRUPT]'));
  const marks = [...document.querySelectorAll("#tl-plot .m[data-t]")].map(e => {
    const r = box(e);
    return {T: +e.dataset.t, X: e.tagName === "circle" ? r.left + r.width / 2 : r.left, Type: e.dataset.type};
  });
  return {PlotLeft: plot.left, PlotWidth: plot.width, Anchor: a.left + a.width / 2,
    Lanes: [...document.querySelectorAll("#tl-names [data-lane]")].map(e => e.dataset.lane),
    Marks: marks, Labels: [...document.querySelectorAll(".lbl:not(.always)")].filter(e => box(e).width > 0).length};
})()`

func TestBrowser(t *testing.T) {
	p, res := runPack(t, "dayone")
	var page bytes.Buffer
	if err := WriteHTML(&page, Run{Title: "dayone", Pack: p, Result: res}); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write(page.Bytes())
	}))
	defer srv.Close()
	ctx := browser(t, 1400, 1000)

	start := time.Now()
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL), chromedp.WaitReady(chromedp.CSS("body[data-ready]"))); err != nil {
		t.Fatal(err)
	}
	t.Logf("the 10-minute DayOne page (%d bytes) rendered in %s, browser start included", page.Len(), time.Since(start).Round(time.Millisecond))
	// The page's own clock, from navigation start: when its script had
	// laid it out for the window, and when it had loaded.
	const timing = `(() => { const n = performance.getEntriesByType("navigation")[0], r = performance.getEntriesByName("tl-ready")[0];
	  return [r ? r.startTime : -1, n ? n.loadEventEnd : -1]; })()`
	if ms, err := chromedp.Run(ctx, chromedp.Evaluate[[]float64](timing)); err == nil && len(ms) == 2 {
		t.Logf("in the page, from navigation start: laid out at %.0f ms, loaded at %.0f ms", ms[0], ms[1])
	}

	g, err := chromedp.Run(ctx, chromedp.Evaluate[geometry](measure))
	if err != nil {
		t.Fatal(err)
	}
	t.Run("lanes", func(t *testing.T) {
		want := map[string]bool{p.HumanName(): false}
		for _, r := range p.Roles {
			want[r.ID] = false
		}
		for _, l := range g.Lanes {
			if _, ok := want[l]; ok {
				want[l] = true
			}
		}
		for l, seen := range want {
			if !seen {
				t.Errorf("no lane %q among %v", l, g.Lanes)
			}
		}
	})
	t.Run("positions", func(t *testing.T) {
		checkPositions(t, g, res.EndMS)
	})

	t.Run("hover", func(t *testing.T) {
		it, ok := p.Where("A1_BA_INTERRUPT")
		if !ok {
			t.Fatal("the pack declares no A1_BA_INTERRUPT")
		}
		for _, tc := range []struct {
			sel  string
			want []string
		}{
			{`rect[data-type=agent_message][data-rule=A1_BA_INTERRUPT]`, []string{`"type": "agent_message"`, `"rule": "A1_BA_INTERRUPT"`, "declared at " + it.Pos.String()}},
			{`rect[data-type=window][data-rule=W3_TL_PRIORITY_CHALLENGE]`, []string{`"window": "W3_TL_PRIORITY_CHALLENGE"`, "declared at pack.yaml:"}},
			// Last, so the screenshot shows a guardrail's before and after.
			{`rect[data-type=agent_message][data-rule=W3_TL_PRIORITY_CHALLENGE]`, []string{`"original": "`, `"outcome": "regenerated(2)"`, "declared at pack.yaml:"}},
		} {
			at, err := chromedp.Run(ctx, chromedp.Evaluate[[]float64](`(() => { const r = document.querySelector("`+tc.sel+`").getBoundingClientRect(); return [r.left + r.width / 2, r.top + r.height / 2]; })()`))
			if err != nil {
				t.Fatal(err)
			}
			if err := chromedp.Do(ctx, chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, at[0], at[1])); err != nil {
				t.Fatal(err)
			}
			text, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#tl-detail")))
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !bytes.Contains([]byte(text), []byte(w)) {
					t.Errorf("hovering %s shows no %q in:\n%s", tc.sel, w, text)
				}
			}
		}
	})

	t.Run("zoom", func(t *testing.T) {
		if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`button[data-zoom="120000"]`))); err != nil {
			t.Fatal(err)
		}
		z, err := chromedp.Run(ctx, chromedp.Evaluate[geometry](measure))
		if err != nil {
			t.Fatal(err)
		}
		if z.PlotWidth < 4*g.PlotWidth {
			t.Errorf("two minutes across: the plot is %.0f px wide, was %.0f for ten minutes", z.PlotWidth, g.PlotWidth)
		}
		if z.Anchor == g.Anchor {
			t.Errorf("the anchor stayed at x %.1f through a zoom", z.Anchor)
		}
		if z.Labels == 0 || g.Labels != 0 {
			t.Errorf("labels drawn: %d zoomed in, %d for the whole session; want some, then none", z.Labels, g.Labels)
		}
		checkPositions(t, z, res.EndMS)
	})

	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`button[data-zoom="fit"]`))); err != nil {
		t.Fatal(err)
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "timeline.png")
	if *shot != "" {
		out = *shot
	}
	if err := os.WriteFile(out, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", out)
}

// checkPositions checks that every mark sits where its time says: the
// interrupt anchor at 03:00 of a 10:00 session 30%% along the plot, and
// each mark at its share of the axis (so later ones are right of earlier).
func checkPositions(t *testing.T, g geometry, endMS int64) {
	t.Helper()
	if got := (g.Anchor - g.PlotLeft) / g.PlotWidth; math.Abs(got-0.3) > 0.005 {
		t.Errorf("A1_BA_INTERRUPT at %.3f of the plot's width, want 0.300", got)
	}
	if len(g.Marks) < 100 {
		t.Fatalf("only %d marks", len(g.Marks))
	}
	var first, last = g.Marks[0], g.Marks[0]
	for _, m := range g.Marks {
		want := g.PlotLeft + m.T/float64(endMS)*g.PlotWidth
		if math.Abs(m.X-want) > 1 {
			t.Errorf("%s at %.0f ms: x %.1f, want %.1f", m.Type, m.T, m.X, want)
		}
		if m.T < first.T {
			first = m
		}
		if m.T > last.T {
			last = m
		}
	}
	if !(last.X > first.X) {
		t.Errorf("the last mark (%s at %.0f ms, x %.1f) is not right of the first (%s at %.0f ms, x %.1f)", last.Type, last.T, last.X, first.Type, first.T, first.X)
	}
}
