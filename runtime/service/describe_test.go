package service

import (
	"bytes"
	"io"
	"net/http"
	"testing"

	"github.com/batonhq/baton/runtime/clock/clocktest"
	"github.com/batonhq/baton/runtime/describe"
)

// The describe endpoint answers a bundled pack's contract, the same
// bytes as describe.WriteJSON, behind the token.
func TestDescribeEndpoint(t *testing.T) {
	clk := clocktest.NewFake(epoch)
	cfg := Config{DataDir: t.TempDir(), Token: "tok", Clock: clk, Logger: testLogger(), Model: SimModel(0, nil)}
	h := startHarness(t, cfg, clk, nil)
	p, err := h.srv.Pack("training")
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	describe.WriteJSON(&want, describe.Describe(p))
	for _, tc := range []struct {
		name, path, token string
		status            int
		body              []byte
	}{
		{"ok", "/v1/packs/training/describe", "tok", http.StatusOK, want.Bytes()},
		{"no token", "/v1/packs/training/describe", "", http.StatusUnauthorized, nil},
		{"wrong token", "/v1/packs/training/describe", "nope", http.StatusUnauthorized, nil},
		{"unknown pack", "/v1/packs/nope/describe", "tok", http.StatusNotFound, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest("GET", h.ts.URL+tc.path, nil)
			if tc.token != "" {
				req.Header.Set("Authorization", "Bearer "+tc.token)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.status, body)
			}
			if tc.body != nil && !bytes.Equal(body, tc.body) {
				t.Errorf("body\n%s\nwant\n%s", body, tc.body)
			}
		})
	}
}
