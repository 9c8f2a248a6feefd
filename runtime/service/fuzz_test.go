package service

import (
	"encoding/json"
	"testing"

	"github.com/batonhq/baton/engine"
)

// FuzzWireFrame feeds arbitrary bytes to the client frame parser: it must
// not panic, every error must carry a known code and quote little of the
// frame (clipMessage leaves it as it is), and every accepted
// frame must satisfy the per-type rules (and its event, if any, must
// either convert or be refused with bad_event).
func FuzzWireFrame(f *testing.F) {
	for _, s := range []string{
		`{"id":"1","type":"start","pack":"dayone","session_id":"s1","candidate_id":"c","seed":3,"client_playback":true}`,
		`{"id":"2","type":"resume","session_id":"s1","last_seq":12}`,
		`{"id":"3","type":"event","event":{"event_type":"candidate_message","ts_sec":88,"data":{"source":"voice","text":"I prioritize hotfix first","stt_confidence":0.92,"addressed_to":"tech_lead"}}}`,
		`{"id":"4","type":"event","event":{"event_type":"mic_state_changed","ts_ms":9000,"data":{"mic_active":true}}}`,
		`{"id":"5","type":"speech_done","message_id":"m3","interrupted":true}`,
		`{"id":"6","type":"ping"}`,
		`{"id":"t1","type":"tool_call","tool":{"id":"call-1","name":"transfer","role":"marcus","args":{"colleague":"priya"}}}`,
		`{"id":"a1","type":"agent_transcript","agent":{"role":"marcus","text":"How do the tokens reach the new processor?"}}`,
		`{"id":"e1","type":"end","reason":"candidate_left"}`,
		`{"type":"client_tool_result","tool_call_id":"r2-call-1","result":{"ok":true,"mode":"lineEdits","diffs":[]},"is_error":false}`,
		`{"id":"c2","type":"client_tool_result","tool_call_id":"r2-call-1","result":"line 40 is outside 1..11","is_error":true}`,
		`{"type":"client_tool_result","result":null}`,
		`{"id":"k","type":"ping","kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk":1}`,
		`{"id":7}`, `[]`, `{"id":"x","type":"event","event":{"event_type":"x","ts_sec":1e308}}`, `{"id":"\u0000"}`,
	} {
		f.Add([]byte(s))
	}
	known := map[string]bool{CodeBadJSON: true, CodeBadFrame: true, CodeUnknownType: true}
	f.Fuzz(func(t *testing.T, data []byte) {
		fr, pe := parseFrame(data)
		if fr == nil {
			t.Fatal("nil frame")
		}
		if pe != nil {
			if !known[pe.Code] || pe.Message == "" {
				t.Fatalf("error %+v", pe)
			}
			if clipMessage(pe.Message) != pe.Message {
				t.Fatalf("error message echoes too much: %.300q", pe.Message)
			}
			if len(fr.ID) > MaxFrameID {
				t.Fatalf("error carries an id of %d bytes", len(fr.ID))
			}
			return
		}
		if fr.ID == "" || len(fr.ID) > MaxFrameID {
			t.Fatalf("accepted frame with id %q", fr.ID)
		}
		switch fr.Type {
		case FrameStart:
			if fr.SessionID == "" || fr.Pack == "" {
				t.Fatal("start without session or pack")
			}
		case FrameResume:
			if fr.SessionID == "" {
				t.Fatal("resume without session")
			}
		case FrameEvent:
			ev, clientT, pe := candidateEvent(fr.Event)
			if pe != nil {
				if pe.Code != CodeBadEvent {
					t.Fatalf("event error %+v", pe)
				}
				return
			}
			if ev.Type == "" || (clientT != nil && *clientT < 0) {
				t.Fatalf("accepted event %+v at %v", ev, clientT)
			}
		case FrameSpeechDone:
			if fr.MessageID == "" {
				t.Fatal("speech_done without message")
			}
		case FrameToolCall:
			if fr.Tool == nil || fr.Tool.ID == "" || fr.Tool.Name == "" {
				t.Fatal("tool_call without a call")
			}
		case FrameAgentTranscript:
			if fr.Agent == nil || fr.Agent.Role == "" || fr.Agent.Text == "" {
				t.Fatal("agent_transcript without a line")
			}
		case FrameEnd:
			if len(fr.Reason) > engine.MaxReason {
				t.Fatalf("end reason of %d bytes", len(fr.Reason))
			}
		case FrameClientToolResult:
			if fr.ToolCallID == "" || !json.Valid(fr.Result) {
				t.Fatalf("client_tool_result without a call or a result: %q %q", fr.ToolCallID, fr.Result)
			}
		case FramePing:
		default:
			t.Fatalf("accepted frame type %q", fr.Type)
		}
		// An accepted frame survives a round trip unchanged.
		b, err := json.Marshal(fr)
		if err != nil {
			t.Fatal(err)
		}
		again, pe := parseFrame(b)
		if pe != nil || again.ID != fr.ID || again.Type != fr.Type {
			t.Fatalf("round trip: %+v %v", again, pe)
		}
	})
}
