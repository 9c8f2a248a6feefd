package sim

import (
	"strings"
	"testing"
)

// A reply no request could ever meet is refused where it is written.
func TestRepliesValuesChecked(t *testing.T) {
	for _, tt := range []struct{ name, script, want string }{
		{"yaml kind", "- {role: qa, error: servr}\n", `r.yaml: reply 1: error "servr" is not a kind of failure (did you mean server?)`},
		{"yaml delay", "- {text: hi}\n- {delay_ms: -5}\n", "r.yaml: reply 2: delay_ms -5 is negative"},
		{"jsonl call", "{\"text\":\"hi\"}\n\n{\"call\":-1}\n", "r.yaml:3:1: call -1: calls are counted from 1"},
		{"ok", "- {error: rate_limit, delay_ms: 0, call: 2}\n", ""},
	} {
		_, err := ReadRepliesFile("r.yaml", []byte(tt.script))
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: %v", tt.name, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s: %v, want %q", tt.name, err, tt.want)
		}
	}
}
