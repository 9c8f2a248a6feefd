package dayone

import (
	"testing"

	"github.com/batonhq/baton/runtime/service"
)

// FuzzHTTPBodies feeds arbitrary bytes to the start and event body
// parsers.
func FuzzHTTPBodies(f *testing.F) {
	f.Add([]byte(`{"session_id":"sess_001","candidate_id":"cand_demo","started_at":"2026-02-20T23:00:00Z","scenario_id":"payment_double_charge_vip_discount_v1","frontend_agent_webhook":"http://localhost:3000/sim/session/agent-message","end_callback_webhook":"http://localhost:3000/sim/session/end"}`))
	f.Add([]byte(`{"session_id":"sess_001","event_type":"candidate_message","ts_sec":88,"data":{"source":"voice","text":"I prioritize hotfix first","stt_confidence":0.92,"addressed_to":"tech_lead"}}`))
	f.Add([]byte(`{"session_id":"../x"}`))
	known := map[string]bool{service.CodeBadJSON: true, service.CodeBadFrame: true, service.CodeBadSessionID: true, service.CodeBadWebhook: true}
	f.Fuzz(func(t *testing.T, data []byte) {
		if r, pe := parseStartRequest(data, nil); pe == nil {
			if r.SessionID == "" || r.ScenarioID == "" || r.FrontendAgentWebhook == "" || r.EndCallbackWebhook == "" {
				t.Fatalf("accepted start %+v", r)
			}
			if checkWebhook("x", r.FrontendAgentWebhook, nil) != nil {
				t.Fatal("accepted a bad webhook")
			}
		} else if pe.Message == "" || !known[pe.Code] {
			t.Fatalf("start error %+v", pe)
		}
		if w, pe := parseEventRequest(data); pe == nil {
			if w.SessionID == "" {
				t.Fatal("accepted event without a session")
			}
		} else if pe.Message == "" || !known[pe.Code] {
			t.Fatalf("event error %+v", pe)
		}
	})
}
