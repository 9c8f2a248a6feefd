package elevenlabsfake

import (
	"bytes"
	"strings"
	"testing"
)

// feed is one thing the client does before a trigger is asked again.
type feed struct {
	audio []byte
	msg   string
	// fires says whether the trigger holds after this feed.
	fires bool
}

func TestTriggers(t *testing.T) {
	speech := []byte{0x10, 0x02, 0x00, 0x7f}
	zeros := func(n int) []byte { return make([]byte, n) }
	tests := []struct {
		name  string
		step  Step
		feeds []feed
	}{
		{name: "audio bytes", step: AwaitAudio(6), feeds: []feed{
			{audio: speech}, {audio: zeros(1)}, {audio: zeros(1), fires: true},
			// counting restarts after it fires
			{audio: speech}, {audio: speech, fires: true},
		}},
		{name: "silence after speech", step: AwaitSilence(4), feeds: []feed{
			{audio: zeros(8)},                    // silence before any speech is no utterance
			{audio: speech},                      // speech
			{audio: zeros(3)},                    // short pause
			{audio: append(zeros(2), speech...)}, // speech resumes
			{audio: zeros(3)},
			{audio: zeros(1), fires: true},
			{audio: zeros(16)}, // the same silence does not fire twice
			{audio: append(speech, zeros(4)...), fires: true},
		}},
		{name: "message after the last match", step: AwaitMessage("user_message"), feeds: []feed{
			{msg: `{"type":"user_activity"}`},
			{msg: `{"type":"user_message","text":"a"}`, fires: true},
			{msg: `{"type":"user_activity"}`},
			{msg: `{"type":"user_message","text":"b"}`, fires: true},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newConn(nil, nil, 1)
			m, err := c.check([]byte(`{"type":"conversation_initiation_client_data"}`))
			if err != nil {
				t.Fatal(err)
			}
			c.received = append(c.received, m)
			for i, f := range tt.feeds {
				if f.audio != nil {
					c.addAudio(f.audio)
				}
				if f.msg != "" {
					m, err := c.check([]byte(f.msg))
					if err != nil {
						t.Fatal(err)
					}
					c.received = append(c.received, m)
				}
				if got := tt.step.await(c); got != f.fires {
					t.Errorf("after feed %d the trigger fired = %v, want %v", i, got, f.fires)
				}
			}
		})
	}
}

func TestCheckAccepts(t *testing.T) {
	init := `{"type":"conversation_initiation_client_data","conversation_config_override":{"agent":{"prompt":{"prompt":"p","llm":null},"first_message":"Hi","language":"en"},"tts":{"voice_id":"v","speed":1.1},"asr":{"keywords":["baton"]},"conversation":{"text_only":false}},"custom_llm_extra_body":{"temperature":0.7},"dynamic_variables":{"name":"Ada","n":2,"ok":true},"user_id":"u1","source_info":{"source":"go","version":"1"}}`
	msgs := []string{
		init,
		`{"user_audio_chunk":"AAECAw=="}`,
		`{"type":"pong","event_id":9}`,
		`{"type":"client_tool_result","tool_call_id":"c","result":"","is_error":true}`,
		`{"type":"user_message","text":"hello"}`,
		`{"type":"contextual_update","text":"note","context_id":"screen"}`,
		`{"type":"user_activity"}`,
		`{"type":"feedback","event_id":3,"score":"like"}`,
	}
	c := newConn(nil, nil, 1)
	c.pings[9] = true
	c.toolCalls["c"] = true
	for _, m := range msgs {
		got, err := c.check([]byte(m))
		if err != nil {
			t.Fatalf("check(%s) = %v", m, err)
		}
		c.received = append(c.received, got)
	}
	if audio := c.received[1].Audio; !bytes.Equal(audio, []byte{0, 1, 2, 3}) {
		t.Errorf("decoded audio = %v", audio)
	}
	// The answered ping and call are spent.
	for _, m := range []string{`{"type":"pong","event_id":9}`, `{"type":"client_tool_result","tool_call_id":"c","result":"","is_error":true}`} {
		if _, err := c.check([]byte(m)); err == nil || !strings.Contains(err.Error(), "awaits") {
			t.Errorf("second %s = %v, want a refusal", m, err)
		}
	}
}
