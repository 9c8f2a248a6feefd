package elevenlabs

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/batonhq/baton/runtime/llm"
)

// VoicesPath lists the account's voices (GET, documented at
// https://elevenlabs.io/docs/api-reference/voices/search under "List
// voices (v1)").
const VoicesPath = "/v1/voices"

// VoiceInfo is one voice of the account.
type VoiceInfo struct {
	VoiceID  string `json:"voice_id"`
	Name     string `json:"name"`
	Category string `json:"category"`
}

// Voices lists the voices the account may speak with (its own, the
// default ones and, with show_legacy, the legacy premade ones), so a
// host can refuse a voice id before a session asks for it.
func (c *Client) Voices(ctx context.Context) ([]VoiceInfo, error) {
	u, err := url.Parse(c.url)
	if err != nil {
		return nil, err
	}
	switch u.Scheme {
	case "ws":
		u.Scheme = "http"
	default:
		u.Scheme = "https"
	}
	u.Path = strings.TrimSuffix(u.Path, ConversationPath) + VoicesPath
	u.RawQuery = url.Values{"show_legacy": {"true"}}.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("xi-api-key", c.apiKey)
	hc := http.Client{}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, llm.Classify(fmt.Errorf("elevenlabs: list voices: %w", err))
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, readLimit))
	if err != nil {
		return nil, llm.Classify(fmt.Errorf("elevenlabs: list voices: %w", err))
	}
	if resp.StatusCode != http.StatusOK {
		return nil, llm.NewError(llm.KindBadRequest, resp.StatusCode, nil, "elevenlabs: list voices: %s: %.200s", resp.Status, strings.TrimSpace(string(body)))
	}
	var out struct {
		Voices []VoiceInfo `json:"voices"`
	}
	if err := json.Unmarshal(body, &out); err != nil {
		return nil, llm.NewError(llm.KindServer, resp.StatusCode, err, "elevenlabs: list voices: undecodable answer: %v", err)
	}
	return out.Voices, nil
}
